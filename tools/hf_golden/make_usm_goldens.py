#!/usr/bin/python3
"""Goldens for Gemma 3n's log-mel features as Hugging Face computes them: Gemma3nAudioFeatureExtractor.

Reads the FLAC clips of tests/golden/audio_features (make_audio_goldens.py writes them: 0.025 s to
30 s, silence, clipping, near-floor noise, odd lengths) as f32 through libsndfile, adds the golden
clip of families-gemma-phi.md B2 (0.4 sin 220 Hz + 0.2 chirp + 0.05 sin 3100 Hz, 20837 samples,
f32, stored as usm_b2.npy) and a 31 s clip (truncated to 30 s), runs the real extractor (class
defaults = the published google/gemma-3n-E2B-it preprocessor_config.json audio keys) on each, and
stores input_features (f32 [kept frames, 128]; clips over 5 s keep frames 0..99, every 10th and the
last 100) in tests/golden/usm_features/<clip>.npy with the frame count and the mask's valid frames
in meta.json. tests/unit/test_usm_mel.c compares omnic's features against them.

Not run in CI (it needs transformers). Run on the oracle machine:
  PYTHONPATH=/opt/hfo/site457:tools/hf_golden /usr/bin/python3 tools/hf_golden/make_usm_goldens.py
"""
import json
import os

import numpy as np

import hfo_shim

hfo_shim.patch_transformers()
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import Gemma3nAudioFeatureExtractor  # noqa: E402

from make_audio_goldens import RATE, clips, kept_frames, read_f32, speechlike  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "tests", "golden", "audio_features")
OUT = os.path.join(ROOT, "tests", "golden", "usm_features")


def b2_clip():
    t = (np.arange(20837) / 16000).astype(np.float32)
    w = 0.4 * np.sin(2 * np.pi * 220 * t) + 0.2 * np.sin(2 * np.pi * (300 + 900 * t) * t) + \
        0.05 * np.sin(2 * np.pi * 3100 * t)
    return w.astype(np.float32)


def main():
    fe = Gemma3nAudioFeatureExtractor()
    os.makedirs(OUT, exist_ok=True)
    meta = {"generator": "tools/hf_golden/make_usm_goldens.py",
            "command": "PYTHONPATH=/opt/hfo/site457:tools/hf_golden /usr/bin/python3 tools/hf_golden/make_usm_goldens.py",
            "transformers": transformers.__version__, "torch": torch.__version__, "numpy": np.__version__,
            "extractor": "Gemma3nAudioFeatureExtractor() (class defaults = the published preprocessor_config.json "
                         "audio keys of google/gemma-3n-E2B-it)", "clips": {}}
    inputs = [(name, os.path.join(SRC, name + ".flac"), None) for name, _ in clips()]
    b2 = b2_clip()
    np.save(os.path.join(OUT, "usm_b2_wave.npy"), b2)
    inputs.append(("usm_b2", "usm_b2_wave.npy", b2))
    long = (0.8 * speechlike(31 * RATE, np.random.default_rng(7), 180.0)).astype(np.float32)
    np.save(os.path.join(OUT, "usm_31s_wave.npy"), long)
    inputs.append(("usm_31s", "usm_31s_wave.npy", long))
    for name, path, x in inputs:
        if x is None:
            x = read_f32(path)
        try:
            got = fe([x], return_tensors="np")
        except ValueError as e:  # under one frame after padding (<= 512 samples): HF fails too
            meta["clips"][name] = {"input": os.path.relpath(path, ROOT), "samples": int(len(x)), "frames": 0,
                                   "hf_error": str(e)}
            print(f"{name}: {len(x)} samples: HF fails: {e}")
            continue
        feats = np.asarray(got["input_features"][0], dtype=np.float32)
        mask = np.asarray(got["input_features_mask"][0]).astype(bool)
        if feats.shape[0] == 0:  # under one frame after padding (<= 512 samples): HF gives no features
            meta["clips"][name] = {"input": os.path.relpath(path, ROOT), "samples": int(len(x)), "frames": 0}
            print(f"{name}: {len(x)} samples: no frame")
            continue
        keep = kept_frames(feats.shape[0])
        np.save(os.path.join(OUT, name + ".npy"), feats[keep])
        meta["clips"][name] = {"input": os.path.relpath(path, ROOT) if path.endswith(".flac") else
                               "tests/golden/usm_features/" + path, "samples": int(len(x)),
                               "frames": int(feats.shape[0]), "valid_frames": int(mask.sum()),
                               "mask_prefix": bool(mask[:int(mask.sum())].all()),
                               "stats": [float(feats.mean()), float(feats.std()), float(feats.min()), float(feats.max())],
                               "kept_frames": keep if len(keep) < feats.shape[0] else "all"}
        print(f"{name}: {len(x)} samples, {feats.shape[0]} frames, {int(mask.sum())} valid, "
              f"mean {feats.mean():.5f} std {feats.std():.5f}")
    with open(os.path.join(OUT, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
