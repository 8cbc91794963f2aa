#!/usr/bin/python3
"""Self-checks of tools/ref/decoder.py against independent second computations.

    /usr/bin/python3 tools/ref/check_decoder.py [--keep DIR]

Makes tiny checkpoints with tools/mktiny.py (llama f32, llama f16 sharded, qwen2
bf16 and f32, qwen3 bf16/f32, phi3 bf16/f32, gemma3_text bf16/f16/f32) and variants
of them (config edits; a qwen3 with attention biases; gemma3_text with hidden 48, so
sqrt(hidden) is not a bf16/f16 value), and checks:
  1. safetensors_np reads every tensor bit-identically to mktiny's own reader;
  2. the RoPE table: default inv_freq against theta^(-2i/d) in float64, llama3
     scaling against Meta's per-frequency loop (apply_scaling) in float64, with all
     three wavelength bands present in the tiny llama config and Llama-3.2-1B's;
     LongRoPE by hand for the tiny phi3 config (short/long factors, the switch at
     original_max_position_embeddings, attention factor sqrt(4/3); Phi-4-mini's
     sqrt(17/12); an explicit attention_factor); gemma local/global tables and linear
     scaling; the config readers (head_dim, rotary dims, layer types);
  3. RMSNorm and Gemma's (1 + w) RMSNorm against per-row loops in Python floats;
     gelu tanh against math.tanh;
  4. the whole forward (f64) against a token-by-token decode written with explicit
     loops (RoPE on index pairs with math.cos/sin over the rotary dims only, per-head
     attention over an explicit KV cache with the sliding window and softcap as index
     tests, softmax by hand, repeat_kv by index, fused q|k|v and gate|up split by
     index, q/k norms per head, sandwich norms, embedding scale rounded by hand), for
     default and shifted positions (phi3: past original_max_position_embeddings, so
     the long factors): every stage to 1e-10 relative; sequences of 16 tokens for the
     new families, so gemma's window of 8 binds;
  5. f32 against f64 (float32 execution error, expected ~1e-6);
  6. the sliding-window mask by hand (T = 12, window 8), through attention with
     one-hot values, and in the gemma forward (rows < window unchanged by the window,
     later rows changed); the gemma embedding scale: by-hand values (sqrt(2560) ->
     50.5 in bf16, ...) and inputs_embeds = embedding * the dtype's rounded scale;
  7. --compare: passes on its own dump (every family), reports the first perturbed
     stage, rejects a shape mismatch and NaNs, accepts [V] for prefill_logits.
Exit status 0 when every check passes.
"""

import argparse
import contextlib
import dataclasses
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, TOOLS)
import decoder  # noqa: E402
import mktiny  # noqa: E402
from safetensors_np import Checkpoint  # noqa: E402

PY = "/usr/bin/python3"
TOKENS = [5, 17, 300, 42, 42, 7, 510, 0, 99, 256, 3]
LONG_TOKENS = TOKENS + [12, 400, 77, 5, 250]   # T = 16 > gemma's tiny sliding window 8
FAILS = []


def check(cond: bool, msg: str) -> None:
    print(f"  {'ok  ' if cond else 'FAIL'} {msg}")
    if not cond:
        FAILS.append(msg)


def rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    s = float(np.max(np.abs(b)))
    return float(np.max(np.abs(a - b))) / (s if s else 1.0)


# ---------------------------------------------------------------------------- 1

def check_reader(d: str) -> None:
    ck = Checkpoint(d)
    import glob
    n = 0
    for path in sorted(glob.glob(os.path.join(d, "*.safetensors"))):
        header, start = mktiny.read_safetensors(path)
        for name, info in header.items():
            want = mktiny.tensor_f32(path, start, info).reshape(info["shape"])
            got = ck.get(name)
            if not (got.dtype == np.float32 and np.array_equal(want.view(np.uint32), got.view(np.uint32))):
                check(False, f"{d}: {name} differs from mktiny.tensor_f32")
                return
            n += 1
    check(n == len(ck.names()) and n > 0, f"reader: {n} tensors of {os.path.basename(d)} bit-identical to mktiny")


# ---------------------------------------------------------------------------- 2

def meta_apply_scaling(freqs, factor, low, high, old):
    """Llama 3.1's scaling as written in Meta's reference (per frequency, float64)."""
    low_wl, high_wl = old / low, old / high
    out, bands = [], set()
    for f in freqs:
        wl = 2 * math.pi / f
        if wl < high_wl:
            out.append(f); bands.add("high")
        elif wl > low_wl:
            out.append(f / factor); bands.add("low")
        else:
            s = (old / wl - low) / (high - low)
            out.append((1 - s) * f / factor + s * f); bands.add("mid")
    return out, bands


