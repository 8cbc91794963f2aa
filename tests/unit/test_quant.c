/* Block quantization (core/quant.c): ggml's reference rounding bit for bit (against a literal
 * transcription of ggml's quantize_row_q8_0_ref / quantize_row_q4_0_ref, and on crafted
 * blocks: ties, all-zero blocks, the largest magnitude negative or positive, first-of-equal
 * magnitudes), round-trip error bounds, exact dequantization; the q8 activation quantization
 * of the matmul contract in every cpu ISA against the scalar rule; and its error against f32
 * activations (the budget the contract test does not carry, since ref applies it too). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend/cpu/matmul_q.h"
#include "backend/cpu/simd.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/tensor.h"

static uint64_t rng_state = 1;
static uint64_t rng_u64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float rng_f(float lo, float hi)
{
    return lo + (hi - lo) * (float)((double)(rng_u64() >> 11) * 0x1p-53);
}

/* ---- ggml's reference quantizers, transcribed (ggml-quants.c) ---- */

#define GG_MAX(a, b) ((a) > (b) ? (a) : (b))
#define GG_MIN(a, b) ((a) < (b) ? (a) : (b))

static void gg_q8_0(const float *x, omnic__block_q8_0 *y, int64_t k)
{
    const int nb = (int)(k / 32);
    for (int i = 0; i < nb; i++) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) {
            const float v = x[i * 32 + j];
            amax = GG_MAX(amax, fabsf(v));
        }
        const float d = amax / ((1 << 7) - 1);
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = omnic__f32_to_f16(d);
        for (int j = 0; j < 32; ++j) {
            const float x0 = x[i * 32 + j] * id;
            y[i].qs[j] = (int8_t)roundf(x0);
        }
    }
}

static void gg_q4_0(const float *x, omnic__block_q4_0 *y, int64_t k)
{
    const int qk = 32, nb = (int)(k / qk);
    for (int i = 0; i < nb; i++) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < qk; j++) {
            const float v = x[i * qk + j];
            if (amax < fabsf(v)) {
                amax = fabsf(v);
                max = v;
            }
        }
        const float d = max / -8;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = omnic__f32_to_f16(d);
        for (int j = 0; j < qk / 2; ++j) {
            const float x0 = x[i * qk + 0 + j] * id;
            const float x1 = x[i * qk + qk / 2 + j] * id;
            const uint8_t xi0 = (uint8_t)GG_MIN(15, (int8_t)(x0 + 8.5f));
            const uint8_t xi1 = (uint8_t)GG_MIN(15, (int8_t)(x1 + 8.5f));
            y[i].qs[j] = xi0;
            y[i].qs[j] |= (uint8_t)(xi1 << 4);
        }
    }
}

/* ---- tests ---- */

static void test_layouts(void **state)
{
    (void)state;
    assert_int_equal(sizeof(omnic__block_q8_0), 34);
    assert_int_equal(sizeof(omnic__block_q4_0), 18);
    assert_int_equal(omnic_dtype_size(OMNIC_DTYPE_Q8_0), sizeof(omnic__block_q8_0));
    assert_int_equal(omnic_dtype_size(OMNIC_DTYPE_Q4_0), sizeof(omnic__block_q4_0));
    assert_int_equal(omnic_dtype_block_size(OMNIC_DTYPE_Q8_0), OMNIC_QK);
    assert_int_equal(omnic_dtype_block_size(OMNIC_DTYPE_Q4_0), OMNIC_QK);
    assert_string_equal(omnic_dtype_name(OMNIC_DTYPE_Q8_0), "q8_0");
    assert_string_equal(omnic_dtype_name(OMNIC_DTYPE_Q4_0), "q4_0");
    /* append-only numbering (hashed into bundle identities) */
    assert_int_equal(OMNIC_DTYPE_Q8_0, 7);
    assert_int_equal(OMNIC_DTYPE_Q4_0, 8);
}

