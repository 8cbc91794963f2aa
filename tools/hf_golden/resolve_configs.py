#!/usr/bin/env python3
"""Records how Hugging Face transformers resolves each tests/configs/<name>/config.json: the
dimensions and numeric settings its config classes and model code derive (class defaults for
absent keys, rope type aliases, per-layer sliding windows, RoPE inverse frequencies as the
model's rotary module computes them). tests/unit/test_config_resolve.c compares omnic's parse
with the recording; CI never runs transformers.

Run on the oracle machine (reference/hf-oracle.md), once per transformers version:
  PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/resolve_configs.py \
      --configs tests/configs --skip-suffix=-v5 --out tests/configs/golden-4.57.6.json
  HFO_FAKE_TORCH_VERSION=2.4.0 PYTHONPATH=/opt/hfo/site520 /usr/bin/python3 tools/hf_golden/resolve_configs.py \
      --configs tests/configs --only-suffix=-v5 --out tests/configs/golden-5.2.0.json
(tools/hf_golden/regen.sh runs both, after writing the re-saved configs with --resave).
"""
import argparse
import copy
import importlib
import json
import os
import sys

import hfo_shim

hfo_shim.patch_transformers()
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoConfig  # noqa: E402
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402

V5 = int(transformers.__version__.split(".")[0]) >= 5

# text model_type -> (modeling module, attention class, rotary class)
TEXT = {
    "llama": ("llama", "LlamaAttention", "LlamaRotaryEmbedding"),
    "qwen2": ("qwen2", "Qwen2Attention", "Qwen2RotaryEmbedding"),
    "qwen3": ("qwen3", "Qwen3Attention", "Qwen3RotaryEmbedding"),
    "qwen3_moe": ("qwen3_moe", "Qwen3MoeAttention", "Qwen3MoeRotaryEmbedding"),
    "phi3": ("phi3", "Phi3Attention", "Phi3RotaryEmbedding"),
    "gemma3_text": ("gemma3", "Gemma3Attention", "Gemma3RotaryEmbedding"),
    "gemma3n_text": ("gemma3n", "Gemma3nTextAttention", "Gemma3nTextRotaryEmbedding"),
    "qwen2_vl_text": ("qwen2_vl", "Qwen2VLAttention", "Qwen2VLRotaryEmbedding"),
    "qwen2_vl": ("qwen2_vl", "Qwen2VLAttention", "Qwen2VLRotaryEmbedding"),
    "qwen2_5_vl_text": ("qwen2_5_vl", "Qwen2_5_VLAttention", "Qwen2_5_VLRotaryEmbedding"),
    "qwen2_5_vl": ("qwen2_5_vl", "Qwen2_5_VLAttention", "Qwen2_5_VLRotaryEmbedding"),
    "qwen3_vl_text": ("qwen3_vl", "Qwen3VLTextAttention", "Qwen3VLTextRotaryEmbedding"),
    "qwen3_vl_moe_text": ("qwen3_vl_moe", "Qwen3VLMoeTextAttention", "Qwen3VLMoeTextRotaryEmbedding"),
}


def mod(name):
    return importlib.import_module(f"transformers.models.{name}.modeling_{name}")


def floats(t):
    return [float(x) for x in t.reshape(-1).tolist()]


def rope_dict(tc, layer_type=None):
    """The rope parameters dict the model reads (4.x rope_scaling, 5.x rope_parameters)."""
    if V5:
        rp = tc.rope_parameters or {}
        return rp[layer_type] if layer_type else rp
    return tc.rope_scaling or {}