def check_rope() -> None:
    for name, theta, hd, rs in [
        ("tiny llama", 5e5, 16, {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                 "original_max_position_embeddings": 64, "rope_type": "llama3"}),
        ("Llama-3.2-1B", 5e5, 64, {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                   "original_max_position_embeddings": 8192, "rope_type": "llama3"}),
        ("qwen2 default", 1e6, 128, None),
        ("llama2 default", 1e4, 128, None)]:
        cfg = decoder.DecoderConfig("llama", 10, hd, 1, 1, 1, hd, 1, 1e-5, theta, rs, False, False, False,
                                    False, "silu", None)
        got = decoder.rope_inv_freq(cfg)
        base = [theta ** (-(2 * i) / hd) for i in range(hd // 2)]
        if rs is None:
            want, bands = base, set()
        else:
            want, bands = meta_apply_scaling(base, rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"],
                                             rs["original_max_position_embeddings"])
        r = float(np.max(np.abs(got.astype(np.float64) - want) / np.abs(want)))
        check(got.dtype == np.float32 and r < 2e-6,
              f"inv_freq {name}: max rel err vs float64 formula {r:.2e}" + (f", bands {sorted(bands)}" if bands else ""))
        if rs is not None:
            check(bands == {"high", "mid", "low"}, f"inv_freq {name}: all three llama3 bands occur")
    # a value by hand: theta 5e5, hd 16, i = 7: 5e5^(-14/16) = 1.0257e-5 -> wavelen 6.1e5 > 64 -> /8
    cfg = decoder.DecoderConfig("llama", 10, 16, 1, 1, 1, 16, 1, 1e-5, 5e5,
                                {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                 "original_max_position_embeddings": 64, "rope_type": "llama3"},
                                False, False, False, False, "silu", None)
    v = float(decoder.rope_inv_freq(cfg)[7])
    check(abs(v - 5e5 ** (-14 / 16) / 8) / v < 1e-6, f"inv_freq[7] by hand: {v:.6e} = 5e5^(-7/8)/8")


def check_rope_new(phi3_dir: str, gemma_dir: str, qwen3_dir: str) -> None:
    """LongRoPE, partial rotary and gemma's two tables by hand; the new config readers."""
    cfg = decoder.load_config(phi3_dir)
    check((cfg.head_dim, cfg.rotary_dim, cfg.fused, cfg.orig_max_pos, cfg.max_pos, cfg.tie, cfg.rms_eps) ==
          (16, 8, True, 64, 256, False, 1e-5) and cfg.rope_scaling["rope_type"] == "longrope",
          "phi3 config: head_dim 16 (hidden/heads), rotary dims int(16*0.5) = 8, fused, orig 64 / max 256, untied")
    # theta 1e4, rd 8: base^(-2i/8) = 1, 0.1, 0.01, 0.001; short [1, 1.1, 1.25, 1.5], long [1, 2, 4, 8]
    want_short = [1.0, 1 / 11, 1 / 125, 1 / 1500]
    want_long = [1.0, 1 / 20, 1 / 400, 1 / 8000]
    got_s, got_l, got_none = (decoder.rope_inv_freq(cfg, n) for n in (64, 65, None))
    r_s = float(np.max(np.abs(got_s.astype(np.float64) - want_short) / want_short))
    r_l = float(np.max(np.abs(got_l.astype(np.float64) - want_long) / want_long))
    check(got_s.dtype == np.float32 and got_s.shape == (4,) and r_s < 2e-7,
          f"LongRoPE short inv_freq = 1/(f_i * 1e4^(i/4)) = 1, 1/11, 1/125, 1/1500 (rel {r_s:.1e}); "
          "used at max pos + 1 = 64")
    check(r_l < 2e-7, f"LongRoPE long inv_freq = 1, 1/20, 1/400, 1/8000 (rel {r_l:.1e}); used from max pos + 1 = 65")
    check(np.array_equal(got_none, got_s), "LongRoPE without a sequence length uses the short factors")
    af = decoder.rope_attention_factor(cfg)
    check(abs(af - math.sqrt(4 / 3)) < 1e-15,
          f"LongRoPE attention factor sqrt(1 + ln(256/64) / ln 64) = sqrt(4/3) = {af:.10f}")
    cos, sin = decoder.rope_cos_sin(got_s, np.arange(70), np.float64, af)
    check(cos.shape == (70, 8) and float(np.max(np.abs(cos ** 2 + sin ** 2 - 4 / 3))) < 1e-14,
          "cos/sin [T, rotary dims] carry the factor: cos^2 + sin^2 = 4/3")
    af4 = decoder.rope_attention_factor(dataclasses.replace(cfg, max_pos=131072, orig_max_pos=4096))
    check(abs(af4 - 1.1902380714238083) < 1e-15, f"Phi-4-mini attention factor sqrt(17/12) = {af4:.10f}")
    af_x = decoder.rope_attention_factor(dataclasses.replace(cfg, rope_scaling=dict(cfg.rope_scaling,
                                                                                 attention_factor=1.25)))
    af_1 = decoder.rope_attention_factor(dataclasses.replace(cfg, max_pos=64))
    check(af_x == 1.25 and af_1 == 1.0, "rope_scaling attention_factor wins; ratio <= 1 gives 1.0")
    # partial rotary: dims 8..15 pass through, dims 0..7 rotate in pairs (i, i + 4)
    x = np.arange(2 * 1 * 16, dtype=np.float64).reshape(2, 1, 16) + 1
    cs, sn = decoder.rope_cos_sin(got_s, np.array([0, 3]), np.float64, af)
    y = decoder.apply_rope(x, cs, sn)
    a = float(np.float32(np.float32(3) * got_s[1]))
    want = x[1, 0, 1] * math.cos(a) * af - x[1, 0, 5] * math.sin(a) * af
    check(np.array_equal(y[:, :, 8:], x[:, :, 8:]) and abs(y[1, 0, 1] - want) < 1e-12
          and np.allclose(y[0, 0, :8], x[0, 0, :8] * af),
          "partial RoPE: pairs (i, i + rd/2) within the rotary dims, the rest pass through")

    g = decoder.load_config(gemma_dir)
    check(g.layer_types == ["sliding_attention", "full_attention"] * 2 and g.sliding_window == 8
          and abs(g.attn_scale - 24 ** -0.5) < 1e-17 and g.final_softcap == 30.0 and g.attn_softcap is None
          and g.tie and g.qk_norm and g.gemma and g.hidden_act == "gelu_pytorch_tanh",
          "gemma3_text config: layer types, window 8, scale 24^-0.5, final softcap 30, tied, gelu tanh")
    loc, glob = decoder.rope_inv_freq(g, 11, local=True), decoder.rope_inv_freq(g, 11)
    r_loc = max(abs(float(loc[i]) - 1e4 ** (-2 * i / 16)) / 1e4 ** (-2 * i / 16) for i in range(8))
    r_glob = max(abs(float(glob[i]) - 1e6 ** (-2 * i / 16)) / 1e6 ** (-2 * i / 16) for i in range(8))
    check(r_loc < 2e-7 and r_glob < 2e-7, f"gemma local table 1e4^(-2i/16) (rel {r_loc:.1e}), "
                                           f"global 1e6^(-2i/16) (rel {r_glob:.1e})")
    gl = dataclasses.replace(g, rope_scaling={"rope_type": "linear", "factor": 8.0})
    check(np.array_equal(decoder.rope_inv_freq(gl, 11), glob / np.float32(8))
          and np.array_equal(decoder.rope_inv_freq(gl, 11, local=True), loc),
          "gemma linear rope_scaling: global inv_freq / 8, local layers unscaled")
    lt6 = decoder.gemma3_layer_types({"sliding_window_pattern": 6}, 26)
    check([i for i, t in enumerate(lt6) if t == "full_attention"] == [5, 11, 17, 23]
          and decoder.gemma3_layer_types({}, 12).count("full_attention") == 2,
          "gemma layer types from sliding_window_pattern 6: full at 5, 11, 17, 23 (26 layers)")
    q3 = decoder.load_config(qwen3_dir)
    check((q3.head_dim, q3.qk_norm, q3.qkv_bias, q3.o_bias, q3.tie, q3.sliding_window) == (32, True, False, False,
                                                                                          True, None),
          "qwen3 config: head_dim 32 (not hidden/heads 16), q/k norms, no biases, tied")


# ---------------------------------------------------------------------------- 3

def check_rmsnorm() -> None:
    rng = np.random.default_rng(1)
    x, w, eps = rng.standard_normal((3, 37)) * 3, 1 + 0.1 * rng.standard_normal(37), 1e-6
    got = decoder.rms_norm(x, w, eps)
    want = [[w[j] * x[i][j] / math.sqrt(sum(v * v for v in x[i]) / len(x[i]) + eps) for j in range(37)]
            for i in range(3)]
    check(rel(got, want) < 1e-14, f"rms_norm vs per-row loop: rel {rel(got, want):.1e}")
    w0 = 0.1 * rng.standard_normal(37)
    got = decoder.gemma_rms_norm(x, w0, eps)
    want = [[x[i][j] / math.sqrt(sum(v * v for v in x[i]) / len(x[i]) + eps) * (1 + w0[j]) for j in range(37)]
            for i in range(3)]
    check(rel(got, want) < 1e-14, f"gemma_rms_norm (1 + w) vs per-row loop: rel {rel(got, want):.1e}")
    xs = np.linspace(-6, 6, 101)
    got = decoder.gelu_tanh(xs)
    want = [0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3))) for v in xs]
    check(rel(got, want) < 1e-14, f"gelu_tanh vs math.tanh formula: rel {rel(got, want):.1e}")


