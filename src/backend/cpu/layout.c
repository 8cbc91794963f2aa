/* cpu data-movement ops: get_rows, concat, slice, permute, argmax, cpy. Copies are split
 * as byte or element ranges across threads (results are exact, so the cut is free);
 * dtype conversions use the ISA's row primitives; quantized get_rows tables dequantize
 * exactly through core/quant.h. */
#include <math.h>
#include <string.h>

#include "backend/cpu/ops.h"
#include "backend/cpu/vec.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/threadpool.h"

/* Bytes per unit of work when a copy is split by bytes. */
#define COPY_BLOCK 4096
/* Elements per conversion step (stack buffer). */
#define CVT_BLOCK 1024

static void byte_range(size_t total, int ith, int nth, size_t *lo, size_t *hi)
{
    int64_t b0, b1;
    omnic__split_rows((int64_t)((total + COPY_BLOCK - 1) / COPY_BLOCK), ith, nth, &b0, &b1);
    *lo = (size_t)b0 * COPY_BLOCK;
    *hi = (size_t)b1 * COPY_BLOCK;
    if (*hi > total) *hi = total;
}

void omnic__cpu_get_rows(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *tab = n->src[0];
    const int32_t *ids = n->src[1]->data;
    int64_t H = tab->dims[1], r0, r1;
    size_t row_bytes = omnic__dtype_row_bytes(tab->dtype, H);
    omnic__split_rows(omnic__tensor_nelem(n->src[1]), ith, nth, &r0, &r1);
    const omnic__tensor *base = n->src[2];
    for (int64_t t = r0; t < r1; t++) {
        float *out = (float *)n->dst->data + t * H;
        int64_t r = (int64_t)ids[t] - n->ip[0];
        if (r < 0 || r >= tab->dims[0]) { /* outside the table: the base row, or row 0 */
            if (base) {
                const float *b = (const float *)base->data + t * H;
                if (b != out) memcpy(out, b, (size_t)H * sizeof(float)); /* base may be dst */
                continue;
            }
            r = 0;
        }
        if (omnic__dtype_table[tab->dtype].is_quant)
            omnic__dequantize_weight_row(tab->dtype, tab->data, r, H, out); /* exact */
        else
            omnic__cpu_to_f32(tab->dtype, (const char *)tab->data + (size_t)r * row_bytes, out, H);
    }
}

static int64_t prod(const int64_t *dims, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= dims[i];
    return p;
}

/* Copies bytes [lo, hi) of a destination made of rows, each the concatenation of nparts
 * parts: part k of row o is the len[k] bytes at src[k] + o * stride[k]. */
static void gather_rows(char *dst, size_t lo, size_t hi, int nparts, const char *const *src,
                        const size_t *len, const size_t *stride)
{
    size_t row = 0;
    for (int k = 0; k < nparts; k++)
        row += len[k];
    if (row == 0) return;
    size_t o = lo / row, in = lo % row;
    while (lo < hi) {
        size_t start = 0;
        for (int k = 0; k < nparts && lo < hi; k++) {
            if (in < start + len[k]) {
                size_t off = in - start, cnt = len[k] - off;
                if (cnt > hi - lo) cnt = hi - lo;
                memcpy(dst + lo, src[k] + o * stride[k] + off, cnt);
                lo += cnt;
                in += cnt;
            }
            start += len[k];
        }
        o++;
        in = 0;
    }
}

void omnic__cpu_concat(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *a = n->src[0], *b = n->src[1], *d = n->dst;
    int dim = n->ip[0];
    size_t es = omnic_dtype_size(d->dtype);
    int64_t outer = prod(d->dims, 0, dim);
    size_t len[2] = {(size_t)prod(a->dims, dim, a->ndim) * es, (size_t)prod(b->dims, dim, b->ndim) * es};
    const char *src[2] = {a->data, b->data};
    size_t lo, hi;
    byte_range((size_t)outer * (len[0] + len[1]), ith, nth, &lo, &hi);
    gather_rows(d->data, lo, hi, 2, src, len, len);
}

void omnic__cpu_slice(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *s = n->src[0], *d = n->dst;
    int dim = n->ip[0];
    size_t es = omnic_dtype_size(d->dtype);
    int64_t outer = prod(d->dims, 0, dim);
    size_t inner = (size_t)prod(s->dims, dim + 1, s->ndim) * es;
    size_t len = (size_t)d->dims[dim] * inner, stride = (size_t)s->dims[dim] * inner;
    const char *src = (const char *)s->data + (size_t)n->ip[1] * inner;
    size_t lo, hi;
    byte_range((size_t)outer * len, ith, nth, &lo, &hi);
    gather_rows(d->data, lo, hi, 1, &src, &len, &stride);
}

