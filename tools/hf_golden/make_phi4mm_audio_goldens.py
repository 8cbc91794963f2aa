#!/usr/bin/python3
"""Goldens for Phi-4-multimodal's audio encoder as Hugging Face computes it:
Phi4MultimodalAudioEmbedding (its Phi4MultimodalAudioModel: global mean/invstd, NeMo conv
subsampling to ceil(T/8), T5 relative bias with the additive +1 of the all-true mask, conformer
blocks, 500-frame chunking of longer clips with HF's zero padding attended; then the speech and
the vision-speech projections up -> gelu -> down) in eager attention, f32.

Writes into tests/golden/phi4mm_audio/: a tiny random encoder (hidden 32, 4 heads, 2 blocks, 16
NeMo channels, bias_max_distance 20 so that clamping happens inside short clips) as
model.safetensors under the HF-converted names (model.embed_tokens_extend.audio_embed.encoder.*),
config.json (the top-level checkpoint config with its audio_config), and per case
(<case>.embed.npy: the subsampling output [T', 32]; <case>.layer0.npy: block 0's output;
<case>.out.npy: the encoder output; <case>.speech.npy / <case>.vision.npy: the rows the speech /
vision-speech projection writes into the <|endoftext11|> positions, [T', 48] for a text hidden
size of 48), with the versions and this command in meta.json. The input
features are a formula exact in f32 (tests/unit/test_phi4mm_audio.c computes the same):
  x[t, m] = ((t * 37 + m * 11 + case_salt) % 101) / 8 - 6.

Not run in CI (it needs transformers). Run on the oracle machine:
  PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/make_phi4mm_audio_goldens.py
"""
import json
import os

import numpy as np

import hfo_shim

hfo_shim.patch_transformers()
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402
from transformers.models.phi4_multimodal.configuration_phi4_multimodal import Phi4MultimodalConfig  # noqa: E402
from transformers.models.phi4_multimodal.modeling_phi4_multimodal import Phi4MultimodalAudioEmbedding  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "golden", "phi4mm_audio")
PREFIX = "model.embed_tokens_extend.audio_embed."
TEXT_HIDDEN = 48
VISION = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=28,
              patch_size=14, crop_size=28)
AUDIO = dict(hidden_size=32, intermediate_size=48, num_blocks=2, num_attention_heads=4, activation="swish",
             chunk_size=-1, left_chunk=18, dropout_rate=0.0, ext_pw_out_channel=32,
             depthwise_separable_out_channel=32, depthwise_multiplier=1, kernel_size=3, conv_activation="swish",
             input_size=80, conv_glu_type="swish", time_reduction=8, bias_max_distance=20, bias_symmetric=False,
             nemo_activation="relu", nemo_conv_channels=16, downsample_rate=1, audio_token_id=200011,
             feature_layer=-2)
CASES = {"short": (37, 0), "mid": (403, 5), "long": (4123, 9)}  # feature frames, salt


def features(T, salt):
    t = np.arange(T)[:, None]
    m = np.arange(80)[None, :]
    return (((t * 37 + m * 11 + salt) % 101).astype(np.float32) / np.float32(8) - np.float32(6)).astype(np.float32)