# ---------------------------------------------------------------------------- 4

def scale_by_hand(hidden: int, st_dtype: str) -> float:
    """Gemma's embedding multiplier: float32(sqrt(hidden)) rounded to the weight dtype,
    with mktiny's bf16 rounding (independent of decoder.round_to)."""
    s = np.float32(math.sqrt(hidden))
    if st_dtype == "BF16":
        return float(mktiny.bf16_bits_to_f32(mktiny.f32_to_bf16_bits(np.array([s])))[0])
    if st_dtype == "F16":
        return float(np.float16(s))
    return float(s)


def loop_forward(model_dir: str, tokens, positions):
    """Token-by-token decode with an explicit KV cache, written with plain loops.

    Independent of decoder.forward except for the config reader, the weight reader
    and the float32 inv_freq table (checked separately in 2). Gemma's layer types,
    the windows and the LongRoPE attention factor are re-derived from config.json.
    """
    cfg = decoder.load_config(model_dir)
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        raw = json.load(f)
    ck = Checkpoint(model_dir)
    W = lambda n: ck.get(n, np.float64)  # noqa: E731
    mt = raw["model_type"]
    gemma, phi3 = mt == "gemma3_text", mt == "phi3"
    hd, nh, nkv = cfg.head_dim, cfg.n_heads, cfg.n_kv_heads
    rd = int(hd * raw.get("partial_rotary_factor", 1.0)) if phi3 else hd
    half = rd // 2
    seq_len = max(positions) + 1
    af = 1.0
    if phi3 and raw.get("rope_scaling"):
        rs = raw["rope_scaling"]
        ratio = raw["max_position_embeddings"] / raw["original_max_position_embeddings"]
        af = rs.get("attention_factor") or (math.sqrt(1 + math.log(ratio) / math.log(
            raw["original_max_position_embeddings"])) if ratio > 1 else 1.0)
    if gemma:
        pattern = raw.get("sliding_window_pattern", 6)
        sliding = [t == "sliding_attention" for t in raw["layer_types"]] if raw.get("layer_types") else \
            [(l + 1) % pattern != 0 for l in range(cfg.n_layers)]
        windows = [raw["sliding_window"] if sl else None for sl in sliding]
        scale = raw["query_pre_attn_scalar"] ** -0.5
        escale = scale_by_hand(raw["hidden_size"], ck.info("model.embed_tokens.weight")[0])
    else:
        sliding = [False] * cfg.n_layers
        windows = [raw.get("sliding_window") if phi3 else None] * cfg.n_layers
        scale, escale = 1 / math.sqrt(hd), 1.0
    tables = {sl: [float(f) for f in decoder.rope_inv_freq(cfg, seq_len, local=sl)] for sl in (False, True)}
    attn_cap = raw.get("attn_logit_softcapping") if gemma else None
    final_cap = raw.get("final_logit_softcapping") if gemma else None
    embed = W("model.embed_tokens.weight")
    head = embed if cfg.tie else W("lm_head.weight")

    def norm(x, w):  # llama RMSNorm; gemma's multiplies by (1 + w)
        ms = sum(float(v) * float(v) for v in x) / len(x)
        return np.array([(1 + w[j] if gemma else w[j]) * x[j] / math.sqrt(ms + cfg.rms_eps) for j in range(len(x))])

    def rope(vec, pos, inv):  # pairs (i, i + rd/2) over the rotary dims; angle rounded to float32 as HF does
        out = vec.copy()
        for i in range(half):
            a = float(np.float32(np.float32(pos) * np.float32(inv[i])))
            c, s = math.cos(a) * af, math.sin(a) * af
            out[i] = vec[i] * c - vec[i + half] * s
            out[i + half] = vec[i + half] * c + vec[i] * s
        return out

    def proj(x, p, bias):
        y = W(p + ".weight") @ x
        return y + W(p + ".bias") if bias else y

    def act(g):
        if gemma:
            return 0.5 * g * (1 + math.tanh(math.sqrt(2 / math.pi) * (g + 0.044715 * g ** 3)))
        return g / (1 + math.exp(-g))

    cache_k = [[] for _ in range(cfg.n_layers)]   # per layer: list over rows of [nkv, hd]
    cache_v = [[] for _ in range(cfg.n_layers)]
    st = {k: [] for k in ["inputs_embeds", "final_norm", "logits"]}
    for l in range(cfg.n_layers):
        for s in ("k", "v"):
            st[f"kv_l{l}_{s}"] = []
        st[f"hidden_l{l}"] = []
    for t, (tok, pos) in enumerate(zip(tokens, positions)):
        h = embed[tok] * escale
        st["inputs_embeds"].append(h.copy())
        for l in range(cfg.n_layers):
            p = f"model.layers.{l}."
            x = norm(h, W(p + "input_layernorm.weight"))
            if phi3:
                qkv = W(p + "self_attn.qkv_proj.weight") @ x
                q, k, v = qkv[:nh * hd], qkv[nh * hd:(nh + nkv) * hd], qkv[(nh + nkv) * hd:]
            else:
                q = proj(x, p + "self_attn.q_proj", cfg.qkv_bias)
                k = proj(x, p + "self_attn.k_proj", cfg.qkv_bias)
                v = proj(x, p + "self_attn.v_proj", cfg.qkv_bias)
            q, k, v = q.reshape(nh, hd), k.reshape(nkv, hd), v.reshape(nkv, hd)
            if cfg.qk_norm:
                q = np.array([norm(q[i], W(p + "self_attn.q_norm.weight")) for i in range(nh)])
                k = np.array([norm(k[i], W(p + "self_attn.k_norm.weight")) for i in range(nkv)])
            inv = tables[sliding[l]]
            q = np.array([rope(q[i], pos, inv) for i in range(nh)])
            k = np.array([rope(k[i], pos, inv) for i in range(nkv)])
            cache_k[l].append(k)
            cache_v[l].append(v)
            st[f"kv_l{l}_k"].append(k)
            st[f"kv_l{l}_v"].append(v)
            att = np.zeros(nh * hd)
            group = nh // nkv
            seen = [j for j in range(t + 1) if windows[l] is None or t - j < windows[l]]
            for hh in range(nh):
                g = hh // group
                sc = []
                for j in seen:
                    s_ = sum(q[hh][d] * cache_k[l][j][g][d] for d in range(hd)) * scale
                    sc.append(attn_cap * math.tanh(s_ / attn_cap) if attn_cap else s_)
                m = max(sc)
                e = [math.exp(s_ - m) for s_ in sc]
                z = sum(e)
                for j, e_ in zip(seen, e):
                    att[hh * hd:(hh + 1) * hd] += (e_ / z) * cache_v[l][j][g]
            o = proj(att, p + "self_attn.o_proj", cfg.o_bias)
            if gemma:
                h = h + norm(o, W(p + "post_attention_layernorm.weight"))
                x = norm(h, W(p + "pre_feedforward_layernorm.weight"))
            else:
                h = h + o
                x = norm(h, W(p + "post_attention_layernorm.weight"))
            if phi3:
                gu = W(p + "mlp.gate_up_proj.weight") @ x
                n = len(gu) // 2
                gt, up = gu[:n], gu[n:]
            else:
                gt = proj(x, p + "mlp.gate_proj", cfg.mlp_bias)
                up = proj(x, p + "mlp.up_proj", cfg.mlp_bias)
            mo = proj(np.array([act(g_) * u_ for g_, u_ in zip(gt, up)]), p + "mlp.down_proj", cfg.mlp_bias)
            h = h + (norm(mo, W(p + "post_feedforward_layernorm.weight")) if gemma else mo)
            st[f"hidden_l{l}"].append(h.copy())
        hn = norm(h, W("model.norm.weight"))
        st["final_norm"].append(hn)
        lg = head @ hn
        st["logits"].append(np.array([final_cap * math.tanh(z / final_cap) for z in lg]) if final_cap else lg)
    return {k: np.array(v) for k, v in st.items()}


