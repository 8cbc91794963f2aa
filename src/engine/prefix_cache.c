/* The prefix cache over a blob cache: one blob per block, holding layer 0's K rows, layer 0's V
 * rows, layer 1's K rows, ... of the block (block x n_kv x head_dim elements of the pool dtype
 * each), copied to and from the slot's rows of the KV pool. */
#include <string.h>

#include "core/sha256.h"
#include "engine/blob_cache.h"
#include "engine/prefix_cache.h"

struct omnic__prefix_cache {
    omnic__blob_cache *blobs; /* owned */
    int64_t block;            /* rows per block */
    int n_layers;
    size_t row_bytes;   /* one row of one layer's K (and of its V) */
    size_t block_bytes; /* n_layers x 2 x block x row_bytes */
    uint8_t *buf;       /* owned [block_bytes]: a block gathered from the pool before it is stored */
    uint8_t root[32];   /* SHA-256 of the format tag and the bundle identity */
    uint64_t reused_rows;
};

omnic_status omnic__prefix_cache_create(size_t max_bytes, int64_t block, const omnic__kv_pool *kv,
                                        const char *identity, omnic__prefix_cache **out, omnic_err *err)
{
    if (block < 1 || block > kv->capacity)
        return OMNIC_FAIL(err, OMNIC_E_INVALID, "prefix cache: blocks of %lld rows for a context of %lld",
                          (long long)block, (long long)kv->capacity);
    omnic__prefix_cache *c = omnic_alloc_array(1, sizeof *c);
    if (!c) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for the prefix cache");
    c->block = block;
    c->n_layers = kv->n_layers;
    c->row_bytes = (size_t)(kv->n_kv * kv->head_dim) * omnic_dtype_size(kv->dtype);
    c->block_bytes = (size_t)kv->n_layers * 2 * (size_t)block * c->row_bytes;
    c->buf = omnic_malloc(c->block_bytes);
    omnic_status s = c->buf ? omnic__blob_cache_create(max_bytes, &c->blobs, err)
                            : OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for the prefix cache's staging");
    if (s != OMNIC_OK) {
        omnic__prefix_cache_destroy(c);
        return s;
    }
    omnic__sha256 h;
    omnic__sha256_init(&h);
    omnic__sha256_field(&h, "omnic.prefix_cache/1");
    omnic__sha256_field(&h, identity);
    omnic__sha256_final(&h, c->root);
    *out = c;
    return OMNIC_OK;
}

void omnic__prefix_cache_destroy(omnic__prefix_cache *c)
{
    if (!c) return;
    omnic__blob_cache_destroy(c->blobs);
    omnic_free(c->buf);
    omnic_free(c);
}

int64_t omnic__prefix_cache_block(const omnic__prefix_cache *c)
{
    return c->block;
}

/* Row r of an embeddings prompt: its embedding bytes and rope coordinates. */
static void hash_row(omnic__sha256 *h, const omnic__prepared_prefill *pp, int64_t r)
{
    omnic__sha256_update(h, pp->embeds + r * pp->hidden, (size_t)pp->hidden * sizeof *pp->embeds);
    if (pp->pos_mode == OMNIC_POS_MROPE)
        for (int a = 0; a < 3; a++)
            omnic__sha256_update(h, &pp->positions[a * pp->n_rows + r], sizeof *pp->positions);
    else
        omnic__sha256_update(h, &pp->positions[r], sizeof *pp->positions);
    if (pp->row_ids) omnic__sha256_update(h, &pp->row_ids[r], sizeof *pp->row_ids);
}

