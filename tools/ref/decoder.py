#!/usr/bin/python3
"""Independent numpy reference of the Hugging Face text decoders omnic supports.

Families (config.json `model_type`):
  llama        LlamaForCausalLM: RMSNorm, RoPE (default or llama3 `rope_scaling`), GQA,
               SiLU-gated MLP; optional `attention_bias` (q/k/v/o) and `mlp_bias`.
  qwen2        Qwen2ForCausalLM: as llama with biases on q/k/v (none on o_proj);
               sliding-window attention is refused unless the sequence fits the window.
  qwen3        Qwen3ForCausalLM: as llama (optional `attention_bias` on q/k/v/o, no MLP
               bias) plus per-head RMSNorm q_norm/k_norm [head_dim] on q and k before
               RoPE; explicit `head_dim` (default 128); sliding window as qwen2.
  phi3         Phi3ForCausalLM: fused qkv_proj (rows q | k | v) and gate_up_proj (gate =
               first half, up = second half), partial rotary (the first
               int(head_dim * partial_rotary_factor) dims rotate, rotate_half within them,
               the rest pass through), LongRoPE (`rope_scaling` type longrope, or su/yarn
               which Phi3Config renames to longrope), `sliding_window` on every layer.
  gemma3_text  Gemma3ForCausalLM: (1 + w) RMSNorms, sandwich norms, q_norm/k_norm (1 + w)
               before RoPE, embeddings scaled by sqrt(hidden) rounded to the embedding
               dtype, GeGLU (gelu tanh), attention scale query_pre_attn_scalar**-0.5,
               sliding layers (local RoPE base, window) and full layers (rope_theta +
               rope_scaling), optional attention/final logit softcapping.

Written from the semantics of transformers' modeling_llama.py, modeling_qwen2.py,
modeling_qwen3.py, modeling_phi3.py, modeling_gemma3.py and modeling_rope_utils.py
(eager attention path):

  RMSNorm      x32 = float32(x); x32 * rsqrt(mean(x32^2) + eps); weight * x32.to(in_dtype)
  Gemma norm   x32 * rsqrt(mean(x32^2) + eps) * (1 + float32(weight)), cast once at the end
  RoPE         inv_freq = 1 / base ** (arange(0, rd, 2).float() / rd)          float32 buffer
               (rd = rotary dims: head_dim, or int(head_dim * partial_rotary_factor))
               llama3: _compute_llama3_parameters on that float32 tensor
               linear: inv_freq / factor
               longrope: 1 / (ext * base ** (arange(0, rd, 2).float() / rd)), ext = short_factor
                 when max(position) + 1 <= original_max_position_embeddings, else long_factor;
                 cos and sin times attention_factor (rope_scaling's, else
                 sqrt(1 + ln(max_pos / orig_max_pos) / ln(orig_max_pos)), 1 when the ratio <= 1)
               angle = float32(position) * inv_freq (float32); cos/sin of the angle,
               emb = cat(angle, angle); x*cos + rotate_half(x)*sin, rotate_half(x) = cat(-x2, x1)
               (on the first rd dims only; the rest pass through)
  attention    repeat_kv (query head h reads kv head h // (n_heads / n_kv));
               softmax(q k^T * scale [softcapped: tanh(s/c)*c] + mask, float32) @ v;
               scale = hd**-0.5 (gemma: query_pre_attn_scalar**-0.5); the mask is causal
               by row index (cache position), and with a sliding window W also kv > q - W;
               RoPE by the given positions
  MLP          down(act(gate(x)) * up(x)), act = silu (gemma: gelu tanh approximation)
  layer        h += o_proj(attn(input_layernorm(h))); h += mlp(post_attention_layernorm(h))
               gemma: h += post_attention_layernorm(attn(input_layernorm(h)));
                      h += post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h)))
  head         logits = lm_head(norm(h)); lm_head = embed_tokens when tie_word_embeddings;
               gemma: tanh(logits / c) * c when final_logit_softcapping = c is set
  gemma embed  embed_tokens[tok] * scale, scale = sqrt(hidden) as a float32 tensor cast to
               the embedding weight's dtype (the safetensors dtype: bf16 rounds sqrt(2560)
               to 50.5); inputs_embeds is the scaled embedding

Precision (--precision):
  f32  mirrors HF running a checkpoint loaded with torch_dtype=float32: weights
       widened to float32 (exact for bf16/f16), every activation float32.
  f64  the same model evaluated in float64 (weights widened exactly). The RoPE
       table and angles stay HF's float32 values in both modes: they are model
       buffers HF computes in float32, and at large positions the rounding of the
       float32 angle is part of what HF computes. cos/sin are then evaluated in
       float64 of that float32 angle. The gemma embedding scale is the rounded
       constant in both modes.

Stages (forward() dict, --dump names, in order):
  tokens [T] int32, positions [T] int32, inputs_embeds [T,H],
  per layer i: kv_l{i}_k [T,n_kv,hd] (after q/k norm and RoPE), kv_l{i}_v [T,n_kv,hd],
  hidden_l{i} [T,H] (the layer's output, before the final norm), final_norm [T,H],
  logits [T,V] (after any final softcap), prefill_logits [1,V] (last row; omnic's name).

CLI:
  decoder.py --model DIR --tokens 1,2,3 [--positions 0,1,2] [--precision f32|f64]
             [--kv-round auto|none|f16|bf16] [--dump OUTDIR]
             [--compare DIR_OR_FILE [--atol 2e-3] [--rtol 1e-4]]
"""

