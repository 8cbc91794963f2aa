/* Backends: an op enum, the graph node a kernel reads, and the kernel table a backend
 * provides. Two backends share this contract: `ref` (plain C, one thread, double
 * accumulation: the numeric oracle) and `cpu` (threads, AVX2/AVX-512, OpenBLAS).
 *
 * Shapes follow core/tensor.h: dims[0] outermost. "rows" = product of all dims but
 * the last. All activations are f32 unless an op says otherwise. Weights may be
 * f32, f16 or bf16 where an op says "w*". Kernels never allocate and never fail:
 * the runtime validates shapes, dtypes and index ranges before a node runs. */
#ifndef OMNIC_BACKEND_BACKEND_H
#define OMNIC_BACKEND_BACKEND_H

#include "core/tensor.h"

/* Append-only: op numbers are hashed into bundle identities. */
typedef enum omnic__op {
    OMNIC_OP_NONE = 0, /* leaf: input, weight or constant; no kernel */
    /* dst[M,N] = a[M,K] . w[N,K]^T (+ bias[N] when src[2]); a f32, w* (HF Linear layout
     * [out,in]) or q8_0 / q4_0 / q4_0x16 / q8_0x16 (K a multiple of 32; the x16 layouts: N a
     * multiple of 16, core/quant.h); bias f32. M is "rows of a" (a may have
     * more than 2 dims: rows x K).
     * Quantized w: each row of a is first quantized to q8 blocks exactly as
     * omnic__quantize_act_q8 (core/quant.h) does (32 elements, f32 scale, roundf), and dst is
     * the dot of the dequantized weights with the dequantized activations (as ggml's
     * vec_dot_type); backends differ from each other only by summation rounding.
     * ip[0] = 1: batch-invariant: every output row bit-identical to that row computed alone
     * (decode batches, DESIGN.md 6); 0: the backend may pick any blocking. */
    OMNIC_OP_MATMUL,
    /* dst = a + b / a * b elementwise; b has a's shape, or b is [cols] (broadcast over
     * rows), or b has a's rows and 1 col (broadcast over cols). b may be w*. */
    OMNIC_OP_ADD,
    OMNIC_OP_MUL,
    /* dst = a * fp[0] + fp[1] */
    OMNIC_OP_SCALE,
    /* per row: x / sqrt(mean(x^2) + fp[0]) * (w + ip[0]) ; w* [cols], optional (src[1] NULL:
     * no weight); ip[0] = 1 selects the Gemma (1 + w) form, 0 plain w. */
    OMNIC_OP_RMSNORM,
    /* per row: (x - mean) / sqrt(var + fp[0]) * w + b ; w*, b* [cols], each optional. */
    OMNIC_OP_LAYERNORM,
    /* per row over the last dim: softmax(x * fp[0]) with fp[0] = scale (1 for plain). */
    OMNIC_OP_SOFTMAX,
    /* RoPE in place of a copy: x [T, n_heads, head_dim] f32, pos i32 [T] (src[1]).
     * ip[0] = n_rot (even, <= head_dim; dims past n_rot pass through),
     * ip[1] = mode: 0 rotate-half (NeoX/HF: pairs (i, i + n_rot/2)), 1 interleaved (GPT-J: pairs (2i, 2i+1)).
     * Frequencies: inv_freq[i] = fp[0]^(-2i/n_rot) (fp[0] = theta base), or taken from
     * src[2] f32 [n_rot/2] when given (llama3 / LongRoPE scaled tables). With src[3] (i32 [T],
     * values 0 or 1), src[2] is f32 [2, n_rot/2] and row t takes table row src[3][t]
     * (LongRoPE: short or long factors, chosen per row as HF chooses them per forward).
     * M-RoPE (Qwen2-VL): pos is i32 [T, 3] (temporal, height, width coordinates of each row)
     * and ip[2..4] = mrope sections (s0, s1, s2), s0 + s1 + s2 = n_rot / 2: frequency i takes
     * its angle from coordinate 0 for i < s0, 1 for i < s0 + s1, else 2 (HF's chunked
     * apply_multimodal_rotary_pos_emb; both halves of a rotate-half pair share it). ip[5] = 1:
     * interleaved layout (Qwen3-VL's mrope_interleaved): frequency i takes coordinate 1 when
     * i % 3 == 1 and i < 3 * s1, coordinate 2 when i % 3 == 2 and i < 3 * s2, else 0
     * (omnic__mrope_axis).
     * angle = pos * inv_freq[i]; cos and sin are multiplied by fp[1] (attention factor, 1 plain).
     * Angles and cos/sin are computed in f32 as HF does: inv_freq f32, pos*inv_freq f32.
     * Exactly: inv_freq[i] = 1.0f / powf(fp[0], (float)(2i) / (float)n_rot);
     * angle = (float)pos[t] * inv_freq[i] (one f32 rounding); c = cos(angle) * fp[1] and
     * s = sin(angle) * fp[1] rounded to f32 (ref: correctly rounded cos/sin of the f32 angle). */
    OMNIC_OP_ROPE,
    /* Scaled dot-product attention, each query row over its own range of KV rows.
     * q [T, n_heads, head_dim] f32; k, v [S, n_kv_heads, head_dim] f32 or f16 (a KV pool
     * layer: rows of every slot); qpos i32 [T] (src[3]: KV index of each query row);
     * optional additive bias f32 [T, S] (src[4]; 0 allowed, a large finite negative masks), or
     * with ip[3] = M > 0 a relative-position table f32 [2M, H] (src[4]; T5-style, Phi-4-mm's
     * audio encoder): row (t, h) adds table[clamp(j - qpos[t], -M, M - 1) + M, h] to key j;
     * optional kv_begin i32 [T] (src[5]: first KV row query i may see, its slot's start;
     * absent: 0). Keys j < kv_begin[i] are never visited, so cost follows the visible range.
     * GQA: head h reads kv head h / (n_heads / n_kv_heads).
     * fp[0] = scale (usually 1/sqrt(head_dim)); fp[1] = logit softcap (0 none: tanh(x/c)*c).
     * ip[0] = causal (key j visible to query i only when j <= qpos[i]; non-causal: j < S);
     * ip[1] = sliding window W (0 none; else also require qpos[i] - j < W).
     * optional span i32 [T, 2] (src[6]; causal only, with kv_begin): row i's visible range
     * [lo, hi) (lo = max(kv_begin[i], qpos[i] - W + 1), hi = qpos[i] + 1) becomes
     * [min(lo, b), max(hi, e)) with b = kv_begin[i] + span[i][0], e = kv_begin[i] +
     * span[i][1], when b < e: a bidirectional block (Gemma 3's image tokens) that holds
     * the query sees all of its keys, as HF or-s its token-type mask into causal and sliding
     * masks. Rows whose span is empty (b >= e) keep [lo, hi).
     * ip[2] = tiled (0: any evaluation; 1: the graph asks for memory independent of S: a
     * backend evaluates rows with an online softmax over key tiles, work buffer O(tile) per
     * thread; same semantics and tolerance, results may differ from ip[2] = 0 in rounding,
     * and are still bit-identical for any thread count). Vision towers set it.
     * Score order (as HF Gemma2/3 eager): s = (q . k) * scale; softcap; + bias; mask.
     * Masked keys get -inf before softmax; a row with no visible key yields zeros.
     * dst [T, n_heads, head_dim] f32. */
    OMNIC_OP_ATTENTION,
    /* Unary activations, elementwise f32. */
    OMNIC_OP_SILU,       /* x * sigmoid(x) */
    OMNIC_OP_GELU,       /* exact: 0.5 x (1 + erf(x / sqrt 2)) */
    OMNIC_OP_GELU_TANH,  /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    OMNIC_OP_GELU_QUICK, /* x * sigmoid(1.702 x) */
    /* Gated: dst = act(gate) * up, gate = src[0], up = src[1], same shape. */
    OMNIC_OP_SWIGLU, /* act = silu */
    OMNIC_OP_GEGLU,  /* act = gelu exact (ip[0] = 0) or gelu tanh (ip[0] = 1) */
    /* dst[T, H] f32 = table[ids[t] - ip[0], :]; table w* or quantized [V, H] (src[0]; quantized
     * rows dequantize exactly), ids i32 [T] (src[1]). A row whose index ids[t] - ip[0] falls
     * outside [0, V) takes row t of base f32 [T, H] (src[2]) when given, else table row 0
     * (Gemma 3n: multimodal ids read the per-layer table's row 0 and take their hard
     * embeddings over the text rows; ip[0] = 0 and ids in range: a plain lookup). */
    OMNIC_OP_GET_ROWS,
    /* Conv2d with stride == kernel (ViT patch embedding) as a matmul:
     * image f32 [C, Hi, Wi] (src[0]), weight w* [O, C, ph, pw] (src[1]), optional bias f32 [O]
     * (src[2]); dst [(Hi/ph) * (Wi/pw), O], patches in row-major (py, px) order.
     * Trailing pixels (Hi % ph rows, Wi % pw cols) are not read ("valid" conv). */
    OMNIC_OP_PATCH_EMBED,
    /* dst = concat(src[0], src[1]) along dim ip[0]; all dtypes, same dtype everywhere. */
    OMNIC_OP_CONCAT,
    /* dst = src[0] sliced along dim ip[0] from index ip[1], length dst->dims[ip[0]]. */
    OMNIC_OP_SLICE,
    /* dst.dims[k] = src.dims[perm[k]], perm = ip[0..ndim-1]; dst contiguous. */
    OMNIC_OP_PERMUTE,
    /* dst i32 [rows] = index of the max of each row of src f32; ties: lowest index;
     * NaN is never chosen unless the row is all NaN (then 0). */
    OMNIC_OP_ARGMAX,
    /* dst = src converted to dst->dtype (f32/f16/bf16 any direction), same element count. */
    OMNIC_OP_CPY,
    /* dst = tanh(x / fp[0]) * fp[0] (final-logit soft capping). */
    OMNIC_OP_SOFTCAP,
    /* Scatter rows: dst row idx[t] = src row t converted to dst's dtype, for t < rows(src).
     * src[0] f32 [T, ...], src[1] idx i32 [T]; dst (any float dtype, same row size) is
     * updated in place (KV pool writes); other rows of dst are untouched. */
    OMNIC_OP_SET_ROWS,
    /* Average pooling of rows laid out as a square grid: src f32 [G * G, C] (row r * G + c =
     * grid cell (r, c)), ip[0] = G, ip[1] = k (k divides G); dst f32 [(G/k)^2, C], row
     * R * (G/k) + Cc = the mean of cells (R*k + i, Cc*k + j), 0 <= i, j < k: their sum in
     * (i, j) row-major order divided by k * k (torch AvgPool2d(k, stride k)). */
    OMNIC_OP_POOL_AVG,
    /* Gaussian top-k activation sparsity (Gemma 3n), per row of x f32 [R, C]:
     * dst = max(0, x - (mean + fp[0] * std)), mean and std (population: divided by C) of the
     * row; fp[0] = the standard-normal quantile of the target sparsity. */
    OMNIC_OP_GAUSS_TOPK,
    /* Magnitude matching (Gemma 3n AltUp), per row: dst = x * t / m with t = sqrt(mean(ref^2))
     * and m = sqrt(max(mean(x^2), fp[0])); x = src[0], ref = src[1], both f32 [R, C]. */
    OMNIC_OP_RMS_MATCH,
    /* Mixture-of-experts routing: dst i32 [T, k] = the k = ip[0] experts of largest logit in
     * each row of logits f32 [T, E] (src[0]; ties: the lower index), listed in ascending expert
     * order (the order their outputs are summed, as HF's loop over experts adds them). A NaN
     * logit is never chosen unless the row has fewer than k others. */
    OMNIC_OP_MOE_ROUTE,
    /* Routing weights: dst f32 [T, k][j] = softmax(logits[t])[ids[t, j]] (src[0] logits [T, E],
     * src[1] ids i32 [T, k]); ip[0] = 1: divided by their sum (norm_topk_prob). */
    OMNIC_OP_MOE_WEIGHTS,
    /* Grouped expert matmul: dst f32 [T, k, N][t, j] = a_r . W[ids[t, j] * N + n, :] for n < N =
     * ip[0], W = src[1] [E * N, K] (the experts' [N, K] weights stacked; any matmul weight dtype;
     * x16 layouts need N a multiple of 16), ids = src[2] i32 [T, k] in [0, E); a = src[0] f32:
     * [T, K] (ip[1] = 0: row t for every j) or [T * k, K] (ip[1] = 1: row t * k + j). Only the
     * rows routed to an expert read its weights; quantized W quantizes activation rows as matmul
     * does. ip[2] = 1: batch-invariant (each output row as if computed alone). An id < 0 routes
     * the row nowhere: its output is zeros and costs nothing (per-row low-rank adapters: rows of
     * prompts without one). */
    OMNIC_OP_MATMUL_ID,
    /* dst f32 [T, H][t] = sum over j = 0..k-1 in order of w[t, j] * y[t, j, :] (src[0] y f32
     * [T, k, H], src[1] w f32 [T, k]): each product rounded, then added (HF's index_add_). */
    OMNIC_OP_MOE_SUM,
    /* dst = x < 0 ? 0 : x elementwise f32 (torch.relu: NaN stays NaN). */
    OMNIC_OP_RELU,
    /* Depthwise 2-D convolution over a channel-last map (NeMo-style conv subsampling of audio
     * encoders, and a conformer's causal depthwise conv1d as kh = k, kw = 1, pt = k - 1):
     * src[0] x f32 [Ho, sh * Wi * Ci]: the input [Hi = Ho * sh, Wi, Ci] with the sh input rows
     * of each output row grouped into one (omnic__g_group_rows), Ci = C (one channel per
     * filter) or 1 (one input channel read by every filter: the first conv of a stack);
     * src[1] w* [C, kh * kw] (torch's [C, 1, kh, kw] flattened); src[2] optional bias f32 [C].
     * dst f32 [Ho, Wo * C]: dst[ho, wo, c] = bias[c] + the sum over i < kh, then j < kw, of
     * x[ho * sh + i - pt, wo * sw + j - pl, Ci == 1 ? 0 : c] * w[c, i * kw + j], input outside
     * [0, Hi) x [0, Wi) reading zero. ip: [0] kh, [1] kw, [2] sh, [3] sw, [4] pt (zero rows
     * padded above), [5] pl (zero columns on the left), [6] Wi, [7] Ci; Wo = dst cols / C.
     * Optional src[3] seg i32 [Ho]: output row ho also reads input rows below seg[ho] as zero
     * (independent segments in one map: a conformer's 500-row chunks). */
    OMNIC_OP_DWCONV2D,
    /* Full 2-D convolution over a channel-last map, the geometry of DWCONV2D (same ip, same
     * grouped input rows, input outside the map reading zero): src[0] x f32 [Ho, sh * Wi * Ci];
     * src[1] w f32 [O, kh * kw * Ci] (torch's [O, Ci, kh, kw] reordered taps-major: element
     * (i * kw + j) * Ci + c); src[2] optional bias f32 [O]. dst f32 [Ho, Wo * O]:
     * dst[ho, wo, o] = bias[o] + sum over i, j, c of x[ho * sh + i - pt, wo * sw + j - pl, c] *
     * w[o, (i * kw + j) * Ci + c] (Gemma 3n's audio subsampling convs; MobileNet convs). */
    OMNIC_OP_CONV2D,
    /* Cumulative group norm over rows (time), one group per row of all its G * C values (JAX's
     * GroupNormalization(num_groups=1, cumulative=True), Gemma 3n's audio subsampling): x f32
     * [T, G * C] (src[0], channel-last: element g * C + c), w f32 [C] (src[1]). With S(t) the
     * f32 sum of row t, M(t) = cumsum(S)(t) / ((t + 1) G C) and Q(t) the f32 sum of row t's
     * (x - M(t))^2: dst[t, g, c] = (x[t, g, c] - M(t)) * rsqrt(cumsum(Q)(t) / ((t + 1) G C) +
     * fp[0]) * w[c]; cumsums in double, each prefix rounded to f32 (torch's CPU cumsum). Row t
     * depends on rows <= t only. */
    OMNIC_OP_CUM_GROUPNORM,
    /* Local causal attention with relative-position key terms (Gemma 3n's audio conformer):
     * q, k, v f32 [T, H, D] (src[0..2], q already scaled), rel f32 [L, H, D] (src[3]: the term
     * for distance 0..L-1), valid i32 [T] (src[4]: key t may be attended when nonzero). Row t,
     * head h: keys s in [max(0, t - L + 1), t] with valid[s]; logit = q.k_s + q.rel[t - s],
     * then fp[0] * tanh(logit / fp[0]) (fp[0] > 0), softmax over those keys in f32, output the
     * weighted sum of v_s; a row with no visible key yields zeros. dst f32 [T, H, D]. */
    OMNIC_OP_ATTN_LOCAL,
    /* dst = 1 / (1 + exp(-x)) elementwise f32 (torch.sigmoid; a GLU gate). */
    OMNIC_OP_SIGMOID,
    OMNIC_OP_COUNT
} omnic__op;

