/* The text decoder shared by the Llama-style families (llama, qwen2, qwen3, phi3,
 * gemma3_text): its configuration, its weights, and the graph of each module. A family
 * file parses its config.json into omnic__text_config (the switches below) and the
 * decoder does the rest: one graph builder, feature by feature. */
#ifndef OMNIC_MODELS_TEXT_DECODER_H
#define OMNIC_MODELS_TEXT_DECODER_H

#include <jansson.h>

#include "core/limits.h"
#include "io/safetensors.h"
#include "mm/prepared.h"
#include "models/weights.h"
#include "runtime/module.h"

typedef enum omnic__rope_type {
    OMNIC_ROPE_DEFAULT = 0, /* inv_freq[i] = theta^(-2i/n_rot) */
    OMNIC_ROPE_LLAMA3,      /* Llama 3.1 wavelength-banded scaling of the default table */
    OMNIC_ROPE_LINEAR,      /* inv_freq / factor (Gemma3 global layers) */
    OMNIC_ROPE_LONGROPE,    /* Phi-3 / Phi-4: per-dim short/long factors and an attention factor */
} omnic__rope_type;

typedef enum omnic__act {
    OMNIC_ACT_SILU = 0,  /* SwiGLU MLP */
    OMNIC_ACT_GELU_TANH, /* GeGLU with gelu_pytorch_tanh (Gemma) */
} omnic__act;

typedef struct omnic__text_config {
    int64_t vocab, hidden, n_layers, n_heads, n_kv_heads, head_dim, intermediate, max_pos;
    int64_t n_rot; /* rotary dims per head (head_dim unless partial rotary) */
    double rms_eps, rope_theta;
    omnic__rope_type rope_type;
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor; /* llama3; factor also linear */
    int64_t rope_original_max_pos;                                   /* llama3, longrope */
    float longrope_short[OMNIC_MAX_HEAD_DIM / 2], longrope_long[OMNIC_MAX_HEAD_DIM / 2]; /* [n_rot/2] */
    float rope_attn_factor;  /* cos/sin multiplier (LongRoPE); 1 otherwise */
    bool mrope;              /* Qwen2-VL M-RoPE: positions [n, 3], frequencies split by mrope_section */
    int mrope_section[3];    /* frequencies per axis (temporal, height, width); sum = n_rot / 2 */
    bool mrope_interleaved;  /* Qwen3-VL: axes interleaved over the frequencies (backend.h ROPE) */
    int64_t n_deepstack;     /* Qwen3-VL: the embeddings prefill's "deepstack" input [n, k * H] is added
                              * to the rows after layers 0..k-1 */
    int64_t mrope_sum;       /* their sum as parsed (checked against n_rot / 2 once n_rot is known) */
    double rope_local_theta; /* sliding layers' base (Gemma3); 0: same as rope_theta, no scaling */
    bool tie_embeddings;
    bool qkv_bias;                 /* q/k/v projections carry biases (qwen2) */
    bool o_bias;                   /* o_proj carries a bias (attention_bias in llama / qwen3) */
    bool qk_norm;                  /* per-head RMSNorm of q and k before RoPE (qwen3, gemma3) */
    bool norm_one_plus;            /* RMSNorm scales by (1 + w) (gemma) */
    bool sandwich_norms;           /* post-attention and pre/post-feedforward norms (gemma3) */
    bool fused_qkv, fused_gate_up; /* phi3 storage: one qkv_proj, one gate_up_proj */
    omnic__act act;
    float embed_scale;                 /* 0: none; else embeddings are multiplied by it (gemma: sqrt(H)) */
    float attn_scale;                  /* softmax scale: head_dim^-1/2, or query_pre_attn_scalar^-1/2 */
    float attn_softcap, final_softcap; /* 0: none */
    int64_t sliding_window;            /* 0: none */
    uint8_t layer_sliding[OMNIC_MAX_LAYERS]; /* 1: layer uses the sliding window and local RoPE */
    /* Gemma 3n (altup > 0; models/altup_decoder.h): altup parallel residual streams with
     * Laurel, per-layer embeddings (PLE), activation sparsity, v_norm and KV sharing */
    int64_t altup;         /* altup_num_inputs; 0: one residual stream (every other family) */
    int64_t altup_active;  /* altup_active_idx: the stream the layer computes on */
    float altup_coef_clip; /* correction coefficients clamped to +-it at load (HF does in place) */
    bool altup_correct_scale;
    int64_t laurel_rank;
    int64_t ple_dim, ple_vocab;         /* hidden_size_per_layer_input, vocab_size_per_layer_input */
    int64_t mm_vocab_offset;            /* ids >= it take hard multimodal embeddings (gemma3n); 0 none */
    double mm_rms_eps;                  /* the multimodal embedders' RMSNorm eps */
    float sparsity_z[OMNIC_MAX_LAYERS]; /* layer's gate sparsity quantile (icdf); 0: dense MLP */
    bool v_norm;                        /* v goes through an RMSNorm without weight */
    int64_t n_kv_layers;                /* layers owning a KV cache (the first ones; n_layers
                                         * unless the last layers share, Gemma 3n) */
    int16_t kv_layer[OMNIC_MAX_LAYERS]; /* the cache layer l attends over (l itself, or the
                                         * last owning layer of its type) */
    /* Mixture of experts (n_experts > 0): layer l's MLP is routed when layer_moe[l] */
    int64_t n_experts, experts_per_tok, moe_intermediate;
    bool norm_topk; /* renormalize the top-k routing weights */
    uint8_t layer_moe[OMNIC_MAX_LAYERS];
    bool experts_fused;       /* Qwen3-VL-MoE storage: mlp.experts.gate_up_proj [E, H, 2 Im] and down_proj
                               * [E, Im, H] (x . W), not one Linear per expert */
    const char *mm_prefix;    /* gemma3n: prefix of embed_vision. / embed_audio. */
    const char *prefix;       /* weight-name prefix of the text model ("model.") */
    const char *lm_head_name; /* untied head's tensor name; NULL: "lm_head.weight" */
    /* Second spelling of the names (LLaVA: old language_model.model.* vs new
     * model.language_model.*): used instead of prefix / lm_head_name when the checkpoint has
     * no prefix + "embed_tokens.weight" but has alt_prefix + "embed_tokens.weight". NULL: none. */
    const char *alt_prefix, *alt_lm_head_name;
} omnic__text_config;

