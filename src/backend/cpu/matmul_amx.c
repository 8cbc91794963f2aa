/* Prefill matmul with q8_0 / q4_0 (and their x16 layouts) weights on AMX int8 tiles (Sapphire Rapids and
 * later; used only when omnic__cpu_features() has OMNIC_CPU_AMX).
 *
 * C[n][m] = sum_k W[n][k] * A[m][k] one 32-element block at a time (the scales change per
 * block), with TDPBSSD (int8 x int8 -> int32, exact):
 *   tile A = 16 weight rows x 32 bytes (one block of each row), staged per chunk of weight rows
 *            as int8 (q8_0 quants copied, q4_0 nibbles unpacked to q - 8), each tile's 512
 *            bytes contiguous (strided tile loads from rows K bytes apart were the bottleneck);
 *   tile B = the block of 16 activation rows in the VNNI layout (8 rows of 16 x 4 bytes),
 *            staged once per call from the q8 activation quantization of matmul_q.c;
 *   tile C = 16 x 16 int32, stored and folded into 16 f32 accumulators (zmm, one per weight
 *            row, lanes = activation rows) as acc += f32(C) * (d_w * d_a).
 * Two C / A / B tile sets alternate, and a block's C tile is folded while the next two tile
 * products run (tile_blocks). After the last block the 16 x 16 accumulators are transposed and stored
 * (with the bias) into dst rows. Tasks are chunks of OMNIC_AMX_NC weight rows split by
 * omnic__split_rows, so an element is computed by the same code whatever nth is; each thread
 * stages the activations itself (no barrier inside a kernel).
 *
 * q4_0x16 / q8_0x16 weights swap the roles, because their layout already is the VNNI one
 * (core/quant.h):
 *   tile A = 16 activation rows x 32 bytes: block b of the q8 rows, staged tile-contiguous;
 *   tile B = block b of a group of 16 weight rows, 8 rows of 16 x 4 bytes (row c = elements
 *            4c..4c+3 of each weight row): q4_0x16 nibbles staged per group as q - 8; q8_0x16
 *            blocks loaded in place (their 512 bytes of q are that tile);
 *   tile C = 16 activation rows x 16 weight rows, folded into 16 f32 accumulators (one per
 *            activation row, lanes = weight rows) as acc += f32(C) * (d_w * d_a) and stored
 *            straight into dst rows, with no transpose. */
#include <string.h>

#include "backend/cpu/matmul_q.h"
#include "backend/cpu/ops.h"
#include "backend/cpu/simd.h"
#include "core/dtype.h"
#include "core/quant.h"
#include "core/threadpool.h"

#define OMNIC_AMX_NC 64 /* weight rows per task (a multiple of 16) */
#define AMX_MG 64       /* activation rows per group (kept in L2 while a chunk's tiles sweep it) */

static size_t align64(size_t n)
{
    return (n + 63) / 64 * 64;
}
static int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* Offsets of one thread's part. */
typedef struct amx_part {
    size_t bt;   /* act, VNNI tiles: [M16/16][nb][8 rows][16 x 4 bytes] */
    size_t dav;  /* act scales: [M16/16][nb][16] f32 */
    size_t qtmp; /* one act row: K int8 + nb f32 */
    size_t ws;   /* weight chunk: [OMNIC_AMX_NC/16][nb][16 rows][32] int8 */
    size_t dws;  /* weight chunk scales: [OMNIC_AMX_NC][nb] f32 */
    size_t cbuf; /* two C tiles: 2 x 16 x 64 bytes */
    size_t bytes;
} amx_part;

static amx_part part_layout(int64_t M, int64_t K)
{
    amx_part p;
    size_t m16 = (size_t)cdiv(M, 16) * 16, nb = (size_t)(K / OMNIC_QK), off = 0;
    p.bt = off;
    off += align64(m16 * (size_t)K);
    p.dav = off;
    off += align64(m16 * nb * sizeof(float));
    p.qtmp = off;
    off += align64((size_t)K + nb * sizeof(float));
    p.ws = off;
    off += align64((size_t)OMNIC_AMX_NC * (size_t)K);
    p.dws = off;
    off += align64((size_t)OMNIC_AMX_NC * nb * sizeof(float));
    p.cbuf = off;
    off += 2 * 16 * 64;
    p.bytes = align64(off);
    return p;
}

size_t omnic__cpu_matmul_amx_part(int64_t M, int64_t K, omnic_dtype wdt)
{
    (void)wdt;
    return part_layout(M, K).bytes;
}

