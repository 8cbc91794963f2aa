/* core/dtype: f16 and bf16 conversions against an independent reference written here in
 * double arithmetic (frexp/ldexp, round to nearest with ties to even), against the F16C
 * instruction where the CPU has it, and the dtype table. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_X86 1
#endif

#include "core/dtype.h"

/* ---- independent reference -------------------------------------------------------------- */

/* Rounds a > 0 (finite) to a binary format with mbits stored mantissa bits and minimum normal
 * exponent emin (subnormals below it), ties to even. No overflow handling: the caller compares
 * the result with the format's largest finite value. Exact in double for every f32 input. */
static double ref_round(double a, int mbits, int emin)
{
    int e;
    frexp(a, &e);  /* a = m * 2^e, m in [0.5, 1) */
    int E = e - 1; /* floor(log2(a)) */
    if (E < emin) E = emin;
    double ulp = ldexp(1.0, E - mbits);
    double q = a / ulp; /* exact: division by a power of two */
    double fl = floor(q), fr = q - fl;
    if (fr > 0.5 || (fr == 0.5 && fmod(fl, 2.0) == 1.0)) fl += 1.0;
    return fl * ulp;
}

/* f16 value of bits h, decoded field by field. */
static double ref_f16_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0)
        v = ldexp((double)m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexp((double)(1024 + m), e - 25);
    return (h & 0x8000) ? -v : v;
}

/* Expected f16 bits of a non-nan f32 x. */
static uint16_t ref_f32_to_f16(float x)
{
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs((double)x);
    if (isinf(a)) return sign | 0x7c00;
    if (a == 0) return sign;
    double v = ref_round(a, 10, -14);
    if (v > 65504.0) return sign | 0x7c00;
    if (v < 0x1p-14) return (uint16_t)(sign | (uint16_t)(v * 0x1p24)); /* subnormal (or 0) */
    int e;
    frexp(v, &e);
    int E = e - 1;
    uint16_t mant = (uint16_t)((ldexp(v, -E) - 1.0) * 1024.0);
    return (uint16_t)(sign | (uint16_t)((E + 15) << 10) | mant);
}

/* Expected bf16 bits of a non-nan f32 x. */
static uint16_t ref_f32_to_bf16(float x)
{
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs((double)x);
    if (isinf(a)) return sign | 0x7f80;
    if (a == 0) return sign;
    double v = ref_round(a, 7, -126);
    const double bf16_max = ldexp(255.0, 120); /* 0x7f7f: (2 - 2^-7) * 2^127 */
    if (v > bf16_max) return sign | 0x7f80;
    float fv = (float)v; /* exact: v has at most 8 significant bits and is in f32 range */
    assert_true((double)fv == v);
    uint32_t u = omnic__f32_bits(fv);
    assert_int_equal(u & 0xffffu, 0);
    return (uint16_t)(sign | (u >> 16));
}

static bool f16_is_nan(uint16_t h)
{
    return (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}
static bool bf16_is_nan(uint16_t h)
{
    return (h & 0x7f80) == 0x7f80 && (h & 0x7f);
}

#define EXPECT_BITS(got, want, in)                                                                           \
    do {                                                                                                     \
        unsigned g_ = (got), w_ = (want);                                                                    \
        if (g_ != w_) {                                                                                      \
            print_error("%s:%d: input 0x%08x (%.9g): got 0x%04x, want 0x%04x\n", __FILE__, __LINE__,         \
                        (unsigned)omnic__f32_bits(in), (double)(in), g_, w_);                                \
            _fail(__FILE__, __LINE__);                                                                       \
        }                                                                                                    \
    } while (0)

/* Checks omnic__f32_to_f16(x) against the reference (nan: result is nan with x's sign). */
static void check_f16(float x)
{
    uint16_t got = omnic__f32_to_f16(x);
    if (isnan(x)) {
        if (!f16_is_nan(got) || (bool)(got & 0x8000) != (bool)signbit(x)) {
            print_error("nan 0x%08x -> 0x%04x is not a nan of the same sign\n", (unsigned)omnic__f32_bits(x),
                        got);
            fail();
        }
        return;
    }
    EXPECT_BITS(got, ref_f32_to_f16(x), x);
}

static void check_bf16(float x)
{
    uint16_t got = omnic__f32_to_bf16(x);
    if (isnan(x)) {
        if (!bf16_is_nan(got) || (bool)(got & 0x8000) != (bool)signbit(x)) {
            print_error("nan 0x%08x -> bf16 0x%04x is not a nan of the same sign\n",
                        (unsigned)omnic__f32_bits(x), got);
            fail();
        }
        return;
    }
    EXPECT_BITS(got, ref_f32_to_bf16(x), x);
}

/* ---- F16C ------------------------------------------------------------------------------- */

#ifdef HAVE_X86
__attribute__((target("f16c"))) static uint16_t hw_f32_to_f16(float x)
{
    return (uint16_t)_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT);
}
__attribute__((target("f16c"))) static float hw_f16_to_f32(uint16_t h)
{
    return _cvtsh_ss(h);
}
static bool have_f16c(void)
{
#if defined(__clang__)
    /* older clang's __builtin_cpu_supports does not know "f16c": ask cpuid, and the OS for
     * saving the AVX state (F16C is VEX-encoded) */
    unsigned a, b, c, d, lo, hi;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_F16C) || !(c & bit_OSXSAVE)) return false;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    return (lo & 6) == 6;
