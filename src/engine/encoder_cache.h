/* The encoder cache (DESIGN.md 6): projected media rows of earlier requests, keyed by the
 * content key of the encoder's input (omnic__media_item_key: a SHA-256 over the preprocessed
 * tensor, its shape and grid, so it covers the decoded media and every processor parameter
 * that changed it), least recently used first out past a budget in bytes. One cache per
 * engine, so per loaded bundle: an entry of another checkpoint can never be found. Used by
 * the scheduler thread only, so no lock. */
#ifndef OMNIC_ENGINE_ENCODER_CACHE_H
#define OMNIC_ENGINE_ENCODER_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

typedef struct omnic__encoder_cache omnic__encoder_cache;

typedef struct omnic__encoder_cache_stats {
    uint64_t hits, misses, evictions;
    size_t bytes, entries;
} omnic__encoder_cache_stats;

/* A cache of at most max_bytes of rows (> 0). Returns owned *out. E_NOMEM. */
omnic_status omnic__encoder_cache_create(size_t max_bytes, omnic__encoder_cache **out, omnic_err *err);
/* NULL ok. */
void omnic__encoder_cache_destroy(omnic__encoder_cache *c);

/* On a hit (an entry of key with exactly rows x width floats), copies them into out, marks the
 * entry most recently used and returns true; else counts a miss and returns false. */
bool omnic__encoder_cache_get(omnic__encoder_cache *c, const uint8_t key[32], int64_t rows, int64_t width,
                              float *out);
/* Stores a copy of rows x width floats under key, evicting the least recently used entries to
 * fit; an entry larger than the whole budget, or out of memory, is simply not stored. */
void omnic__encoder_cache_put(omnic__encoder_cache *c, const uint8_t key[32], int64_t rows, int64_t width,
                              const float *data);

void omnic__encoder_cache_stats_get(const omnic__encoder_cache *c, omnic__encoder_cache_stats *out);

#endif