typedef struct __attribute__((packed)) tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg;
_Static_assert(sizeof(tilecfg) == 64, "AMX tile configuration is 64 bytes");

/* tiles 0, 1: C (16 x 16 int32); 2, 3: A (16 rows x 32 bytes); 4, 5: B (8 x 64 bytes) */
static void tile_config(tilecfg *c)
{
    memset(c, 0, sizeof *c);
    c->palette = 1;
    for (int t = 0; t < 2; t++) {
        c->colsb[t] = 64;
        c->rows[t] = 16;
        c->colsb[2 + t] = 32;
        c->rows[2 + t] = 16;
        c->colsb[4 + t] = 64;
        c->rows[4 + t] = 8;
    }
}

/* Row m of a[M, K] quantized into q[K], d[K / 32] (the matmul_q.c rule); zeros for m >= M. */
static OMNIC_AMX void act_row(const float *a, int64_t m, int64_t M, int64_t K, int8_t *q, float *d)
{
    if (m < M) {
        omnic__mq_quant_row(OMNIC_MQ_VNNI, a + m * K, q, d, K);
        return;
    }
    memset(q, 0, (size_t)K);
    memset(d, 0, (size_t)(K / OMNIC_QK) * sizeof(float));
}

/* Activation rows a[M, K] -> VNNI tiles + scales (rows M..M16-1 zero). */
static OMNIC_AMX void stage_act(const float *a, int64_t M, int64_t K, uint8_t *part, const amx_part *P)
{
    const int64_t nb = K / OMNIC_QK, m16 = cdiv(M, 16) * 16;
    uint8_t *bt = part + P->bt;
    float *dav = (float *)(part + P->dav);
    int8_t *q = (int8_t *)(part + P->qtmp);
    float *d = (float *)(part + P->qtmp + (size_t)K);
    for (int64_t m = 0; m < m16; m++) {
        const int64_t mt = m / 16, mm = m % 16;
        act_row(a, m, M, K, q, d);
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *tile = bt + (size_t)(mt * nb + b) * 512;
            for (int kg = 0; kg < 8; kg++)
                memcpy(tile + kg * 64 + mm * 4, q + b * OMNIC_QK + kg * 4, 4);
            dav[(mt * nb + b) * 16 + mm] = d[b];
        }
    }
}

/* Weight rows [n0, n0 + nc) -> int8 rows ws[16-padded][K] and f32 scales dws[][nb]. */
static OMNIC_AMX void stage_weights(const omnic__tensor *w, int64_t n0, int64_t nc, int64_t K, uint8_t *part,
                                    const amx_part *P)
{
    const int64_t nb = K / OMNIC_QK, ncp = cdiv(nc, 16) * 16;
    const bool q4 = w->dtype == OMNIC_DTYPE_Q4_0;
    const size_t bb = q4 ? sizeof(omnic__block_q4_0) : sizeof(omnic__block_q8_0);
    const size_t wrow = (size_t)nb * bb;
    int8_t *ws = (int8_t *)(part + P->ws);
    float *dws = (float *)(part + P->dws);
    const __m128i low4 = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
    for (int64_t j = 0; j < ncp; j++) {
        int8_t *dst = ws + (j / 16) * 16 * K + (j % 16) * OMNIC_QK; /* block b at + 512 b */
        float *ds = dws + j * nb;
        if (j >= nc) {
            for (int64_t b = 0; b < nb; b++)
                memset(dst + b * 512, 0, OMNIC_QK);
            memset(ds, 0, (size_t)nb * sizeof(float));
            continue;
        }
        const uint8_t *row = (const uint8_t *)w->data + (size_t)(n0 + j) * wrow;
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = row + (size_t)b * bb;
            uint16_t h;
            memcpy(&h, blk, 2);
            ds[b] = _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
            if (q4) {
                __m128i x = _mm_loadu_si128((const __m128i *)(blk + 2));
                __m128i lo = _mm_sub_epi8(_mm_and_si128(x, low4), eight);
                __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(x, 4), low4), eight);
                _mm_storeu_si128((__m128i *)(dst + b * 512), lo);
                _mm_storeu_si128((__m128i *)(dst + b * 512 + 16), hi);
            } else {
                memcpy(dst + b * 512, blk + 2, OMNIC_QK);
            }
        }
    }
}

