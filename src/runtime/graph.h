/* Module graphs: family code builds a graph of backend ops once, at capacity shapes;
 * the planner (plan.c) lays every intermediate into one arena by liveness, and a call
 * (module.c) sets the real lengths, so a graph planned for capacity C runs n <= C rows
 * at the cost of n.
 *
 * Variable lengths: only dims[0] of a tensor may vary, and it follows the call's row
 * count n (<= capacity). KV caches are leaves bound per call to a KV pool's layers;
 * the runtime fills each row's KV index and first visible KV row.
 * Errors while building are sticky: a constructor that fails records the error in the
 * graph and returns NULL, and every constructor passes NULL through, so family code
 * checks omnic__graph_status() once at the end. */
#ifndef OMNIC_RUNTIME_GRAPH_H
#define OMNIC_RUNTIME_GRAPH_H

#include "backend/backend.h"

typedef enum omnic__var {
    OMNIC_VAR_NONE = 0, /* fixed shape */
    OMNIC_VAR_T,        /* dims[0] = n, the call's row count (<= capacity) */
} omnic__var;

typedef enum omnic__gkind {
    OMNIC_GT_INTERMEDIATE = 0, /* produced by a node; planned in the arena */
    OMNIC_GT_INPUT,            /* module input; planned in the input region, filled per call */
    OMNIC_GT_WEIGHT,           /* borrowed read-only data (mapped checkpoint or owned by the model) */
    OMNIC_GT_VIEW,             /* rows of another tensor; shares its storage */
    OMNIC_GT_KV_K, /* a KV pool layer's K / V [n_slots * capacity, n_kv, head_dim], bound per call */
    OMNIC_GT_KV_V,
    OMNIC_GT_KV_INDEX, /* i32 [n]: pool row each call row's K/V goes to; filled per call */
    OMNIC_GT_KV_BEGIN, /* i32 [n]: first pool row of each call row's slot; filled per call */
} omnic__gkind;

typedef struct omnic__gtensor {
    omnic__tensor t; /* first member: a graph's omnic__tensor * is its gtensor. dims at
                      * capacity until a call sets the variable dim */
    int id;          /* index in graph->tensors */
    omnic__gkind kind;
    omnic__var var;   /* which call-time length dims[0] follows */
    int64_t cap_rows; /* dims[0] at capacity */
    int64_t var_div;  /* VAR_T: dims[0] = n / var_div at call time (1, or k after
                       * omnic__g_group_rows) */
    int base;         /* views: index of the tensor viewed; -1 otherwise */
    int64_t view_row; /* views: first row viewed */
    int layer;        /* KV_K/V: layer index */
    bool is_output;
    /* planning */
    int def, last_use; /* node indices; -1 when none */
    size_t offset;     /* byte offset in its region */
} omnic__gtensor;

typedef struct omnic__gnode {
    omnic__node node; /* src/dst point at gtensor.t entries */
    int src[OMNIC_MAX_SRC];
    int dst;
    bool slice_from_end; /* SLICE: ip[1] = src rows - dst rows at call time */
} omnic__gnode;

typedef struct omnic__graph {
    omnic__gtensor **tensors; /* owned, each separately, so tensor pointers stay valid */
    int n_tensors, cap_tensors;
    omnic__gnode *nodes; /* owned */
    int n_nodes, cap_nodes;
    int64_t capacity;     /* rows a call may have at most */
    bool batch_invariant; /* matmuls keep every row independent of the others (decode) */
    int64_t row_multiple; /* every call's n must be a multiple of this (1 unless a
                           * variable-length tensor was grouped by omnic__g_group_rows) */
    omnic_status status;  /* sticky build error */
    omnic_err err;
} omnic__graph;

/* capacity: the largest T (and kv_start + T) a call may use. */
omnic_status omnic__graph_init(omnic__graph *g, int64_t capacity, omnic_err *err);
void omnic__graph_deinit(omnic__graph *g);
/* OMNIC_OK, or the first build error (copied into err). */
omnic_status omnic__graph_status(const omnic__graph *g, omnic_err *err);

/* Leaves. dims are at capacity; var says whether dims[0] varies. Return NULL on error. */
omnic__tensor *omnic__g_input(omnic__graph *g, const char *name, omnic_dtype dt, int ndim,
                              const int64_t *dims, omnic__var var);
omnic__tensor *omnic__g_weight(omnic__graph *g, const omnic__tensor *w); /* borrows w's data */
/* KV pool layer (K or V) of pool_rows rows; bound to the call's pool. */
omnic__tensor *omnic__g_kv_layer(omnic__graph *g, bool is_v, int layer, omnic_dtype dt, int64_t pool_rows,
                                 int64_t n_kv, int64_t head_dim);
