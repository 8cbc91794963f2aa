/* Open-addressing hash maps for the tokenizer: byte string -> int32 (vocabularies) and
 * uint64 -> uint64 (BPE merge ranks). Linear probing, load factor <= 1/2. */
#ifndef OMNIC_TOKENIZER_TOK_MAP_H
#define OMNIC_TOKENIZER_TOK_MAP_H

#include "tokenizer/tok_util.h"

typedef struct omnic__strmap_ent {
    uint64_t off; /* key bytes in pool */
    uint32_t len; /* UINT32_MAX: empty slot */
    uint32_t h32; /* high half of the key's hash */
    int32_t val;
} omnic__strmap_ent;

/* Keys are copied into the map's own pool. Zero-initialized is an empty map. */
typedef struct omnic__strmap {
    omnic__tbuf pool;
    omnic__strmap_ent *tab; /* owned, [mask + 1] */
    size_t mask;
    size_t n;
} omnic__strmap;

void omnic__strmap_deinit(omnic__strmap *m);
/* Inserts key (borrowed, n bytes, n < UINT32_MAX) -> v, or overwrites the value of an existing key.
 * *existed (may be NULL) tells which; *old (may be NULL) gets the previous value. */
omnic_status omnic__strmap_put(omnic__strmap *m, const char *key, size_t n, int32_t v, bool *existed,
                               int32_t *old, omnic_err *err);
/* True and *v set when key is present. */
bool omnic__strmap_get(const omnic__strmap *m, const char *key, size_t n, int32_t *v);
/* Bytes of an entry's key (valid until the next put). */
static inline const char *omnic__strmap_key(const omnic__strmap *m, const omnic__strmap_ent *e)
{
    return m->pool.p + e->off;
}

/* uint64 -> uint64; the key UINT64_MAX is reserved. Zero-initialized is an empty map. */
typedef struct omnic__u64map_ent {
    uint64_t key;
    uint64_t val;
} omnic__u64map_ent;

typedef struct omnic__u64map {
    omnic__u64map_ent *tab; /* owned, [mask + 1] */
    size_t mask;
    size_t n;
} omnic__u64map;

void omnic__u64map_deinit(omnic__u64map *m);
/* Presizes for n keys. */
omnic_status omnic__u64map_reserve(omnic__u64map *m, size_t n, omnic_err *err);
/* Inserts or overwrites (the last value put for a key wins). */
omnic_status omnic__u64map_put(omnic__u64map *m, uint64_t key, uint64_t val, omnic_err *err);
static inline bool omnic__u64map_get(const omnic__u64map *m, uint64_t key, uint64_t *val)
{
    if (!m->tab) return false;
    size_t i = (size_t)omnic__hash_u64(key) & m->mask;
    for (;;) {
        const omnic__u64map_ent *e = &m->tab[i];
        if (e->key == key) {
            *val = e->val;
            return true;
        }
        if (e->key == UINT64_MAX) return false;
        i = (i + 1) & m->mask;
    }
}

#endif