#else
    __builtin_cpu_init();
    return __builtin_cpu_supports("f16c");
#endif
}
#else
static uint16_t hw_f32_to_f16(float x)
{
    return omnic__f32_to_f16(x);
}
static float hw_f16_to_f32(uint16_t h)
{
    return omnic__f16_to_f32(h);
}
static bool have_f16c(void)
{
    return false;
}
#endif

/* ---- f16 -------------------------------------------------------------------------------- */

/* Every f16 bit pattern: decodes to the reference value, and f16 -> f32 -> f16 is the identity
 * (nan stays nan with its sign). */
static void test_f16_all_patterns_round_trip(void **state)
{
    (void)state;
    bool hw = have_f16c();
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i;
        float f = omnic__f16_to_f32(h);
        double want = ref_f16_value(h);
        uint16_t back = omnic__f32_to_f16(f);
        if (f16_is_nan(h)) {
            assert_true(isnan(f));
            assert_int_equal((bool)signbit(f), (bool)(h & 0x8000));
            assert_true(f16_is_nan(back));
            assert_int_equal(back & 0x8000, h & 0x8000);
            /* a quiet nan keeps its payload */
            if (h & 0x200) assert_int_equal(back, h);
            continue;
        }
        if ((double)f != want || (bool)signbit(f) != (bool)(h & 0x8000)) {
            print_error("f16 0x%04x -> %.17g, want %.17g\n", h, (double)f, want);
            fail();
        }
        if (back != h) {
            print_error("f16 0x%04x -> f32 %.9g -> f16 0x%04x\n", h, (double)f, back);
            fail();
        }
        if (hw) assert_int_equal(omnic__f32_bits(hw_f16_to_f32(h)), omnic__f32_bits(f));
    }
}

/* A strided sweep over all 2^32 f32 bit patterns (stride 997: ~4.3 million inputs, every
 * exponent and both signs), against the reference and the F16C instruction. */
static void test_f16_sweep(void **state)
{
    (void)state;
    bool hw = have_f16c();
    if (!hw) print_message("f16c not available: comparing against the reference only\n");
    uint64_t n = 0, hw_n = 0;
    for (uint64_t u = 0; u <= 0xffffffffu; u += 997, n++) {
        float x = omnic__bits_f32((uint32_t)u);
        check_f16(x);
        if (hw) {
            uint16_t got = omnic__f32_to_f16(x), want = hw_f32_to_f16(x);
            if (got != want) {
                print_error("input 0x%08x (%.9g): got 0x%04x, F16C gives 0x%04x\n", (unsigned)u, (double)x,
                            got, want);
                fail();
            }
            hw_n++;
        }
    }
    assert_true(n > 4000000);
    print_message("f16 sweep: %llu inputs (%llu also against F16C)\n", (unsigned long long)n,
                  (unsigned long long)hw_n);
}

/* Every rounding decision between adjacent f16 values: the f32 midpoint of each pair of
 * neighbours (a tie) and the f32 values one ulp either side of it, both signs. */
