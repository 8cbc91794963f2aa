#!/usr/bin/python3
"""Independent numpy reference of the Qwen2-VL and Qwen2.5-VL vision towers with their PatchMerger.

Written from transformers' modeling_qwen2_vl.py (PatchEmbed, VisionRotaryEmbedding,
VisionAttention, Qwen2VLVisionBlock, PatchMerger, Qwen2VisionTransformerPretrainedModel.rot_pos_emb
and forward) and modeling_qwen2_5_vl.py (Qwen2RMSNorm, Qwen2_5_VLMLP, Qwen2_5_VLVisionBlock,
Qwen2_5_VLPatchMerger, get_window_index and forward), eager attention:

  patch_embed   Conv3d(in_chans -> C, kernel = stride = (temporal, patch, patch), no bias) on each
                flattened patch row viewed [in_chans, temporal, patch, patch] = row @ W.reshape(C, -1).T
  rot_pos_emb   per image (t, h, w): hpos = arange(h)[:, None] over w, wpos = arange(w)[None, :] over h,
                both reshaped (h/m, m, w/m, m), permuted (0, 2, 1, 3), flattened, repeated t times;
                inv_freq = 1 / 10000 ** (arange(0, hd/2, 2) / (hd/2)) (f32); freqs = outer(arange, inv_freq)
                (f32); rotary = cat(freqs[hpos], freqs[wpos]) [N, hd/2]; emb = cat(rotary, rotary);
                q, k <- q * cos(emb) + rotate_half(q) * sin(emb), rotate_half(x) = cat(-x2, x1)
  cu_seqlens    one block per (image, frame) of h * w rows; attention is softmax(q k^T * hd**-0.5) v
                inside each block (the eager path splits q/k/v by the block lengths)
  Qwen2-VL      block: h += proj(attn(LayerNorm1(h))); h += fc2(act(fc1(LayerNorm2(h)))), LayerNorm eps
                1e-6, act = vision hidden_act (quick_gelu); merger: LayerNorm ln_q (eps 1e-6), view
                [N/m^2, m^2 C], mlp.2(GELU(mlp.0(.))) with nn.GELU (erf)
  Qwen2.5-VL    RMSNorm (eps 1e-6: x * rsqrt(mean(x^2) + eps) * w) for norm1/norm2/ln_q; MLP
                down(act(gate(x)) * up(x)) with biases; get_window_index (windows of
                window_size // m // patch merged tokens, index padded with -100 to a multiple of
                the window, then the valid indices window by window), hidden states and rotary
                reordered by window_index in groups of m^2 rows; blocks in fullatt_block_indexes use
                cu_seqlens, the others cu_window_seqlens (unique_consecutive); after the merger
                rows are put back by argsort(window_index)

Evaluated in float64 (weights widened exactly; inv_freq and the rotary angles in float32 as HF
computes them, their cos/sin in float64). Besides "projected" [N / m^2, out_hidden] it returns
"vision_features": the last block's output in the processor's order [N, C] (for Qwen2.5-VL the
window order undone by the same argsort), which is what omnic's vision.encode outputs.

CLI:
  qwen2vl_vision.py --model DIR --patches patches.npy --grid grid.npy --out DIR
  qwen2vl_vision.py --model DIR --compare DIR [--atol A --rtol R]
      recompute from DIR/patches.npy ([N, K] f32) and DIR/grid.npy ([images, 3] int) and compare
      DIR/projected.npy (and DIR/vision_features.npy when present); exit 1 on a mismatch
"""

import argparse
import json
import math
import os
import sys
from typing import Dict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import compare  # noqa: E402
from safetensors_np import Checkpoint  # noqa: E402

Q2_DEFAULTS = {"depth": 32, "embed_dim": 1280, "hidden_size": 3584, "hidden_act": "quick_gelu", "mlp_ratio": 4,
               "num_heads": 16, "in_channels": 3, "patch_size": 14, "spatial_merge_size": 2,
               "temporal_patch_size": 2}
Q25_DEFAULTS = {"depth": 32, "hidden_size": 3584, "hidden_act": "silu", "intermediate_size": 3420, "num_heads": 16,
                "in_channels": 3, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2,
                "window_size": 112, "out_hidden_size": 3584, "fullatt_block_indexes": [7, 15, 23, 31]}


def load_config(model_dir: str) -> dict:
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    kind = cfg.get("model_type")
    if kind not in ("qwen2_vl", "qwen2_5_vl"):
        raise SystemExit(f"{model_dir}: model_type {kind!r} is not qwen2_vl / qwen2_5_vl")
    vc = dict(Q2_DEFAULTS if kind == "qwen2_vl" else Q25_DEFAULTS, **cfg["vision_config"])
    if "in_chans" in cfg["vision_config"] and "in_channels" not in cfg["vision_config"]:
        vc["in_channels"] = cfg["vision_config"]["in_chans"]
    vc["kind"] = kind
    return vc