import argparse
import dataclasses
import json
import math
import os
import sys
from typing import Dict, List, Optional, Sequence

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_np import Checkpoint  # noqa: E402

SUPPORTED = ("llama", "qwen2", "qwen3", "phi3", "gemma3_text", "qwen2_vl", "qwen2_5_vl")


# =============================================================================
# Config
# =============================================================================

@dataclasses.dataclass
class DecoderConfig:
    model_type: str
    vocab: int
    hidden: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate: int
    rms_eps: float
    rope_theta: float
    rope_scaling: Optional[dict]
    tie: bool
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    hidden_act: str
    sliding_window: Optional[int]   # qwen2/qwen3: only when use_sliding_window; phi3: every
                                    # layer; gemma3_text: the sliding layers
    # Families after llama/qwen2. The defaults are llama's behaviour.
    qk_norm: bool = False           # q_norm/k_norm over head_dim before RoPE (qwen3, gemma3_text)
    gemma: bool = False             # (1 + w) norms, sandwich norms, scaled embedding (gemma3_text)
    fused: bool = False             # qkv_proj and gate_up_proj (phi3)
    rotary_dim: Optional[int] = None         # None: head_dim (phi3: partial_rotary_factor)
    max_pos: int = 0                         # max_position_embeddings (LongRoPE)
    orig_max_pos: int = 0                    # original_max_position_embeddings (LongRoPE)
    attn_scale: Optional[float] = None       # None: head_dim**-0.5 (gemma: query_pre_attn_scalar**-0.5)
    attn_softcap: Optional[float] = None     # gemma attn_logit_softcapping
    final_softcap: Optional[float] = None    # gemma final_logit_softcapping
    layer_types: Optional[List[str]] = None  # gemma: "sliding_attention" / "full_attention" per layer
    rope_local_theta: float = 10000.0        # gemma: rope_local_base_freq (sliding layers)
    mrope_section: Optional[List[int]] = None  # qwen2_vl: M-RoPE frequencies per axis (t, h, w)


ROPE_TYPES = {  # rope_scaling types implemented, per family (gemma3_text: its full layers)
    "llama": ("default", "llama3"),
    "qwen2": ("default", "llama3"),
    "qwen3": ("default", "llama3", "linear"),
    "phi3": ("default", "longrope"),
    "gemma3_text": ("default", "linear", "llama3"),
}


def gemma3_layer_types(c: dict, n_layers: int) -> List[str]:
    """config `layer_types`, else from sliding_window_pattern (default 6): layer i is
    "full_attention" iff (i + 1) % pattern == 0 (Gemma3TextConfig / 4.50's is_sliding)."""
    lt = c.get("layer_types")
    if lt is None:
        pattern = int(c.get("sliding_window_pattern", 6))
        lt = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n_layers)]
    if len(lt) != n_layers or any(t not in ("sliding_attention", "full_attention") for t in lt):
        raise SystemExit(f"gemma3_text: bad layer_types {lt!r}")
    return list(lt)