static void test_f16_all_ties(void **state)
{
    (void)state;
    bool hw = have_f16c();
    for (uint16_t h = 0; h < 0x7c00; h++) {
        double lo = ref_f16_value(h), hi = h == 0x7bff ? 65536.0 : ref_f16_value((uint16_t)(h + 1));
        float mid = (float)((lo + hi) / 2); /* exact: 12 significant bits at most */
        assert_true((double)mid == (lo + hi) / 2);
        float xs[3] = {nextafterf(mid, 0.0f), mid, nextafterf(mid, INFINITY)};
        for (int k = 0; k < 3; k++) {
            for (int s = 0; s < 2; s++) {
                float x = s ? -xs[k] : xs[k];
                check_f16(x);
                if (hw) EXPECT_BITS(omnic__f32_to_f16(x), hw_f32_to_f16(x), x);
            }
        }
        /* the tie itself goes to the even neighbour */
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : h;
        EXPECT_BITS(omnic__f32_to_f16(mid), even, mid);
    }
}

static void test_f16_boundaries(void **state)
{
    (void)state;
    struct {
        float x;
        uint16_t want;
    } cases[] = {
        {0.0f, 0x0000},
        {-0.0f, 0x8000},
        {1.0f, 0x3c00},
        {-2.0f, 0xc000},
        {65504.0f, 0x7bff},  /* max finite */
        {65519.99f, 0x7bff}, /* below the midpoint to 65536 */
        {65520.0f, 0x7c00},  /* the midpoint: ties to even = inf */
        {-65520.0f, 0xfc00},
        {1e10f, 0x7c00},
        {3.4028235e38f, 0x7c00}, /* FLT_MAX */
        {INFINITY, 0x7c00},
        {-INFINITY, 0xfc00},
        {0x1p-24f, 0x0001}, /* smallest subnormal */
        {-0x1p-24f, 0x8001},
        {0x1p-25f, 0x0000}, /* tie between 0 and 2^-24: even is 0 */
        {-0x1p-25f, 0x8000},
        {0x1.000002p-25f, 0x0001}, /* just above the tie */
        {0x1.fffffep-26f, 0x0000},
        {0x1.8p-24f, 0x0002},   /* 1.5 * 2^-24: tie, 1 is odd, goes to 2 */
        {0x1.4p-23f, 0x0002},   /* 2.5 * 2^-24: tie, goes to 2 */
        {0x1p-14f, 0x0400},     /* smallest normal */
        {0x1.ff8p-15f, 0x03ff}, /* largest subnormal */
        {0x1.ffcp-15f, 0x0400}, /* tie between the largest subnormal and 2^-14: even is 0x400 */
        {0x1.ffbffep-15f, 0x03ff},
        {0x1.002p0f, 0x3c00}, /* 1 + 2^-11: tie, 1.0 is even */
        {0x1.006p0f, 0x3c02}, /* 1 + 3*2^-11: tie, goes up to even */
        {0x1.002002p0f, 0x3c01},
        {1e-45f, 0x0000}, /* f32 subnormals are far below f16's range */
        {-1e-45f, 0x8000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        EXPECT_BITS(omnic__f32_to_f16(cases[i].x), cases[i].want, cases[i].x);
        EXPECT_BITS(ref_f32_to_f16(cases[i].x), cases[i].want, cases[i].x); /* the reference agrees */
    }
    /* nan: stays nan, keeps the sign, quiet */
    uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u,
                       0x7fffffffu, 0x7fa00000u, 0x7f802000u};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint16_t h = omnic__f32_to_f16(omnic__bits_f32(nans[i]));
        assert_true(f16_is_nan(h));
        assert_true(h & 0x0200); /* quiet bit */
        assert_int_equal(h >> 15, nans[i] >> 31);
    }
    /* decoding */
    assert_true(omnic__f16_to_f32(0x7bff) == 65504.0f);
    assert_true(omnic__f16_to_f32(0x0001) == 0x1p-24f);
    assert_true(omnic__f16_to_f32(0x03ff) == 0x1.ff8p-15f);
    assert_true(omnic__f16_to_f32(0x7c00) == INFINITY);
    assert_true(omnic__f16_to_f32(0xfc00) == -INFINITY);
    assert_int_equal(omnic__f32_bits(omnic__f16_to_f32(0x8000)), 0x80000000u);
}

/* ---- bf16 ------------------------------------------------------------------------------- */

