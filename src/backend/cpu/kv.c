/* KV pool writes: scatter rows of new K/V into their pool rows, converting to the
 * pool's dtype with the vectorized row converters. */
#include <string.h>

#include "backend/cpu/ops.h"
#include "backend/cpu/vec.h"
#include "core/threadpool.h"

void omnic__cpu_set_rows(const omnic__node *n, int ith, int nth, void *wdata)
{
    (void)wdata;
    const omnic__cpu_vec *v = omnic__cpu_vec_get();
    const omnic__tensor *src = n->src[0]; /* [T, ...] f32 */
    const int32_t *idx = n->src[1]->data; /* [T] i32 */
    const omnic__tensor *dst = n->dst;    /* [R, ...] f32/f16/bf16, updated in place */
    int64_t T = src->dims[0], C = T ? omnic__tensor_nelem(src) / T : 0;
    size_t des = omnic_dtype_size(dst->dtype);
    int64_t lo, hi;
    omnic__split_rows(T, ith, nth, &lo, &hi);
    for (int64_t t = lo; t < hi; t++) {
        const float *row = (const float *)src->data + t * C;
        void *out = (char *)dst->data + (size_t)idx[t] * (size_t)C * des;
        if (dst->dtype == OMNIC_DTYPE_F32)
            memcpy(out, row, (size_t)C * sizeof(float));
        else if (dst->dtype == OMNIC_DTYPE_F16)
            v->f32_to_f16(row, out, C);
        else
            v->f32_to_bf16(row, out, C);
    }
}