def load_config(model_dir: str) -> DecoderConfig:
    """Read config.json with the defaults of LlamaConfig / Qwen2Config / Qwen3Config /
    Phi3Config / Gemma3TextConfig."""
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        c = json.load(f)
    mt = c.get("model_type")
    if mt not in SUPPORTED:
        raise SystemExit(f"{model_dir}: model_type {mt!r} not supported (have {', '.join(SUPPORTED)})")
    if mt in ("qwen2_vl", "qwen2_5_vl"):  # the text model: Qwen2 with M-RoPE (keys at the top level)
        mt = "qwen2"
    if "rope_parameters" in c and "rope_theta" not in c:
        raise SystemExit(f"{model_dir}: `rope_parameters` (transformers v5 config layout) not implemented")
    heads = c["num_attention_heads"]
    hidden = c["hidden_size"]
    n_layers = c["num_hidden_layers"]
    head_dim = c.get("head_dim") or hidden // heads
    extra: dict = {}
    theta_default, tie_default, eps_default = 10000.0, False, 1e-6
    if mt == "llama":
        qkv_bias = o_bias = bool(c.get("attention_bias", False))
        mlp_bias = bool(c.get("mlp_bias", False))
    elif mt == "qwen2":  # nn.Linear(..., bias=True) for q/k/v, bias=False for o and the MLP
        qkv_bias, o_bias, mlp_bias = True, False, False
    elif mt == "qwen3":  # attention_bias on q/k/v/o; no MLP bias; head_dim default 128
        head_dim = c.get("head_dim") or 128
        qkv_bias = o_bias = bool(c.get("attention_bias", False))
        mlp_bias = False
        extra.update(qk_norm=True)
    elif mt == "phi3":   # no biases anywhere; head_dim = hidden / heads unless given
        qkv_bias = o_bias = mlp_bias = False
        prf = float(c.get("partial_rotary_factor", 1.0))
        extra.update(fused=True, rotary_dim=int(head_dim * prf),
                     max_pos=int(c.get("max_position_embeddings", 4096)),
                     orig_max_pos=int(c.get("original_max_position_embeddings", 4096)))
    else:                # gemma3_text
        if c.get("use_bidirectional_attention"):
            raise SystemExit(f"{model_dir}: gemma3_text use_bidirectional_attention not implemented in the reference")
        head_dim = c.get("head_dim", 256)
        qkv_bias = o_bias = bool(c.get("attention_bias", False))
        mlp_bias = False
        theta_default, tie_default = 1000000.0, True
        caps = {}
        for k in ("attn_logit_softcapping", "final_logit_softcapping"):
            caps[k] = None if c.get(k) is None else float(c[k])
        extra.update(qk_norm=True, gemma=True,
                     attn_scale=float(c.get("query_pre_attn_scalar", 256)) ** -0.5,
                     attn_softcap=caps["attn_logit_softcapping"], final_softcap=caps["final_logit_softcapping"],
                     layer_types=gemma3_layer_types(c, n_layers),
                     rope_local_theta=float(c.get("rope_local_base_freq", 10000.0)))
    if mt == "phi3":
        eps_default = 1e-5
    if mt in ("qwen2", "qwen3"):
        sw = c.get("sliding_window") if c.get("use_sliding_window", False) else None
    elif mt == "phi3":
        sw = c.get("sliding_window")
    else:
        sw = c.get("sliding_window", 4096) if mt == "gemma3_text" else None
    rs = c.get("rope_scaling")
    if rs is not None and (rs.get("type") == "mrope" or "mrope_section" in rs):
        # Qwen2VLConfig renames type mrope to default; the sections split the frequencies
        extra.update(mrope_section=[int(x) for x in rs["mrope_section"]])
        if sum(extra["mrope_section"]) != head_dim // 2:
            raise SystemExit(f"{model_dir}: mrope_section {rs['mrope_section']} does not sum to head_dim / 2")
        rs = None
    if rs is not None:
        rtype = rs.get("rope_type", rs.get("type", "default"))
        if mt == "phi3" and rs.get("type") in ("su", "yarn"):   # Phi3Config._rope_scaling_adjustment
            rtype = "longrope"
        if rtype not in ROPE_TYPES[mt]:
            raise SystemExit(f"{model_dir}: rope_scaling type {rtype!r} not implemented in the reference for {mt}")
        rs = dict(rs, rope_type=rtype)
        if rtype == "longrope":
            want = (extra["rotary_dim"]) // 2
            for k in ("short_factor", "long_factor"):
                if len(rs.get(k) or ()) != want:
                    raise SystemExit(f"{model_dir}: rope_scaling {k} needs {want} entries (rotary dims / 2)")
    if mt == "gemma3_text":
        act = c.get("hidden_activation") or "gelu_pytorch_tanh"
        if act not in ("gelu_pytorch_tanh",):
            raise SystemExit(f"{model_dir}: hidden_activation {act!r} not implemented in the reference")
    else:
        act = c.get("hidden_act", "silu")
        if act != "silu":
            raise SystemExit(f"{model_dir}: hidden_act {act!r} not implemented in the reference")
    return DecoderConfig(
        model_type=mt, vocab=c["vocab_size"], hidden=hidden, n_layers=n_layers,
        n_heads=heads, n_kv_heads=c.get("num_key_value_heads") or heads, head_dim=head_dim,
        intermediate=c["intermediate_size"], rms_eps=float(c.get("rms_norm_eps", eps_default)),
        rope_theta=float(c.get("rope_theta", theta_default)), rope_scaling=rs,
        tie=bool(c.get("tie_word_embeddings", tie_default)), qkv_bias=qkv_bias, o_bias=o_bias,
        mlp_bias=mlp_bias, hidden_act=act, sliding_window=sw, **extra)


# =============================================================================
# RoPE tables (float32, as HF builds them)
# =============================================================================

def _f32(x) -> np.float32:
    return np.float32(x)


