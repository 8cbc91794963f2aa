#!/usr/bin/python3
"""Self-checks of tools/ref/decoder.py against independent second computations.

    /usr/bin/python3 tools/ref/check_decoder.py [--keep DIR]

Makes tiny checkpoints with tools/mktiny.py (llama f32, llama f16 sharded, qwen2
bf16 and f32) and checks:
  1. safetensors_np reads every tensor bit-identically to mktiny's own reader;
  2. the RoPE table: default inv_freq against theta^(-2i/d) in float64, llama3
     scaling against Meta's per-frequency loop (apply_scaling) in float64, with all
     three wavelength bands present in the tiny llama config and Llama-3.2-1B's;
  3. RMSNorm against a per-row loop in Python floats;
  4. the whole forward (f64) against a token-by-token decode written with explicit
     loops (RoPE on index pairs with math.cos/sin, per-head attention over an
     explicit KV cache, softmax by hand, repeat_kv by index), for default and
     shifted positions: every stage to 1e-10 relative;
  5. f32 against f64 (float32 execution error, expected ~1e-6);
  6. --compare: passes on its own dump, reports the first perturbed stage,
     rejects a shape mismatch and NaNs, accepts [V] for prefill_logits.
Exit status 0 when every check passes.
"""

import argparse
import math
import os
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


# ---------------------------------------------------------------------------- 3

def check_rmsnorm() -> None:
    rng = np.random.default_rng(1)
    x, w, eps = rng.standard_normal((3, 37)) * 3, 1 + 0.1 * rng.standard_normal(37), 1e-6
    got = decoder.rms_norm(x, w, eps)
    want = [[w[j] * x[i][j] / math.sqrt(sum(v * v for v in x[i]) / len(x[i]) + eps) for j in range(37)]
            for i in range(3)]
    check(rel(got, want) < 1e-14, f"rms_norm vs per-row loop: rel {rel(got, want):.1e}")


# ---------------------------------------------------------------------------- 4

def loop_forward(model_dir: str, tokens, positions):
    """Token-by-token decode with an explicit KV cache, written with plain loops.

    Independent of decoder.forward except for the config reader, the weight reader
    and the float32 RoPE table (checked separately in 2).
    """
    cfg = decoder.load_config(model_dir)
    ck = Checkpoint(model_dir)
    W = lambda n: ck.get(n, np.float64)  # noqa: E731
    hd, nh, nkv = cfg.head_dim, cfg.n_heads, cfg.n_kv_heads
    half = hd // 2
    inv = [float(f) for f in decoder.rope_inv_freq(cfg)]
    embed = W("model.embed_tokens.weight")
    head = embed if cfg.tie else W("lm_head.weight")

    def norm(x, w):
        ms = sum(float(v) * float(v) for v in x) / len(x)
        return np.array([w[j] * x[j] / math.sqrt(ms + cfg.rms_eps) for j in range(len(x))])

    def rope(vec, pos):  # vec [hd]; pairs (i, i + half), angle rounded to float32 as HF does
        out = vec.copy()
        for i in range(half):
            a = float(np.float32(np.float32(pos) * np.float32(inv[i])))
            c, s = math.cos(a), math.sin(a)
            out[i] = vec[i] * c - vec[i + half] * s
            out[i + half] = vec[i + half] * c + vec[i] * s
        return out

    def proj(x, p, bias):
        y = W(p + ".weight") @ x
        return y + W(p + ".bias") if bias else y

    cache_k = [[] for _ in range(cfg.n_layers)]   # per layer: list over rows of [nkv, hd]
    cache_v = [[] for _ in range(cfg.n_layers)]
    st = {k: [] for k in ["inputs_embeds", "final_norm", "logits"]}
    for l in range(cfg.n_layers):
        for s in ("k", "v"):
            st[f"kv_l{l}_{s}"] = []
        st[f"hidden_l{l}"] = []
    for t, (tok, pos) in enumerate(zip(tokens, positions)):
        h = embed[tok].copy()
        st["inputs_embeds"].append(h.copy())
        for l in range(cfg.n_layers):
            p = f"model.layers.{l}."
            x = norm(h, W(p + "input_layernorm.weight"))
            q = proj(x, p + "self_attn.q_proj", cfg.qkv_bias).reshape(nh, hd)
            k = proj(x, p + "self_attn.k_proj", cfg.qkv_bias).reshape(nkv, hd)
            v = proj(x, p + "self_attn.v_proj", cfg.qkv_bias).reshape(nkv, hd)
            q = np.array([rope(q[i], pos) for i in range(nh)])
            k = np.array([rope(k[i], pos) for i in range(nkv)])
            cache_k[l].append(k)
            cache_v[l].append(v)
            st[f"kv_l{l}_k"].append(k)
            st[f"kv_l{l}_v"].append(v)
            att = np.zeros(nh * hd)
            group = nh // nkv
            for hh in range(nh):
                g = hh // group
                sc = [sum(q[hh][d] * cache_k[l][j][g][d] for d in range(hd)) / math.sqrt(hd) for j in range(t + 1)]
                m = max(sc)
                e = [math.exp(s - m) for s in sc]
                z = sum(e)
                for j in range(t + 1):
                    att[hh * hd:(hh + 1) * hd] += (e[j] / z) * cache_v[l][j][g]
            h = h + proj(att, p + "self_attn.o_proj", cfg.o_bias)
            x = norm(h, W(p + "post_attention_layernorm.weight"))
            gt = proj(x, p + "mlp.gate_proj", cfg.mlp_bias)
            up = proj(x, p + "mlp.up_proj", cfg.mlp_bias)
            act = np.array([g_ / (1 + math.exp(-g_)) * u_ for g_, u_ in zip(gt, up)])
            h = h + proj(act, p + "mlp.down_proj", cfg.mlp_bias)
            st[f"hidden_l{l}"].append(h.copy())
        hn = norm(h, W("model.norm.weight"))
        st["final_norm"].append(hn)
        st["logits"].append(head @ hn)
    return {k: np.array(v) for k, v in st.items()}


