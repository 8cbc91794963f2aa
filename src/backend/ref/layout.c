/* Reference gathers and copies: get_rows, concat, slice, permute, cpy. All bit-exact:
 * they move bytes or widen exactly, except cpy to f16/bf16, which rounds to nearest even
 * through core/dtype.h. */
#include <string.h>

#include "backend/ref/ref.h"

/* Elements of dims[from..to-1] (1 when empty). */
static int64_t span(const omnic__tensor *t, int from, int to)
{
    int64_t n = 1;
    for (int i = from; i < to; i++)
        n *= t->dims[i];
    return n;
}

/* dst[T, H] f32 = table[ids[t], :]; table w* or quantized [V, H] (src[0]), ids i32 [T] (src[1]). */
void omnic__ref_get_rows(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *table = n->src[0];
    const int32_t *ids = n->src[1]->data;
    int64_t T = omnic__tensor_nelem(n->src[1]), H = omnic__tensor_cols(table);
    float *D = n->dst->data;

    int64_t lo, hi;
    omnic__split_rows(T, ith, nth, &lo, &hi);
    for (int64_t t = lo; t < hi; t++) {
        int64_t r = (int64_t)ids[t] - n->ip[0];
        bool in = r >= 0 && r < table->dims[0];
        for (int64_t h = 0; h < H; h++)
            D[t * H + h] = in || !n->src[2] ? (float)omnic__ref_ld_rc(table, in ? r : 0, h)
                                            : ((const float *)n->src[2]->data)[t * H + h];
    }
}

/* dst = concat(src[0], src[1]) along dim ip[0]. Viewed as [outer, dim, inner]: each
 * outer index copies a's block, then b's block. Rows to split are the outer indices. */
void omnic__ref_concat(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *a = n->src[0], *b = n->src[1];
    int d = n->ip[0];
    size_t es = omnic_dtype_size(a->dtype);
    int64_t outer = span(a, 0, d);
    size_t inner = (size_t)span(a, d + 1, a->ndim) * es;
    size_t na = (size_t)a->dims[d] * inner, nb = (size_t)b->dims[d] * inner;
    const uint8_t *A = a->data, *B = b->data;
    uint8_t *D = n->dst->data;

    int64_t lo, hi;
    omnic__split_rows(outer, ith, nth, &lo, &hi);
    for (int64_t o = lo; o < hi; o++) {
        memcpy(D + (size_t)o * (na + nb), A + (size_t)o * na, na);
        memcpy(D + (size_t)o * (na + nb) + na, B + (size_t)o * nb, nb);
    }
}

/* dst = src[0][..., ip[1] : ip[1] + dst->dims[d], ...] along dim d = ip[0]. */
void omnic__ref_slice(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *src = n->src[0];
    int d = n->ip[0];
    size_t es = omnic_dtype_size(src->dtype);
    int64_t outer = span(src, 0, d);
    size_t inner = (size_t)span(src, d + 1, src->ndim) * es;
    size_t nsrc = (size_t)src->dims[d] * inner, ndst = (size_t)n->dst->dims[d] * inner;
    size_t start = (size_t)n->ip[1] * inner;
    const uint8_t *S = src->data;
    uint8_t *D = n->dst->data;

    int64_t lo, hi;
    omnic__split_rows(outer, ith, nth, &lo, &hi);
    for (int64_t o = lo; o < hi; o++)
        memcpy(D + (size_t)o * ndst, S + (size_t)o * nsrc + start, ndst);
}

/* dst.dims[k] = src.dims[perm[k]], perm = ip[0..ndim-1]; dst contiguous. Element
 * (i_0, ..., i_{n-1}) of dst is the src element whose index along dim perm[k] is i_k.
 * Rows to split are dst rows (all dims but the last). */
void omnic__ref_permute(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *src = n->src[0];
    const omnic__tensor *dst = n->dst;
    int nd = dst->ndim;
    size_t es = omnic_dtype_size(src->dtype);
    int64_t sstride[OMNIC_MAX_DIMS]; /* src element strides */
    int64_t step[OMNIC_MAX_DIMS];    /* src stride taken by one step along dst dim k */
    int64_t acc = 1;
    for (int k = nd - 1; k >= 0; k--) {
        sstride[k] = acc;
        acc *= src->dims[k];
    }
    for (int k = 0; k < nd; k++)
        step[k] = sstride[n->ip[k]];
    int64_t rows = omnic__tensor_rows(dst), cols = omnic__tensor_cols(dst);
    const uint8_t *S = src->data;
    uint8_t *D = dst->data;

    int64_t lo, hi;
    omnic__split_rows(rows, ith, nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t base = 0, rem = r; /* src offset of dst element (r, 0) */
        for (int k = nd - 2; k >= 0; k--) {
            base += (rem % dst->dims[k]) * step[k];
            rem /= dst->dims[k];
        }
        int64_t cstep = nd ? step[nd - 1] : 0;
        for (int64_t c = 0; c < cols; c++)
            memcpy(D + (size_t)(r * cols + c) * es, S + (size_t)(base + c * cstep) * es, es);
    }
}

/* dst = src converted to dst->dtype (f32/f16/bf16 any direction; the same dtype copies
 * bytes, any dtype). Rows to split are elements. */
void omnic__ref_cpy(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *src = n->src[0];
    omnic__tensor *dst = n->dst;
    int64_t N = omnic__tensor_nelem(src);

    int64_t lo, hi;
    omnic__split_rows(N, ith, nth, &lo, &hi);
    if (src->dtype == dst->dtype) {
        size_t es = omnic_dtype_size(src->dtype);
        memcpy((uint8_t *)dst->data + (size_t)lo * es, (const uint8_t *)src->data + (size_t)lo * es,
               (size_t)(hi - lo) * es);
        return;
    }
    for (int64_t i = lo; i < hi; i++) {
        float f = (float)omnic__ref_ld(src->data, src->dtype, i);
        switch (dst->dtype) {
        case OMNIC_DTYPE_F16:
            ((uint16_t *)dst->data)[i] = omnic__f32_to_f16(f);
            break;
        case OMNIC_DTYPE_BF16:
            ((uint16_t *)dst->data)[i] = omnic__f32_to_bf16(f);
            break;
        default:
            ((float *)dst->data)[i] = f;
            break;
        }
    }
}

/* dst row idx[t] = src row t (f32) converted to dst's dtype; rows of src split across threads. */
void omnic__ref_set_rows(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__tensor *src = n->src[0]; /* [T, ...] f32 */
    const int32_t *idx = n->src[1]->data; /* [T] i32 */
    omnic__tensor *dst = n->dst;          /* [R, ...] f32/f16/bf16, updated in place */
    int64_t T = src->dims[0], C = omnic__tensor_nelem(src) / (T ? T : 1);
    const float *S = src->data;
    int64_t lo, hi;
    omnic__split_rows(T, ith, nth, &lo, &hi);
    for (int64_t t = lo; t < hi; t++) {
        int64_t r = idx[t];
        for (int64_t c = 0; c < C; c++) {
            float f = S[t * C + c];
            switch (dst->dtype) {
            case OMNIC_DTYPE_F16:
                ((uint16_t *)dst->data)[r * C + c] = omnic__f32_to_f16(f);
                break;
            case OMNIC_DTYPE_BF16:
                ((uint16_t *)dst->data)[r * C + c] = omnic__f32_to_bf16(f);
                break;
            default:
                ((float *)dst->data)[r * C + c] = f;
                break;
            }
        }
    }
}
