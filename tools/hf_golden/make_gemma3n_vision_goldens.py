#!/usr/bin/python3
"""Goldens for Gemma 3n's vision tower as Hugging Face runs it: timm's MobileNetV5Encoder
(mobilenetv5_300m_enc, TF-"same" padding, RmsNorm2d, EdgeResidual / UIR / mobile multi-query
attention blocks, the multi-scale fusion adapter) and the soft path of the vision
Gemma3nMultimodalEmbedder, eager, f32.

The weights are the tiny checkpoint of tools/mktiny.py --family gemma3n --dtype f32 --seed 0 (the
tower at channel_multiplier 1/16: every block kind, 7.3 M parameters; the test rebuilds it), loaded
into timm.create_model("mobilenetv5_300m_enc", channel_multiplier=1/16, pad_type="same") exactly as
TimmWrapper builds it. For one input that is a formula exact in f32 (tests/unit/test_gemma3n_vision.c
computes the same) at the tiny checkpoint's 512x512, x[c, y, x] = ((c * 7 + y * 13 + x * 5 + y * x) % 256) / 255, it stores in
tests/golden/gemma3n_vision/: stage0.npy (the first stage's output, every 7th pixel row: [.., 8]),
stage1.npy .. stage3.npy (each stage's output as pixel rows [h * w, C]), features.npy (the fusion's
output, last_hidden_state as [256, 2048]) and projected.npy (the embedder's rows after the scale by
sqrt(2048)), with the versions and this command in meta.json.

Not run in CI (it needs transformers and timm). Run on the oracle machine:
  PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/make_gemma3n_vision_goldens.py
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import hfo_shim

hfo_shim.patch_transformers()
import timm  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from transformers.models.gemma3n.configuration_gemma3n import Gemma3nTextConfig, Gemma3nVisionConfig  # noqa: E402
from transformers.models.gemma3n.modeling_gemma3n import Gemma3nMultimodalEmbedder  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "golden", "gemma3n_vision")
S = 512  # the tiny checkpoint's processor size (mktiny: 512x512, the fusion pooling 32 -> 16 by 2)


def pixels():
    c = np.arange(3)[:, None, None]
    y = np.arange(S)[None, :, None]
    x = np.arange(S)[None, None, :]
    return (((c * 7 + y * 13 + x * 5 + y * x) % 256).astype(np.float32) / np.float32(255)).astype(np.float32)


def rows(t):  # [1, C, H, W] -> pixel rows [H * W, C]
    return np.ascontiguousarray(t[0].permute(1, 2, 0).reshape(-1, t.shape[1]).detach().numpy(), dtype=np.float32)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        d = os.path.join(tmp, "g3n")
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "mktiny.py"), "--family", "gemma3n", "--dtype",
                        "f32", "--seed", "0", "--out", d], check=True, stdout=subprocess.DEVNULL)
        cfg = json.load(open(os.path.join(d, "config.json")))
        w = load_file(os.path.join(d, "model.safetensors"))
    vc = cfg["vision_config"]
    tower = timm.create_model(vc["architecture"], pretrained=False, pad_type="same", **vc["model_args"]).eval()
    p = "model.vision_tower.timm_model."
    tower.load_state_dict({k[len(p):]: v for k, v in w.items() if k.startswith(p)}, strict=True)
    emb = Gemma3nMultimodalEmbedder(Gemma3nVisionConfig(**{k: v for k, v in vc.items() if k != "model_type"}),
                                    Gemma3nTextConfig(**cfg["text_config"])).eval()
    q = "model.embed_vision."
    emb.load_state_dict({k[len(q):]: v for k, v in w.items() if k.startswith(q)}, strict=False)
    cap = {}
    for s, stage in enumerate(tower.blocks):
        stage.register_forward_hook(lambda m, a, o, s=s: cap.__setitem__(f"stage{s}", o.detach().clone()))
    x = torch.from_numpy(pixels())[None]
    with torch.no_grad():
        feats = tower.forward_features(x)  # [1, 2048, 16, 16]
        soft = feats.reshape(1, vc["hidden_size"], -1).permute(0, 2, 1) * vc["hidden_size"] ** 0.5
        proj = emb(inputs_embeds=soft)
    os.makedirs(OUT, exist_ok=True)
    meta = {"generator": "tools/hf_golden/make_gemma3n_vision_goldens.py",
            "command": "PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/make_gemma3n_vision_goldens.py",
            "transformers": transformers.__version__, "torch": torch.__version__, "timm": timm.__version__,
            "class": "timm MobileNetV5Encoder (mobilenetv5_300m_enc, channel_multiplier 1/16) + "
                     "Gemma3nMultimodalEmbedder (soft path), eager, f32",
            "mktiny": "tools/mktiny.py --family gemma3n --dtype f32 --seed 0", "image": S, "stages": {}}
    for s in range(len(tower.blocks)):
        r = rows(cap[f"stage{s}"])
        if s == 0:
            r = np.ascontiguousarray(r[::7])
        np.save(os.path.join(OUT, f"stage{s}.npy"), r)
        meta["stages"][f"stage{s}"] = {"shape": list(cap[f"stage{s}"].shape[1:]), "pixel_step": 7 if s == 0 else 1}
    np.save(os.path.join(OUT, "features.npy"), rows(feats))
    np.save(os.path.join(OUT, "projected.npy"), proj[0].numpy().astype(np.float32))
    with open(os.path.join(OUT, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print({k: v["shape"] for k, v in meta["stages"].items()}, tuple(feats.shape), tuple(proj.shape))


if __name__ == "__main__":
    main()