static void test_bf16_cases(void **state)
{
    (void)state;
    struct {
        uint32_t in;
        uint16_t want;
    } cases[] = {
        {0x3f800000u, 0x3f80}, /* 1.0 */
        {0x3f808000u, 0x3f80}, /* tie, even (0x3f80) is below */
        {0x3f818000u, 0x3f82}, /* tie, even (0x3f82) is above */
        {0x3f808001u, 0x3f81}, /* just above a tie */
        {0x3f807fffu, 0x3f80}, /* just below a tie */
        {0xbf808000u, 0xbf80}, /* negative ties */
        {0xbf818000u, 0xbf82}, {0x00000000u, 0x0000}, {0x80000000u, 0x8000}, {0x7f800000u, 0x7f80}, /* inf */
        {0xff800000u, 0xff80}, {0x7f7fffffu, 0x7f80}, /* FLT_MAX rounds to inf */
        {0xff7fffffu, 0xff80}, {0x7f7f7fffu, 0x7f7f}, /* stays at bf16 max */
        {0x7f7f8000u, 0x7f80},                        /* tie above bf16 max: even is inf */
        {0x00000001u, 0x0000},                        /* smallest f32 subnormal */
        {0x00008000u, 0x0000},                        /* tie, even is 0 */
        {0x00018000u, 0x0002},                        /* tie, even is 2 */
        {0x00008001u, 0x0001}, {0x007fffffu, 0x0080}, /* largest subnormal rounds up to the smallest normal */
        {0x00400000u, 0x0040},                        /* subnormal, exact */
        {0x807fffffu, 0x8080},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        float x = omnic__bits_f32(cases[i].in);
        EXPECT_BITS(omnic__f32_to_bf16(x), cases[i].want, x);
        EXPECT_BITS(ref_f32_to_bf16(x), cases[i].want, x);
    }
    uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u,
                       0x7fffffffu, 0xffffffffu, 0x7f80ffffu, 0xff810000u};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint16_t h = omnic__f32_to_bf16(omnic__bits_f32(nans[i]));
        if (!bf16_is_nan(h) || (h >> 15) != (nans[i] >> 31) || !(h & 0x40)) {
            print_error("nan 0x%08x -> bf16 0x%04x\n", nans[i], h);
            fail();
        }
    }
}

/* bf16 -> f32 is exact (the top half of the f32) for all 65536 patterns; bf16 -> f32 -> bf16
 * is the identity for non-nans; nans stay nans of the same sign. */
static void test_bf16_all_patterns(void **state)
{
    (void)state;
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i;
        float f = omnic__bf16_to_f32(h);
        assert_int_equal(omnic__f32_bits(f), (uint32_t)h << 16);
        uint16_t back = omnic__f32_to_bf16(f);
        if (bf16_is_nan(h)) {
            assert_true(bf16_is_nan(back));
            assert_int_equal(back & 0x8000, h & 0x8000);
        } else {
            assert_int_equal(back, h);
        }
    }
}

static void test_bf16_sweep(void **state)
{
    (void)state;
    uint64_t n = 0;
    for (uint64_t u = 0; u <= 0xffffffffu; u += 997, n++)
        check_bf16(omnic__bits_f32((uint32_t)u));
    /* ties and their neighbours spread over every exponent, both signs and the subnormals */
    for (uint32_t top = 0; top < 0x10000u; top += 0x101u) {
        uint32_t mid = top << 16 | 0x8000u;
        check_bf16(omnic__bits_f32(mid - 1));
        check_bf16(omnic__bits_f32(mid));
        check_bf16(omnic__bits_f32(mid + 1));
    }
    assert_true(n > 4000000);
}

/* ---- rows ------------------------------------------------------------------------------- */

static void test_rows(void **state)
{
    (void)state;
    enum { N = 37 };
    float src[N], back[N];
    uint16_t h[N], b[N];
    for (int i = 0; i < N; i++)
        src[i] = (float)(i - 18) * 0.37f + (i % 3 ? 1e-6f : 3e4f);
    omnic__f32_to_f16_row(src, h, N);
    omnic__f32_to_bf16_row(src, b, N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(h[i], omnic__f32_to_f16(src[i]));
        assert_int_equal(b[i], omnic__f32_to_bf16(src[i]));
    }
    omnic__f16_to_f32_row(h, back, N);
    for (int i = 0; i < N; i++)
        assert_true(back[i] == omnic__f16_to_f32(h[i]));
    omnic__bf16_to_f32_row(b, back, N);
    for (int i = 0; i < N; i++)
        assert_true(back[i] == omnic__bf16_to_f32(b[i]));
    omnic__f32_to_f16_row(src, h, 0); /* n = 0 is a no-op */
}