/* The M-RoPE coordinate (0 temporal, 1 height, 2 width) frequency i of a rope node reads:
 * sections ip[2..4], layout ip[5] (0 chunked, 1 interleaved). */
static inline int omnic__mrope_axis(const int32_t *ip, int64_t i)
{
    if (ip[5]) return i % 3 == 1 && i < 3 * (int64_t)ip[3] ? 1 : i % 3 == 2 && i < 3 * (int64_t)ip[4] ? 2 : 0;
    return i < ip[2] ? 0 : i < (int64_t)ip[2] + ip[3] ? 1 : 2;
}

#define OMNIC_MAX_SRC 7 /* attention: q, k, v, qpos, bias, kv_begin, span */
#define OMNIC_OP_NPARAMS 8

typedef struct omnic__node {
    omnic__op op;
    const omnic__tensor *src[OMNIC_MAX_SRC]; /* borrowed; unused entries NULL */
    omnic__tensor *dst;                      /* borrowed; data planned by the runtime */
    int32_t ip[OMNIC_OP_NPARAMS];            /* integer parameters, per op above */
    float fp[OMNIC_OP_NPARAMS];              /* float parameters, per op above */
} omnic__node;

/* A kernel computes its share (thread ith of nth) of node n's output rows and writes
 * only those. wdata: the node's work buffer, wsize(n, nth) bytes, shared by all threads
 * (a kernel partitions it by ith). */