/* Attention masking of text.embeddings_prefill (part of the bundle's mask mode). */
typedef enum omnic__mask_mode {
    OMNIC_MASK_CAUSAL = 0,  /* causal only; no bias input */
    OMNIC_MASK_CAUSAL_BIAS, /* causal and an explicit additive bias input */
    OMNIC_MASK_BIAS,        /* the explicit additive bias alone (bidirectional spans) */
    OMNIC_MASK_SPANS,       /* causal (and sliding window) plus bidirectional row spans: input
                             * attn_span (Gemma 3's image tokens) */
} omnic__mask_mode;

typedef struct omnic__text_decoder_layer {
    omnic__tensor attn_norm;            /* [H] input_layernorm */
    omnic__tensor wq, wk, wv, wo;       /* [n_heads*hd, H], [n_kv*hd, H] x2, [H, n_heads*hd] (row views
                                         * of qkv_proj when fused) */
    omnic__tensor *bq, *bk, *bv, *bo;   /* f32 [out] converted at load, or NULL */
    omnic__tensor q_norm, k_norm;       /* [head_dim] when qk_norm */
    omnic__tensor post_attn_norm;       /* [H] sandwich only */
    omnic__tensor mlp_norm;             /* [H] post_attention_layernorm (llama) / pre_feedforward (gemma) */
    omnic__tensor post_mlp_norm;        /* [H] sandwich only */
    omnic__tensor w_gate, w_up, w_down; /* [I, H], [I, H], [H, I] (row views of gate_up_proj when fused) */
    /* mixture-of-experts layers: router [E, H] (mlp.gate), and the experts' gate / up [E * Im, H]
     * and down [E * H, Im] stacked (owned copies of the per-expert tensors) */
    omnic__tensor router;
    omnic__tensor *experts_gate, *experts_up, *experts_down;
    omnic__tensor *expert_views;      /* owned [3 * E]: the per-expert tensors as bound (gate, up,
                                       * down of expert 0, 1, ...), until stacked; with fused storage
                                       * their data is NULL outside omnic__text_decoder_experts_open */
    omnic__tensor fused_gu, fused_dn; /* fused storage (mapped): [E, H, 2 Im], [E, Im, H]; else data NULL */
    void *expert_block;               /* owned while open: fused storage transposed into the
                                       * per-expert [out, in] tensors the views point into */
} omnic__text_decoder_layer;