/* Random rows of several scales and distributions: bytes equal to ggml's reference. */
static void test_matches_ggml_reference(void **state)
{
    (void)state;
    enum { K = 4096 };
    static float x[K];
    static omnic__block_q8_0 a8[K / 32], b8[K / 32];
    static omnic__block_q4_0 a4[K / 32], b4[K / 32];
    for (int rep = 0; rep < 64; rep++) {
        float scale = powf(10.0f, rng_f(-6, 4));
        for (int k = 0; k < K; k++) {
            float v = rng_f(-1, 1) * scale;
            if (rep % 4 == 1) v = roundf(v * 8.0f) / 8.0f;           /* many exact ties */
            if (rep % 4 == 2 && k % 7 == 0) v = 0.0f;                /* zeros */
            if (rep % 4 == 3) v = (k % 32 == 5) ? -scale : v * 0.5f; /* one dominant negative */
            x[k] = v;
        }
        if (rep % 8 == 0) memset(x + 64, 0, 32 * sizeof(float)); /* an all-zero block */
        omnic__quantize_row_q8_0(x, a8, K);
        gg_q8_0(x, b8, K);
        assert_memory_equal(a8, b8, sizeof a8);
        omnic__quantize_row_q4_0(x, a4, K);
        gg_q4_0(x, b4, K);
        assert_memory_equal(a4, b4, sizeof a4);
    }
}

static int q4_at(const omnic__block_q4_0 *b, int j)
{
    return j < 16 ? (b->qs[j] & 0x0f) : (b->qs[j - 16] >> 4);
}

static void test_crafted_blocks(void **state)
{
    (void)state;
    float x[32];
    omnic__block_q8_0 b8;
    omnic__block_q4_0 b4;
    float y[32];

    /* all zero: d = 0, q8 0, q4 nibble 8 (value 0) */
    memset(x, 0, sizeof x);
    omnic__quantize_row_q8_0(x, &b8, 32);
    assert_int_equal(b8.d, 0);
    for (int j = 0; j < 32; j++)
        assert_int_equal(b8.qs[j], 0);
    omnic__quantize_row_q4_0(x, &b4, 32);
    assert_true(b4.d == 0 || b4.d == 0x8000); /* d = 0 / -8 = -0, as in ggml */
    for (int j = 0; j < 32; j++)
        assert_int_equal(q4_at(&b4, j), 8);
    omnic__dequantize_row_q4_0(&b4, y, 32);
    for (int j = 0; j < 32; j++)
        assert_true(y[j] == 0.0f);

    /* q8_0 ties round away from zero: amax 127 gives d = 1, id = 1 */
    static const float t8[] = {127, 2.5f, -2.5f, 0.5f, -0.5f, 126.5f, -126.5f, 1.4999999f, -1.5f, 0};
    static const int w8[] = {127, 3, -3, 1, -1, 127, -127, 1, -2, 0};
    memset(x, 0, sizeof x);
    memcpy(x, t8, sizeof t8);
    omnic__quantize_row_q8_0(x, &b8, 32);
    assert_true(omnic__f16_to_f32(b8.d) == 1.0f);
    for (size_t j = 0; j < sizeof w8 / sizeof w8[0]; j++)
        assert_int_equal(b8.qs[j], w8[j]);

    /* q4_0, largest magnitude negative (-8): d = 1; q = min(15, trunc(x + 8.5)): ties round up */
    static const float t4[] = {-8, 7, 7.5f, -2.5f, 2.5f, -0.5f, 0.5f, -7.5f, 6.49f};
    static const int w4[] = {0, 15, 15, 6, 11, 8, 9, 1, 14};
    memset(x, 0, sizeof x);
    memcpy(x, t4, sizeof t4);
    omnic__quantize_row_q4_0(x, &b4, 32);
    assert_true(omnic__f16_to_f32(b4.d) == 1.0f);
    for (size_t j = 0; j < sizeof w4 / sizeof w4[0]; j++)
        assert_int_equal(q4_at(&b4, (int)j), w4[j]);
    for (int j = 9; j < 32; j++)
        assert_int_equal(q4_at(&b4, j), 8);

    /* largest magnitude positive (+8): d = -1; x = -8 maps to 16, clamped to 15 */
    memset(x, 0, sizeof x);
    x[0] = 8;
    x[20] = -8;
    x[21] = 3;
    omnic__quantize_row_q4_0(x, &b4, 32);
    assert_true(omnic__f16_to_f32(b4.d) == -1.0f);
    assert_int_equal(q4_at(&b4, 0), 0);
    assert_int_equal(q4_at(&b4, 20), 15);
    assert_int_equal(q4_at(&b4, 21), 5);
    omnic__dequantize_row_q4_0(&b4, y, 32);
    assert_true(y[0] == 8.0f && y[20] == -7.0f && y[21] == 3.0f);

    /* equal magnitudes: the first one fixes the sign of d */
    memset(x, 0, sizeof x);
    x[3] = 5;
    x[9] = -5;
    omnic__quantize_row_q4_0(x, &b4, 32);
    assert_true(omnic__f16_to_f32(b4.d) == -0.625f);
    x[3] = -5;
    x[9] = 5;
    omnic__quantize_row_q4_0(x, &b4, 32);
    assert_true(omnic__f16_to_f32(b4.d) == 0.625f);

    /* element order of q4_0: element j low nibble of byte j, j + 16 high nibble */
    for (int j = 0; j < 32; j++)
        x[j] = (float)(j % 16) - 8.0f;
    x[0] = -8;
    omnic__quantize_row_q4_0(x, &b4, 32);
    for (int j = 0; j < 16; j++)
        assert_int_equal(b4.qs[j], (uint8_t)(j | (j << 4)));

    /* dequantization is exactly f16(d) * q */
    for (int j = 0; j < 32; j++)
        x[j] = rng_f(-3, 3);
    omnic__quantize_row_q8_0(x, &b8, 32);
    omnic__dequantize_row(OMNIC_DTYPE_Q8_0, &b8, y, 32);
    for (int j = 0; j < 32; j++)
        assert_true(y[j] == omnic__f16_to_f32(b8.d) * (float)b8.qs[j]);
}

