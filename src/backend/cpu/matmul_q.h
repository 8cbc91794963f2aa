/* Shared pieces of the quantized matmul (matmul_q.c: activation quantization and the decode
 * kernels; matmul_amx.c: the AMX prefill kernel). Internal to the cpu backend. */
#ifndef OMNIC_BACKEND_CPU_MATMUL_Q_H
#define OMNIC_BACKEND_CPU_MATMUL_Q_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* Largest M that takes the row-independent decode kernel (as OMNIC_CPU_MV_MAX_M for floats). */
#define OMNIC_CPU_MQ_MAX_M 16

/* Which decode kernel (and activation layout) the CPU gets. */
typedef enum omnic__mq_kind {
    OMNIC_MQ_SCALAR = 0, /* portable C */
    OMNIC_MQ_AVX2,       /* AVX2 maddubs (also on AVX-512 CPUs without VNNI + VBMI) */
    OMNIC_MQ_VNNI,       /* AVX-512 VNNI + VBMI */
    OMNIC_MQ_KIND_COUNT
} omnic__mq_kind;

omnic__mq_kind omnic__mq_kind_get(void);

/* One quantized activation row in a work buffer (byte offsets from the row start).
 * q at 0: K int8 quants; d: K/32 f32 scales.
 *   scalar: q, d.
 *   AVX2: + abs (|q|, K bytes) and corr (per block 8 x int32: lane 0 the q4_0 correction
 *         -8 * sum(q), other lanes 0).
 *   VNNI: quads of 4 blocks, zero-padded to whole quads (q = 0, d = 0); each quad stores its
 *         blocks' elements 0-15, then their elements 16-31 (128 bytes). + corr (per quad
 *         16 x int32: lane 4b holds -c * sum(q) of block b, c = 128 for q8_0 weights, 8 for
 *         q4_0; other lanes 0) and dv (per quad 16 x f32: block b's d in lanes 4b..4b+3).
 *   q4_0x16 / q8_0x16 weights (any kind): q, d, and corr (per block one int32: -8 * sum(q),
 *         or -128 * sum(q)); AVX2 with q8_0x16 weights: abs (|q|, K bytes) in place of corr.
 * bytes: the row stride (a multiple of 64). */
typedef struct omnic__mq_layout {
    size_t abs, d, corr, dv, bytes;
} omnic__mq_layout;

omnic__mq_layout omnic__mq_layout_of(omnic__mq_kind kind, omnic_dtype wdt, int64_t K);

/* The cpu backend's weight_dtype (backend.h): q4_0 / q8_0 [N, K] with N a multiple of 16
 * become q4_0x16 / q8_0x16 when the VNNI kernels run (and OMNIC_CPU_X16=0 is not set); else dt. */
omnic_dtype omnic__cpu_weight_dtype(omnic_dtype dt, int64_t N, int64_t K);

/* x[K] -> q[K] int8, d[K/32] f32: omnic__quantize_act_q8's result, computed with kind's ISA. */
void omnic__mq_quant_row(omnic__mq_kind kind, const float *x, int8_t *q, float *d, int64_t K);

/* matmul_amx.c: the prefill (M > OMNIC_CPU_MQ_MAX_M) kernel on AMX tiles. part: this thread's
 * omnic__cpu_matmul_amx_part(M, K, wdt) bytes of the work buffer (64-byte aligned). */
size_t omnic__cpu_matmul_amx_part(int64_t M, int64_t K, omnic_dtype wdt);
void omnic__cpu_matmul_amx(const omnic__node *n, int ith, int nth, uint8_t *part);

#endif