/* The KV pool row of each call row (i32 [n]): where its K/V is written and what causal
 * masks compare (as opposed to rope coordinates). */
omnic__tensor *omnic__g_kv_index(omnic__graph *g);
/* The first pool row of each call row's slot (i32 [n]): attention never looks below it. */
omnic__tensor *omnic__g_kv_begin(omnic__graph *g);
/* Rows [row0, row0 + n_rows) of a fixed-shape x, sharing its storage. */
omnic__tensor *omnic__g_view_rows(omnic__graph *g, omnic__tensor *x, int64_t row0, int64_t n_rows);
/* Same storage, new shape; dims[0] keeps x's variability (dims[0] of the new shape must
 * be x's dims[0] when x varies). */
omnic__tensor *omnic__g_reshape(omnic__graph *g, omnic__tensor *x, int ndim, const int64_t *dims);
/* Groups of k consecutive rows of a 2-D x [T, C] as one row: a view [T / k, k * C] sharing
 * x's storage (the Qwen2-VL patch merger's view(-1, 4 * C)). When x varies, the view's rows
 * follow n / k, the graph's row_multiple becomes a multiple of k and module calls refuse an
 * n that is not a multiple of it; capacity must be a multiple of k. A result computed from
 * grouped rows (rows n / d) may be grouped again (rows n / (d * k)); a grouped view may not. */
omnic__tensor *omnic__g_group_rows(omnic__graph *g, omnic__tensor *x, int64_t k);
void omnic__g_mark_output(omnic__graph *g, omnic__tensor *t, const char *name);

/* Ops (semantics in backend/backend.h). Output dtype f32 unless noted. add / mul: b has a's
 * shape, or is one row [cols] (fixed), or one value per row [rows, 1] (varying with a). */
omnic__tensor *omnic__g_matmul(omnic__graph *g, omnic__tensor *a, omnic__tensor *w, omnic__tensor *bias);
omnic__tensor *omnic__g_add(omnic__graph *g, omnic__tensor *a, omnic__tensor *b);
omnic__tensor *omnic__g_mul(omnic__graph *g, omnic__tensor *a, omnic__tensor *b);
omnic__tensor *omnic__g_scale(omnic__graph *g, omnic__tensor *a, float mul, float add);
omnic__tensor *omnic__g_rmsnorm(omnic__graph *g, omnic__tensor *x, omnic__tensor *w, float eps,
                                bool one_plus);
omnic__tensor *omnic__g_layernorm(omnic__graph *g, omnic__tensor *x, omnic__tensor *w, omnic__tensor *b,
                                  float eps);
omnic__tensor *omnic__g_softmax(omnic__graph *g, omnic__tensor *x, float scale);
omnic__tensor *omnic__g_rope(omnic__graph *g, omnic__tensor *x, omnic__tensor *pos, int n_rot, int mode,
                             float theta, omnic__tensor *inv_freq, float attn_factor);
/* RoPE with two frequency tables inv_freq f32 [2, n_rot/2]: row t uses table row sel[t]
 * (sel i32 [T], values 0 / 1; an input constrained to [0, 2)). */
omnic__tensor *omnic__g_rope_select(omnic__graph *g, omnic__tensor *x, omnic__tensor *pos, int n_rot,
                                    int mode, float theta, omnic__tensor *inv_freq, omnic__tensor *sel,
                                    float attn_factor);
/* M-RoPE (Qwen2-VL, rotate-half): pos i32 [T, 3] (temporal, height, width coordinates);
 * frequency i < sections[0] rotates by coordinate 0, the next sections[1] by coordinate 1,
 * the rest by coordinate 2; sections sum to n_rot / 2 (HF's chunked mrope_section).
 * interleaved (Qwen3-VL): frequencies 1, 4, 7, .. below 3 * sections[1] by coordinate 1,
 * 2, 5, 8, .. below 3 * sections[2] by coordinate 2, the others by coordinate 0. */
omnic__tensor *omnic__g_rope_mrope(omnic__graph *g, omnic__tensor *x, omnic__tensor *pos, int n_rot,
                                   float theta, omnic__tensor *inv_freq, const int sections[3],
                                   bool interleaved, float attn_factor);
omnic__tensor *omnic__g_attention(omnic__graph *g, omnic__tensor *q, omnic__tensor *k, omnic__tensor *v,
                                  omnic__tensor *qpos, omnic__tensor *bias, omnic__tensor *kv_begin,
                                  float scale, bool causal, int window, float softcap);