/* r[i] (row i, 16 lanes) -> r[c] = column c, as a 16 x 16 transpose. */
OMNIC_INLINE OMNIC_AMX void transpose16(__m512 r[16])
{
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* u[4g + k]: lane L holds rows 4g..4g+3 of column 4L + k */
    for (int g = 0; g < 4; g++) {
        u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xee);
        u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xee);
    }
    for (int k = 0; k < 4; k++) {
        __m512 v0 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x44),
               v1 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xee);
        __m512 v2 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x44),
               v3 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xee);
        r[0 + k] = _mm512_shuffle_f32x4(v0, v2, 0x88);
        r[4 + k] = _mm512_shuffle_f32x4(v0, v2, 0xdd);
        r[8 + k] = _mm512_shuffle_f32x4(v1, v3, 0x88);
        r[12 + k] = _mm512_shuffle_f32x4(v1, v3, 0xdd);
    }
}

/* Scales of the 16 x 16 C tile of block b: row r takes row[b * bstep + r * rstride], the 16
 * lanes take the 16 scales at lanes + b * lstep bytes (f32, or f16 when lanes_f16). */
typedef struct amx_scales {
    const float *row;
    int64_t bstep, rstride;
    const uint8_t *lanes;
    int64_t lstep;
    bool lanes_f16;
} amx_scales;

/* acc[r] += f32(C[r]) * (row scale r * lane scales) for the 16 rows of a stored C tile. */
OMNIC_INLINE OMNIC_AMX void fold(__m512 acc[16], const int32_t *c, const amx_scales *sc, int64_t b)
{
    const uint8_t *lp = sc->lanes + b * sc->lstep;
    const __m512 v = sc->lanes_f16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)lp))
                                   : _mm512_loadu_ps((const float *)lp);
    const float *rs = sc->row + b * sc->bstep;
    OMNIC_UNROLL for (int r = 0; r < 16; r++)
    {
        __m512 s = _mm512_mul_ps(_mm512_set1_ps(rs[r * sc->rstride]), v);
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512(c + 16 * r)), s, acc[r]);
    }
}

/* acc[16] = sum over blocks b < nb of f32(A_b . B_b) scaled by sc: A_b the 16 x 32-byte tile at
 * a + 512 b, B_b the 8 x 64-byte tile at bt + bstep b (both contiguous). cbuf: two C tiles.
 * Inlined into each caller, whose constant scale layout then specializes the fold. */
OMNIC_INLINE OMNIC_AMX void tile_blocks(const int8_t *a, const uint8_t *bt, int64_t bstep, int64_t nb,
                                        const amx_scales *sc, int32_t *cbuf, __m512 acc[16])
{
    int32_t *c0 = cbuf, *c1 = cbuf + 256;
    for (int r = 0; r < 16; r++)
        acc[r] = _mm512_setzero_ps();
    /* tiles (0, 2, 4) take even blocks, (1, 3, 5) odd ones; a C tile is stored one fold after
     * the next product is issued and folded one step later, so two folds hide each product */
    _tile_zero(0);
    _tile_loadd(2, a, OMNIC_QK);
    _tile_loadd(4, bt, 64);
    _tile_dpbssd(0, 2, 4);
    for (int64_t b = 0; b < nb; b += 2) {
        if (b + 1 < nb) {
            _tile_zero(1);
            _tile_loadd(3, a + (b + 1) * 512, OMNIC_QK);
            _tile_loadd(5, bt + (b + 1) * bstep, 64);
            _tile_dpbssd(1, 3, 5);
        }
        if (b >= 1) fold(acc, c1, sc, b - 1);
        _tile_stored(0, c0, 64);
        if (b + 1 >= nb) {
            fold(acc, c0, sc, b);
            return;
        }
        if (b + 2 < nb) {
            _tile_zero(0);
            _tile_loadd(2, a + (b + 2) * 512, OMNIC_QK);
            _tile_loadd(4, bt + (b + 2) * bstep, 64);
            _tile_dpbssd(0, 2, 4);
        }
        fold(acc, c0, sc, b);
        _tile_stored(1, c1, 64);
    }
    fold(acc, c1, sc, nb - 1); /* nb even: the last block is odd */
}