/* |x - dequant(quant(x))| per element within the rounding step (+ the f16 rounding of d):
 * q8_0 <= 0.5 d + 127 |d - f16(d)|; q4_0 <= |d| (the clamp at +8 costs a whole step) + 8 |d - f16(d)|.
 * Also the NMSE of uniform rows, printed for the record. */
static void test_round_trip_bounds(void **state)
{
    (void)state;
    enum { K = 32 * 256 };
    static float x[K], y[K];
    static omnic__block_q8_0 b8[K / 32];
    static omnic__block_q4_0 b4[K / 32];
    double se8 = 0, se4 = 0, sx = 0;
    for (int k = 0; k < K; k++)
        x[k] = rng_f(-1, 1) * (k % 97 == 0 ? 20.0f : 1.0f);
    omnic__quantize_row_q8_0(x, b8, K);
    omnic__dequantize_row_q8_0(b8, y, K);
    for (int k = 0; k < K; k++) {
        const float *blk = x + k / 32 * 32;
        float amax = 0;
        for (int j = 0; j < 32; j++)
            amax = fmaxf(amax, fabsf(blk[j]));
        const double d = amax / 127.0, d16 = omnic__f16_to_f32(b8[k / 32].d);
        const double err = fabs((double)x[k] - y[k]);
        assert_true(err <= 0.5 * d + 127 * fabs(d - d16) + 1e-12);
        se8 += err * err;
        sx += (double)x[k] * x[k];
    }
    omnic__quantize_row_q4_0(x, b4, K);
    omnic__dequantize_row_q4_0(b4, y, K);
    for (int k = 0; k < K; k++) {
        const float *blk = x + k / 32 * 32;
        float amax = 0, max = 0;
        for (int j = 0; j < 32; j++)
            if (amax < fabsf(blk[j])) amax = fabsf(blk[j]), max = blk[j];
        const double d = max / -8.0, d16 = omnic__f16_to_f32(b4[k / 32].d);
        const double err = fabs((double)x[k] - y[k]);
        assert_true(err <= fabs(d) + 8 * fabs(d - d16) + 1e-12);
        se4 += err * err;
    }
    print_message("round trip NMSE (uniform rows, 1%% outliers x20): q8_0 %.3g, q4_0 %.3g\n", se8 / sx,
                  se4 / sx);
    assert_true(se8 / sx < 3e-4); /* blocks holding an outlier dominate both */
    assert_true(se4 / sx < 6e-2);
}