int64_t omnic__prefix_cache_keys(const omnic__prefix_cache *c, const int32_t *tokens,
                                 const omnic__prepared_prefill *pp, int64_t n, int32_t rope_long,
                                 uint8_t (*keys)[32])
{
    const int64_t B = c->block, n_blocks = n / B;
    uint8_t prev[32];
    omnic__sha256 h;
    omnic__sha256_init(&h);
    omnic__sha256_update(&h, c->root, 32);
    omnic__sha256_update(&h, &rope_long, sizeof rope_long);
    omnic__sha256_update(&h, pp ? "rows" : "ids", pp ? 4 : 3);
    omnic__sha256_final(&h, prev);
    int64_t span = 0; /* the first span that may still cross a block end */
    for (int64_t i = 0; i < n_blocks; i++) {
        const int64_t r0 = i * B, r1 = r0 + B;
        omnic__sha256_init(&h);
        omnic__sha256_update(&h, prev, 32);
        if (tokens) omnic__sha256_update(&h, tokens + r0, (size_t)B * sizeof *tokens);
        for (int64_t r = r0; !tokens && r < r1; r++)
            hash_row(&h, pp, r);
        while (pp && span < pp->n_spans && pp->spans[span].end <= r1)
            span++;
        if (pp && span < pp->n_spans && pp->spans[span].begin < r1) /* the span's rows after the block */
            for (int64_t r = r1; r < pp->spans[span].end; r++)
                hash_row(&h, pp, r);
        omnic__sha256_final(&h, keys[i]);
        memcpy(prev, keys[i], 32);
    }
    return n_blocks;
}

/* The blob layout's parts (layer 0 K, layer 0 V, layer 1 K, ...) of rows [row0, row0 + block) of
 * kv: part p of blob at p * block * row_bytes. */
static uint8_t *pool_rows(const omnic__prefix_cache *c, const omnic__kv_pool *kv, int part, int64_t row0)
{
    const omnic__tensor *t = part % 2 ? &kv->v[part / 2] : &kv->k[part / 2];
    return (uint8_t *)t->data + (size_t)row0 * c->row_bytes;
}

int64_t omnic__prefix_cache_restore(omnic__prefix_cache *c, const uint8_t (*keys)[32], int64_t max_blocks,
                                    omnic__kv_pool *kv, int slot)
{
    const int64_t base = (int64_t)slot * kv->capacity;
    const size_t part = (size_t)c->block * c->row_bytes;
    int64_t k = 0;
    for (const uint8_t *b; k < max_blocks && (b = omnic__blob_cache_peek(c->blobs, keys[k], c->block_bytes));
         k++)
        for (int p = 0; p < 2 * c->n_layers; p++) /* straight from the blob into the slot's rows */
            memcpy(pool_rows(c, kv, p, base + k * c->block), b + (size_t)p * part, part);
    kv->len[slot] = k * c->block;
    c->reused_rows += (uint64_t)(k * c->block);
    return k * c->block;
}

void omnic__prefix_cache_store(omnic__prefix_cache *c, const uint8_t (*keys)[32], int64_t from,
                               int64_t n_blocks, const omnic__kv_pool *kv, int slot)
{
    const int64_t base = (int64_t)slot * kv->capacity;
    for (int64_t i = from; i < n_blocks; i++) {
        if (omnic__blob_cache_has(c->blobs, keys[i], c->block_bytes)) continue;
        const size_t part = (size_t)c->block * c->row_bytes;
        for (int p = 0; p < 2 * c->n_layers; p++) /* the layers' rows gathered into one blob */
            memcpy(c->buf + (size_t)p * part, pool_rows(c, kv, p, base + i * c->block), part);
        omnic__blob_cache_put(c->blobs, keys[i], c->block_bytes, c->buf);
    }
}

void omnic__prefix_cache_stats_get(const omnic__prefix_cache *c, omnic__prefix_stats *out)
{
    *out = (omnic__prefix_stats){0};
    if (!c) return;
    omnic__blob_cache_stats b;
    omnic__blob_cache_stats_get(c->blobs, &b);
    *out = (omnic__prefix_stats){.hits = b.hits,
                                 .misses = b.misses,
                                 .evictions = b.evictions,
                                 .reused_rows = c->reused_rows,
                                 .bytes = b.bytes,
                                 .entries = b.entries};
}