def check_forward(model_dir: str, positions, tokens=None) -> None:
    name = os.path.basename(model_dir)
    tokens = TOKENS if tokens is None else tokens
    ref = decoder.forward(model_dir, tokens, positions, "f64")
    loop = loop_forward(model_dir, tokens, positions if positions is not None else range(len(tokens)))
    worst = max((rel(ref[k], loop[k]), k) for k in loop)
    check(worst[0] < 1e-10 and set(loop) <= set(ref),
          f"forward f64 vs loop decode, {name}, T={len(tokens)}, positions "
          f"{'0..T-1' if positions is None else f'{positions[0]}..{positions[-1]}'}: "
          f"worst stage {worst[1]} rel {worst[0]:.1e}")
    f32 = decoder.forward(model_dir, tokens, positions, "f32")
    check(all(f32[k].dtype == np.float32 for k in loop), f"f32 stages are float32 ({name})")
    r = rel(f32["logits"], ref["logits"])
    check(r < 2e-5, f"f32 vs f64 logits ({name}): rel {r:.1e}")


# ---------------------------------------------------------------------------- 6

def check_sliding(gemma_dir: str, nowin_dir: str) -> None:
    """The window by hand, through attention, and in the gemma forward (window 8, T 16)."""
    T, W_ = 12, 8
    m = decoder.attention_mask(T, W_)
    want = [[max(0, i - (W_ - 1)) <= j <= i for j in range(T)] for i in range(T)]
    check(m.tolist() == want, "mask T=12 window 8: row i sees rows max(0, i-7)..i (kv > q - 8, kv <= q)")
    # q = k = 0: uniform weights over the rows a query may see; v row j = one-hot(j)
    q, k = np.zeros((T, 2, T)), np.zeros((T, 1, T))
    v = np.eye(T).reshape(T, 1, T)
    o = decoder.causal_attention(q, k, v, W_).reshape(T, 2, T)
    want = np.array([[1 / sum(r) if x else 0.0 for x in r] for r in want])
    check(float(np.max(np.abs(o - want[:, None, :]))) < 1e-15,
          "attention with one-hot values: row i averages exactly rows max(0, i-7)..i")
    a = decoder.forward(gemma_dir, LONG_TOKENS, None, "f64")
    b = decoder.forward(nowin_dir, LONG_TOKENS, None, "f64")
    same = np.array_equal(a["hidden_l0"][:W_], b["hidden_l0"][:W_]) and np.array_equal(a["kv_l0_k"], b["kv_l0_k"])
    d = np.max(np.abs(a["hidden_l0"][W_:] - b["hidden_l0"][W_:]), axis=1)
    check(same and bool(np.all(d > 1e-6)),
          f"gemma forward, T=16: window 8 leaves rows 0..7 of hidden_l0 as without it, changes every row "
          f"8..15 (min row diff {float(np.min(d)):.1e})")
    d1 = float(np.max(np.abs(a["hidden_l1"] - b["hidden_l1"])))   # a full layer passes the change on
    check(d1 > 1e-6, f"... and the full layer 1 sees the change ({d1:.1e})")


