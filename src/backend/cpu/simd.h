/* SIMD helpers for the cpu backend: ISA levels, per-function target attributes, and the
 * inline vector math (exp, tanh, f16/bf16 widening loads) that the AVX2 and AVX-512 row
 * primitives share. The library is compiled for baseline x86-64; code that uses these
 * helpers carries OMNIC_AVX2 / OMNIC_AVX512 and runs only when omnic__cpu_isa_level()
 * says the CPU (and OS) support it. */
#ifndef OMNIC_BACKEND_CPU_SIMD_H
#define OMNIC_BACKEND_CPU_SIMD_H

#include <immintrin.h>
#include <stdint.h>

typedef enum omnic__cpu_isa {
    OMNIC_CPU_ISA_SCALAR = 0, /* portable C, libm expf/tanhf/erff */
    OMNIC_CPU_ISA_AVX2,       /* AVX2 + FMA + F16C, 8 lanes */
    OMNIC_CPU_ISA_AVX512,     /* AVX-512 F/BW/VL/DQ, 16 lanes */
    OMNIC_CPU_ISA_COUNT
} omnic__cpu_isa;

/* The ISA the cpu backend uses: the best the CPU and OS support, capped by the env var
 * OMNIC_CPU_ISA=scalar|avx2|avx512. Detected once (thread-safe); also sets OpenBLAS to one
 * thread, because every kernel thread calls BLAS on its own slice. */
omnic__cpu_isa omnic__cpu_isa_level(void);
/* "scalar", "avx2", "avx512". */
const char *omnic__cpu_isa_name(omnic__cpu_isa isa);

/* Extensions used by the quantized matmul (matmul_q.c) on top of the AVX-512 level; a bit is
 * set only when the ISA level is AVX512 and the CPU (and OS, for AMX) support it.
 * OMNIC_CPU_AMX=0 in the environment clears the AMX bit (benchmarks, tests). */
#define OMNIC_CPU_VNNI 1u /* AVX512_VNNI (vpdpbusd) */
#define OMNIC_CPU_VBMI 2u /* AVX512_VBMI (vpermb, vpermt2b) */
#define OMNIC_CPU_AMX 4u  /* AMX-TILE + AMX-INT8, tile data permitted by the kernel */
unsigned omnic__cpu_features(void);

#define OMNIC_AVX2 __attribute__((target("avx2,fma,f16c")))
#define OMNIC_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define OMNIC_VNNI                                                                                           \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")))
#define OMNIC_AMX                                                                                            \
    __attribute__((                                                                                          \
        target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")))
#define OMNIC_INLINE static inline __attribute__((always_inline))
/* Fully unrolls a short loop with a constant trip count (register tiles stay in registers). */
#if defined(__clang__)
#define OMNIC_UNROLL _Pragma("unroll")
#else
#define OMNIC_UNROLL _Pragma("GCC unroll 16")
#endif

/* ---- exp ----
 * Cephes expf: exp(x) = 2^n e^r with n = round(x log2 e), r = x - n ln2 (ln2 split in two),
 * e^r by a degree-6 polynomial on |r| <= ln2/2. Max error 1 ulp against the correctly
 * rounded result (every 61st float of [-87, 88] checked, both forms). exp(-inf) = 0, exp(+inf) = inf, NaN
 * stays NaN. The AVX-512 form is 0 below x = -103.97 (subnormals kept above); the AVX2 form flushes results
 * below about 2^-125 to 0. */
#define OMNIC_EXP_HI 88.7228394f
#define OMNIC_EXP_LO (-103.972084f)
#define OMNIC_EXP_LO_AVX2 (-87.3365479f)
#define OMNIC_EXP_LOG2E 1.44269504088896341f
#define OMNIC_EXP_C1 0.693359375f
#define OMNIC_EXP_C2 (-2.12194440e-4f)
#define OMNIC_EXP_P0 1.9875691500e-4f
#define OMNIC_EXP_P1 1.3981999507e-3f
#define OMNIC_EXP_P2 8.3334519073e-3f
#define OMNIC_EXP_P3 4.1665795894e-2f
#define OMNIC_EXP_P4 1.6666665459e-1f
#define OMNIC_EXP_P5 5.0000001201e-1f

OMNIC_INLINE OMNIC_AVX512 __m512 omnic__exp512(__m512 x)
{
    /* min/max return the second operand on NaN, so NaN passes through the clamp. */
    __mmask16 keep = _mm512_cmp_ps_mask(x, _mm512_set1_ps(OMNIC_EXP_LO), _CMP_NLT_UQ); /* else 0 */
    x = _mm512_min_ps(_mm512_set1_ps(OMNIC_EXP_HI), x);
    x = _mm512_max_ps(_mm512_set1_ps(OMNIC_EXP_LO), x);
    __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(OMNIC_EXP_LOG2E)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(OMNIC_EXP_C1), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(OMNIC_EXP_C2), r);
    __m512 p = _mm512_set1_ps(OMNIC_EXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(OMNIC_EXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(OMNIC_EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(OMNIC_EXP_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(OMNIC_EXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(OMNIC_EXP_P5));
    __m512 y = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_maskz_mov_ps(keep, _mm512_scalef_ps(y, n)); /* y * 2^n, subnormals kept */
}

OMNIC_INLINE OMNIC_AVX2 __m256 omnic__exp256(__m256 x)
{
    __m256 lo = _mm256_set1_ps(OMNIC_EXP_LO_AVX2);
    __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ); /* false for NaN */
    x = _mm256_min_ps(_mm256_set1_ps(OMNIC_EXP_HI), x);
    x = _mm256_max_ps(lo, x);
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(OMNIC_EXP_LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(OMNIC_EXP_C1), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(OMNIC_EXP_C2), r);
    __m256 p = _mm256_set1_ps(OMNIC_EXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(OMNIC_EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(OMNIC_EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(OMNIC_EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(OMNIC_EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(OMNIC_EXP_P5));
    __m256 y = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    /* 2^n as two factors 2^(n-1) * 2 so that n = 128 (x near the top) stays finite. n is in
     * [-126, 128] after the clamp; NaN lanes give garbage exponents but y is NaN there. */
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(126)), 23);
    y = _mm256_mul_ps(_mm256_mul_ps(y, _mm256_castsi256_ps(e)), _mm256_set1_ps(2.0f));
    return _mm256_andnot_ps(under, y);
}

/* ---- tanh ----
 * Cephes tanhf: |x| < 0.625: x + x^3 P(x^2); else sign(x) (1 - 2 / (exp(2|x|) + 1)).
 * Max error 1 ulp (every 61st float of [-10, 10] checked, both forms). */
#define OMNIC_TANH_Q0 (-5.70498872745e-3f)
#define OMNIC_TANH_Q1 2.06390887954e-2f
#define OMNIC_TANH_Q2 (-5.37397155531e-2f)
#define OMNIC_TANH_Q3 1.33314422036e-1f
#define OMNIC_TANH_Q4 (-3.33332819422e-1f)

OMNIC_INLINE OMNIC_AVX512 __m512 omnic__tanh512(__m512 x)
{
    __m512 ax = _mm512_abs_ps(x);
    __m512 z = _mm512_mul_ps(x, x);
    __m512 p = _mm512_set1_ps(OMNIC_TANH_Q0);
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(OMNIC_TANH_Q1));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(OMNIC_TANH_Q2));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(OMNIC_TANH_Q3));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(OMNIC_TANH_Q4));
    __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), x, x);
    __m512 e = omnic__exp512(_mm512_add_ps(ax, ax));
    __m512 big = _mm512_sub_ps(_mm512_set1_ps(1.0f),
                               _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
    /* copy x's sign onto big */
    big = _mm512_castsi512_ps(
        _mm512_or_si512(_mm512_castps_si512(big),
                        _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u))));
    __mmask16 is_small = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.625f), _CMP_LT_OQ);
    return _mm512_mask_blend_ps(is_small, big, small);
}