class Weights:
    def __init__(self, model_dir: str, dtype):
        self.ck = Checkpoint(model_dir)
        self.dtype = dtype
        self.prefix = "model.visual." if any(n.startswith("model.visual.") for n in self.ck.names()) else "visual."

    def __call__(self, name: str) -> np.ndarray:
        return self.ck.get(self.prefix + name).astype(self.dtype)


def act_fn(name: str):
    if name == "quick_gelu":
        return lambda x: x * (1.0 / (1.0 + np.exp(-1.702 * x)))
    if name == "gelu":
        erf = np.vectorize(math.erf, otypes=[np.float64])
        return lambda x: (0.5 * x * (1.0 + erf(x.astype(np.float64) / math.sqrt(2.0)))).astype(x.dtype)
    if name in ("gelu_pytorch_tanh", "gelu_new"):
        return lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "silu":
        return lambda x: x / (1.0 + np.exp(-x))
    raise SystemExit(f"activation {name!r} not supported")


def layer_norm(x, w, b, eps=1e-6):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def rms_norm(x, w, eps=1e-6):
    return w * (x / np.sqrt((x * x).mean(-1, keepdims=True) + eps))


def linear(x, w, b=None):
    y = x @ w.T
    return y + b if b is not None else y


def softmax(x):
    x = x - x.max(-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


def rot_pos_emb(grid: np.ndarray, m: int, head_dim: int) -> np.ndarray:
    """[N, head_dim / 2] f32 rotary angles (HF rot_pos_emb)."""
    pos = []
    for t, h, w in grid:
        hpos = np.broadcast_to(np.arange(h)[:, None], (h, w)).reshape(h // m, m, w // m, m).transpose(0, 2, 1, 3)
        wpos = np.broadcast_to(np.arange(w)[None, :], (h, w)).reshape(h // m, m, w // m, m).transpose(0, 2, 1, 3)
        pos.append(np.tile(np.stack([hpos.reshape(-1), wpos.reshape(-1)], -1), (t, 1)))
    pos = np.concatenate(pos, 0)
    dim = head_dim // 2
    inv = (np.float32(1.0) / (np.float32(10000.0) ** (np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim))))
    inv = inv.astype(np.float32)
    freqs = np.outer(np.arange(int(grid[:, 1:].max()), dtype=np.float32), inv).astype(np.float32)
    return freqs[pos].reshape(pos.shape[0], -1)


def get_window_index(grid: np.ndarray, window_size: int, m: int, patch: int):
    """HF get_window_index: (window_index [N / m^2], cu_window_seqlens list)."""
    window_index, cu = [], [0]
    wid = 0
    S = window_size // m // patch
    for t, h, w in grid:
        lh, lw = h // m, w // m
        index = np.arange(t * lh * lw).reshape(t, lh, lw)
        ph, pw = S - lh % S, S - lw % S
        nh, nw = (lh + ph) // S, (lw + pw) // S
        padded = np.pad(index, ((0, 0), (0, ph), (0, pw)), constant_values=-100)
        padded = padded.reshape(t, nh, S, nw, S).transpose(0, 1, 3, 2, 4).reshape(t, nh * nw, S, S)
        seqlens = (padded != -100).sum((2, 3)).reshape(-1)
        flat = padded.reshape(-1)
        window_index.append(flat[flat != -100] + wid)
        cu.extend((np.cumsum(seqlens) * m * m + cu[-1]).tolist())
        wid += t * lh * lw
    return np.concatenate(window_index), cu


def attention(x, W, prefix, cu, rot, heads, dtype):
    N, C = x.shape
    hd = C // heads
    qkv = linear(x, W(prefix + "attn.qkv.weight"), W(prefix + "attn.qkv.bias")).reshape(N, 3, heads, hd)
    q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
    emb = np.concatenate([rot, rot], -1).astype(np.float64)
    cos, sin = np.cos(emb)[:, None, :].astype(dtype), np.sin(emb)[:, None, :].astype(dtype)

    def rope(a):
        rh = np.concatenate([-a[..., hd // 2:], a[..., :hd // 2]], -1)
        return a * cos + rh * sin

    q, k = rope(q), rope(k)
    out = np.zeros_like(q)
    for a, b in zip(cu[:-1], cu[1:]):
        if b <= a:
            continue
        s = np.einsum("qhd,khd->hqk", q[a:b], k[a:b]) * (hd ** -0.5)
        out[a:b] = np.einsum("hqk,khd->qhd", softmax(s), v[a:b])
    return linear(out.reshape(N, C), W(prefix + "attn.proj.weight"), W(prefix + "attn.proj.bias"))


def encode(model_dir: str, patches: np.ndarray, grid: np.ndarray, dtype=np.float64) -> Dict[str, np.ndarray]:
    c = load_config(model_dir)
    W = Weights(model_dir, dtype)
    q2 = c["kind"] == "qwen2_vl"
    grid = np.asarray(grid, dtype=np.int64).reshape(-1, 3)
    m, unit = c["spatial_merge_size"], c["spatial_merge_size"] ** 2
    heads = c["num_heads"]
    pw = W("patch_embed.proj.weight")
    x = patches.astype(dtype) @ pw.reshape(pw.shape[0], -1).T
    N, C = x.shape
    if N != int((grid[:, 0] * grid[:, 1] * grid[:, 2]).sum()):
        raise ValueError(f"{N} patch rows for grids {grid.tolist()}")
    rot = rot_pos_emb(grid, m, C // heads)
    cu = np.concatenate([[0], np.cumsum(np.repeat(grid[:, 1] * grid[:, 2], grid[:, 0]))]).tolist()
    act = act_fn(c["hidden_act"])
    if not q2:
        window_index, cu_win = get_window_index(grid, c["window_size"], m, c["patch_size"])
        cu_win = [v for i, v in enumerate(cu_win) if i == 0 or v != cu_win[i - 1]]  # unique_consecutive
        x = x.reshape(N // unit, unit, C)[window_index].reshape(N, C)
        rot = rot.reshape(N // unit, unit, -1)[window_index].reshape(N, -1)
    for i in range(c["depth"]):
        p = f"blocks.{i}."
        if q2:
            h = layer_norm(x, W(p + "norm1.weight"), W(p + "norm1.bias"))
            x = x + attention(h, W, p, cu, rot, heads, dtype)
            h = layer_norm(x, W(p + "norm2.weight"), W(p + "norm2.bias"))
            x = x + linear(act(linear(h, W(p + "mlp.fc1.weight"), W(p + "mlp.fc1.bias"))), W(p + "mlp.fc2.weight"),
                           W(p + "mlp.fc2.bias"))
        else:
            cu_now = cu if i in c["fullatt_block_indexes"] else cu_win
            h = rms_norm(x, W(p + "norm1.weight"))
            x = x + attention(h, W, p, cu_now, rot, heads, dtype)
            h = rms_norm(x, W(p + "norm2.weight"))
            g = linear(h, W(p + "mlp.gate_proj.weight"), W(p + "mlp.gate_proj.bias"))
            u = linear(h, W(p + "mlp.up_proj.weight"), W(p + "mlp.up_proj.bias"))
            x = x + linear(act(g) * u, W(p + "mlp.down_proj.weight"), W(p + "mlp.down_proj.bias"))
    if q2:
        y = layer_norm(x, W("merger.ln_q.weight"), W("merger.ln_q.bias"))
    else:
        y = rms_norm(x, W("merger.ln_q.weight"))
    y = y.reshape(-1, unit * C)
    y = linear(act_fn("gelu")(linear(y, W("merger.mlp.0.weight"), W("merger.mlp.0.bias"))),
               W("merger.mlp.2.weight"), W("merger.mlp.2.bias"))
    feats = x
    if not q2:
        rev = np.argsort(window_index)
        y = y[rev]
        feats = x.reshape(N // unit, unit, C)[rev].reshape(N, C)
    return {"projected": y, "vision_features": feats}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--patches", help="flattened patches .npy [N, K]")
    ap.add_argument("--grid", help="image grids .npy [images, 3] (t, h, w)")
    ap.add_argument("--out", help="write projected.npy and vision_features.npy here")
    ap.add_argument("--compare", help="directory with patches.npy, grid.npy and omnic's outputs")
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--precision", choices=["f64", "f32"], default="f64")
    a = ap.parse_args(argv)
    dtype = np.float64 if a.precision == "f64" else np.float32
    if a.compare:
        st = encode(a.model, np.load(os.path.join(a.compare, "patches.npy")),
                    np.load(os.path.join(a.compare, "grid.npy")), dtype)
        ok = True
        for name in ("projected", "vision_features"):
            path = os.path.join(a.compare, name + ".npy")
            if not os.path.exists(path):
                if name == "projected":
                    print(f"FAIL {name}: {path} missing")
                    ok = False
                continue
            ok &= compare(name, st[name], np.load(path), a.atol, a.rtol)
        return 0 if ok else 1
    if not (a.patches and a.grid and a.out):
        ap.error("--patches, --grid and --out (or --compare)")
    st = encode(a.model, np.load(a.patches), np.load(a.grid), dtype)
    os.makedirs(a.out, exist_ok=True)
    for name, val in st.items():
        np.save(os.path.join(a.out, name + ".npy"), val.astype(np.float32))
    return 0


if __name__ == "__main__":
    sys.exit(main())
