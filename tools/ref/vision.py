#!/usr/bin/python3
"""Independent numpy reference of LLaVA's image path: CLIP / SigLIP vision towers, the
multimodal projector, and the merge of projected rows into the prompt's embeddings.

Written from transformers' modeling_clip.py (CLIPVisionEmbeddings, CLIPEncoderLayer,
CLIPVisionTransformer), modeling_siglip.py (SiglipVisionEmbeddings, SiglipEncoderLayer,
SiglipEncoder, SiglipVisionTransformer) and modeling_llava.py (get_image_features,
LlavaMultiModalProjector, the masked_scatter merge), eager attention:

  CLIP embeddings    patches = conv2d(pixel_values, patch_embedding.weight, stride=patch, no bias)
                     flattened row-major over the (gy, gx) grid; cat(class_embedding, patches)
                     + position_embedding(arange(num_patches + 1)); then pre_layrnorm
  SigLIP embeddings  conv2d with bias, padding "valid" (trailing pixels that do not fill a
                     patch are dropped), + position_embedding(arange(num_patches)); no CLS, no pre-norm
  encoder layer      h = h + out_proj(attn(layer_norm1(h))); h = h + fc2(act(fc1(layer_norm2(h))))
                     attn: q/k/v projections with biases, heads of hidden/heads, softmax(q k^T *
                     head_dim**-0.5) v, no mask (bidirectional)
                     act: CLIP quick_gelu x*sigmoid(1.702x); SigLIP gelu_pytorch_tanh
  LayerNorm          (x - mean) / sqrt(var + eps) * w + b, biased variance; eps from the config
                     (CLIP default 1e-5, SigLIP 1e-6)
  hidden_states      (embeddings, after layer 0, ..., after layer L-1): the encoder's outputs,
                     without post_layernorm (SigLIP's post_layernorm only makes last_hidden_state)
  LLaVA              feature = hidden_states[vision_feature_layer] (an int; lists are refused here);
                     "default" strategy drops row 0, "full" keeps all; projector
                     linear_2(act(linear_1(feature))), act = projector_hidden_act (gelu = erf)
  merge              inputs_embeds = embed_tokens(input_ids); the rows whose id is
                     image_token_index are replaced, in order, by the projected rows of the images
                     (their count must equal the number of such ids)

Evaluated in float64 (weights widened exactly from f32/f16/bf16), the tightest reference for
omnic's f32 kernels; --precision f32 evaluates every op in float32.

CLI:
  vision.py --model DIR --pixels pixel_values.npy --out DIR       write vision_features.npy, projected.npy
  vision.py --model DIR --compare DIR [--atol A --rtol R]         recompute from DIR/pixel_values.npy and
            compare vision_features / projected (and, when DIR has tokens.npy and inputs_embeds.npy,
            the merged embeddings); exit 1 on a mismatch
"""

import argparse
import json
import math
import os
import sys
from typing import Dict, List, Optional, Sequence

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import compare  # noqa: E402
from safetensors_np import Checkpoint  # noqa: E402

CLIP_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
                 "patch_size": 32, "image_size": 224, "layer_norm_eps": 1e-5, "hidden_act": "quick_gelu",
                 "num_channels": 3}
SIGLIP_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
                   "patch_size": 16, "image_size": 224, "layer_norm_eps": 1e-6, "hidden_act": "gelu_pytorch_tanh",
                   "num_channels": 3}


def load_config(model_dir: str) -> dict:
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    if cfg.get("model_type") != "llava":
        raise SystemExit(f"{model_dir}: model_type {cfg.get('model_type')!r} is not llava")
    vc = dict(cfg["vision_config"])
    kind = vc["model_type"]
    defaults = CLIP_DEFAULTS if kind == "clip_vision_model" else SIGLIP_DEFAULTS
    if kind not in ("clip_vision_model", "siglip_vision_model"):
        raise SystemExit(f"vision model_type {kind!r} not supported")
    vc = dict(defaults, **vc)
    layer = cfg.get("vision_feature_layer", -2)
    if not isinstance(layer, int):
        raise SystemExit("vision_feature_layer lists are not supported by this reference")
    return {
        "kind": "clip" if kind == "clip_vision_model" else "siglip",
        "vision": vc,
        "feature_layer": layer,
        "strategy": cfg.get("vision_feature_select_strategy", "default"),
        "projector_act": cfg.get("projector_hidden_act", "gelu"),
        "projector_bias": cfg.get("multimodal_projector_bias", True),
        "image_token_index": cfg.get("image_token_index", cfg.get("image_token_id", 32000)),
        "text_hidden": cfg["text_config"]["hidden_size"],
    }