def check_forward(model_dir: str, positions) -> None:
    name = os.path.basename(model_dir)
    ref = decoder.forward(model_dir, TOKENS, positions, "f64")
    loop = loop_forward(model_dir, TOKENS, positions if positions is not None else range(len(TOKENS)))
    worst = max((rel(ref[k], loop[k]), k) for k in loop)
    check(worst[0] < 1e-10 and set(loop) <= set(ref),
          f"forward f64 vs loop decode, {name}, positions {'0..T-1' if positions is None else 'shifted'}: "
          f"worst stage {worst[1]} rel {worst[0]:.1e}")
    f32 = decoder.forward(model_dir, TOKENS, positions, "f32")
    check(all(f32[k].dtype == np.float32 for k in loop), f"f32 stages are float32 ({name})")
    r = rel(f32["logits"], ref["logits"])
    check(r < 2e-5, f"f32 vs f64 logits ({name}): rel {r:.1e}")


# ---------------------------------------------------------------------------- 6

def run_cli(args):
    p = subprocess.run([PY, os.path.join(HERE, "decoder.py")] + args, capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", help="work in this directory instead of a temporary one")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="omnic-ref-check-")
    models = {"llama-f32": ["--family", "llama", "--dtype", "f32"],
              "llama-f16-sharded": ["--family", "llama", "--dtype", "f16", "--shards", "3"],
              "qwen2-bf16": ["--family", "qwen2"],
              "qwen2-f32-untied": ["--family", "qwen2", "--dtype", "f32", "--no-tie"]}
    for name, a in models.items():
        subprocess.run([PY, os.path.join(TOOLS, "mktiny.py"), "--out", os.path.join(work, name)] + a,
                       check=True, capture_output=True)
    print("1. safetensors reader")
    for name in models:
        check_reader(os.path.join(work, name))
    print("2. RoPE tables")
    check_rope()
    print("3. RMSNorm")
    check_rmsnorm()
    print("4/5. forward vs loop decode; f32 vs f64")
    for name in models:
        for pos in (None, [p + 100 for p in range(len(TOKENS))]):
            check_forward(os.path.join(work, name), pos)
    print("6. --dump / --compare")
    check_compare(os.path.join(work, "llama-f32"), work)
    print(f"{'FAILED: ' + str(len(FAILS)) if FAILS else 'all checks passed'} ({work})")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
