/* The media memo: a locked blob cache of serialized items (header, then the input tensor). */
#include <pthread.h>
#include <string.h>

#include "core/alloc.h"
#include "core/sha256.h"
#include "engine/media_memo.h"

struct omnic__media_memo {
    pthread_mutex_t mu;
    omnic__blob_cache *c; /* guarded by mu */
};

/* A kept item: the item with input NULL, then the input's dtype and dims; its bytes follow. */
typedef struct memo_hdr {
    omnic__media_item item;
    int32_t dtype, ndim;
    int64_t dims[OMNIC_MAX_DIMS];
} memo_hdr;

omnic_status omnic__media_memo_create(size_t max_bytes, omnic__media_memo **out, omnic_err *err)
{
    omnic__media_memo *m = omnic_alloc_array(1, sizeof *m);
    if (!m) return OMNIC_FAIL(err, OMNIC_E_NOMEM, "out of memory for the media memo");
    omnic_status s = omnic__blob_cache_create(max_bytes, &m->c, err);
    if (s != OMNIC_OK) {
        omnic_free(m);
        return s;
    }
    pthread_mutex_init(&m->mu, NULL);
    *out = m;
    return OMNIC_OK;
}

void omnic__media_memo_destroy(omnic__media_memo *m)
{
    if (!m) return;
    omnic__blob_cache_destroy(m->c);
    pthread_mutex_destroy(&m->mu);
    omnic_free(m);
}

void omnic__media_memo_stats(omnic__media_memo *m, omnic__blob_cache_stats *out)
{
    if (!m) {
        *out = (omnic__blob_cache_stats){0};
        return;
    }
    pthread_mutex_lock(&m->mu);
    omnic__blob_cache_stats_get(m->c, out);
    pthread_mutex_unlock(&m->mu);
}

/* The source key: the processor's identity, the decode limits and the bytes. */
static void source_key(const omnic__media_proc *p, const uint8_t *bytes, size_t len,
                       const omnic__image_limits *limits, uint8_t key[32])
{
    omnic__sha256 h;
    omnic__sha256_init(&h);
    omnic__sha256_field(&h, "omnic.media_source/1");
    omnic__sha256_update(&h, p->ident, sizeof p->ident);
    int64_t lim[2] = {limits ? limits->max_pixels : -1, limits ? (int64_t)limits->max_decoder_bytes : -1};
    omnic__sha256_update(&h, lim, sizeof lim);
    omnic__sha256_update(&h, bytes, len);
    omnic__sha256_final(&h, key);
}

/* A copy of the kept item at blob d (n bytes) into *out. false: out of memory. */
static bool unpack(const uint8_t *d, size_t n, omnic__media_item *out)
{
    memo_hdr h;
    if (n < sizeof h) return false;
    memcpy(&h, d, sizeof h);
    omnic_err err;
    if (omnic__tensor_create(&h.item.input, (omnic_dtype)h.dtype, h.ndim, h.dims, &err) != OMNIC_OK)
        return false;
    size_t bytes = omnic__tensor_bytes(h.item.input);
    if (bytes != n - sizeof h) {
        omnic__tensor_destroy(h.item.input);
        return false;
    }
    memcpy(h.item.input->data, d + sizeof h, bytes);
    *out = h.item;
    return true;
}

static void keep(omnic__media_memo *memo, const uint8_t key[32], const omnic__media_item *it)
{
    if (!it->input) return;
    const size_t bytes = omnic__tensor_bytes(it->input), n = sizeof(memo_hdr) + bytes;
    memo_hdr h = {.item = *it, .dtype = it->input->dtype, .ndim = it->input->ndim};
    h.item.input = NULL;
    memcpy(h.dims, it->input->dims, sizeof h.dims);
    uint8_t *blob = omnic_malloc(n);
    if (!blob) return; /* not kept: a later repeat prepares again */
    memcpy(blob, &h, sizeof h);
    memcpy(blob + sizeof h, it->input->data, bytes);
    pthread_mutex_lock(&memo->mu);
    omnic__blob_cache_put(memo->c, key, n, blob);
    pthread_mutex_unlock(&memo->mu);
    omnic_free(blob);
}

omnic_status omnic__media_prepare_memo(omnic__media_memo *memo, const omnic__media_proc *p,
                                       const uint8_t *bytes, size_t len, const omnic__image_limits *limits,
                                       const atomic_bool *cancel, omnic__media_item *out,
                                       omnic__media_times *times, bool *hit, omnic_err *err)
{
    if (hit) *hit = false;
    if (!memo || !p || !p->has_ident)
        return omnic__media_prepare_timed(p, bytes, len, limits, cancel, out, times, err);
    uint8_t key[32];
    source_key(p, bytes, len, limits, key);
    pthread_mutex_lock(&memo->mu);
    size_t n = 0;
    const uint8_t *d = omnic__blob_cache_peek_any(memo->c, key, &n);
    bool got = d && unpack(d, n, out);
    pthread_mutex_unlock(&memo->mu);
    if (got) {
        if (times) *times = (omnic__media_times){0};
        if (hit) *hit = true;
        return OMNIC_OK;
    }
    OMNIC_TRY(omnic__media_prepare_timed(p, bytes, len, limits, cancel, out, times, err));
    keep(memo, key, out);
    return OMNIC_OK;
}