def check_embed_scale(dirs: dict) -> None:
    """Gemma's sqrt(hidden) rounded to the embedding dtype: by hand, and in the forward."""
    f32 = lambda x: float(np.float32(x))  # noqa: E731
    hand = {(2560, "BF16"): 50.5, (3072, "BF16"): 55.5, (1152, "BF16"): 34.0, (2560, "F16"): 50.59375,
            (2560, "F32"): f32(math.sqrt(2560)), (48, "BF16"): 6.9375, (48, "F16"): 6.9296875,
            (48, "F32"): f32(math.sqrt(48)), (64, "BF16"): 8.0, (64, "F16"): 8.0, (64, "F32"): 8.0}
    bad = [(k, decoder.embed_scale(*k)) for k, v in hand.items() if decoder.embed_scale(*k) != v]
    check(not bad, "embed_scale by hand: sqrt(2560) -> 50.5 (bf16), 50.59375 (f16), float32 (f32); "
                   "sqrt(3072) -> 55.5, sqrt(1152) -> 34.0 (bf16); sqrt(48) -> 6.9375 / 6.9296875" +
          (f"; got {bad}" if bad else ""))
    for st_dtype, d in dirs.items():
        ck = Checkpoint(d)
        e = ck.get("model.embed_tokens.weight")[LONG_TOKENS]
        got = decoder.forward(d, LONG_TOKENS, None, "f32")["inputs_embeds"]
        exact = e * np.float32(hand[(48, st_dtype)])
        unrounded = e * np.float32(math.sqrt(48))
        check(ck.info("model.embed_tokens.weight")[0] == st_dtype and np.array_equal(got, exact)
              and (st_dtype == "F32" or not np.array_equal(got, unrounded)),
              f"gemma hidden 48, {st_dtype} checkpoint: inputs_embeds = embedding * {hand[(48, st_dtype)]!r}")