/* Rows that are not whole blocks cannot be q8_0 / q4_0 tensors (loaders keep them as stored). */
static void test_bad_shapes(void **state)
{
    (void)state;
    omnic__tensor t;
    omnic_err err;
    int64_t bad[2] = {4, 80}, good[2] = {4, 96};
    assert_int_equal(omnic__tensor_init(&t, OMNIC_DTYPE_Q8_0, 2, bad, &err), OMNIC_E_INVALID);
    assert_non_null(strstr(err.msg, "32-element blocks"));
    assert_int_equal(omnic__tensor_init(&t, OMNIC_DTYPE_Q4_0, 2, bad, &err), OMNIC_E_INVALID);
    assert_int_equal(omnic__tensor_init(&t, OMNIC_DTYPE_Q4_0, 2, good, &err), OMNIC_OK);
    assert_int_equal(omnic__tensor_bytes(&t), 4 * 3 * 18);
    omnic__tensor *c = NULL;
    assert_int_equal(omnic__tensor_create(&c, OMNIC_DTYPE_Q8_0, 2, bad, &err), OMNIC_E_INVALID);
    assert_null(c);
}

/* The activation rule: scalar reference against a direct transcription; every cpu ISA the
 * machine has gives the same bytes (random rows, exact ties, zero blocks, huge and tiny). */
/* q4_0x16 / q8_0x16: packing 16 plain rows keeps every byte (same total size) and places them
 * as the layouts of core/quant.h say (checked byte by byte against the formulas); dequantizing
 * a row through omnic__dequantize_weight_row gives the plain row's values exactly. */
static void test_x16_layouts(void **state)
{
    (void)state;
    static const int64_t Ks[] = {32, 96, 1536};
    for (int q8 = 0; q8 < 2; q8++)
        for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
            const omnic_dtype pt = q8 ? OMNIC_DTYPE_Q8_0 : OMNIC_DTYPE_Q4_0;
            const omnic_dtype xt = q8 ? OMNIC_DTYPE_Q8_0X16 : OMNIC_DTYPE_Q4_0X16;
            const int64_t K = Ks[ki], nb = K / OMNIC_QK, N = 48;
            const size_t rb = omnic__dtype_row_bytes(pt, K), bb = rb / (size_t)nb;
            const size_t bsz = q8 ? OMNIC_Q8X16_BLOCK : OMNIC_Q4X16_BLOCK, qbytes = bb - 2;
            uint8_t *plain = malloc((size_t)N * rb), *packed = malloc((size_t)N * rb);
            float *x = malloc((size_t)K * sizeof *x), *y0 = malloc((size_t)K * sizeof *y0),
                  *y1 = malloc((size_t)K * sizeof *y1);
            assert_non_null(plain);
            assert_non_null(packed);
            assert_non_null(x);
            assert_non_null(y0);
            assert_non_null(y1);
            assert_int_equal(omnic__x16_plain(xt), pt);
            for (int64_t n = 0; n < N; n++) {
                for (int64_t k = 0; k < K; k++)
                    x[k] = rng_f(-3, 3);
                omnic__quantize_row(pt, x, plain + (size_t)n * rb, K);
            }
            for (int64_t g = 0; g < N / OMNIC_X16_ROWS; g++)
                omnic__x16_pack(xt, plain + (size_t)g * OMNIC_X16_ROWS * rb, packed + (size_t)g * OMNIC_X16_ROWS * rb,
                                K);
            assert_int_equal(omnic__dtype_row_bytes(xt, N * K), (size_t)N * rb);
            assert_int_equal(bsz, OMNIC_X16_ROWS * bb);
            for (int64_t n = 0; n < N; n++) {
                const int64_t r = n % OMNIC_X16_ROWS;
                const uint8_t *grp = packed + (size_t)(n - r) * rb;
                for (int64_t b = 0; b < nb; b++) {
                    const uint8_t *blk = plain + (size_t)n * rb + (size_t)b * bb;
                    const uint8_t *gb = grp + (size_t)b * bsz;
                    assert_memory_equal(gb + 16 * qbytes + 2 * r, blk, 2);
                    for (size_t j = 0; j < qbytes / 4; j++)
                        assert_memory_equal(gb + 64 * j + 4 * (size_t)r, blk + 2 + 4 * j, 4);
                }
                omnic__dequantize_row(pt, plain + (size_t)n * rb, y0, K);
                omnic__dequantize_weight_row(xt, packed, n, K, y1);
                assert_memory_equal(y0, y1, (size_t)K * sizeof *y0);
                omnic__dequantize_weight_row(pt, plain, n, K, y1);
                assert_memory_equal(y0, y1, (size_t)K * sizeof *y0);
            }
            free(plain);
            free(packed);
            free(x);
            free(y0);
            free(y1);
        }
}

