/* The encoder cache: a doubly linked list in recency order (a few hundred entries at most:
 * each holds one image's rows, hundreds of KB to a few MB, under a budget of MBs), looked up
 * by a linear scan of 32-byte keys. */
#include <string.h>

#include "engine/encoder_cache.h"

typedef struct entry {
    uint8_t key[32];
    int64_t rows, width;
    size_t bytes;
    float *data; /* owned [rows, width] */
    struct entry *prev, *next;
} entry;

struct omnic__encoder_cache {
    size_t max_bytes;
    entry *head, *tail; /* most recently used first */
    omnic__encoder_cache_stats st;
};

omnic_status omnic__encoder_cache_create(size_t max_bytes, omnic__encoder_cache **out, omnic_err *err)
{
    omnic__encoder_cache *c = omnic_alloc_array(1, sizeof *c);
    if (!c) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for the encoder cache");
    c->max_bytes = max_bytes;
    *out = c;
    return OMNIC_OK;
}

static void unlink_entry(omnic__encoder_cache *c, entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void push_front(omnic__encoder_cache *c, entry *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head) c->head->prev = e;
    c->head = e;
    if (!c->tail) c->tail = e;
}

static void drop(omnic__encoder_cache *c, entry *e)
{
    unlink_entry(c, e);
    c->st.bytes -= e->bytes;
    c->st.entries--;
    omnic_free(e->data);
    omnic_free(e);
}

void omnic__encoder_cache_destroy(omnic__encoder_cache *c)
{
    if (!c) return;
    while (c->head)
        drop(c, c->head);
    omnic_free(c);
}

static entry *find(omnic__encoder_cache *c, const uint8_t key[32])
{
    for (entry *e = c->head; e; e = e->next)
        if (!memcmp(e->key, key, 32)) return e;
    return NULL;
}

bool omnic__encoder_cache_get(omnic__encoder_cache *c, const uint8_t key[32], int64_t rows, int64_t width,
                              float *out)
{
    entry *e = find(c, key);
    if (!e || e->rows != rows || e->width != width) {
        c->st.misses++;
        return false;
    }
    memcpy(out, e->data, e->bytes);
    unlink_entry(c, e);
    push_front(c, e);
    c->st.hits++;
    return true;
}

void omnic__encoder_cache_put(omnic__encoder_cache *c, const uint8_t key[32], int64_t rows, int64_t width,
                              const float *data)
{
    size_t n;
    if (rows <= 0 || width <= 0 || !omnic_size_mul(&n, (size_t)rows, (size_t)width) ||
        !omnic_size_mul(&n, n, sizeof(float)) || n > c->max_bytes)
        return;
    entry *old = find(c, key);
    if (old) drop(c, old); /* the same content again (a request that raced its twin): replace */
    while (c->tail && c->st.bytes + n > c->max_bytes) {
        drop(c, c->tail);
        c->st.evictions++;
    }
    entry *e = omnic_alloc_array(1, sizeof *e);
    float *copy = e ? omnic_malloc(n) : NULL;
    if (!copy) {
        omnic_free(e);
        return;
    }
    memcpy(copy, data, n);
    memcpy(e->key, key, 32);
    e->rows = rows, e->width = width, e->bytes = n, e->data = copy;
    push_front(c, e);
    c->st.bytes += n;
    c->st.entries++;
}

void omnic__encoder_cache_stats_get(const omnic__encoder_cache *c, omnic__encoder_cache_stats *out)
{
    *out = c ? c->st : (omnic__encoder_cache_stats){0};
}