/* Causal attention (window W, softcap) whose rows also see a bidirectional span: span i32
 * [T, 2] (the rows of q), row t's extra keys [kv_begin[t] + span[t][0], kv_begin[t] +
 * span[t][1]) (empty when span[t][0] >= span[t][1]); backend.h has the exact rule. */
omnic__tensor *omnic__g_attention_spans(omnic__graph *g, omnic__tensor *q, omnic__tensor *k, omnic__tensor *v,
                                        omnic__tensor *qpos, omnic__tensor *kv_begin, omnic__tensor *span,
                                        float scale, int window, float softcap);
/* The same attention (no bias, window or softcap) evaluated tiled (backend.h ip[2] = 1): the
 * backend's work memory does not grow with the key count. For long bidirectional ranges
 * (vision towers: thousands of patches per block). */
omnic__tensor *omnic__g_attention_tiled(omnic__graph *g, omnic__tensor *q, omnic__tensor *k, omnic__tensor *v,
                                        omnic__tensor *qpos, omnic__tensor *kv_begin, float scale,
                                        bool causal);
/* Non-causal attention over all S keys with a T5-style relative-position bias: key j of row (t,
 * h) adds table[clamp(j - qpos[t], -M, M - 1) + M, h], table f32 [2M, H] (fixed). */
omnic__tensor *omnic__g_attention_relpos(omnic__graph *g, omnic__tensor *q, omnic__tensor *k,
                                         omnic__tensor *v, omnic__tensor *qpos, omnic__tensor *table,
                                         int max_distance, float scale);
/* The same over blocks of rows: causal attention whose rows also see their span (relative to
 * kv_begin), as omnic__g_attention_spans: kv_begin = a block's first row and span = [0, block
 * length) make each block bidirectional within itself (a conformer's 500-row chunks). */
omnic__tensor *omnic__g_attention_relpos_spans(omnic__graph *g, omnic__tensor *q, omnic__tensor *k,
                                               omnic__tensor *v, omnic__tensor *qpos, omnic__tensor *table,
                                               int max_distance, float scale, omnic__tensor *kv_begin,
                                               omnic__tensor *span);
omnic__tensor *omnic__g_unary(omnic__graph *g, omnic__op op,
                              omnic__tensor *x); /* SILU, GELU*, RELU, SIGMOID */
/* Depthwise conv geometry (backend.h OMNIC_OP_DWCONV2D): kernel kh x kw, strides, zero padding
 * above (pt) and on the left (pl), input width and channels (in_c: 1 or the filters'), output
 * width. */
typedef struct omnic__dwconv2d_geom {
    int kh, kw, sh, sw, pt, pl, in_w, in_c, out_w;
} omnic__dwconv2d_geom;
/* x f32 [Ho, sh * in_w * in_c] (input rows grouped sh per output row: omnic__g_group_rows),
 * w [C, kh * kw] (or torch's [C, 1, kh, kw]), bias f32 [C] or NULL -> [Ho, out_w * C]. */
omnic__tensor *omnic__g_dwconv2d(omnic__graph *g, omnic__tensor *x, omnic__tensor *w, omnic__tensor *bias,
                                 const omnic__dwconv2d_geom *c);
/* The same with segments: seg i32 (x's rows): output row r reads input rows below seg[r] as zero. */
omnic__tensor *omnic__g_dwconv2d_seg(omnic__graph *g, omnic__tensor *x, omnic__tensor *w, omnic__tensor *bias,
                                     omnic__tensor *seg, const omnic__dwconv2d_geom *c);
/* Full convolution of the same geometry (backend.h OMNIC_OP_CONV2D): x f32 [Ho, sh * in_w *
 * in_c], w f32 [O, kh * kw * in_c] (taps-major), bias f32 [O] or NULL -> [Ho, out_w * O]. */
omnic__tensor *omnic__g_conv2d(omnic__graph *g, omnic__tensor *x, omnic__tensor *w, omnic__tensor *bias,
                               const omnic__dwconv2d_geom *c);
/* Cumulative group norm over rows (backend.h OMNIC_OP_CUM_GROUPNORM): x f32 [T, G * C], w f32 [C]. */
omnic__tensor *omnic__g_cum_groupnorm(omnic__graph *g, omnic__tensor *x, omnic__tensor *w, float eps);
/* Local causal attention with relative key terms (backend.h OMNIC_OP_ATTN_LOCAL): q, k, v f32
 * [T, H, D], rel f32 [L, H, D] (fixed, L <= OMNIC_ATTN_LOCAL_MAX), valid i32 [T]. */