static void test_act_quant_isas(void **state)
{
    (void)state;
    enum { K = 32 * 40 };
    static float x[K], dref[K / 32], dk[K / 32];
    static int8_t qref[K], qk[K];
    omnic__cpu_isa isa = omnic__cpu_isa_level();
    unsigned feat = omnic__cpu_features();
    int kinds = 0;
    for (int rep = 0; rep < 200; rep++) {
        float scale = powf(10.0f, rng_f(-20, 20));
        for (int k = 0; k < K; k++) {
            float v = rng_f(-1, 1) * scale;
            if (rep % 3 == 1) v = (float)((int)rng_f(-254, 254)) * 0.5f; /* halves: ties after scaling by 1 */
            if (rep % 5 == 2 && (k / 32) % 3 == 0) v = 0.0f;
            x[k] = v;
        }
        if (rep % 3 == 1)
            for (int b = 0; b < K / 32; b++)
                x[b * 32 + 7] = 127.0f; /* amax 127: id = 1, q = roundf(x) */
        omnic__quantize_act_q8(x, qref, dref, K);
        for (int b = 0; b < K / 32; b++) {
            float amax = 0;
            for (int j = 0; j < 32; j++)
                amax = fmaxf(amax, fabsf(x[b * 32 + j]));
            float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            assert_true(dref[b] == d);
            for (int j = 0; j < 32; j++)
                assert_int_equal(qref[b * 32 + j], (int8_t)roundf(x[b * 32 + j] * id));
        }
        kinds = 0;
        for (int kind = 0; kind < OMNIC_MQ_KIND_COUNT; kind++) {
            if (kind == OMNIC_MQ_AVX2 && isa < OMNIC_CPU_ISA_AVX2) continue;
            if (kind == OMNIC_MQ_VNNI && (isa < OMNIC_CPU_ISA_AVX512 || !(feat & OMNIC_CPU_VNNI))) continue;
            kinds++;
            omnic__mq_quant_row((omnic__mq_kind)kind, x, qk, dk, K);
            assert_memory_equal(qk, qref, K);
            assert_memory_equal(dk, dref, sizeof dref);
        }
    }
    print_message("activation quantization: %d kernel kind(s) bit-identical to the scalar rule\n", kinds);
}

/* What the activation quantization costs against f32 activations (dot products of uniform
 * rows, exact weights): the error the matmul contract accepts and ref reproduces. */
static void test_act_quant_error(void **state)
{
    (void)state;
    enum { K = 1536, N = 64 };
    static float a[K], w[N][K], da[K / 32];
    static int8_t qa[K];
    double se = 0, sr = 0;
    for (int rep = 0; rep < 8; rep++) {
        for (int k = 0; k < K; k++)
            a[k] = rng_f(-1, 1);
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++)
                w[n][k] = rng_f(-1, 1);
        omnic__quantize_act_q8(a, qa, da, K);
        for (int n = 0; n < N; n++) {
            double exact = 0, q = 0;
            for (int k = 0; k < K; k++) {
                exact += (double)a[k] * w[n][k];
                q += (double)da[k / 32] * qa[k] * w[n][k];
            }
            se += (q - exact) * (q - exact);
            sr += exact * exact;
        }
    }
    print_message("q8 activation quantization: matmul NMSE %.3g against f32 activations (K = %d)\n", se / sr,
                  K);
    assert_true(se / sr < 1e-4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layouts),         cmocka_unit_test(test_matches_ggml_reference),
        cmocka_unit_test(test_crafted_blocks),  cmocka_unit_test(test_round_trip_bounds),
        cmocka_unit_test(test_bad_shapes),      cmocka_unit_test(test_act_quant_isas),
        cmocka_unit_test(test_act_quant_error),  cmocka_unit_test(test_x16_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