/* One 16 x 16 output tile: weight rows t*16.. of the staged chunk x activation tile mt. */
static OMNIC_AMX void tile_pair(uint8_t *part, const amx_part *P, int64_t K, int64_t t, int64_t mt,
                                __m512 acc[16])
{
    const int64_t nb = K / OMNIC_QK;
    const amx_scales sc = {.row = (const float *)(part + P->dws) + t * 16 * nb,
                           .bstep = 1,
                           .rstride = nb,
                           .lanes = part + P->dav + (size_t)(mt * nb * 16) * sizeof(float),
                           .lstep = 64};
    tile_blocks((const int8_t *)(part + P->ws) + t * 16 * K, part + P->bt + (size_t)mt * (size_t)nb * 512,
                512, nb, &sc, (int32_t *)(part + P->cbuf), acc);
}

/* ---- q4_0x16 weights ---- */

/* Activation rows a[M, K] -> q8 A tiles (bt, [M16/16][nb][16 rows][32], rows M..M16-1 zero)
 * and their scales (dav, [M16/16][nb][16]). */
static OMNIC_AMX void stage_act_x16(const float *a, int64_t M, int64_t K, uint8_t *part, const amx_part *P)
{
    const int64_t nb = K / OMNIC_QK, m16 = cdiv(M, 16) * 16;
    float *dav = (float *)(part + P->dav);
    int8_t *q = (int8_t *)(part + P->qtmp);
    float *d = (float *)(part + P->qtmp + (size_t)K);
    for (int64_t m = 0; m < m16; m++) {
        int8_t *tiles = (int8_t *)(part + P->bt) + (m / 16) * 16 * K + (m % 16) * OMNIC_QK;
        act_row(a, m, M, K, q, d);
        for (int64_t b = 0; b < nb; b++) {
            memcpy(tiles + b * 512, q + b * OMNIC_QK, OMNIC_QK);
            dav[((m / 16) * nb + b) * 16 + m % 16] = d[b];
        }
    }
}

/* Group grp (16 weight rows) -> nb B tiles of 512 bytes (q - 8) at bst. */
static OMNIC_AMX void stage_group_x16(const uint8_t *grp, int64_t nb, uint8_t *bst)
{
    const __m512i low4 = _mm512_set1_epi8(0x0f), eight = _mm512_set1_epi8(8);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *p = grp + (size_t)b * OMNIC_Q4X16_BLOCK;
        uint8_t *t = bst + (size_t)b * 512;
        OMNIC_UNROLL for (int c = 0; c < 4; c++)
        {
            const __m512i x = _mm512_loadu_si512(p + 64 * c);
            _mm512_storeu_si512(t + 64 * c, _mm512_sub_epi8(_mm512_and_si512(x, low4), eight));
            _mm512_storeu_si512(t + 64 * (c + 4),
                                _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(x, 4), low4), eight));
        }
    }
}

/* Activation tile mt x one group -> acc[16]: q4_0x16 B tiles from the staged bst, q8_0x16 ones
 * read in place (their 512 bytes of q are a B tile as stored); 16 f16 scales per block in place. */
static OMNIC_AMX void tile_x16(uint8_t *part, const amx_part *P, int64_t K, int64_t mt, const uint8_t *bst,
                               const uint8_t *grp, bool q8, __m512 acc[16])
{
    const int64_t nb = K / OMNIC_QK;
    const int8_t *a = (const int8_t *)(part + P->bt) + mt * 16 * K;
    int32_t *cbuf = (int32_t *)(part + P->cbuf);
    const float *row = (const float *)(part + P->dav) + mt * nb * 16;
    if (q8) {
        const amx_scales sc = {.row = row,
                               .bstep = 16,
                               .rstride = 1,
                               .lanes = grp + 512,
                               .lstep = OMNIC_Q8X16_BLOCK,
                               .lanes_f16 = true};
        tile_blocks(a, grp, OMNIC_Q8X16_BLOCK, nb, &sc, cbuf, acc);
    } else {
        const amx_scales sc = {.row = row,
                               .bstep = 16,
                               .rstride = 1,
                               .lanes = grp + 256,
                               .lstep = OMNIC_Q4X16_BLOCK,
                               .lanes_f16 = true};
        tile_blocks(a, bst, 512, nb, &sc, cbuf, acc);
    }
}