OMNIC_INLINE OMNIC_AVX2 __m256 omnic__tanh256(__m256 x)
{
    __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 ax = _mm256_andnot_ps(sign, x);
    __m256 z = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(OMNIC_TANH_Q0);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(OMNIC_TANH_Q1));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(OMNIC_TANH_Q2));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(OMNIC_TANH_Q3));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(OMNIC_TANH_Q4));
    __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
    __m256 e = omnic__exp256(_mm256_add_ps(ax, ax));
    __m256 big = _mm256_sub_ps(_mm256_set1_ps(1.0f),
                               _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
    big = _mm256_or_ps(big, _mm256_and_ps(sign, x));
    __m256 is_small = _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ);
    return _mm256_blendv_ps(big, small, is_small);
}

/* ---- widening loads: 16 (AVX-512) or 8 (AVX2) elements to f32; m = lane mask ---- */
OMNIC_INLINE OMNIC_AVX512 __m512 omnic__ld_bf16x16(const uint16_t *p)
{
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
}
OMNIC_INLINE OMNIC_AVX512 __m512 omnic__ld_bf16x16_m(const uint16_t *p, __mmask16 m)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}
OMNIC_INLINE OMNIC_AVX512 __m512 omnic__ld_f16x16(const uint16_t *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}
OMNIC_INLINE OMNIC_AVX512 __m512 omnic__ld_f16x16_m(const uint16_t *p, __mmask16 m)
{
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
OMNIC_INLINE OMNIC_AVX512 __mmask16 omnic__mask16(int64_t n)
{
    return (__mmask16)((1u << n) - 1u);
}

OMNIC_INLINE OMNIC_AVX2 __m256 omnic__ld_bf16x8(const uint16_t *p)
{
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}
OMNIC_INLINE OMNIC_AVX2 __m256 omnic__ld_f16x8(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

/* f32 -> bf16, round to nearest even, NaN -> quiet NaN; same bits as omnic__f32_to_bf16
 * (vcvtneps2bf16 would flush subnormals, so the integer form is used). */
OMNIC_INLINE OMNIC_AVX512 __m256i omnic__cvt_bf16x16(__m512 x)
{
    __m512i u = _mm512_castps_si512(x);
    __m512i r = _mm512_add_epi32(
        u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
                            _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1))));
    r = _mm512_srli_epi32(r, 16);
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
    return _mm512_cvtepi32_epi16(r);
}
OMNIC_INLINE OMNIC_AVX2 __m128i omnic__cvt_bf16x8(__m256 x)
{
    __m256i u = _mm256_castps_si256(x);
    __m256i r = _mm256_add_epi32(
        u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                            _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1))));
    r = _mm256_srli_epi32(r, 16);
    __m256i nanv = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    r = _mm256_blendv_epi8(r, nanv, nan);
    /* pack 8 x u32 (all < 65536) to 8 x u16 */
    __m128i lo = _mm256_castsi256_si128(r), hi = _mm256_extracti128_si256(r, 1);
    return _mm_packus_epi32(lo, hi);
}

/* Horizontal sum of 8 lanes in a fixed order. */
OMNIC_INLINE OMNIC_AVX2 float omnic__hsum256(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
OMNIC_INLINE OMNIC_AVX2 float omnic__hmax256(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#endif