class Weights:
    """Tensors by their old on-disk name, whichever spelling the checkpoint uses."""

    def __init__(self, model_dir: str, dtype):
        self.ck = Checkpoint(model_dir)
        self.dtype = dtype
        names = set(self.ck.names())
        self.new = any(n.startswith("model.vision_tower.") for n in names)

    def name(self, old: str) -> str:
        if not self.new:
            return old
        for o, n in (("language_model.model.", "model.language_model."), ("language_model.lm_head.", "lm_head."),
                     ("vision_tower.", "model.vision_tower."),
                     ("multi_modal_projector.", "model.multi_modal_projector.")):
            if old.startswith(o):
                return n + old[len(o):]
        return old

    def __call__(self, old: str) -> np.ndarray:
        return self.ck.get(self.name(old)).astype(self.dtype)


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


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def linear(x, w, b=None):
    y = x @ w.T
    return y + b if b is not None else y


def softmax(x):
    x = x - x.max(-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(-1, keepdims=True)


def patch_conv(pix: np.ndarray, w: np.ndarray, b: Optional[np.ndarray]) -> np.ndarray:
    """conv2d(stride = kernel, padding valid): [C, H, W] -> [gy * gx, O], row-major over the grid."""
    O, C, ph, pw = w.shape
    gy, gx = pix.shape[1] // ph, pix.shape[2] // pw
    x = pix[:, :gy * ph, :gx * pw].reshape(C, gy, ph, gx, pw).transpose(1, 3, 0, 2, 4).reshape(gy * gx, C * ph * pw)
    y = x @ w.reshape(O, C * ph * pw).T
    return y + b if b is not None else y


def encode(model_dir: str, pixel_values: np.ndarray, dtype=np.float64) -> Dict[str, np.ndarray]:
    """pixel_values [3, S, S] -> {"vision_features": [N, C], "projected": [N, D], "hidden_states": [...]}."""
    cfg = load_config(model_dir)
    vc = cfg["vision"]
    W = Weights(model_dir, dtype)
    P = "vision_tower.vision_model."
    S, p = vc["image_size"], vc["patch_size"]
    if pixel_values.shape != (vc["num_channels"], S, S):
        raise SystemExit(f"pixel_values shape {pixel_values.shape} != {(vc['num_channels'], S, S)}")
    pix = pixel_values.astype(dtype)
    C, nh = vc["hidden_size"], vc["num_attention_heads"]
    hd = C // nh
    eps = vc["layer_norm_eps"]
    act = act_fn(vc["hidden_act"])
    if cfg["kind"] == "clip":
        x = patch_conv(pix, W(P + "embeddings.patch_embedding.weight"), None)
        x = np.concatenate([W(P + "embeddings.class_embedding")[None, :], x], 0)
        x = x + W(P + "embeddings.position_embedding.weight")[: x.shape[0]]
        x = layer_norm(x, W(P + "pre_layrnorm.weight"), W(P + "pre_layrnorm.bias"), eps)
    else:
        x = patch_conv(pix, W(P + "embeddings.patch_embedding.weight"), W(P + "embeddings.patch_embedding.bias"))
        x = x + W(P + "embeddings.position_embedding.weight")[: x.shape[0]]
    L = vc["num_hidden_layers"]
    layer = cfg["feature_layer"]
    index = layer if layer >= 0 else L + 1 + layer
    if not 0 <= index <= L:
        raise SystemExit(f"vision_feature_layer {layer} outside the {L + 1} hidden states")
    hidden = [x]
    N = x.shape[0]
    scale = hd ** -0.5
    for i in range(index):  # later layers do not change hidden_states[index]
        q_ = f"{P}encoder.layers.{i}."
        h = layer_norm(x, W(q_ + "layer_norm1.weight"), W(q_ + "layer_norm1.bias"), eps)
        q = linear(h, W(q_ + "self_attn.q_proj.weight"), W(q_ + "self_attn.q_proj.bias")).reshape(N, nh, hd)
        k = linear(h, W(q_ + "self_attn.k_proj.weight"), W(q_ + "self_attn.k_proj.bias")).reshape(N, nh, hd)
        v = linear(h, W(q_ + "self_attn.v_proj.weight"), W(q_ + "self_attn.v_proj.bias")).reshape(N, nh, hd)
        s = np.einsum("qhd,khd->hqk", q, k) * scale
        a = np.einsum("hqk,khd->qhd", softmax(s), v).reshape(N, C)
        x = x + linear(a, W(q_ + "self_attn.out_proj.weight"), W(q_ + "self_attn.out_proj.bias"))
        h = layer_norm(x, W(q_ + "layer_norm2.weight"), W(q_ + "layer_norm2.bias"), eps)
        h = linear(act(linear(h, W(q_ + "mlp.fc1.weight"), W(q_ + "mlp.fc1.bias"))),
                   W(q_ + "mlp.fc2.weight"), W(q_ + "mlp.fc2.bias"))
        x = x + h
        hidden.append(x)
    feat = hidden[index]
    if cfg["strategy"] == "default":
        feat = feat[1:]
    elif cfg["strategy"] != "full":
        raise SystemExit(f"strategy {cfg['strategy']!r}")
    pb = cfg["projector_bias"]
    Q = "multi_modal_projector."
    z = linear(feat, W(Q + "linear_1.weight"), W(Q + "linear_1.bias") if pb else None)
    z = act_fn(cfg["projector_act"])(z)
    z = linear(z, W(Q + "linear_2.weight"), W(Q + "linear_2.bias") if pb else None)
    return {"vision_features": feat, "projected": z, "hidden_states": hidden}


def merge(model_dir: str, tokens: Sequence[int], images: List[np.ndarray], dtype=np.float64) -> np.ndarray:
    """inputs_embeds [T, D]: embed_tokens rows, image-token rows replaced in order by the images' rows."""
    cfg = load_config(model_dir)
    W = Weights(model_dir, dtype)
    emb = W("language_model.model.embed_tokens.weight")[np.asarray(tokens, dtype=np.int64)]
    where = np.nonzero(np.asarray(tokens) == cfg["image_token_index"])[0]
    rows = np.concatenate(images, 0) if images else np.zeros((0, emb.shape[1]), dtype)
    if len(where) != rows.shape[0]:
        raise ValueError(f"Image features and image tokens do not match: tokens: {len(where)}, "
                         f"features {rows.shape[0]}")
    out = emb.copy()
    out[where] = rows
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--pixels", help="pixel_values .npy [3, S, S]")
    ap.add_argument("--out", help="write vision_features.npy and projected.npy here")
    ap.add_argument("--compare", help="directory with pixel_values.npy and omnic's outputs")
    ap.add_argument("--atol", type=float, default=1e-4)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--precision", choices=["f64", "f32"], default="f64")
    a = ap.parse_args(argv)
    dtype = np.float64 if a.precision == "f64" else np.float32
    if a.compare:
        pix = np.load(os.path.join(a.compare, "pixel_values.npy"))
        st = encode(a.model, pix, dtype)
        ok = True
        for name in ("vision_features", "projected"):
            path = os.path.join(a.compare, name + ".npy")
            if not os.path.exists(path):
                print(f"FAIL {name}: {path} missing")
                ok = False
                continue
            ok &= compare(name, st[name], np.load(path), a.atol, a.rtol)
        tok_path, emb_path = os.path.join(a.compare, "tokens.npy"), os.path.join(a.compare, "inputs_embeds.npy")
        if os.path.exists(tok_path) and os.path.exists(emb_path):
            tokens = np.load(tok_path).tolist()
            n_img = int(np.sum(np.asarray(tokens) == load_config(a.model)["image_token_index"]))
            per = st["projected"].shape[0]
            ref = merge(a.model, tokens, [st["projected"]] * (n_img // per), dtype)
            ok &= compare("inputs_embeds", ref, np.load(emb_path), a.atol, a.rtol)
        return 0 if ok else 1
    if not a.pixels or not a.out:
        ap.error("--pixels and --out (or --compare)")
    st = encode(a.model, np.load(a.pixels), dtype)
    os.makedirs(a.out, exist_ok=True)
    for name in ("vision_features", "projected"):
        np.save(os.path.join(a.out, name + ".npy"), st[name].astype(np.float32))
    return 0


if __name__ == "__main__":
    sys.exit(main())
