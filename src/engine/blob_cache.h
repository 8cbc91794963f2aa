/* A keyed cache of byte blobs (DESIGN.md 6): copies of data under a 32-byte content key, least
 * recently used first out past a budget in bytes. The engine keeps two: the encoder cache
 * (projected media rows keyed by omnic__media_item_key, a SHA-256 over the preprocessed tensor,
 * its shape and grid, so it covers the decoded media and every processor parameter that changed
 * it) and the prefix cache's KV blocks (engine/prefix_cache.h). One per engine, so per loaded
 * bundle: an entry of another checkpoint can never be found. Used by the scheduler thread only,
 * so no lock. */
#ifndef OMNIC_ENGINE_BLOB_CACHE_H
#define OMNIC_ENGINE_BLOB_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

typedef struct omnic__blob_cache omnic__blob_cache;

typedef struct omnic__blob_cache_stats {
    uint64_t hits, misses, evictions;
    size_t bytes, entries;
} omnic__blob_cache_stats;

/* A cache of at most max_bytes of blobs (> 0). Returns owned *out. E_NOMEM. */
omnic_status omnic__blob_cache_create(size_t max_bytes, omnic__blob_cache **out, omnic_err *err);
/* NULL ok. */
void omnic__blob_cache_destroy(omnic__blob_cache *c);

/* On a hit (an entry of key holding exactly n bytes), copies them into out, marks the entry most
 * recently used and returns true; else counts a miss and returns false. */
bool omnic__blob_cache_get(omnic__blob_cache *c, const uint8_t key[32], size_t n, void *out);
/* The n bytes held under key, borrowed until the next put (the entry becomes most recently
 * used; a hit), or NULL (a miss). */
const void *omnic__blob_cache_peek(omnic__blob_cache *c, const uint8_t key[32], size_t n);
/* omnic__blob_cache_peek for a blob of any size: its bytes in *n. */
const void *omnic__blob_cache_peek_any(omnic__blob_cache *c, const uint8_t key[32], size_t *n);
/* True when key holds n bytes (no copy, no count, no recency change). */
bool omnic__blob_cache_has(const omnic__blob_cache *c, const uint8_t key[32], size_t n);
/* Stores a copy of n bytes under key, evicting the least recently used entries to fit; an entry
 * larger than the whole budget, or out of memory, is simply not stored. */
void omnic__blob_cache_put(omnic__blob_cache *c, const uint8_t key[32], size_t n, const void *data);

void omnic__blob_cache_stats_get(const omnic__blob_cache *c, omnic__blob_cache_stats *out);

#endif