def rope_record(tc, family):
    m, _, rot_name = TEXT[tc.model_type]
    Rot = getattr(mod(m), rot_name)
    rec = {}
    if family in ("gemma3_text", "gemma3n_text"):
        if V5:
            rot = Rot(tc)
            rec["inv_freq"] = floats(rot.full_attention_inv_freq)
            rec["attention_scaling"] = float(rot.full_attention_attention_scaling)
            rec["inv_freq_local"] = floats(rot.sliding_attention_inv_freq)
            rec["rope_type"] = rope_dict(tc, "full_attention").get("rope_type", "default")
            rec["rope_theta"] = float(rope_dict(tc, "full_attention")["rope_theta"])
            rec["rope_local_theta"] = float(rope_dict(tc, "sliding_attention")["rope_theta"])
        else:  # Gemma3TextModel.__init__: the local rotary is a copy with the local base, default type
            rot = Rot(config=tc)
            rec["inv_freq"] = floats(rot.inv_freq)
            rec["attention_scaling"] = float(rot.attention_scaling)
            lc = copy.deepcopy(tc)
            lc.rope_theta = lc.rope_local_base_freq
            lc.rope_scaling = {"rope_type": "default"}
            rec["inv_freq_local"] = floats(Rot(config=lc).inv_freq)
            rec["rope_type"] = rot.rope_type
            rec["rope_theta"] = float(tc.rope_theta)
            rec["rope_local_theta"] = float(tc.rope_local_base_freq)
        return rec
    rot = Rot(config=tc)
    rec["inv_freq"] = floats(rot.inv_freq)
    rec["attention_scaling"] = float(rot.attention_scaling)
    rec["rope_type"] = rot.rope_type
    rd = rope_dict(tc)
    rec["rope_theta"] = float(rd["rope_theta"] if V5 else tc.rope_theta)
    if rot.rope_type == "longrope":
        orig = getattr(tc, "original_max_position_embeddings", None) or rd.get("original_max_position_embeddings")
        if V5:
            orig = rd["original_max_position_embeddings"]
        orig = orig or tc.max_position_embeddings
        rec["original_max_position_embeddings"] = int(orig)
        inv, _ = ROPE_INIT_FUNCTIONS["longrope"](tc, "cpu", seq_len=orig + 1)
        rec["inv_freq_long"] = floats(inv)
    if "mrope_section" in rd:
        rec["mrope_section"] = list(rd["mrope_section"])
        rec["mrope_interleaved"] = hasattr(Rot, "apply_interleaved_mrope")  # Qwen3-VL's rotary always interleaves
    return rec


def text_record(cfg):
    tc = cfg.get_text_config(decoder=True)
    mt = tc.model_type
    family = {"qwen2_vl_text": "qwen2", "qwen2_vl": "qwen2", "qwen2_5_vl_text": "qwen2",
              "qwen2_5_vl": "qwen2", "qwen3_vl_text": "qwen3_vl", "qwen3_vl_moe_text": "qwen3_vl_moe"}.get(mt, mt)
    m, attn_name, _ = TEXT[mt]
    Attn = getattr(mod(m), attn_name)
    tc._attn_implementation = "eager"
    attn = Attn(tc, layer_idx=0)
    q = attn.qkv_proj if hasattr(attn, "qkv_proj") else attn.q_proj
    L = tc.num_hidden_layers
    sw = getattr(tc, "sliding_window", None)
    if family == "phi3":
        sliding = [sw is not None] * L
    elif getattr(tc, "layer_types", None) is not None:
        sliding = [t == "sliding_attention" and sw is not None for t in tc.layer_types]
    else:
        sliding = [False] * L
    act = tc.hidden_activation if family in ("gemma3_text", "gemma3n_text") else tc.hidden_act
    rec = {
        "family": family,
        "vocab": tc.vocab_size, "hidden": tc.hidden_size, "n_layers": L, "n_heads": tc.num_attention_heads,
        "n_kv_heads": tc.num_key_value_heads, "head_dim": attn.head_dim, "intermediate": tc.intermediate_size,
        "max_pos": tc.max_position_embeddings, "rms_eps": float(tc.rms_norm_eps),
        # 5.x ties by the top-level model's flag, 4.x by the text config's
        "tie": bool(cfg.tie_word_embeddings if V5 else tc.tie_word_embeddings), "act": act,
        "attn_scale": float(getattr(attn, "scaling", 1.0)),  # Gemma3nTextAttention passes scaling=1.0
        "qkv_bias": q.bias is not None, "o_bias": attn.o_proj.bias is not None,
        "sliding_window": int(sw) if any(sliding) else 0, "layer_sliding": [int(s) for s in sliding],
        # Gemma3ForConditionalGeneration.forward applies no final softcap (4.57.6, 5.2.0)
        "final_softcap": 0.0 if cfg.model_type == "gemma3" else
        float(getattr(tc, "final_logit_softcapping", None) or 0),
        "attn_softcap": float(getattr(tc, "attn_logit_softcapping", None) or 0),
    }
    rec["n_rot"] = 2 * len(rope_record(tc, family)["inv_freq"])
    rec.update(rope_record(tc, family))
    if family == "gemma3n_text":
        rec.update(gemma3n_record(cfg, tc, attn))
    if family in ("qwen3_moe", "qwen3_vl_moe"):  # which layers the decoder layer makes sparse, the block's settings
        m = mod(family)
        layer_cls, block_cls = ((m.Qwen3MoeDecoderLayer, m.Qwen3MoeSparseMoeBlock) if family == "qwen3_moe" else
                                (m.Qwen3VLMoeTextDecoderLayer, m.Qwen3VLMoeTextSparseMoeBlock))
        small = copy.deepcopy(tc)  # the layer's choice reads only the expert settings: tiny widths
        small.hidden_size, small.intermediate_size, small.moe_intermediate_size = 8, 8, 8
        small.num_attention_heads, small.num_key_value_heads, small.head_dim = 1, 1, 8
        small.num_experts = min(tc.num_experts, 2) if tc.num_experts > 0 else 0
        rec["layer_moe"] = [int(isinstance(layer_cls(small, li).mlp, block_cls)) for li in range(tc.num_hidden_layers)]
        # Qwen3VLMoeTextSparseMoeBlock renormalizes the top-k weights whatever norm_topk_prob says
        norm = bool(tc.norm_topk_prob) if family == "qwen3_moe" else True
        rec.update({"n_experts": tc.num_experts, "experts_per_tok": tc.num_experts_per_tok,
                    "moe_intermediate": tc.moe_intermediate_size, "norm_topk": norm})
    return rec