def main():
    torch.manual_seed(0)
    cfg = Phi4MultimodalConfig(hidden_size=TEXT_HIDDEN, intermediate_size=64, num_hidden_layers=1,
                               num_attention_heads=4, num_key_value_heads=2, vocab_size=200064,
                               audio_config=dict(AUDIO), vision_config=dict(VISION))
    cfg.audio_config._attn_implementation = "eager"
    emb = Phi4MultimodalAudioEmbedding(cfg).eval()
    model = emb.encoder
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in emb.named_parameters():
            if name.endswith("layer_norm.weight") or ".layer_norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias_values.weight"):
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
            else:
                fan_in = p.shape[1] * (p.shape[2] if p.dim() > 2 else 1) * (p.shape[3] if p.dim() > 3 else 1) \
                    if p.dim() > 1 else 4
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(fan_in))
        model.encoder_embedding.global_mean.copy_(torch.randn(80, generator=g) * 0.5 - 1.0)
        model.encoder_embedding.global_invstd.copy_(0.3 + 0.2 * torch.rand(80, generator=g))
    os.makedirs(OUT, exist_ok=True)
    tensors = {PREFIX + k: v.detach().numpy().astype(np.float32).copy() for k, v in emb.state_dict().items()}
    save_file(tensors, os.path.join(OUT, "model.safetensors"))
    top = {"model_type": "phi4_multimodal", "architectures": ["Phi4MultimodalForCausalLM"],
           "hidden_size": TEXT_HIDDEN, "audio_config": dict(AUDIO, model_type="phi4_multimodal_audio")}
    with open(os.path.join(OUT, "config.json"), "w") as f:
        json.dump(top, f, indent=1)
        f.write("\n")
    meta = {"generator": "tools/hf_golden/make_phi4mm_audio_goldens.py",
            "command": "PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/make_phi4mm_audio_goldens.py",
            "transformers": transformers.__version__, "torch": torch.__version__,
            "class": "Phi4MultimodalAudioEmbedding (eager, f32)", "cases": {}}
    captured = {}
    model.embed.register_forward_hook(lambda m, i, o: captured.__setitem__("embed", o[0].detach().clone()))
    model.encoders[0].register_forward_hook(lambda m, i, o: captured.__setitem__("layer0", o.detach().clone()))
    for case, (T, salt) in CASES.items():
        x = torch.from_numpy(features(T, salt))[None]
        with torch.no_grad():
            out = model(x, None)[0].numpy()
        tp = -(-T // 8)
        for mode, tag in (("speech", "speech"), ("vision", "vision")):
            ids = torch.full((1, tp), cfg.audio_config.audio_token_id, dtype=torch.long)
            with torch.no_grad():
                rows = emb(ids, torch.zeros(1, tp, TEXT_HIDDEN), x, audio_embed_sizes=torch.tensor([tp]),
                           audio_projection_mode=mode)[0].numpy()
            np.save(os.path.join(OUT, f"{case}.{tag}.npy"), rows.astype(np.float32))
        assert out.shape == (tp, 32), out.shape
        np.save(os.path.join(OUT, f"{case}.embed.npy"), captured["embed"][0].numpy().astype(np.float32))
        np.save(os.path.join(OUT, f"{case}.out.npy"), out.astype(np.float32))
        layer0 = captured["layer0"]
        if layer0.shape[0] == 1:  # not chunked: block 0's output of the one sequence
            np.save(os.path.join(OUT, f"{case}.layer0.npy"), layer0[0].numpy().astype(np.float32))
        meta["cases"][case] = {"frames": T, "salt": salt, "rows": tp, "chunks": int(layer0.shape[0]),
                               "has_layer0": bool(layer0.shape[0] == 1)}
        print(case, T, "->", out.shape, "chunks", layer0.shape[0])
    with open(os.path.join(OUT, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


def model_case():
    """Through a whole checkpoint: tools/mktiny.py --family phi4mm (f32, seed 0), a 2.3 s 16 kHz
    16-bit WAV, HF's Phi4MultimodalFeatureExtractor on the samples libsndfile reads, and the
    checkpoint's Phi4MultimodalAudioEmbedding in both modes -> model/{clip.wav, features.npy,
    speech.npy, vision.npy, meta.json} (tests/unit/test_phi4mm_media.c)."""
    import ctypes
    import ctypes.util
    import subprocess
    import tempfile
    import wave
    from transformers import Phi4MultimodalFeatureExtractor, Phi4MultimodalForCausalLM

    out = os.path.join(OUT, "model")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    n = 36800
    t = np.arange(n) / 16000
    x = 0.3 * np.sin(2 * np.pi * 180 * t) * (0.6 + 0.4 * np.sin(2 * np.pi * 3 * t)) + 0.02 * rng.standard_normal(n)
    pcm = np.clip(np.round(x * 32768), -32768, 32767).astype("<i2")
    wav = os.path.join(out, "clip.wav")
    with wave.open(wav, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(pcm.tobytes())
    samples = pcm.astype(np.float32) / np.float32(32768)  # libsndfile's 16-bit PCM -> f32
    cmd = ["/usr/bin/python3", "tools/mktiny.py", "--family", "phi4mm", "--dtype", "f32", "--seed", "0", "--out"]
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(cmd + [tmp], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        fe = Phi4MultimodalFeatureExtractor.from_pretrained(tmp)
        feats = fe(samples, sampling_rate=16000, return_tensors="pt")
        f = feats["audio_input_features"]
        rows = int(feats["audio_embed_sizes"][0])
        cfg = json.load(open(os.path.join(tmp, "config.json")))
        model = Phi4MultimodalForCausalLM.from_pretrained(tmp, torch_dtype=torch.float32).eval()
        emb = model.model.embed_tokens_extend.audio_embed
        emb.encoder.config._attn_implementation = "eager"
        aid = cfg["audio_config"]["audio_token_id"]
        H = cfg["hidden_size"]
        for mode, tag in (("speech", "speech"), ("vision", "vision")):
            ids = torch.full((1, rows), aid, dtype=torch.long)
            with torch.no_grad():
                r = emb(ids, torch.zeros(1, rows, H), f, audio_embed_sizes=torch.tensor([rows]),
                        audio_projection_mode=mode)[0].numpy()
            np.save(os.path.join(out, f"{tag}.npy"), r.astype(np.float32))
    np.save(os.path.join(out, "features.npy"), f[0].numpy().astype(np.float32))
    meta = {"generator": "tools/hf_golden/make_phi4mm_audio_goldens.py (model_case)",
            "checkpoint": " ".join(cmd + ["DIR"]), "transformers": transformers.__version__,
            "samples": int(n), "frames": int(f.shape[1]), "rows": rows,
            "class": "Phi4MultimodalFeatureExtractor + Phi4MultimodalForCausalLM.model.embed_tokens_extend.audio_embed "
                     "(eager, f32)"}
    with open(os.path.join(out, "meta.json"), "w") as fh:
        json.dump(meta, fh, indent=1)
        fh.write("\n")
    print("model case:", f.shape, rows)


if __name__ == "__main__":
    main()
    model_case()
