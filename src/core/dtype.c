/* Per-dtype facts and exact scalar conversions between f32, f16 and bf16. */
#include <string.h>

#include "core/dtype.h"

const omnic__dtype_traits omnic__dtype_table[OMNIC_DTYPE_COUNT] = {
    [OMNIC_DTYPE_F32] = {.name = "f32", .st_name = "F32", .size = 4, .block = 1, .is_float = true},
    [OMNIC_DTYPE_F16] = {.name = "f16", .st_name = "F16", .size = 2, .block = 1, .is_float = true},
    [OMNIC_DTYPE_BF16] = {.name = "bf16", .st_name = "BF16", .size = 2, .block = 1, .is_float = true},
    [OMNIC_DTYPE_I32] = {.name = "i32", .st_name = "I32", .size = 4, .block = 1, .is_float = false},
    [OMNIC_DTYPE_I64] = {.name = "i64", .st_name = "I64", .size = 8, .block = 1, .is_float = false},
    [OMNIC_DTYPE_U8] = {.name = "u8", .st_name = "U8", .size = 1, .block = 1, .is_float = false},
    [OMNIC_DTYPE_BOOL] = {.name = "bool", .st_name = "BOOL", .size = 1, .block = 1, .is_float = false},
    [OMNIC_DTYPE_Q8_0] = {.name = "q8_0", .st_name = NULL, .size = 34, .block = 32, .is_quant = true},
    [OMNIC_DTYPE_Q4_0] = {.name = "q4_0", .st_name = NULL, .size = 18, .block = 32, .is_quant = true},
    [OMNIC_DTYPE_Q4_0X16] = {.name = "q4_0x16", .st_name = NULL, .size = 18, .block = 32, .is_quant = true},
    [OMNIC_DTYPE_Q8_0X16] = {.name = "q8_0x16", .st_name = NULL, .size = 34, .block = 32, .is_quant = true},
};
_Static_assert(sizeof omnic__dtype_table / sizeof omnic__dtype_table[0] == OMNIC_DTYPE_COUNT,
               "dtype table out of step with omnic_dtype");

const char *omnic_dtype_name(omnic_dtype t)
{
    return (unsigned)t < OMNIC_DTYPE_COUNT ? omnic__dtype_table[t].name : "?";
}

size_t omnic_dtype_size(omnic_dtype t)
{
    return (unsigned)t < OMNIC_DTYPE_COUNT ? omnic__dtype_table[t].size : 0;
}

size_t omnic_dtype_block_size(omnic_dtype t)
{
    return (unsigned)t < OMNIC_DTYPE_COUNT ? omnic__dtype_table[t].block : 0;
}

bool omnic__dtype_from_st(const char *s, omnic_dtype *out)
{
    for (int i = 0; i < OMNIC_DTYPE_COUNT; i++) {
        if (omnic__dtype_table[i].st_name && !strcmp(s, omnic__dtype_table[i].st_name)) {
            *out = (omnic_dtype)i;
            return true;
        }
    }
    return false;
}

float omnic__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        float v = (float)m * 0x1p-24f; /* zero or subnormal: exact */
        return sign ? -v : v;
    }
    if (e == 31) return omnic__bits_f32(sign | 0x7f800000u | (m << 13));
    return omnic__bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

uint16_t omnic__f32_to_f16(float f)
{
    uint32_t x = omnic__f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu)); /* quiet nan */
    if (ax == 0x7f800000u) return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) {                 /* below 2^-14: f16 subnormal or zero */
        if (ax <= 0x33000000u) return sign; /* <= 2^-25 rounds to zero (ties to even) */
        uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e; /* value = m * 2^(e-150) = (m >> shift) units of 2^-24 */
        uint32_t r = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ax - 0x38000000u; /* rebias exponent 127 -> 15 */
    uint32_t h = r >> 13, rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    if (h >= 0x7c00u) h = 0x7c00u; /* overflow rounds to inf */
    return (uint16_t)(sign | h);
}

void omnic__f16_to_f32_row(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = omnic__f16_to_f32(src[i]);
}

void omnic__bf16_to_f32_row(const uint16_t *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = omnic__bf16_to_f32(src[i]);
}

void omnic__f32_to_f16_row(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = omnic__f32_to_f16(src[i]);
}

void omnic__f32_to_bf16_row(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = omnic__f32_to_bf16(src[i]);
}
