#!/usr/bin/python3
"""Goldens for Gemma 3n's audio tower as Hugging Face computes it: Gemma3nAudioEncoder (the USM
conformer: SSCP convs with cumulative group norm, chunked local relative attention with softcap,
light conv, reduction, padded frames zeroed) and the soft path of the audio Gemma3nMultimodalEmbedder,
eager, f32.

Writes into tests/golden/gemma3n_audio/: a tiny random tower (hidden 32, 4 heads, 2 blocks, 40 mel
bins, SSCP channels (8, 4), 5 keys of context, light conv of 3, logit cap 3 so that the softcap
binds) as model.safetensors under the checkpoint's names (model.audio_tower.*, model.embed_audio.*),
config.json (a top-level Gemma 3n config with this audio_config, text hidden 24), and per case
<case>.{sscp,layer0,out,proj}.npy: the subsampling output [T2, 32], block 0's output, the tower's
output after reduction (padded rows zeroed) [ceil(T2/4), 32] and the embedder's rows [.., 24]; the
cases' frames T and valid frames V (a batch's shorter clip: the mask HF gives it) in meta.json.
The input features are a formula exact in f32 (tests/unit/test_gemma3n_audio.c computes the same):
  x[t, m] = ((t * 37 + m * 11 + salt) % 101) / 8 - 6.

Not run in CI (it needs transformers). Run on the oracle machine:
  PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/make_gemma3n_audio_goldens.py
"""
import json
import os

import numpy as np

import hfo_shim

hfo_shim.patch_transformers()
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402
from transformers.models.gemma3n.configuration_gemma3n import Gemma3nAudioConfig, Gemma3nTextConfig  # noqa: E402
from transformers.models.gemma3n.modeling_gemma3n import Gemma3nAudioEncoder, Gemma3nMultimodalEmbedder  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "golden", "gemma3n_audio")
TEXT_HIDDEN = 24
MELS = 40
AUDIO = dict(hidden_size=32, input_feat_size=MELS, conf_num_attention_heads=4, conf_num_hidden_layers=2,
             conf_attention_chunk_size=4, conf_attention_context_left=5, conf_attention_context_right=0,
             conf_attention_logit_cap=3.0, conf_conv_kernel_size=3, conf_reduction_factor=4,
             conf_residual_weight=0.5, sscp_conv_channel_size=[8, 4], sscp_conv_group_norm_eps=1e-3,
             sscp_conv_kernel_size=[[3, 3], [3, 3]], sscp_conv_stride_size=[[2, 2], [2, 2]], rms_norm_eps=1e-6,
             gradient_clipping=1e10, vocab_size=8, vocab_offset=120)
# frames, valid frames, salt: one clip alone (every frame valid); a clip padded to a longer one's
# frames in a batch (the last frames invalid); odd lengths; the 30 s clip's 2997 frames
CASES = {"short": (37, 37, 0), "padded": (203, 150, 3), "mid": (403, 403, 5), "long": (2997, 2997, 9)}


def features(T, salt):
    t = np.arange(T)[:, None]
    m = np.arange(MELS)[None, :]
    return (((t * 37 + m * 11 + salt) % 101).astype(np.float32) / np.float32(8) - np.float32(6)).astype(np.float32)