typedef struct omnic__text_decoder {
    omnic__text_config cfg;
    omnic__tensor embed;               /* [V, H] */
    omnic__tensor norm;                /* [H] */
    omnic__tensor lm_head;             /* [V, H]; the embedding when tied */
    omnic__text_decoder_layer *layers; /* owned [n_layers] */
    omnic__tensor *rope_global; /* owned f32 [n_rot/2]: full-attention layers (short factors for LongRoPE) */
    omnic__tensor *rope_two;    /* owned f32 [2, n_rot/2] LongRoPE short; long factors, or NULL */
    /* Set by the caller before building modules (LongRoPE whose context exceeds
     * original_max_position_embeddings): full-attention layers then take the table per row
     * from an extra last input "rope_long" i32 [n] (0 short, 1 long; omnic__rope_long says
     * which), as HF switches per forward. */
    bool rope_switch;
    omnic__tensor *rope_local;  /* owned f32 [n_rot/2]: sliding layers, or NULL */
    struct omnic__altup *altup; /* owned: Gemma 3n's extra weights (cfg.altup > 0), else NULL */
    /* owned: low-rank adapters (models/lora.h), or NULL. Set before modules are built: every
     * text module then takes one more last input "adapter" i32 [n, 1], each row's adapter id
     * (-1: none; the caller keeps ids below lora->n). */
    struct omnic__lora *lora;
    omnic__weight_copies copies; /* aligned copies of weights the file left misaligned */
    omnic__tensor **qweights;    /* owned: linear weights quantized at load (models/quantize.h) */
    size_t n_qweights;
    int64_t stored_bytes; /* bytes of the bound weights as stored (set by quantize) */
} omnic__text_decoder;

/* The Hugging Face config class defaults of a family (its __init__ arguments) and what the
 * family's HF code does with the optional keys: applied when config.json omits a key. */
typedef struct omnic__text_defaults {
    const char *family; /* for messages: "llama" */
    int64_t vocab, hidden, intermediate, n_layers, n_heads;
    int64_t n_kv_heads; /* 0: num_attention_heads */
    int64_t head_dim;   /* 0: hidden_size / num_attention_heads */
    int64_t max_pos;
    double rms_eps, rope_theta;
    bool tie;                      /* tie_word_embeddings */
    const char *act_key, *act;     /* the activation's key ("hidden_act") and its default */
    bool partial_rotary;           /* partial_rotary_factor honoured (Phi3); else it must be 1 */
    int64_t original_max_pos;      /* class attribute original_max_position_embeddings (Phi3); 0: none */
    const char *const *rope_types; /* accepted rope types; NULL: default, linear, llama3, longrope */
    const char *const *rope_alias; /* pairs {from, to, ..., NULL} applied to the rope type (Phi3: su) */
    bool mrope;                    /* rope dicts may carry mrope_section (Qwen2-VL M-RoPE) */
    bool rope_local;               /* sliding layers with their own RoPE base (Gemma3): 5.x
                                    * rope_parameters per layer type, 4.x rope_local_base_freq */
    double rope_local_theta;       /* its default */
} omnic__text_defaults;

/* Parses the Llama-style keys of a config.json object (what: "config.json") with the
 * family's HF class defaults d for absent keys; families then switch features on. RoPE from
 * 4.x rope_theta / rope_scaling or 5.x rope_parameters; a rope type or rope key omnic does
 * not implement is E_UNSUPPORTED naming it. Every dimension is range-checked and
 * cross-checked (heads divide, head_dim even). Does not check for unknown keys (the family
 * does, with omnic__config_keys_decoder). */
omnic_status omnic__text_config_parse(const json_t *cfg, const char *what, const omnic__text_defaults *d,
                                      omnic__text_config *out, omnic_err *err);

