/* Element types: per-dtype facts in one table, and exact scalar conversions.
 * f32 -> f16/bf16 rounds to nearest even, keeps subnormals, inf and nan (nan stays nan). */
#ifndef OMNIC_CORE_DTYPE_H
#define OMNIC_CORE_DTYPE_H

#include <stdint.h>
#include <string.h>

#include "omnic/omnic.h"

typedef struct omnic__dtype_traits {
    const char *name;    /* "f32" */
    const char *st_name; /* safetensors spelling: "F32"; NULL when safetensors has none (q8_0, q4_0) */
    size_t size;         /* bytes per block (per element when block == 1) */
    size_t block;        /* elements per block: 1, or 32 for the quantized types */
    bool is_float;       /* usable as activation or weight storage (element types) */
    bool is_quant;       /* block-quantized weight storage (matmul weights, get_rows tables) */
} omnic__dtype_traits;

/* Indexed by omnic_dtype; length checked against OMNIC_DTYPE_COUNT at build time. */
extern const omnic__dtype_traits omnic__dtype_table[OMNIC_DTYPE_COUNT];

/* Bytes of n elements of t (n a multiple of the block size; unchecked): the byte stride of
 * a row of n elements. */
static inline size_t omnic__dtype_row_bytes(omnic_dtype t, int64_t n)
{
    return (size_t)n / omnic__dtype_table[t].block * omnic__dtype_table[t].size;
}

/* Parses a safetensors dtype string ("BF16"); false when unknown. */
bool omnic__dtype_from_st(const char *s, omnic_dtype *out);

static inline uint32_t omnic__f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float omnic__bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* bf16 is the top half of an f32: widening is exact. */
static inline float omnic__bf16_to_f32(uint16_t h)
{
    return omnic__bits_f32((uint32_t)h << 16);
}

static inline uint16_t omnic__f32_to_bf16(float f)
{
    uint32_t u = omnic__f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet nan */
    u += 0x7fffu + ((u >> 16) & 1u);                                          /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float omnic__f16_to_f32(uint16_t h);
uint16_t omnic__f32_to_f16(float f);

/* Row conversions (n elements). */
void omnic__f16_to_f32_row(const uint16_t *src, float *dst, size_t n);
void omnic__bf16_to_f32_row(const uint16_t *src, float *dst, size_t n);
void omnic__f32_to_f16_row(const float *src, uint16_t *dst, size_t n);
void omnic__f32_to_bf16_row(const float *src, uint16_t *dst, size_t n);

#endif
