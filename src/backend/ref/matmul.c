/* Reference matmul and patch embedding: dot products accumulated in double over
 * weights widened exactly from f32/f16/bf16, each output rounded to f32 once. */
#include "backend/ref/ref.h"

static bool is_quant(omnic_dtype t)
{
    return t == OMNIC_DTYPE_Q8_0 || t == OMNIC_DTYPE_Q4_0 || t == OMNIC_DTYPE_Q4_0X16 ||
           t == OMNIC_DTYPE_Q8_0X16;
}

/* Bytes of one quantized activation row: K int8 quants, then K / 32 f32 scales. */
static size_t act_row_bytes(int64_t K)
{
    return (size_t)K + (size_t)(K / OMNIC_QK) * sizeof(float);
}

/* dst[M, N] = a[M, K] . w[N, K]^T (+ bias[N]).
 * wdata: per thread, one widened weight row, K doubles; then, for quantized weights, the
 * q8 activation rows (act_row_bytes(K) each, row i written and read by the thread that
 * owns row i), whose dequantized values d * q enter the dot exactly. */
void omnic__ref_matmul(const omnic__node *n, int ith, int nth, void *wdata)
{
    const omnic__tensor *a = n->src[0];    /* [M, K] f32 (any leading dims) */
    const omnic__tensor *w = n->src[1];    /* [N, K] w* or quantized */
    const omnic__tensor *bias = n->src[2]; /* [N] f32 or NULL */
    int64_t M = omnic__tensor_rows(a), K = omnic__tensor_cols(a), N = w->dims[0];
    const float *A = a->data;
    float *D = n->dst->data; /* [M, N] */
    double *wrow = (double *)wdata + (size_t)ith * (size_t)K;
    uint8_t *act = (uint8_t *)wdata + (size_t)nth * (size_t)K * sizeof(double);
    const bool quant = is_quant(w->dtype);

    int64_t lo, hi;
    omnic__split_rows(M, ith, nth, &lo, &hi);
    if (quant)
        for (int64_t i = lo; i < hi; i++) {
            uint8_t *row = act + (size_t)i * act_row_bytes(K);
            omnic__quantize_act_q8(A + i * K, (int8_t *)row, (float *)(row + K), K);
        }
    for (int64_t j = 0; j < N; j++) {
        for (int64_t k = 0; k < K; k++)
            wrow[k] = omnic__ref_ld_rc(w, j, k);
        double b = bias ? ((const float *)bias->data)[j] : 0.0;
        for (int64_t i = lo; i < hi; i++) {
            double acc = 0.0;
            if (quant) {
                const uint8_t *row = act + (size_t)i * act_row_bytes(K);
                const int8_t *q = (const int8_t *)row;
                const float *d = (const float *)(row + K);
                for (int64_t k = 0; k < K; k++)
                    acc += (double)d[k / OMNIC_QK] * (double)q[k] * wrow[k];
            } else {
                for (int64_t k = 0; k < K; k++)
                    acc += (double)A[i * K + k] * wrow[k];
            }
            D[i * N + j] = (float)(acc + b);
        }
    }
}

size_t omnic__ref_matmul_wsize(const omnic__node *n, int nth)
{
    int64_t K = omnic__tensor_cols(n->src[0]);
    size_t bytes = (size_t)nth * (size_t)K * sizeof(double);
    if (is_quant(n->src[1]->dtype)) bytes += (size_t)omnic__tensor_rows(n->src[0]) * act_row_bytes(K);
    return bytes;
}

/* Conv2d with stride == kernel. dst[p, o] = sum_{c,ky,kx} img[c, py*ph+ky, px*pw+kx]
 * * w[o, c, ky, kx] + bias[o], p = py * (Wi/pw) + px.
 * wdata: per thread, one widened weight row (one output channel), C*ph*pw doubles. */
void omnic__ref_patch_embed(const omnic__node *n, int ith, int nth, void *wdata)
{
    const omnic__tensor *img = n->src[0];  /* [C, Hi, Wi] f32 */
    const omnic__tensor *w = n->src[1];    /* [O, C, ph, pw] w* */
    const omnic__tensor *bias = n->src[2]; /* [O] f32 or NULL */
    int64_t C = img->dims[0], Hi = img->dims[1], Wi = img->dims[2];
    int64_t O = w->dims[0], ph = w->dims[2], pw = w->dims[3];
    int64_t nx = Wi / pw, P = (Hi / ph) * nx, KK = C * ph * pw;
    const float *X = img->data;
    float *D = n->dst->data; /* [P, O] */
    double *wrow = (double *)wdata + (size_t)ith * (size_t)KK;

    int64_t lo, hi;
    omnic__split_rows(P, ith, nth, &lo, &hi);
    for (int64_t o = 0; o < O; o++) {
        omnic__ref_widen(w->data, w->dtype, o * KK, KK, wrow);
        double b = bias ? ((const float *)bias->data)[o] : 0.0;
        for (int64_t p = lo; p < hi; p++) {
            int64_t y0 = (p / nx) * ph, x0 = (p % nx) * pw;
            double acc = 0.0;
            for (int64_t c = 0; c < C; c++)
                for (int64_t ky = 0; ky < ph; ky++)
                    for (int64_t kx = 0; kx < pw; kx++)
                        acc += (double)X[(c * Hi + y0 + ky) * Wi + x0 + kx] * wrow[(c * ph + ky) * pw + kx];
            D[p * O + o] = (float)(acc + b);
        }
    }
}

size_t omnic__ref_patch_embed_wsize(const omnic__node *n, int nth)
{
    const omnic__tensor *w = n->src[1];
    return (size_t)nth * (size_t)(w->dims[1] * w->dims[2] * w->dims[3]) * sizeof(double);
}
