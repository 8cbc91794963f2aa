/* omnic public C API: status codes, errors, dtypes, checked sizes, allocation.
 * Every symbol here starts with omnic_ / OMNIC_; internal ones use omnic__. */
#ifndef OMNIC_H
#define OMNIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OMNIC_VERSION "0.1.0"

/* ---- status: one X-macro table gives the enum, names and messages ---- */
#define OMNIC_STATUS_MAP(XX)                                                                                 \
    XX(OK, 0, "ok")                                                                                          \
    XX(E_INVALID, -1, "invalid argument")                                                                    \
    XX(E_CORRUPT, -2, "corrupt input")                                                                       \
    XX(E_TOO_LARGE, -3, "over a limit")                                                                      \
    XX(E_NOMEM, -4, "out of memory")                                                                         \
    XX(E_IO, -5, "i/o error")                                                                                \
    XX(E_NOT_FOUND, -6, "not found")                                                                         \
    XX(E_UNSUPPORTED, -7, "not supported")                                                                   \
    XX(E_CAPACITY, -8, "over capacity")                                                                      \
    XX(E_CANCELLED, -9, "cancelled")                                                                         \
    XX(E_INTERNAL, -10, "internal error")                                                                    \
    XX(E_TIMEOUT, -11, "deadline passed")

typedef enum omnic_status {
#define OMNIC_XX_(name, value, msg) OMNIC_##name = value,
    OMNIC_STATUS_MAP(OMNIC_XX_)
#undef OMNIC_XX_
} omnic_status;

/* "OMNIC_E_CORRUPT" style name; "OMNIC_UNKNOWN" for values outside the table. */
const char *omnic_status_name(omnic_status s);
/* Short human message ("corrupt input"). */
const char *omnic_status_str(omnic_status s);

/* An error record filled by fallible functions that face users.
 * Caller-allocated; msg is always NUL-terminated; code == OMNIC_OK means no error. */
#define OMNIC_ERR_MSG_MAX 512
typedef struct omnic_err {
    omnic_status code;
    const char *file; /* source file that raised it (static string) */
    int line;
    char msg[OMNIC_ERR_MSG_MAX];
} omnic_err;

void omnic_err_clear(omnic_err *err);

/* ---- dtypes: append-only (values are hashed into bundle identities) ---- */
typedef enum omnic_dtype {
    OMNIC_DTYPE_F32 = 0,
    OMNIC_DTYPE_F16 = 1,
    OMNIC_DTYPE_BF16 = 2,
    OMNIC_DTYPE_I32 = 3,
    OMNIC_DTYPE_I64 = 4,
    OMNIC_DTYPE_U8 = 5,
    OMNIC_DTYPE_BOOL = 6,
    /* Block-quantized weights (ggml layouts), 32 elements per block along a row's last dim:
     * q8_0: f16 scale d + 32 x int8 q (34 bytes), x = d * q;
     * q4_0: f16 scale d + 16 bytes of nibbles (18 bytes), x = d * (q - 8), element j in the
     * low nibble of byte j, element j + 16 in the high nibble. Rows hold whole blocks. */
    OMNIC_DTYPE_Q8_0 = 7,
    OMNIC_DTYPE_Q4_0 = 8,
    /* q4_0x16: a q4_0 weight [N, K] (N a multiple of 16) with each 16 rows' blocks regrouped
     * for the cpu backend's AVX-512 kernels (layout: core/quant.h). Made at load time from
     * q4_0, never read from or written to files; 18 bytes per 32 elements, as q4_0. */
    OMNIC_DTYPE_Q4_0X16 = 9,
    /* q8_0x16: the same regrouping of a q8_0 weight (34 bytes per 32 elements, as q8_0). */
    OMNIC_DTYPE_Q8_0X16 = 10,
    OMNIC_DTYPE_COUNT
} omnic_dtype;

/* "f32", "bf16", "q8_0", ...; "?" for out-of-range values. */
const char *omnic_dtype_name(omnic_dtype t);
/* Bytes per block of omnic_dtype_block_size(t) elements: for element dtypes (block size 1)
 * the bytes per element; for q8_0 34 and q4_0 18 (per 32 elements). 0 for out-of-range
 * values. n elements (a multiple of the block size) take n / block_size * size bytes. */
size_t omnic_dtype_size(omnic_dtype t);
/* Elements per block: 1 for element dtypes, 32 for q8_0 / q4_0; 0 for out-of-range values. */
size_t omnic_dtype_block_size(omnic_dtype t);

/* ---- checked size arithmetic: return false on overflow, *out unchanged ---- */
static inline bool omnic_size_mul(size_t *out, size_t a, size_t b)
{
    size_t r;
    if (__builtin_mul_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}
static inline bool omnic_size_add(size_t *out, size_t a, size_t b)
{
    size_t r;
    if (__builtin_add_overflow(a, b, &r)) return false;
    *out = r;
    return true;
}

/* ---- allocation: every heap byte in omnic goes through these ----
 * Sizes above OMNIC_MAX_ALLOC (src/core/limits.h) and size 0 return NULL.
 * omnic_free(NULL) is a no-op. omnic_alloc_array checks n*elem for overflow
 * and returns zeroed memory. */
void *omnic_malloc(size_t n);
void *omnic_alloc_array(size_t n, size_t elem);
void *omnic_realloc(void *p, size_t n);
void omnic_free(void *p);
/* Returns an owned NUL-terminated copy of s (NULL on failure). */
char *omnic_strdup(const char *s);

#ifdef __cplusplus
}
#endif
#endif /* OMNIC_H */