def gemma3n_record(cfg, tc, attn):
    """What Gemma3nTextModel / Gemma3nTextAttention / Gemma3nTextMLP derive: scale 1 (forward passes
    scaling=1.0), one intermediate size, the KV-sharing source of every layer, the sparsity
    quantiles as the MLPs compute them, AltUp / Laurel / per-layer-embedding settings."""
    m = mod("gemma3n")
    L = tc.num_hidden_layers
    sizes = list(tc.intermediate_size)
    assert len(set(sizes)) == 1, "per-layer intermediate sizes differ"
    kv = []
    for li in range(L):
        a = m.Gemma3nTextAttention(tc, layer_idx=li)
        kv.append(int(a.kv_shared_layer_index) if a.is_kv_shared_layer else li)
    z = []
    for li in range(L):
        p = tc.activation_sparsity_pattern[li]
        z.append(float(torch.distributions.normal.Normal(0, 1).icdf(torch.tensor(p, dtype=torch.float32)))
                 if p > 0 else 0.0)
    first = L - tc.num_kv_shared_layers
    rec = {"attn_scale": 1.0, "intermediate": sizes[0], "kv_layer": kv, "n_kv_layers": first if first > 0 else L,
           "sparsity_z": z, "altup": tc.altup_num_inputs, "altup_active": tc.altup_active_idx,
           "altup_coef_clip": float(tc.altup_coef_clip or 0), "altup_correct_scale": bool(tc.altup_correct_scale),
           "laurel_rank": tc.laurel_rank, "ple_dim": tc.hidden_size_per_layer_input,
           "ple_vocab": tc.vocab_size_per_layer_input, "embed_scale": float(tc.hidden_size ** 0.5),
           "mm_vocab_offset": cfg.vision_config.vocab_offset if cfg.model_type == "gemma3n" else 0}
    return rec