def main():
    torch.manual_seed(0)
    ac = Gemma3nAudioConfig(**AUDIO)
    ac._attn_implementation = "eager"
    tc = Gemma3nTextConfig(hidden_size=TEXT_HIDDEN, vocab_size=136, vocab_size_per_layer_input=112)
    enc = Gemma3nAudioEncoder(ac).eval()
    emb = Gemma3nMultimodalEmbedder(ac, tc).eval()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for module in (enc, emb):
            for name, p in module.named_parameters():
                if name.endswith("norm.weight") or name.endswith("norm.weight") or "_norm" in name:
                    p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
                elif name.endswith("per_dim_scale"):
                    p.copy_(0.5 * torch.randn(p.shape, generator=g))
                else:
                    fan_in = int(np.prod(p.shape[1:])) if p.dim() > 1 else 4
                    p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(fan_in))
    os.makedirs(OUT, exist_ok=True)
    tensors = {"model.audio_tower." + k: v.detach().numpy().astype(np.float32).copy() for k, v in enc.state_dict().items()}
    tensors.update({"model.embed_audio." + k: v.detach().numpy().astype(np.float32).copy()
                    for k, v in emb.state_dict().items() if not k.endswith("post_projection_norm.weight")})
    save_file(tensors, os.path.join(OUT, "model.safetensors"))
    top = {"model_type": "gemma3n", "architectures": ["Gemma3nForConditionalGeneration"],
           "text_config": {"hidden_size": TEXT_HIDDEN}, "audio_config": dict(AUDIO, model_type="gemma3n_audio")}
    with open(os.path.join(OUT, "config.json"), "w") as f:
        json.dump(top, f, indent=1)
        f.write("\n")
    meta = {"generator": "tools/hf_golden/make_gemma3n_audio_goldens.py",
            "command": "PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/make_gemma3n_audio_goldens.py",
            "transformers": transformers.__version__, "torch": torch.__version__,
            "class": "Gemma3nAudioEncoder + Gemma3nMultimodalEmbedder (soft path), eager, f32", "cases": {}}
    cap = {}
    enc.subsample_conv_projection.register_forward_hook(lambda m, i, o: cap.__setitem__("sscp", o[0].detach().clone()))
    enc.conformer[0].register_forward_hook(lambda m, i, o: cap.__setitem__("layer0", o[0].detach().clone()))
    for case, (T, V, salt) in CASES.items():
        x = torch.from_numpy(features(T, salt))[None]
        pad = torch.zeros(1, T, dtype=torch.bool)
        pad[0, V:] = True  # True = padding, as Gemma3nModel passes ~input_features_mask
        with torch.no_grad():
            out, mask = enc(x, pad)
            proj = emb(inputs_embeds=out)
        valid = int((~mask[0]).sum())
        np.save(os.path.join(OUT, f"{case}.sscp.npy"), cap["sscp"].numpy().astype(np.float32))
        np.save(os.path.join(OUT, f"{case}.layer0.npy"), cap["layer0"].numpy().astype(np.float32))
        np.save(os.path.join(OUT, f"{case}.out.npy"), out[0].numpy().astype(np.float32))
        np.save(os.path.join(OUT, f"{case}.proj.npy"), proj[0].numpy().astype(np.float32))
        meta["cases"][case] = {"frames": T, "valid": V, "salt": salt, "sub_rows": int(cap["sscp"].shape[0]),
                               "rows": int(out.shape[1]), "valid_rows": valid}
        print(case, T, V, "->", tuple(out.shape), "valid rows", valid)
    with open(os.path.join(OUT, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


def model_clips():
    """The clips of the end-to-end goldens (make_goldens.py gemma3n-*-audio, -2audio): two 16 kHz
    16-bit WAVs of one length (20837 samples, 1.3 s: 128 feature frames, 8 tower rows), the first
    the golden clip of families-gemma-phi.md B2, the second speech-like harmonic bursts."""
    import wave
    from make_audio_goldens import speechlike
    out = os.path.join(OUT, "model")
    os.makedirs(out, exist_ok=True)
    n = 20837
    t = (np.arange(n) / 16000).astype(np.float32)
    a = 0.4 * np.sin(2 * np.pi * 220 * t) + 0.2 * np.sin(2 * np.pi * (300 + 900 * t) * t) + 0.05 * np.sin(2 * np.pi * 3100 * t)
    b = speechlike(n, np.random.default_rng(11), 160.0)
    for name, x in (("clip_a.wav", a), ("clip_b.wav", b)):
        pcm = np.clip(np.round(np.asarray(x, np.float64) * 32768), -32768, 32767).astype("<i2")
        with wave.open(os.path.join(out, name), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(16000)
            w.writeframes(pcm.tobytes())
        print(name, n, "samples")


if __name__ == "__main__":
    main()
    model_clips()