/* The RoPE inverse frequencies [n_rot/2] f32 of the config as the decoder uses them (HF's
 * float32 arithmetic): which 0: full-attention layers (LongRoPE: short factors), 1: LongRoPE
 * long factors, 2: sliding layers (rope_local_theta, no scaling). */
void omnic__text_rope_freqs(const omnic__text_config *c, int which, float *out);

/* Binds and checks HF weight names (prefix + embed_tokens.weight, layers.{i}.*, ...)
 * against the config: every tensor present with the expected shape and a float dtype. */
omnic_status omnic__text_decoder_load(omnic__text_decoder *d, const omnic__text_config *cfg,
                                      const omnic__safetensors *st, omnic_err *err);
void omnic__text_decoder_deinit(omnic__text_decoder *d);
/* Stacks the experts of every mixture-of-experts layer not stacked yet (by quantization,
 * models/quantize.h) into owned copies in their stored dtype, releasing the mapped pages as
 * it copies. Called once after load (and quantization). E_INVALID (mixed expert dtypes),
 * E_NOMEM. */
omnic_status omnic__text_decoder_stack_experts(omnic__text_decoder *d, const omnic__safetensors *st,
                                               omnic_err *err);
/* Layer l's expert views readable: fused storage (Qwen3-VL-MoE) is transposed into an owned
 * block of per-expert [out, in] tensors (one layer at a time: peak memory one layer's experts),
 * releasing the mapped pages; per-expert storage is already readable. close frees the block. */
omnic_status omnic__text_decoder_experts_open(omnic__text_decoder *d, const omnic__safetensors *st, int64_t l,
                                              omnic_err *err);
void omnic__text_decoder_experts_close(omnic__text_decoder *d, int64_t l);

/* What a decoder graph ends with. */
typedef enum omnic__text_head {
    OMNIC_HEAD_LAST, /* logits f32 [1, V] of the last row (prefills: one sequence per call) */
    OMNIC_HEAD_ALL,  /* logits f32 [n, V] of every row (text.decode) */
    OMNIC_HEAD_NONE, /* "hidden" f32 [n, H], every row after the final norm: the rows that
                      * sample go through text.head (mixed steps) */
} omnic__text_head;

/* Builds the decoder into m (initialized with its row capacity): inputs tokens i32 [n]
 * and positions i32 [n] (rope coordinates); each row's K/V goes to its KV pool row
 * (pool of kv_rows rows, kv_dtype) and it attends over its slot's history.
 * head LAST: text.token_prefill (one sequence per call); ALL: text.decode (rows of any slots,
 * batch-invariant); NONE: text.decode_body, text.decode without its head (batch-invariant).
 * taps: also output "inputs_embeds" [n, H] (post-scale) and every layer's output
 * "hidden_l{i}" [n, H], for stage dumps (DESIGN.md 5); they stay alive to the end. */
omnic_status omnic__text_decoder_build(const omnic__text_decoder *d, omnic__module *m, omnic_dtype kv_dtype,
                                       int64_t kv_rows, omnic__text_head head, bool taps, omnic_err *err);
/* text.head: input "hidden" f32 [n, H] (final-normed rows) -> "logits" f32 [n, V] (lm_head and
 * the final softcap), batch-invariant: a row's logits are bit-identical to text.decode's. */
omnic_status omnic__text_decoder_build_head(const omnic__text_decoder *d, omnic__module *m, omnic_err *err);