def vision_record(cfg):
    mt = cfg.model_type
    if mt == "llava":
        vc = cfg.vision_config
        return {"kind": "vit", "model_type": vc.model_type, "hidden": vc.hidden_size,
                "intermediate": vc.intermediate_size, "n_layers": vc.num_hidden_layers,
                "n_heads": vc.num_attention_heads, "patch": vc.patch_size, "image_size": vc.image_size,
                "channels": vc.num_channels, "ln_eps": float(vc.layer_norm_eps), "act": vc.hidden_act,
                "feature_layer": cfg.vision_feature_layer, "strategy": cfg.vision_feature_select_strategy,
                "proj_act": cfg.projector_hidden_act, "proj_bias": bool(cfg.multimodal_projector_bias),
                "image_token_id": cfg.image_token_index}
    if mt == "gemma3":  # the tower's last hidden state through Gemma3MultiModalProjector
        vc = cfg.vision_config
        proj = mod("gemma3").Gemma3MultiModalProjector(cfg)
        return {"kind": "gemma3", "model_type": vc.model_type, "hidden": vc.hidden_size,
                "intermediate": vc.intermediate_size, "n_layers": vc.num_hidden_layers,
                "n_heads": vc.num_attention_heads, "patch": vc.patch_size, "image_size": vc.image_size,
                "channels": vc.num_channels, "ln_eps": float(vc.layer_norm_eps), "act": vc.hidden_act,
                "rows": proj.tokens_per_side ** 2, "pool": proj.kernel_size,
                "soft_norm_eps": float(proj.mm_soft_emb_norm.eps),
                "proj_in_shape": list(proj.mm_input_projection_weight.shape),
                "image_token_id": cfg.image_token_index, "boi_id": cfg.boi_token_index,
                "eoi_id": cfg.eoi_token_index}
    if mt in ("qwen2_vl", "qwen2_5_vl"):
        vc = cfg.vision_config
        v2 = mt == "qwen2_vl"
        rec = {"kind": "qvit", "depth": vc.depth, "n_heads": vc.num_heads,
               "hidden": vc.embed_dim if v2 else vc.hidden_size,
               "intermediate": int(vc.embed_dim * vc.mlp_ratio) if v2 else vc.intermediate_size,
               "out_hidden": vc.hidden_size if v2 else vc.out_hidden_size, "channels": vc.in_channels,
               "patch": vc.patch_size, "temporal": vc.temporal_patch_size, "merge": vc.spatial_merge_size,
               "act": vc.hidden_act, "image_token_id": cfg.image_token_id,
               "vision_start_id": cfg.vision_start_token_id, "vision_end_id": cfg.vision_end_token_id}
        if not v2:
            rec["window_size"] = vc.window_size
            rec["fullatt"] = list(vc.fullatt_block_indexes)
        return rec
    if mt in ("qwen3_vl", "qwen3_vl_moe"):  # Qwen3VLVisionModel: learned positions, DeepStack mergers
        vc = cfg.vision_config
        vis = mod(mt).__dict__["Qwen3VLMoeVisionModel" if mt == "qwen3_vl_moe" else "Qwen3VLVisionModel"]
        small = copy.deepcopy(vc)  # what the model builds from the settings: tiny widths
        small.hidden_size, small.intermediate_size, small.out_hidden_size, small.num_heads = 8, 8, 8, 2
        v = vis(small)
        return {"kind": "qvit", "depth": vc.depth, "n_heads": vc.num_heads, "hidden": vc.hidden_size,
                "intermediate": vc.intermediate_size, "out_hidden": vc.out_hidden_size, "channels": vc.in_channels,
                "patch": vc.patch_size, "temporal": vc.temporal_patch_size, "merge": vc.spatial_merge_size,
                "act": vc.hidden_act, "image_token_id": cfg.image_token_id,
                "vision_start_id": cfg.vision_start_token_id, "vision_end_id": cfg.vision_end_token_id,
                "n_pos": v.pos_embed.num_embeddings, "deepstack": list(v.deepstack_visual_indexes),
                "n_deepstack": len(v.deepstack_merger_list), "patch_bias": v.patch_embed.proj.bias is not None}
    return None
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", required=True)
    ap.add_argument("--out")
    ap.add_argument("--skip-suffix", help="skip folders whose name ends so")
    ap.add_argument("--only-suffix", help="only folders whose name ends so")
    ap.add_argument("--resave", nargs="+", metavar="NAME",
                    help="instead: load each NAME with this transformers and save it as NAME + --suffix")
    ap.add_argument("--suffix", default="-v5")
    a = ap.parse_args()
    torch.manual_seed(0)
    if a.resave:
        for name in a.resave:
            cfg = AutoConfig.from_pretrained(os.path.join(a.configs, name))
            cfg.save_pretrained(os.path.join(a.configs, name + a.suffix))
        return
    out = {"transformers_version": transformers.__version__,
           "command": "tools/hf_golden/resolve_configs.py " + " ".join(sys.argv[1:]), "configs": {}}
    for name in sorted(os.listdir(a.configs)):
        d = os.path.join(a.configs, name)
        if not os.path.isfile(os.path.join(d, "config.json")):
            continue
        if a.skip_suffix and name.endswith(a.skip_suffix) or a.only_suffix and not name.endswith(a.only_suffix):
            continue
        try:
            cfg = AutoConfig.from_pretrained(d)
        except Exception as e:  # this transformers refuses the file: recorded, compared by nobody
            out["configs"][name] = {"error": f"{type(e).__name__}: {e}"[:300]}
            print(name, "refused:", e, file=sys.stderr)
            continue
        rec = {"model_type": cfg.model_type, "text": text_record(cfg)}
        v = vision_record(cfg)
        if v:
            rec["vision"] = v
        out["configs"][name] = rec
        print(name, "ok", file=sys.stderr)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