/* ---- dtype table ------------------------------------------------------------------------ */

static void test_dtype_table(void **state)
{
    (void)state;
    /* bytes per block, elements per block (1 for element dtypes) */
    static const size_t want_size[OMNIC_DTYPE_COUNT] = {4, 2, 2, 4, 8, 1, 1, 34, 18, 18, 34};
    static const size_t want_block[OMNIC_DTYPE_COUNT] = {1, 1, 1, 1, 1, 1, 1, 32, 32, 32, 32};
    static const char *const want_name[OMNIC_DTYPE_COUNT] = {"f32", "f16", "bf16", "i32", "i64",
                                                             "u8",  "bool", "q8_0", "q4_0", "q4_0x16", "q8_0x16"};
    for (int i = 0; i < OMNIC_DTYPE_COUNT; i++) {
        const omnic__dtype_traits *t = &omnic__dtype_table[i];
        assert_non_null(t->name);
        assert_string_equal(t->name, want_name[i]);
        assert_true(t->size > 0);
        assert_int_equal(t->size, want_size[i]);
        assert_int_equal(t->block, want_block[i]);
        assert_int_equal(omnic_dtype_block_size((omnic_dtype)i), want_block[i]);
        assert_true(t->is_quant == (want_block[i] > 1));
        assert_false(t->is_quant && t->is_float);
        assert_string_equal(omnic_dtype_name((omnic_dtype)i), t->name);
        assert_int_equal(omnic_dtype_size((omnic_dtype)i), t->size);
        assert_int_equal(omnic__dtype_row_bytes((omnic_dtype)i, 64), 64 / want_block[i] * want_size[i]);
        for (int j = 0; j < i; j++) {
            assert_string_not_equal(t->name, omnic__dtype_table[j].name);
            if (t->st_name && omnic__dtype_table[j].st_name)
                assert_string_not_equal(t->st_name, omnic__dtype_table[j].st_name);
        }
        if (t->is_quant) { /* no safetensors spelling: never parsed from a file */
            assert_null(t->st_name);
            continue;
        }
        assert_non_null(t->st_name);
        omnic_dtype d = OMNIC_DTYPE_COUNT;
        assert_true(omnic__dtype_from_st(t->st_name, &d));
        assert_int_equal(d, i);
    }
    assert_int_equal(omnic_dtype_block_size(OMNIC_DTYPE_COUNT), 0);
    assert_true(omnic__dtype_table[OMNIC_DTYPE_F32].is_float);
    assert_true(omnic__dtype_table[OMNIC_DTYPE_BF16].is_float);
    assert_false(omnic__dtype_table[OMNIC_DTYPE_I64].is_float);
    assert_string_equal(omnic_dtype_name(OMNIC_DTYPE_COUNT), "?");
    assert_string_equal(omnic_dtype_name((omnic_dtype)-1), "?");
    assert_int_equal(omnic_dtype_size(OMNIC_DTYPE_COUNT), 0);
    assert_int_equal(omnic_dtype_size((omnic_dtype)-1), 0);

    const char *bad[] = {"F64", "", "f32", "bf16", "F32 ", " F32", "F3", "F320", "I8", "U16", "F8_E4M3", "Q8_0", "q8_0", "Q4_0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        omnic_dtype d = OMNIC_DTYPE_U8;
        if (omnic__dtype_from_st(bad[i], &d)) {
            print_error("omnic__dtype_from_st accepted \"%s\"\n", bad[i]);
            fail();
        }
        assert_int_equal(d, OMNIC_DTYPE_U8); /* out unchanged */
    }
}

int main(void)
{
    // clang-format off
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_all_patterns_round_trip),
        cmocka_unit_test(test_f16_boundaries),
        cmocka_unit_test(test_f16_all_ties),
        cmocka_unit_test(test_f16_sweep),
        cmocka_unit_test(test_bf16_cases),
        cmocka_unit_test(test_bf16_all_patterns),
        cmocka_unit_test(test_bf16_sweep),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_dtype_table),
    };
    // clang-format on
    return cmocka_run_group_tests(tests, NULL, NULL);
}
