/* The prefix cache: the KV rows of earlier prompts, reused when a new prompt starts with the
 * same rows (a repeated system prompt, a conversation's history, the same image at the start).
 * Prompts are cut into blocks of `block` rows; block i's key is a SHA-256 chain over the bundle
 * identity, the LongRoPE table the prompt's rows use, and every row of blocks 0..i (a token id,
 * or for an embeddings prompt the row's embedding bytes and rope coordinates, so media is
 * identified by what it became; a block that ends inside a bidirectional span also covers the
 * span's remaining rows, whose K/V it depends on). A block's entry holds every layer's K and V
 * rows of that block in the KV pool's dtype, in a blob cache with an LRU budget in bytes. Only
 * whole blocks are reused, and never a prompt's last row (its logits are needed), so the rest
 * of the prompt prefills as usual from the first row not restored. Scheduler thread only. */
#ifndef OMNIC_ENGINE_PREFIX_CACHE_H
#define OMNIC_ENGINE_PREFIX_CACHE_H

#include <stdint.h>

#include "mm/prepared.h"
#include "runtime/kv.h"

typedef struct omnic__prefix_cache omnic__prefix_cache;

typedef struct omnic__prefix_stats {
    uint64_t hits, misses, evictions; /* block lookups and drops */
    uint64_t reused_rows;             /* prompt rows restored instead of prefilled */
    size_t bytes, entries;
} omnic__prefix_stats;

/* A cache of at most max_bytes (> 0) of blocks of `block` rows of kv's layout, for the bundle
 * whose identity (hex) is given (it roots every key). Returns owned *out. E_NOMEM, E_INVALID. */
omnic_status omnic__prefix_cache_create(size_t max_bytes, int64_t block, const omnic__kv_pool *kv,
                                        const char *identity, omnic__prefix_cache **out, omnic_err *err);
/* NULL ok. */
void omnic__prefix_cache_destroy(omnic__prefix_cache *c);

/* Rows a block holds. */
int64_t omnic__prefix_cache_block(const omnic__prefix_cache *c);

/* The keys of the whole blocks of a prompt of n rows: tokens (n ids), or pp (an embeddings
 * prompt: its rows, positions and spans; tokens NULL); rope_long: whatever else decides the
 * rows' K/V (the engine passes the LongRoPE table + 2 * (the adapter id + 1)). keys: room for
 * n / block keys. Returns how many it wrote. */
int64_t omnic__prefix_cache_keys(const omnic__prefix_cache *c, const int32_t *tokens,
                                 const omnic__prepared_prefill *pp, int64_t n, int32_t rope_long,
                                 uint8_t (*keys)[32]);

/* Copies the longest run of cached blocks keys[0..k) (k <= max_blocks) into slot `slot` of kv
 * (rows [0, k * block)), sets its history length, and returns the rows restored (0: none). */
int64_t omnic__prefix_cache_restore(omnic__prefix_cache *c, const uint8_t (*keys)[32], int64_t max_blocks,
                                    omnic__kv_pool *kv, int slot);

/* Stores blocks [from, n_blocks) of slot `slot` of kv (their rows must hold the prompt's K/V)
 * that the cache does not already hold. */
void omnic__prefix_cache_store(omnic__prefix_cache *c, const uint8_t (*keys)[32], int64_t from,
                               int64_t n_blocks, const omnic__kv_pool *kv, int slot);

void omnic__prefix_cache_stats_get(const omnic__prefix_cache *c, omnic__prefix_stats *out);

#endif
