/* Open-addressing hash maps used by the tokenizer (vocabularies, merge ranks). */
#include "tokenizer/tok_map.h"

#include <string.h>

#define EMPTY_LEN UINT32_MAX

void omnic__strmap_deinit(omnic__strmap *m)
{
    if (!m) return;
    omnic__tbuf_free(&m->pool);
    omnic_free(m->tab);
    memset(m, 0, sizeof *m);
}

static omnic_status strmap_rehash(omnic__strmap *m, size_t cap, omnic_err *err)
{
    omnic__strmap_ent *tab = omnic_alloc_array(cap, sizeof *tab);
    if (!tab) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory for a map of %zu slots", cap);
    for (size_t i = 0; i < cap; i++)
        tab[i].len = EMPTY_LEN;
    size_t mask = cap - 1;
    for (size_t i = 0; m->tab && i <= m->mask; i++) {
        const omnic__strmap_ent *e = &m->tab[i];
        if (e->len == EMPTY_LEN) continue;
        uint64_t h = omnic__hash_bytes(m->pool.p + e->off, e->len);
        size_t j = (size_t)h & mask;
        while (tab[j].len != EMPTY_LEN)
            j = (j + 1) & mask;
        tab[j] = *e;
    }
    omnic_free(m->tab);
    m->tab = tab;
    m->mask = mask;
    return OMNIC_OK;
}

static const omnic__strmap_ent *strmap_find(const omnic__strmap *m, const char *key, size_t n, uint64_t h,
                                            size_t *slot)
{
    size_t i = (size_t)h & m->mask;
    uint32_t h32 = (uint32_t)(h >> 32);
    for (;;) {
        const omnic__strmap_ent *e = &m->tab[i];
        if (e->len == EMPTY_LEN) {
            *slot = i;
            return NULL;
        }
        if (e->h32 == h32 && e->len == n && (n == 0 || !memcmp(m->pool.p + e->off, key, n))) {
            *slot = i;
            return e;
        }
        i = (i + 1) & m->mask;
    }
}

omnic_status omnic__strmap_put(omnic__strmap *m, const char *key, size_t n, int32_t v, bool *existed,
                               int32_t *old, omnic_err *err)
{
    if (n >= EMPTY_LEN)
        return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "tokenizer: map key of %zu bytes is too long", n);
    if (!m->tab || (m->n + 1) * 2 > m->mask + 1) {
        size_t cap = m->tab ? (m->mask + 1) * 2 : 64;
        OMNIC_TRY(strmap_rehash(m, cap, err));
    }
    uint64_t h = omnic__hash_bytes(key, n);
    size_t slot;
    const omnic__strmap_ent *e = strmap_find(m, key, n, h, &slot);
    if (e) {
        if (existed) *existed = true;
        if (old) *old = e->val;
        m->tab[slot].val = v;
        return OMNIC_OK;
    }
    size_t off = m->pool.len;
    OMNIC_TRY(omnic__tbuf_put(&m->pool, key, n, err));
    m->tab[slot] = (omnic__strmap_ent){.off = off, .len = (uint32_t)n, .h32 = (uint32_t)(h >> 32), .val = v};
    m->n++;
    if (existed) *existed = false;
    return OMNIC_OK;
}

bool omnic__strmap_get(const omnic__strmap *m, const char *key, size_t n, int32_t *v)
{
    if (!m->tab || n >= EMPTY_LEN) return false;
    size_t slot;
    const omnic__strmap_ent *e = strmap_find(m, key, n, omnic__hash_bytes(key, n), &slot);
    if (!e) return false;
    *v = e->val;
    return true;
}

void omnic__u64map_deinit(omnic__u64map *m)
{
    if (!m) return;
    omnic_free(m->tab);
    memset(m, 0, sizeof *m);
}

static omnic_status u64map_rehash(omnic__u64map *m, size_t cap, omnic_err *err)
{
    omnic__u64map_ent *tab = omnic_alloc_array(cap, sizeof *tab);
    if (!tab) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "tokenizer: out of memory for a map of %zu slots", cap);
    for (size_t i = 0; i < cap; i++)
        tab[i].key = UINT64_MAX;
    size_t mask = cap - 1;
    for (size_t i = 0; m->tab && i <= m->mask; i++) {
        if (m->tab[i].key == UINT64_MAX) continue;
        size_t j = (size_t)omnic__hash_u64(m->tab[i].key) & mask;
        while (tab[j].key != UINT64_MAX)
            j = (j + 1) & mask;
        tab[j] = m->tab[i];
    }
    omnic_free(m->tab);
    m->tab = tab;
    m->mask = mask;
    return OMNIC_OK;
}

omnic_status omnic__u64map_reserve(omnic__u64map *m, size_t n, omnic_err *err)
{
    size_t cap = 64;
    while (cap / 2 < n) {
        if (cap > SIZE_MAX / 4)
            return OMNIC_FAIL(err, OMNIC_E_TOO_LARGE, "tokenizer: map of %zu keys is too large", n);
        cap *= 2;
    }
    if (m->tab && cap <= m->mask + 1) return OMNIC_OK;
    return u64map_rehash(m, cap, err);
}

omnic_status omnic__u64map_put(omnic__u64map *m, uint64_t key, uint64_t val, omnic_err *err)
{
    if (!m->tab || (m->n + 1) * 2 > m->mask + 1)
        OMNIC_TRY(omnic__u64map_reserve(m, m->n + 1 > 32 ? (m->n + 1) * 2 : 32, err));
    size_t i = (size_t)omnic__hash_u64(key) & m->mask;
    for (;;) {
        omnic__u64map_ent *e = &m->tab[i];
        if (e->key == key) {
            e->val = val;
            return OMNIC_OK;
        }
        if (e->key == UINT64_MAX) {
            e->key = key;
            e->val = val;
            m->n++;
            return OMNIC_OK;
        }
        i = (i + 1) & m->mask;
    }
}