# ---------------------------------------------------------------------------- 7

def run_cli(args):
    p = subprocess.run([PY, os.path.join(HERE, "decoder.py")] + args, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def check_compare_self(model_dir: str, work: str) -> None:
    toks = ",".join(map(str, LONG_TOKENS))
    dump = os.path.join(work, "dump-" + os.path.basename(model_dir))
    rc, out = run_cli(["--model", model_dir, "--tokens", toks, "--dump", dump])
    rc2, out2 = run_cli(["--model", model_dir, "--tokens", toks, "--compare", dump, "--atol", "0", "--rtol", "0"])
    check(rc == 0 and rc2 == 0 and "all" in out2,
          f"--dump then --compare (atol 0) on its own dump: {os.path.basename(model_dir)}")


def check_compare(model_dir: str, work: str) -> None:
    toks = ",".join(map(str, TOKENS))
    dump = os.path.join(work, "dump")
    rc, out = run_cli(["--model", model_dir, "--tokens", toks, "--dump", dump])
    check(rc == 0 and os.path.exists(os.path.join(dump, "kv_l1_v.npy")), "--dump writes the stages")
    rc, out = run_cli(["--model", model_dir, "--tokens", toks, "--compare", dump])
    check(rc == 0 and "all" in out, "--compare on its own dump passes")
    # omnic-style dir: last-row logits as [V], f16 KV, a perturbed hidden_l1
    om = os.path.join(work, "omnic")
    os.makedirs(om, exist_ok=True)
    for f in os.listdir(om):
        os.remove(os.path.join(om, f))
    st = decoder.forward(model_dir, TOKENS, None, "f32")
    np.save(os.path.join(om, "prefill_logits.npy"), st["logits"][-1])
    for k in ("kv_l0_k", "kv_l0_v", "kv_l1_k", "kv_l1_v"):
        np.save(os.path.join(om, k + ".npy"), st[k].astype(np.float16))
    np.save(os.path.join(om, "hidden_l0.npy"), st["hidden_l0"])
    np.save(os.path.join(om, "hidden_l1.npy"), st["hidden_l1"])
    rc, out = run_cli(["--model", model_dir, "--tokens", toks, "--compare", om, "--kv-round", "none"])
    check(rc == 0, "[V] prefill_logits and f16-stored KV files accepted (--kv-round none)")
    # these files hold an f32-KV run, so modelling an f16 cache must show at hidden_l0
    rc, out = run_cli(["--model", model_dir, "--tokens", toks, "--compare", om])
    check("kv-round f16" in out and rc == 1 and "FIRST DIVERGENCE at hidden_l0" in out,
          "--kv-round auto picks f16 for float16 KV files; f16-cache rounding shows at hidden_l0")
    h = st["hidden_l1"].copy()
    h[3, 5] += 0.01
    np.save(os.path.join(om, "hidden_l1.npy"), h)
    lg = st["logits"][-1].copy()
    lg[7] += 0.01
    np.save(os.path.join(om, "prefill_logits.npy"), lg)
    rc, out = run_cli(["--model", model_dir, "--tokens", toks, "--compare", om, "--kv-round", "none"])
    check(rc == 1 and "FIRST DIVERGENCE at hidden_l1" in out, "perturbed hidden_l1 is the first divergence")
    rc, out = run_cli(["--model", model_dir, "--tokens", toks, "--compare", os.path.join(om, "prefill_logits.npy")])
    check(rc == 1 and "prefill_logits" in out, "single-file compare reports the perturbed logits")
    np.save(os.path.join(om, "hidden_l1.npy"), st["hidden_l1"][:-1])
    np.save(os.path.join(om, "prefill_logits.npy"), np.full_like(lg, np.nan))
    rc, out = run_cli(["--model", model_dir, "--tokens", toks, "--compare", om])
    check(rc == 1 and "shape" in out and "non-finite" in out, "shape mismatch and NaNs are failures")
    empty = os.path.join(work, "empty")
    os.makedirs(empty, exist_ok=True)
    rc, out = run_cli(["--model", model_dir, "--tokens", toks, "--compare", empty])
    check(rc == 1, "nothing to compare is a failure")


def write_safetensors_f32(path: str, tensors: dict) -> None:
    """A single-file F32 safetensors (names sorted), for the variants below."""
    header, off, blobs = {}, 0, []
    for name in sorted(tensors):
        b = np.ascontiguousarray(tensors[name], dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def variant(work: str, src: str, dst: str, edit: dict, drop=(), tensors=None) -> str:
    """Copy checkpoint `src` to `dst` with config.json keys updated / dropped (and
    optionally the weights replaced by `tensors`, all F32)."""
    out = os.path.join(work, dst)
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(os.path.join(work, src), out)
    with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
        c = json.load(f)
    c.update(edit)
    for k in drop:
        c.pop(k, None)
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(c, f, indent=2)
    if tensors is not None:
        write_safetensors_f32(os.path.join(out, "model.safetensors"), tensors)
    return out


def make_models(work: str) -> dict:
    models = {"llama-f32": ["--family", "llama", "--dtype", "f32"],
              "llama-f16-sharded": ["--family", "llama", "--dtype", "f16", "--shards", "3"],
              "qwen2-bf16": ["--family", "qwen2"],
              "qwen2-f32-untied": ["--family", "qwen2", "--dtype", "f32", "--no-tie"],
              "qwen3-bf16": ["--family", "qwen3"],
              "qwen3-f32": ["--family", "qwen3", "--dtype", "f32"],
              "phi3-bf16": ["--family", "phi3"],
              "phi3-f32": ["--family", "phi3", "--dtype", "f32"],
              "gemma3-bf16": ["--family", "gemma3_text"],
              "gemma3-f16": ["--family", "gemma3_text", "--dtype", "f16"],
              "gemma3-f32": ["--family", "gemma3_text", "--dtype", "f32"]}
    for name, a in models.items():
        subprocess.run([PY, os.path.join(TOOLS, "mktiny.py"), "--out", os.path.join(work, name)] + a,
                       check=True, capture_output=True)
    # gemma3_text with hidden 48: sqrt(48) = 6.928... is not a bf16/f16 value
    fam = mktiny.FAMILIES["gemma3_text"]
    saved = fam.tiny
    fam.tiny = dict(saved, hidden=48)
    try:
        for dt in ("bf16", "f16", "f32"):
            with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
                mktiny.main(["--family", "gemma3_text", "--dtype", dt, "--out", os.path.join(work, "gemma3-h48-" + dt)])
    finally:
        fam.tiny = saved
    return models


def make_variants(work: str) -> dict:
    """Config variants exercising paths the tiny configs leave idle (name -> dir)."""
    v = {}
    # qwen3 with attention_bias: q/k/v/o biases
    ck = Checkpoint(os.path.join(work, "qwen3-f32"))
    t = {n: ck.get(n) for n in ck.names()}
    rng = np.random.default_rng(7)
    for l in range(2):
        for pr in "qkvo":
            w = t[f"model.layers.{l}.self_attn.{pr}_proj.weight"]
            t[f"model.layers.{l}.self_attn.{pr}_proj.bias"] = (0.2 * rng.standard_normal(w.shape[0])).astype(np.float32)
    v["qwen3-bias"] = variant(work, "qwen3-f32", "qwen3-bias", {"attention_bias": True}, tensors=t)
    # phi3: 12 of 16 dims rotate (6 factors), Phi-3's old "su" type, a sliding window of 5
    v["phi3-su-rd12-win5"] = variant(work, "phi3-f32", "phi3-su-rd12-win5", {
        "partial_rotary_factor": 0.75, "sliding_window": 5,
        "rope_scaling": {"type": "su", "short_factor": [1.0, 1.05, 1.1, 1.2, 1.3, 1.5],
                         "long_factor": [1.0, 2.0, 3.0, 4.0, 6.0, 8.0]}})
    # phi3 without rope_scaling (Phi-3-mini-4k style): plain RoPE, attention factor 1
    v["phi3-norope-scaling"] = variant(work, "phi3-f32", "phi3-norope-scaling", {"rope_scaling": None,
                                                                                "sliding_window": None})
    # gemma: pattern 3 instead of layer_types (sliding 0, 1, 3; full 2), window 5, attention
    # softcap 4, no final softcap, linear rope_scaling on the full layers
    v["gemma3-var"] = variant(work, "gemma3-f32", "gemma3-var", {
        "sliding_window_pattern": 3, "sliding_window": 5, "attn_logit_softcapping": 4.0,
        "final_logit_softcapping": None, "rope_scaling": {"rope_type": "linear", "factor": 8.0}},
        drop=("layer_types",))
    v["gemma3-nowin"] = variant(work, "gemma3-f32", "gemma3-nowin", {"sliding_window": 1000})
    return v


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", help="work in this directory instead of a temporary one")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="omnic-ref-check-")
    models = make_models(work)
    variants = make_variants(work)
    old = ["llama-f32", "llama-f16-sharded", "qwen2-bf16", "qwen2-f32-untied"]
    new = [m for m in models if m not in old]
    print("1. safetensors reader")
    for name in models:
        check_reader(os.path.join(work, name))
    print("2. RoPE tables and configs")
    check_rope()
    check_rope_new(os.path.join(work, "phi3-bf16"), os.path.join(work, "gemma3-bf16"), os.path.join(work, "qwen3-bf16"))
    print("3. RMSNorm, gelu tanh")
    check_rmsnorm()
    print("4/5. forward vs loop decode; f32 vs f64")
    for name in old:
        for pos in (None, [p + 100 for p in range(len(TOKENS))]):
            check_forward(os.path.join(work, name), pos)
    for d in [os.path.join(work, m) for m in new] + list(variants.values()):
        for pos in (None, [p + 100 for p in range(len(LONG_TOKENS))]):
            check_forward(d, pos, LONG_TOKENS)
    for d in ("phi3-f32", "phi3-su-rd12-win5"):   # last positions before the long factors
        check_forward(os.path.join(work, d), list(range(48, 64)), LONG_TOKENS)
    print("6. sliding window; gemma embedding scale")
    check_sliding(os.path.join(work, "gemma3-f32"), variants["gemma3-nowin"])
    check_embed_scale({"BF16": os.path.join(work, "gemma3-h48-bf16"), "F16": os.path.join(work, "gemma3-h48-f16"),
                       "F32": os.path.join(work, "gemma3-h48-f32")})
    print("7. --dump / --compare")
    for name in new:
        check_compare_self(os.path.join(work, name), work)
    check_compare(os.path.join(work, "llama-f32"), work)
    print(f"{'FAILED: ' + str(len(FAILS)) if FAILS else 'all checks passed'} ({work})")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
