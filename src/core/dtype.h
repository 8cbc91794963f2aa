/* Element types: per-dtype facts in one table, and exact scalar conversions.
 * f32 -> f16/bf16 rounds to nearest even, keeps subnormals, inf and nan (nan stays nan). */
#ifndef OMNIC_CORE_DTYPE_H
#define OMNIC_CORE_DTYPE_H

#include <stdint.h>
#include <string.h>

#include "omnic/omnic.h"

typedef struct omnic__dtype_traits {
    const char *name;         /* "f32" */
    const char *st_name;      /* safetensors spelling: "F32" */
    size_t size;              /* bytes per element */
    bool is_float;            /* usable as activation or weight storage */
} omnic__dtype_traits;

/* Indexed by omnic_dtype; length checked against OMNIC_DTYPE_COUNT at build time. */
extern const omnic__dtype_traits omnic__dtype_table[OMNIC_DTYPE_COUNT];

/* Parses a safetensors dtype string ("BF16"); false when unknown. */
bool omnic__dtype_from_st(const char *s, omnic_dtype *out);

static inline uint32_t omnic__f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float omnic__bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* bf16 is the top half of an f32: widening is exact. */
static inline float omnic__bf16_to_f32(uint16_t h) { return omnic__bits_f32((uint32_t)h << 16); }

static inline uint16_t omnic__f32_to_bf16(float f) {
    uint32_t u = omnic__f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet nan */
    u += 0x7fffu + ((u >> 16) & 1u);                                         /* round to nearest even */
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