def rope_inv_freq(cfg: DecoderConfig, seq_len: Optional[int] = None, local: bool = False) -> np.ndarray:
    """inv_freq [rd/2] float32, as `_compute_default_rope_parameters` (+ llama3, linear,
    longrope) compute it; rd = cfg.rotary_dim or head_dim.

    Every step is a float32 tensor op in HF; `scalar / tensor` is torch's
    __rtruediv__, i.e. tensor.reciprocal() * scalar, reproduced as such.
    seq_len (max(position) + 1) picks LongRoPE's short or long factors (None: short).
    local: gemma3_text's sliding layers (rope_local_base_freq, no scaling).
    """
    dim = cfg.rotary_dim or cfg.head_dim
    theta = cfg.rope_local_theta if local else cfg.rope_theta
    rs = None if local else cfg.rope_scaling
    expo = np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / _f32(dim)
    if rs is not None and rs["rope_type"] == "longrope":
        long = seq_len is not None and seq_len > cfg.orig_max_pos
        ext = np.asarray(rs["long_factor" if long else "short_factor"], dtype=np.float32)
        return (np.reciprocal(ext * np.power(_f32(theta), expo)) * _f32(1.0)).astype(np.float32)
    inv_freq = np.reciprocal(np.power(_f32(theta), expo)) * _f32(1.0)
    if rs is None or rs["rope_type"] == "default":
        return inv_freq.astype(np.float32)
    if rs["rope_type"] == "linear":        # _compute_linear_scaling_rope_parameters: inv_freq /= factor
        return (inv_freq / _f32(float(rs["factor"]))).astype(np.float32)
    return llama3_scale(inv_freq, float(rs["factor"]), float(rs["low_freq_factor"]),
                        float(rs["high_freq_factor"]), float(rs["original_max_position_embeddings"]))


def rope_attention_factor(cfg: DecoderConfig, local: bool = False) -> float:
    """The factor HF multiplies cos and sin by: LongRoPE's attention_factor, else 1.

    `_compute_longrope_parameters`: rope_scaling["attention_factor"] when given, else
    factor = max_position_embeddings / original_max_position_embeddings and
    sqrt(1 + ln(factor) / ln(original_max_position_embeddings)), 1.0 when factor <= 1.
    """
    rs = None if local else cfg.rope_scaling
    if rs is None or rs["rope_type"] != "longrope":
        return 1.0
    if rs.get("attention_factor") is not None:
        return float(rs["attention_factor"])
    factor = cfg.max_pos / cfg.orig_max_pos
    return 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(cfg.orig_max_pos))


def llama3_scale(inv_freq: np.ndarray, factor: float, low: float, high: float, old_ctx: float) -> np.ndarray:
    """`_compute_llama3_parameters` on a float32 inv_freq [n] -> float32 [n].

    Wavelengths above old_ctx/low are divided by `factor`, below old_ctx/high kept,
    in between blended by smooth = (old_ctx / wavelen - low) / (high - low).
    """
    low_wavelen = old_ctx / low            # python floats, compared against float32 tensors
    high_wavelen = old_ctx / high
    wavelen = np.reciprocal(inv_freq) * _f32(2 * math.pi)
    inv_llama = np.where(wavelen > low_wavelen, inv_freq / _f32(factor), inv_freq)
    smooth = (np.reciprocal(wavelen) * _f32(old_ctx) - _f32(low)) / _f32(high - low)
    smoothed = (_f32(1) - smooth) * inv_llama / _f32(factor) + smooth * inv_llama
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return np.where(medium, smoothed, inv_llama).astype(np.float32)


def rope_cos_sin(inv_freq: np.ndarray, positions: np.ndarray, dtype, attention_factor: float = 1.0) -> tuple:
    """cos, sin [T, rd] in `dtype` for rotate-half RoPE.

    The angle float32(pos) * inv_freq is rounded to float32 (HF's float32 matmul
    with inner size 1); cos/sin are taken of that angle in `dtype`, then multiplied
    by attention_factor (LongRoPE) in `dtype` when it is not 1.
    """
    angle = positions.astype(np.float32)[:, None] * inv_freq[None, :]   # [T, rd/2] float32
    emb = np.concatenate([angle, angle], axis=-1).astype(dtype)
    cos, sin = np.cos(emb), np.sin(emb)
    if attention_factor != 1.0:
        cos, sin = cos * dtype(attention_factor), sin * dtype(attention_factor)
    return cos, sin


def rotate_half(x: np.ndarray) -> np.ndarray:
    """[..., d] -> cat(-x[..., d/2:], x[..., :d/2])."""
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def apply_rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """x [T, n, hd]; cos/sin [T, rd] -> x*cos + rotate_half(x)*sin on the first rd dims
    (rotate_half within them, as Phi-3's apply_rotary_pos_emb); dims rd.. pass through."""
    rd = cos.shape[-1]
    if rd == x.shape[-1]:
        return x * cos[:, None, :] + rotate_half(x) * sin[:, None, :]
    xr = x[..., :rd]
    return np.concatenate([xr * cos[:, None, :] + rotate_half(xr) * sin[:, None, :], x[..., rd:]], axis=-1)


# =============================================================================
# Blocks
# =============================================================================

def rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    """x [T, H], w [H] -> [T, H]. Computed in x's dtype (float32 in HF for f32 models)."""
    dt = x.dtype
    var = np.mean(x * x, axis=-1, keepdims=True)
    return w * (x * (dt.type(1) / np.sqrt(var + dt.type(eps))))


def gemma_rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    """Gemma3RMSNorm: x * rsqrt(mean(x^2) + eps) * (1 + w), over the last axis, in x's dtype
    (HF upcasts to float32 and casts the product once; for f32/f64 compute that is this)."""
    dt = x.dtype
    var = np.mean(x * x, axis=-1, keepdims=True)
    return (x * (dt.type(1) / np.sqrt(var + dt.type(eps)))) * (dt.type(1) + w)