/* text.embeddings_prefill into m (initialized with its row capacity, the prefill chunk):
 * the decoder of omnic__text_decoder_build (head LAST) without the embedding lookup
 * and scale. Inputs, in signature order:
 *   inputs_embeds f32 [n, H]  post-scale rows (omnic__text_decoder_embed_rows for text;
 *                             projected media rows), checked finite;
 *   positions     i32 [n]     rope coordinates;
 *   attn_bias     f32 [n, kv_rows]  (mask modes with a bias only) additive, checked finite:
 *                 0 visible, a large finite negative (OMNIC_MASK_NEG) masked. Column j is
 *                 KV pool row j (the attention op's [T, S] layout): for a one-sequence call
 *                 into slot s at kv_start, prompt bias entry (kv_start + i, c) of a [T, T]
 *                 prompt bias is column s * capacity + c of row i; omnic__text_bias_rows
 *                 builds it. Columns outside the slot's rows [s*cap, s*cap + kv_start + n)
 *                 must be masked in OMNIC_MASK_BIAS mode (the op then visits every pool row
 *                 from the slot's start); in CAUSAL_BIAS mode the causal flag already hides them.
 *   attn_span     i32 [n, 2]        (OMNIC_MASK_SPANS only) row i's bidirectional span [b, e)
 *                 in rows of its slot (b = e: none): every attention of the call lets the row
 *                 also see keys b..e-1 (backend.h, the attention op's span); a span must hold
 *                 its row and end inside the call, checked in [0, capacity].
 * head LAST: output logits f32 [1, V] of the last row; each row's K/V is written to its pool
 * row as text.token_prefill does (one sequence per call, chunk by chunk). taps: also outputs
 * hidden_l{i} [n, H]. With the rows token_prefill would look up, the result is bit-identical
 * to it (same graph from the first layer on). head NONE with OMNIC_MASK_CAUSAL and per-row
 * slots (the caller sets batch_invariant): text.embeddings_decode, text.decode_body fed rows,
 * output "hidden" [n, H]; with a decode row's embedding (omnic__text_decoder_embed_rows) its
 * result is bit-identical to text.decode_body's. */
omnic_status omnic__text_decoder_build_embeddings(const omnic__text_decoder *d, omnic__module *m,
                                                  omnic_dtype kv_dtype, int64_t kv_rows,
                                                  omnic__mask_mode mask, omnic__text_head head, bool taps,
                                                  omnic_err *err);

/* The masked value of an explicit attention bias (finite, so inputs stay finite-checked). */
#define OMNIC_MASK_NEG (-1e30f)

/* Post-scale embedding rows of ids[0..n) into out [n, H] f32 exactly as text.token_prefill
 * computes them: backend b's get_rows kernel over the (possibly quantized) table, then
 * its scale kernel with the decoder's embed_scale (already rounded to the table dtype).
 * E_INVALID naming the index and value when an id is outside [0, vocab). Borrows all. */
omnic_status omnic__text_decoder_embed_rows(const omnic__text_decoder *d, const omnic__backend_ops *b,
                                            const int32_t *ids, int64_t n, float *out, omnic_err *err);

/* Fills out [n, kv_rows] f32 (one embeddings_prefill call of n rows into slot `slot` at
 * kv_start, slots of `capacity` rows) from a prompt bias [T, T] f32 (row r: query r, column
 * c: key c; 0 visible, <= OMNIC_MASK_NEG / 2 masked): OMNIC_MASK_NEG everywhere except the
 * slot's columns of keys 0..kv_start+n-1. E_INVALID when a row of the call would see a key of a
 * later chunk (a bidirectional span split across chunks: DESIGN.md 3), when the bias is not
 * finite, or when the ranges do not fit (names the numbers). */
omnic_status omnic__text_bias_rows(const float *prompt_bias, int64_t T, int64_t kv_start, int64_t n, int slot,
                                   int64_t capacity, int64_t kv_rows, float *out, omnic_err *err);

/* The effective mask of a prompt of T rows as the attention op applies it (stage dumps):
 * out[i * T + j] = 1 when row i sees key j: j <= i (and i - j < sliding_window on a sliding
 * layer), or both lie in one of spans[0..n_spans) (rows [begin, end)); else 0. */
void omnic__text_mask_visible(const omnic__text_config *c, bool sliding, const omnic__row_span *spans,
                              int64_t n_spans, int64_t T, int32_t *out);

/* The "rope_long" value of a row whose forward covers a sequence of seq_len rows (HF:
 * max position + 1 of the forward; the whole prompt for prompt rows, position + 1 for a
 * decode row): 1 when it is longer than original_max_position_embeddings. */
static inline int32_t omnic__rope_long(const omnic__text_config *c, int64_t seq_len)
{
    return c->rope_type == OMNIC_ROPE_LONGROPE && seq_len > c->rope_original_max_pos;
}

/* Parameter count and bytes of the bound weights (tied head counted once). */
void omnic__text_decoder_param_stats(const omnic__text_decoder *d, int64_t *params, int64_t *bytes);

#endif