typedef void (*omnic__kernel_fn)(const omnic__node *n, int ith, int nth, void *wdata);
typedef size_t (*omnic__wsize_fn)(const omnic__node *n, int nth);

#define OMNIC_BACKEND_OPS_VERSION 1

typedef struct omnic__backend_ops {
    int version;                             /* OMNIC_BACKEND_OPS_VERSION */
    const char *name;                        /* "ref", "cpu" */
    bool single_threaded;                    /* true: always called with nth == 1 */
    omnic__kernel_fn kernel[OMNIC_OP_COUNT]; /* required for every op but NONE */
    omnic__wsize_fn wsize[OMNIC_OP_COUNT];   /* (optional) NULL: needs no work buffer */
    /* (optional) one-time setup (CPU feature detection); NULL: none. */
    void (*init)(void);
    /* (optional) the storage this backend's kernels prefer for a weight [N, K] held as dt and
     * read only by matmul and get_rows: dt itself, or a layout of the same values (the
     * loader converts before planning); NULL: dt. */
    omnic_dtype (*weight_dtype)(omnic_dtype dt, int64_t N, int64_t K);
} omnic__backend_ops;

/* Names of ops ("matmul", ...), indexed by omnic__op. */
extern const char *const omnic__op_names[OMNIC_OP_COUNT];

/* The two CPU-side backends. */
const omnic__backend_ops *omnic__backend_ref(void);
const omnic__backend_ops *omnic__backend_cpu(void);
/* By name ("ref" / "cpu"); NULL when unknown. */
const omnic__backend_ops *omnic__backend_by_name(const char *name);

/* Work-buffer bytes for node n with nth threads on backend b (0 when wsize is NULL). */
size_t omnic__backend_wsize(const omnic__backend_ops *b, const omnic__node *n, int nth);

#endif