/* dst.dims[k] = src.dims[perm[k]]; dst contiguous. Rows of dst (all dims but the last) are
 * split; the innermost dst dim walks src with stride sst[perm[nd-1]]. */
void omnic__cpu_permute(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *s = n->src[0], *d = n->dst;
    int nd = d->ndim;
    size_t es = omnic_dtype_size(d->dtype);
    if (nd == 0) {
        if (ith == 0) memcpy(d->data, s->data, es);
        return;
    }
    int64_t sst[OMNIC_MAX_DIMS] = {0}, dstr[OMNIC_MAX_DIMS] = {0}; /* src strides: per src dim, per dst dim */
    int64_t st = 1;
    for (int i = s->ndim - 1; i >= 0; i--) {
        sst[i] = st;
        st *= s->dims[i];
    }
    for (int k = 0; k < nd; k++)
        dstr[k] = sst[n->ip[k]];
    int64_t cols = d->dims[nd - 1], cstride = dstr[nd - 1], r0, r1;
    omnic__split_rows(prod(d->dims, 0, nd - 1), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t rem = r, off = 0;
        for (int k = nd - 2; k >= 0; k--) {
            off += (rem % d->dims[k]) * dstr[k];
            rem /= d->dims[k];
        }
        char *out = (char *)d->data + (size_t)(r * cols) * es;
        const char *in = (const char *)s->data + (size_t)off * es;
        switch (es) {
        case 4:
            for (int64_t c = 0; c < cols; c++)
                ((uint32_t *)out)[c] = ((const uint32_t *)in)[c * cstride];
            break;
        case 2:
            for (int64_t c = 0; c < cols; c++)
                ((uint16_t *)out)[c] = ((const uint16_t *)in)[c * cstride];
            break;
        default:
            for (int64_t c = 0; c < cols; c++)
                memcpy(out + (size_t)c * es, in + (size_t)(c * cstride) * es, es);
            break;
        }
    }
}

/* Index of the row's max; ties: lowest index; NaN never chosen unless the row is all NaN (0). */
void omnic__cpu_argmax(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *s = n->src[0];
    int64_t cols = omnic__tensor_cols(s), r0, r1;
    int32_t *out = n->dst->data;
    omnic__split_rows(omnic__tensor_rows(s), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const float *x = (const float *)s->data + r * cols;
        int64_t best = -1;
        float bv = 0.0f;
        for (int64_t j = 0; j < cols; j++) {
            if (isnan(x[j])) continue;
            if (best < 0 || x[j] > bv) {
                best = j;
                bv = x[j];
            }
        }
        out[r] = best < 0 ? 0 : (int32_t)best;
    }
}

void omnic__cpu_cpy(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    const omnic__tensor *s = n->src[0], *d = n->dst;
    if (s->dtype == d->dtype) {
        size_t lo, hi;
        byte_range(omnic__tensor_bytes(s), ith, nth, &lo, &hi);
        if (lo < hi) memcpy((char *)d->data + lo, (const char *)s->data + lo, hi - lo);
        return;
    }
    int64_t ne = omnic__tensor_nelem(s), b0, b1;
    omnic__split_rows((ne + CVT_BLOCK - 1) / CVT_BLOCK, ith, nth, &b0, &b1);
    size_t ses = omnic_dtype_size(s->dtype), des = omnic_dtype_size(d->dtype);
    float tmp[CVT_BLOCK];
    for (int64_t e = b0 * CVT_BLOCK; e < b1 * CVT_BLOCK && e < ne; e += CVT_BLOCK) {
        int64_t len = ne - e < CVT_BLOCK ? ne - e : CVT_BLOCK;
        const void *in = (const char *)s->data + (size_t)e * ses;
        void *out = (char *)d->data + (size_t)e * des;
        float *f = d->dtype == OMNIC_DTYPE_F32 ? out : tmp;
        omnic__cpu_to_f32(s->dtype, in, f, len);
        if (d->dtype == OMNIC_DTYPE_F16)
            v->f32_to_f16(f, out, len);
        else if (d->dtype == OMNIC_DTYPE_BF16)
            v->f32_to_bf16(f, out, len);
    }
}
