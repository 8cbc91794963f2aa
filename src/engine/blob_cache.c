/* The blob cache: a doubly linked list in recency order, and an open-addressing index of the
 * entries by key (linear probing, tombstones on removal, rebuilt when it fills), so a lookup
 * costs O(1) however many small blocks a prefix cache holds. */
#include <string.h>

#include "engine/blob_cache.h"

typedef struct entry {
    uint8_t key[32];
    size_t bytes;
    void *data; /* owned [bytes] */
    struct entry *prev, *next;
} entry;

#define TOMB ((entry *)1)

struct omnic__blob_cache {
    size_t max_bytes;
    entry *head, *tail; /* most recently used first */
    entry **index;      /* owned [cap]: NULL empty, TOMB removed, else an entry */
    size_t cap, used;   /* used: live entries + tombstones */
    omnic__blob_cache_stats st;
};

static size_t slot_of(const uint8_t key[32], size_t cap)
{
    uint64_t h;
    memcpy(&h, key, sizeof h); /* a SHA-256: its first bytes are as good as any hash */
    return (size_t)(h & (cap - 1));
}

/* The index slot holding key, or NULL. */
static entry **lookup(const omnic__blob_cache *c, const uint8_t key[32])
{
    if (!c->cap) return NULL;
    for (size_t i = slot_of(key, c->cap), n = 0; n < c->cap; i = (i + 1) & (c->cap - 1), n++) {
        entry *e = c->index[i];
        if (!e) return NULL;
        if (e != TOMB && !memcmp(e->key, key, 32)) return &c->index[i];
    }
    return NULL;
}

/* Rebuilds the index at a capacity for twice the live entries (no tombstones). false: E_NOMEM. */
static bool reindex(omnic__blob_cache *c)
{
    size_t cap = 64;
    while (cap < 4 * (c->st.entries + 1))
        cap *= 2;
    entry **idx = omnic_alloc_array(cap, sizeof *idx);
    if (!idx) return false;
    for (entry *e = c->head; e; e = e->next) {
        size_t i = slot_of(e->key, cap);
        while (idx[i])
            i = (i + 1) & (cap - 1);
        idx[i] = e;
    }
    omnic_free(c->index);
    c->index = idx, c->cap = cap, c->used = c->st.entries;
    return true;
}

omnic_status omnic__blob_cache_create(size_t max_bytes, omnic__blob_cache **out, omnic_err *err)
{
    omnic__blob_cache *c = omnic_alloc_array(1, sizeof *c);
    if (!c || !reindex(c)) {
        omnic_free(c);
        return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for a cache");
    }
    c->max_bytes = max_bytes;
    *out = c;
    return OMNIC_OK;
}

static void unlink_entry(omnic__blob_cache *c, entry *e)
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

static void push_front(omnic__blob_cache *c, entry *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head) c->head->prev = e;
    c->head = e;
    if (!c->tail) c->tail = e;
}

static void drop(omnic__blob_cache *c, entry *e)
{
    entry **at = lookup(c, e->key);
    if (at) *at = TOMB;
    unlink_entry(c, e);
    c->st.bytes -= e->bytes;
    c->st.entries--;
    omnic_free(e->data);
    omnic_free(e);
}

void omnic__blob_cache_destroy(omnic__blob_cache *c)
{
    if (!c) return;
    while (c->head)
        drop(c, c->head);
    omnic_free(c->index);
    omnic_free(c);
}

static entry *find(const omnic__blob_cache *c, const uint8_t key[32])
{
    entry **at = lookup(c, key);
    return at ? *at : NULL;
}

bool omnic__blob_cache_has(const omnic__blob_cache *c, const uint8_t key[32], size_t n)
{
    const entry *e = find(c, key);
    return e && e->bytes == n;
}

const void *omnic__blob_cache_peek_any(omnic__blob_cache *c, const uint8_t key[32], size_t *n)
{
    entry *e = find(c, key);
    *n = e ? e->bytes : 0;
    return omnic__blob_cache_peek(c, key, *n);
}

const void *omnic__blob_cache_peek(omnic__blob_cache *c, const uint8_t key[32], size_t n)
{
    entry *e = find(c, key);
    if (!e || e->bytes != n) {
        c->st.misses++;
        return NULL;
    }
    unlink_entry(c, e);
    push_front(c, e);
    c->st.hits++;
    return e->data;
}

bool omnic__blob_cache_get(omnic__blob_cache *c, const uint8_t key[32], size_t n, void *out)
{
    const void *d = omnic__blob_cache_peek(c, key, n);
    if (d) memcpy(out, d, n);
    return d != NULL;
}

void omnic__blob_cache_put(omnic__blob_cache *c, const uint8_t key[32], size_t n, const void *data)
{
    if (!n || n > c->max_bytes) return;
    entry *old = find(c, key);
    if (old) drop(c, old); /* the same content again (a request that raced its twin): replace */
    while (c->tail && c->st.bytes + n > c->max_bytes) {
        drop(c, c->tail);
        c->st.evictions++;
    }
    if (4 * (c->used + 1) > 3 * c->cap && !reindex(c)) return;
    entry *e = omnic_alloc_array(1, sizeof *e);
    void *copy = e ? omnic_malloc(n) : NULL;
    if (!copy) {
        omnic_free(e);
        return;
    }
    memcpy(copy, data, n);
    memcpy(e->key, key, 32);
    e->bytes = n, e->data = copy;
    push_front(c, e);
    size_t i = slot_of(key, c->cap);
    while (c->index[i] && c->index[i] != TOMB)
        i = (i + 1) & (c->cap - 1);
    if (!c->index[i]) c->used++;
    c->index[i] = e;
    c->st.bytes += n;
    c->st.entries++;
}

void omnic__blob_cache_stats_get(const omnic__blob_cache *c, omnic__blob_cache_stats *out)
{
    *out = c ? c->st : (omnic__blob_cache_stats){0};
}