static OMNIC_AMX void matmul_x16(const omnic__node *n, int64_t c0, int64_t c1, uint8_t *part,
                                 const amx_part *P)
{
    const omnic__tensor *a = n->src[0], *w = n->src[1], *b = n->src[2];
    const int64_t M = omnic__tensor_rows(a), K = omnic__tensor_cols(a), N = w->dims[0], nb = K / OMNIC_QK;
    const bool q8 = w->dtype == OMNIC_DTYPE_Q8_0X16;
    const size_t gbytes = (size_t)OMNIC_X16_ROWS * omnic__dtype_row_bytes(w->dtype, K);
    const float *bias = b ? (const float *)b->data : NULL;
    float *dst = n->dst->data;
    uint8_t *bst = part + P->ws; /* nb x 512 <= OMNIC_AMX_NC x K bytes */
    stage_act_x16((const float *)a->data, M, K, part, P);
    const int64_t mt_n = cdiv(M, 16);
    for (int64_t ci = c0; ci < c1; ci++) {
        const int64_t n0 = ci * OMNIC_AMX_NC, n1 = N - n0 < OMNIC_AMX_NC ? N : n0 + OMNIC_AMX_NC;
        for (int64_t mg = 0; mg < mt_n; mg += AMX_MG / 16) {
            const int64_t mg1 = mg + AMX_MG / 16 < mt_n ? mg + AMX_MG / 16 : mt_n;
            for (int64_t g = n0; g < n1; g += OMNIC_X16_ROWS) {
                const uint8_t *grp = (const uint8_t *)w->data + (size_t)(g / OMNIC_X16_ROWS) * gbytes;
                if (!q8) stage_group_x16(grp, nb, bst);
                const __m512 bv = bias ? _mm512_loadu_ps(bias + g) : _mm512_setzero_ps();
                for (int64_t mt = mg; mt < mg1; mt++) {
                    __m512 acc[16];
                    tile_x16(part, P, K, mt, bst, grp, q8, acc);
                    for (int64_t r = 0; r < 16 && mt * 16 + r < M; r++)
                        _mm512_storeu_ps(dst + (mt * 16 + r) * N + g,
                                         bias ? _mm512_add_ps(acc[r], bv) : acc[r]);
                }
            }
        }
    }
}

void OMNIC_AMX omnic__cpu_matmul_amx(const omnic__node *n, int ith, int nth, uint8_t *part)
{
    const omnic__tensor *a = n->src[0], *w = n->src[1], *b = n->src[2];
    const int64_t M = omnic__tensor_rows(a), K = omnic__tensor_cols(a), N = w->dims[0];
    const float *bias = b ? (const float *)b->data : NULL;
    float *dst = n->dst->data;
    const amx_part P = part_layout(M, K);
    int64_t c0, c1;
    omnic__split_rows(cdiv(N, OMNIC_AMX_NC), ith, nth, &c0, &c1);
    if (c0 >= c1) return;
    tilecfg cfg;
    tile_config(&cfg);
    _tile_loadconfig(&cfg);
    if (w->dtype == OMNIC_DTYPE_Q4_0X16 || w->dtype == OMNIC_DTYPE_Q8_0X16) {
        matmul_x16(n, c0, c1, part, &P);
        _tile_release();
        return;
    }
    stage_act((const float *)a->data, M, K, part, &P);
    const int64_t mt_n = cdiv(M, 16);
    for (int64_t ci = c0; ci < c1; ci++) {
        const int64_t n0 = ci * OMNIC_AMX_NC, nc = N - n0 < OMNIC_AMX_NC ? N - n0 : OMNIC_AMX_NC;
        stage_weights(w, n0, nc, K, part, &P);
        for (int64_t mg = 0; mg < mt_n; mg += AMX_MG / 16) {
            const int64_t mg1 = mg + AMX_MG / 16 < mt_n ? mg + AMX_MG / 16 : mt_n;
            for (int64_t t = 0; t < cdiv(nc, 16); t++) {
                const int64_t nn = nc - t * 16 < 16 ? nc - t * 16 : 16; /* valid weight rows */
                const __mmask16 nm = (__mmask16)((1u << nn) - 1u);
                const __m512 bv = bias ? _mm512_maskz_loadu_ps(nm, bias + n0 + t * 16) : _mm512_setzero_ps();
                for (int64_t mt = mg; mt < mg1; mt++) {
                    __m512 acc[16];
                    tile_pair(part, &P, K, t, mt, acc);
                    transpose16(acc);
                    for (int64_t r = 0; r < 16 && mt * 16 + r < M; r++) {
                        __m512 v = bias ? _mm512_add_ps(acc[r], bv) : acc[r];
                        _mm512_mask_storeu_ps(dst + (mt * 16 + r) * N + n0 + t * 16, nm, v);
                    }
                }
            }
        }
    }
    _tile_release();
}