def linear(x: np.ndarray, w: np.ndarray, b: Optional[np.ndarray] = None) -> np.ndarray:
    """x [T, in], w [out, in], b [out] -> x @ w.T + b  [T, out]."""
    y = x @ w.T
    return y if b is None else y + b


def silu(x: np.ndarray) -> np.ndarray:
    return x / (x.dtype.type(1) + np.exp(-x))


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """gelu_pytorch_tanh (torch's GELU(approximate='tanh')), in its op order:
    0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))."""
    t = x.dtype.type
    inner = t(math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5) * (x + t(0.044715) * (x * x * x))
    return t(0.5) * x * (t(1) + np.tanh(inner))


def softmax(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis; rows fully masked with -inf are not expected."""
    m = np.max(x, axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=-1, keepdims=True)


def attention_mask(T: int, window: Optional[int] = None) -> np.ndarray:
    """allowed [T, T] by row index: j <= i, and j > i - window when a sliding window is given."""
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    allowed = j <= i
    if window is not None:
        allowed &= j > i - window
    return allowed


def causal_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, window: Optional[int] = None,
                     scale: Optional[float] = None, softcap: Optional[float] = None) -> np.ndarray:
    """q [T, n_heads, hd], k/v [T, n_kv, hd] -> [T, n_heads*hd].

    Query head h reads kv head h // (n_heads // n_kv) (repeat_kv). Row i attends
    to rows j <= i (and j > i - window when a sliding window is given). Scores are
    q.k * scale (default hd**-0.5), then tanh(s / softcap) * softcap when a softcap
    is given, then masked.
    """
    T, nh, hd = q.shape
    rep = nh // k.shape[1]
    kk = np.repeat(k, rep, axis=1)                       # [T, nh, hd]
    vv = np.repeat(v, rep, axis=1)
    scale = q.dtype.type(hd ** -0.5 if scale is None else scale)
    scores = np.einsum("ihd,jhd->hij", q, kk) * scale    # [nh, T, T]
    if softcap is not None:
        c = q.dtype.type(softcap)
        scores = np.tanh(scores / c) * c
    scores = np.where(attention_mask(T, window)[None], scores, -np.inf)
    p = softmax(scores)
    out = np.einsum("hij,jhd->ihd", p, vv)               # [T, nh, hd]
    return out.reshape(T, nh * hd)


def round_to(x: np.ndarray, kind: str) -> np.ndarray:
    """Round to f16 or bf16 (nearest even) and back to x.dtype; 'none' returns x."""
    if kind == "none":
        return x
    if kind == "f16":
        return x.astype(np.float16).astype(x.dtype)
    u = x.astype(np.float32).view(np.uint32)
    r = ((u + np.uint32(0x7FFF) + ((u >> 16) & 1)) & np.uint32(0xFFFF0000)).view(np.float32)
    return r.astype(x.dtype)


class Weights:
    """Tensors of one checkpoint, fetched by HF name and widened to the compute dtype."""

    def __init__(self, ckpt: Checkpoint, dtype):
        self.ck, self.dtype = ckpt, dtype

    def __call__(self, name: str) -> np.ndarray:
        return self.ck.get(name, self.dtype)

    def opt(self, name: str, present: bool) -> Optional[np.ndarray]:
        """Bias `name` when the config says it exists (then it must be in the checkpoint)."""
        return self(name) if present else None


def attention_block(h: np.ndarray, W: Weights, p: str, cfg: DecoderConfig, cos, sin, kv_round: str,
                    window: Optional[int] = None):
    """Normed input h [T, H] -> (attention output [T, H], K [T,n_kv,hd] after RoPE, V)."""
    T = h.shape[0]
    hd = cfg.head_dim
    if cfg.fused:   # phi3: qkv_proj rows are q (n_heads*hd) | k (n_kv*hd) | v (n_kv*hd)
        qkv = linear(h, W(p + "qkv_proj.weight"))
        nq, nk = cfg.n_heads * hd, cfg.n_kv_heads * hd
        q = qkv[:, :nq].reshape(T, cfg.n_heads, hd)
        k = qkv[:, nq:nq + nk].reshape(T, cfg.n_kv_heads, hd)
        v = qkv[:, nq + nk:].reshape(T, cfg.n_kv_heads, hd)
    else:
        q = linear(h, W(p + "q_proj.weight"), W.opt(p + "q_proj.bias", cfg.qkv_bias)).reshape(T, cfg.n_heads, hd)
        k = linear(h, W(p + "k_proj.weight"), W.opt(p + "k_proj.bias", cfg.qkv_bias)).reshape(T, cfg.n_kv_heads, hd)
        v = linear(h, W(p + "v_proj.weight"), W.opt(p + "v_proj.bias", cfg.qkv_bias)).reshape(T, cfg.n_kv_heads, hd)
    if cfg.qk_norm:  # per head, over head_dim, before RoPE
        norm = gemma_rms_norm if cfg.gemma else rms_norm
        q = norm(q, W(p + "q_norm.weight"), cfg.rms_eps)
        k = norm(k, W(p + "k_norm.weight"), cfg.rms_eps)
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    k, v = round_to(k, kv_round), round_to(v, kv_round)
    o = causal_attention(q, k, v, window, cfg.attn_scale, cfg.attn_softcap)
    return linear(o, W(p + "o_proj.weight"), W.opt(p + "o_proj.bias", cfg.o_bias)), k, v


def mlp_block(h: np.ndarray, W: Weights, p: str, cfg: DecoderConfig) -> np.ndarray:
    """Normed input h [T, H] -> down(act(gate(h)) * up(h)) [T, H]; act silu or gelu tanh.
    phi3: gate_up_proj rows are gate (first I) | up (last I)."""
    if cfg.fused:
        gu = linear(h, W(p + "gate_up_proj.weight"))
        n = gu.shape[1] // 2
        g, u = gu[:, :n], gu[:, n:]
    else:
        g = linear(h, W(p + "gate_proj.weight"), W.opt(p + "gate_proj.bias", cfg.mlp_bias))
        u = linear(h, W(p + "up_proj.weight"), W.opt(p + "up_proj.bias", cfg.mlp_bias))
    act = gelu_tanh if cfg.hidden_act == "gelu_pytorch_tanh" else silu
    return linear(act(g) * u, W(p + "down_proj.weight"), W.opt(p + "down_proj.bias", cfg.mlp_bias))


def embed_scale(hidden: int, st_dtype: str) -> float:
    """Gemma3TextScaledWordEmbedding's multiplier: torch.tensor(hidden**0.5) (float32)
    .to(weight dtype). st_dtype is the embedding's safetensors dtype: BF16 rounds to
    nearest even bf16 (sqrt(2560) -> 50.5), F16 to float16, F32/F64 keep the float32 value."""
    s = np.array([hidden ** 0.5], dtype=np.float32)
    if st_dtype == "BF16":
        s = round_to(s, "bf16")
    elif st_dtype == "F16":
        s = s.astype(np.float16).astype(np.float32)
    return float(s[0])


# =============================================================================
# Forward
# =============================================================================

def layer_window(cfg: DecoderConfig, i: int) -> Optional[int]:
    """Sliding window of layer i (None: plain causal). phi3: config sliding_window on every
    layer; gemma3_text: on its sliding layers; qwen2/qwen3: handled (refused) in forward."""
    if cfg.layer_types is not None:
        return cfg.sliding_window if cfg.layer_types[i] == "sliding_attention" else None
    return cfg.sliding_window


def forward(model_dir: str, tokens: Sequence[int], positions: Optional[Sequence[int]] = None,
            precision: str = "f32", kv_round: str = "none", inputs_embeds: Optional[np.ndarray] = None,
            mrope_positions: Optional[np.ndarray] = None) -> Dict[str, np.ndarray]:
    """Prefill `tokens` from an empty cache; returns every stage (see the module docstring).

    tokens [T]; positions [T] (RoPE coordinates, default 0..T-1; the causal and
    sliding-window masks always use the row index). precision 'f32' or 'f64'. kv_round
    rounds K and V to f16/bf16 before attention, to model a reduced-precision KV cache (not HF).
    inputs_embeds [T, H]: rows to use instead of the embedding lookup (multimodal prompts;
    tokens then only give T). mrope_positions [3, T]: Qwen2-VL's M-RoPE coordinates
    (temporal, height, width); frequency i takes coordinate k for the k-th mrope_section
    (apply_multimodal_rotary_pos_emb, chunked); default: positions on all three axes.
    """
    dtype = {"f32": np.float32, "f64": np.float64}[precision]
    cfg = load_config(model_dir)
    ck = Checkpoint(model_dir)
    W = Weights(ck, dtype)
    tokens = np.asarray(tokens, dtype=np.int64)
    T = len(tokens)
    positions = np.arange(T) if positions is None else np.asarray(positions, dtype=np.int64)
    if T == 0 or positions.shape != (T,):
        raise SystemExit(f"need T >= 1 tokens and as many positions (got {T} tokens, {positions.size} positions)")
    if tokens.min() < 0 or tokens.max() >= cfg.vocab:
        raise SystemExit(f"token id out of range [0, {cfg.vocab})")
    if cfg.sliding_window is not None and cfg.model_type in ("qwen2", "qwen3"):
        if T > cfg.sliding_window:
            raise SystemExit("use_sliding_window with a sequence longer than the window is not implemented")
        cfg.sliding_window = None    # a window at least T long masks nothing

    out: Dict[str, np.ndarray] = {"tokens": tokens.astype(np.int32), "positions": positions.astype(np.int32)}
    embed = W("model.embed_tokens.weight")                        # [V, H]
    h = embed[tokens] if inputs_embeds is None else np.asarray(inputs_embeds, dtype=dtype)
    if cfg.gemma and inputs_embeds is None:   # scale rounded to the embedding weight's dtype, product in the compute dtype
        h = h * dtype(embed_scale(cfg.hidden, ck.info("model.embed_tokens.weight")[0]))
    out["inputs_embeds"] = h
    seq_len = int(positions.max()) + 1
    tables = {}

    def rope(local: bool):
        if local not in tables:
            inv = rope_inv_freq(cfg, seq_len, local)
            if cfg.mrope_section is not None:
                p3 = np.stack([positions] * 3) if mrope_positions is None else np.asarray(mrope_positions, np.int64)
                axis = np.repeat(np.arange(3), cfg.mrope_section)                  # [rd/2]: the axis of each frequency
                angle = p3.astype(np.float32)[axis, :].T * inv[None, :]           # [T, rd/2] float32
                emb = np.concatenate([angle, angle], axis=-1).astype(dtype)
                tables[local] = (np.cos(emb), np.sin(emb))
            else:
                tables[local] = rope_cos_sin(inv, positions, dtype, rope_attention_factor(cfg, local))
        return tables[local]

    norm = gemma_rms_norm if cfg.gemma else rms_norm
    for i in range(cfg.n_layers):
        p = f"model.layers.{i}."
        local = cfg.layer_types is not None and cfg.layer_types[i] == "sliding_attention"
        cos, sin = rope(local)
        a, k, v = attention_block(norm(h, W(p + "input_layernorm.weight"), cfg.rms_eps),
                                  W, p + "self_attn.", cfg, cos, sin, kv_round, layer_window(cfg, i))
        if cfg.gemma:   # sandwich: post-norm each block's output before the residual add
            h = h + norm(a, W(p + "post_attention_layernorm.weight"), cfg.rms_eps)
            m = mlp_block(norm(h, W(p + "pre_feedforward_layernorm.weight"), cfg.rms_eps), W, p + "mlp.", cfg)
            h = h + norm(m, W(p + "post_feedforward_layernorm.weight"), cfg.rms_eps)
        else:
            h = h + a
            h = h + mlp_block(norm(h, W(p + "post_attention_layernorm.weight"), cfg.rms_eps), W, p + "mlp.", cfg)
        out[f"kv_l{i}_k"], out[f"kv_l{i}_v"], out[f"hidden_l{i}"] = k, v, h
    hn = norm(h, W("model.norm.weight"), cfg.rms_eps)
    out["final_norm"] = hn
    head = embed if cfg.tie else W("lm_head.weight")
    logits = linear(hn, head)
    if cfg.final_softcap is not None:
        c = dtype(cfg.final_softcap)
        logits = np.tanh(logits / c) * c
    out["logits"] = logits
    out["prefill_logits"] = logits[-1:]
    return out


def stage_order(n_layers: int) -> List[str]:
    names = ["tokens", "positions", "inputs_embeds"]
    for i in range(n_layers):
        names += [f"kv_l{i}_k", f"kv_l{i}_v", f"hidden_l{i}"]
    return names + ["final_norm", "logits", "prefill_logits"]


# =============================================================================
# Comparison against omnic's --dump files
# =============================================================================

# Extra relative slack (times the stage's max |ref|) for a file stored as float16:
# one f16 ulp, covering the file's own rounding (half an ulp) when the reference is
# not rounded, and a value landing on the other side of a rounding boundary when
# it is (--kv-round f16).
STORAGE_SLACK = {np.dtype(np.float16): 2.0 ** -10}


@dataclasses.dataclass
class StageResult:
    name: str
    ok: bool
    max_abs: float = 0.0
    rel: float = 0.0         # max_abs / max|ref|
    limit: float = 0.0       # the max_abs allowed
    note: str = ""


def compare_stage(name: str, ref: np.ndarray, got: np.ndarray, atol: float, rtol: float) -> StageResult:
    """Compare omnic's array with the reference; shapes equal up to leading 1s.

    Integer stages (tokens, positions) must be equal. Float stages pass when
    max|got - ref| <= atol + (rtol + slack) * max|ref|, slack being the file's
    own storage rounding (2^-10 for float16 files, 0 otherwise).
    """
    gs, rs = tuple(got.shape), tuple(ref.shape)
    squeezed = tuple(d for d in gs if d != 1) == tuple(d for d in rs if d != 1)
    if got.size != ref.size or (gs != rs and not squeezed):
        return StageResult(name, False, math.inf, math.inf, 0.0, f"shape {list(gs)} != reference {list(rs)}")
    got = got.reshape(rs)
    if np.issubdtype(ref.dtype, np.integer):
        diff = int(np.max(np.abs(got.astype(np.int64) - ref.astype(np.int64))))
        return StageResult(name, diff == 0, float(diff), 0.0, 0.0, "" if diff == 0 else "integer values differ")
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    if not np.isfinite(g).all():
        return StageResult(name, False, math.inf, math.inf, 0.0, f"{int((~np.isfinite(g)).sum())} non-finite values")
    scale = float(np.max(np.abs(r))) if r.size else 0.0
    max_abs = float(np.max(np.abs(g - r))) if r.size else 0.0
    slack = STORAGE_SLACK.get(got.dtype, 0.0)
    limit = atol + (rtol + slack) * scale
    note = f"stored {got.dtype}" if slack else ""
    return StageResult(name, max_abs <= limit, max_abs, max_abs / scale if scale else max_abs, limit, note)


def load_compare_files(path: str) -> Dict[str, np.ndarray]:
    """{stage name: array} from a dump directory or a single .npy file."""
    if os.path.isdir(path):
        files = sorted(f for f in os.listdir(path) if f.endswith(".npy"))
        return {f[:-4]: np.load(os.path.join(path, f)) for f in files}
    name = os.path.basename(path)
    if not name.endswith(".npy"):
        raise SystemExit(f"--compare {path}: not a directory or .npy file")
    return {name[:-4]: np.load(path)}


def compare(stages: Dict[str, np.ndarray], files: Dict[str, np.ndarray], path: str, n_layers: int,
            atol: float, rtol: float) -> int:
    """Compare omnic's `files` (from `path`) with the reference `stages`.

    Prints one line per stage in model order, then the first divergence;
    returns 0 if every compared stage passes, 1 otherwise (or if none compared).
    """
    order = [n for n in stage_order(n_layers) if n in files and n in stages]
    ignored = sorted(set(files) - set(stages))
    if not order:
        print(f"compare: no stage of {path} is one the reference produces ({', '.join(sorted(files)) or 'none'})")
        return 1
    print(f"compare {path}: tolerance max|d| <= {atol:g} + {rtol:g}*max|ref| (+2^-10*max|ref| for f16 files)")
    results = [compare_stage(n, stages[n], files[n], atol, rtol) for n in order]
    for r in results:
        print(f"  {'ok  ' if r.ok else 'FAIL'} {r.name:16s} max_abs {r.max_abs:.3e}  rel {r.rel:.3e}  "
              f"limit {r.limit:.3e}{'  ' + r.note if r.note else ''}")
    for n in ignored:
        print(f"  skip {n:16s} (no reference stage)")
    if "prefill_logits" in order:
        a = int(np.argmax(files["prefill_logits"].reshape(-1)))
        b = int(np.argmax(stages["prefill_logits"].reshape(-1)))
        print(f"  greedy token: omnic {a}, reference {b}{'' if a == b else '  (DIFFER)'}")
    bad = [r for r in results if not r.ok]
    if bad:
        print(f"compare: FIRST DIVERGENCE at {bad[0].name} (max_abs {bad[0].max_abs:.3e} > {bad[0].limit:.3e}"
              f"{'; ' + bad[0].note if bad[0].note else ''}); {len(bad)} of {len(results)} stages fail")
        return 1
    print(f"compare: all {len(results)} stages within tolerance")
    return 0


# =============================================================================
# CLI
# =============================================================================

def int_list(s: str) -> List[int]:
    return [int(x) for x in s.split(",") if x.strip() != ""]


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        description="numpy reference forward of a llama/qwen2/qwen3/phi3/gemma3_text HF checkpoint")
    ap.add_argument("--model", required=True, help="checkpoint directory (config.json + safetensors)")
    ap.add_argument("--tokens", required=True, type=int_list, help="comma-separated token ids")
    ap.add_argument("--positions", type=int_list, default=None, help="RoPE positions (default 0..T-1)")
    ap.add_argument("--precision", choices=["f32", "f64"], default="f32")
    ap.add_argument("--kv-round", choices=["auto", "none", "f16", "bf16"], default="auto",
                    help="round K/V to this type before attention, modelling a reduced-precision KV cache "
                         "(not HF); auto: f16 when --compare holds float16 kv_l*_k/v files, else none")
    ap.add_argument("--dump", metavar="OUTDIR", help="write every stage as OUTDIR/<name>.npy")
    ap.add_argument("--compare", metavar="DIR_OR_FILE", help="compare omnic's <name>.npy files stage by stage")
    ap.add_argument("--atol", type=float, default=2e-3)
    ap.add_argument("--rtol", type=float, default=1e-4, help="relative to the stage's max |ref|")
    args = ap.parse_args(argv)

    files = load_compare_files(args.compare) if args.compare else {}
    kv_round = args.kv_round
    if kv_round == "auto":
        f16_kv = any(n.startswith("kv_l") and a.dtype == np.float16 for n, a in files.items())
        kv_round = "f16" if f16_kv else "none"
    stages = forward(args.model, args.tokens, args.positions, args.precision, kv_round)
    if args.dump:
        os.makedirs(args.dump, exist_ok=True)
        for name, a in stages.items():
            np.save(os.path.join(args.dump, name + ".npy"), a)
    last = stages["prefill_logits"].reshape(-1)
    print(f"reference ({args.precision}, kv-round {kv_round}): T={len(args.tokens)} "
          f"argmax(last logits) = {int(np.argmax(last))} (logit {float(np.max(last)):.6f})")
    if args.compare:
        n_layers = sum(1 for n in stages if n.startswith("hidden_l"))
        return compare(stages, files, args.compare, n_layers, args.atol, args.rtol)
    return 0


if __name__ == "__main__":
    sys.exit(main())