#define OMNIC_ATTN_LOCAL_MAX 512
omnic__tensor *omnic__g_attn_local(omnic__graph *g, omnic__tensor *q, omnic__tensor *k, omnic__tensor *v,
                                   omnic__tensor *rel, omnic__tensor *valid, float softcap);
omnic__tensor *omnic__g_glu(omnic__graph *g, omnic__op op, omnic__tensor *gate, omnic__tensor *up,
                            int variant);
omnic__tensor *omnic__g_get_rows(omnic__graph *g, omnic__tensor *table, omnic__tensor *ids);
/* Rows of ids in [offset, offset + rows of table) read table[id - offset]; the others keep
 * their row of base f32 [T, H] (Gemma 3n's hard multimodal embeddings over the text rows). */
omnic__tensor *omnic__g_get_rows_over(omnic__graph *g, omnic__tensor *table, omnic__tensor *ids,
                                      omnic__tensor *base, int32_t offset);
omnic__tensor *omnic__g_slice_last_rows(omnic__graph *g, omnic__tensor *x, int64_t n);
omnic__tensor *omnic__g_argmax(omnic__graph *g, omnic__tensor *x);
/* x[..., start : start + len, ...] along dim (>= 1: rows keep x's variability), contiguous. */
omnic__tensor *omnic__g_slice(omnic__graph *g, omnic__tensor *x, int dim, int64_t start, int64_t len);
/* Gaussian top-k sparsity of each row (backend.h): max(0, x - (mean + z * std)). */
omnic__tensor *omnic__g_gauss_topk(omnic__graph *g, omnic__tensor *x, float z);
/* Mixture of experts (backend.h): the top-k experts of each row of logits [T, E] (i32 [T, k],
 * ascending), their softmax weights (norm: renormalized over the k), the grouped expert matmul
 * of a ([T, K], or [T, k, K] per slot) by experts stacked in w [E * n_out, K] -> [T, k, n_out],
 * and the weighted sum over k of y [T, k, H] -> [T, H]. */
omnic__tensor *omnic__g_moe_route(omnic__graph *g, omnic__tensor *logits, int k);
omnic__tensor *omnic__g_moe_weights(omnic__graph *g, omnic__tensor *logits, omnic__tensor *ids, bool norm);
omnic__tensor *omnic__g_matmul_id(omnic__graph *g, omnic__tensor *a, omnic__tensor *w, omnic__tensor *ids,
                                  int64_t n_out, bool per_slot);
omnic__tensor *omnic__g_moe_sum(omnic__graph *g, omnic__tensor *y, omnic__tensor *w);
/* x rescaled per row to ref's RMS: x * rms(ref) / sqrt(max(mean(x^2), floor)). */
omnic__tensor *omnic__g_rms_match(omnic__graph *g, omnic__tensor *x, omnic__tensor *ref, float floor);
/* concat(a, b) along dim (fixed shapes, same dtype: weights converted to f32 first). */
omnic__tensor *omnic__g_concat(omnic__graph *g, omnic__tensor *a, omnic__tensor *b, int dim);
/* ViT patch embedding (conv with stride = kernel) of a fixed f32 image [C, H, W] by filter
 * w [O, C, ph, pw] (+ bias f32 [O]) -> [(H/ph) * (W/pw), O]; trailing pixels that do not fill
 * a patch are dropped, as a "valid" conv does (both kernels index by floor division). */
omnic__tensor *omnic__g_patch_embed(omnic__graph *g, omnic__tensor *img, omnic__tensor *w,
                                    omnic__tensor *bias);
omnic__tensor *omnic__g_softcap(omnic__graph *g, omnic__tensor *x, float cap);
/* x f32 [grid * grid, C] (a fixed-size grid of rows, row-major) -> [(grid/k)^2, C]: the mean
 * of each k x k block (torch AvgPool2d(k, stride k) over the [C, grid, grid] view). */
omnic__tensor *omnic__g_pool_avg(omnic__graph *g, omnic__tensor *x, int64_t grid, int64_t k);
/* Writes src (converted) into dst, a view; returns dst so later reads order after it. */
omnic__tensor *omnic__g_cpy(omnic__graph *g, omnic__tensor *src, omnic__tensor *dst);
/* dst row idx[t] = src row t (converted); dst is a leaf updated in place (a KV pool
 * layer); returns dst so later reads order after the write. */
omnic__tensor *omnic__g_set_rows(omnic__graph *g, omnic__tensor *dst, omnic__tensor *src, omnic__tensor *idx);

/* The gtensor behind a graph tensor pointer (t must belong to g). */
omnic__gtensor *omnic__g_of(omnic__graph *g, const omnic__tensor *t);
int omnic__g_index(const omnic__graph *g, const omnic__tensor *t);

#endif
