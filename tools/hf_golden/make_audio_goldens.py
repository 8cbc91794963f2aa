#!/usr/bin/python3
"""Goldens for log-mel features as Hugging Face computes them: Phi4MultimodalFeatureExtractor.

Writes 11 generated clips (0.025 s to 30 s: one frame exactly, odd lengths, silence, full-scale
clipping, square waves, near-silent noise under the log floor, a DC offset, speech-like harmonic
bursts) as 16-bit FLAC files through the system's libsndfile (ctypes), reads each back as f32
through libsndfile again (what omnic's decoder and Python's soundfile give), runs the real
transformers feature extractor on those samples, and stores its audio_input_features per clip in
tests/golden/audio_features/<clip>.npy (f32 [kept frames, 80]; clips over 5 s keep frames 0..99,
every 10th, and the last 100, listed in meta.json), with audio_embed_sizes, the versions and this
command in meta.json. tests/unit/test_fbank.c decodes the FLAC files with omnic and compares.

Not run in CI (it needs transformers). Run on the oracle machine:
  PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/make_audio_goldens.py
  HFO_FAKE_TORCH_VERSION=2.4.0 PYTHONPATH=/opt/hfo/site520 /usr/bin/python3 tools/hf_golden/make_audio_goldens.py --check
(--check recomputes with the transformers on PYTHONPATH and compares with the stored goldens.)
"""
import ctypes
import ctypes.util
import json
import os
import sys

import numpy as np

import hfo_shim

hfo_shim.patch_transformers()
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import Phi4MultimodalFeatureExtractor  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "golden", "audio_features")
RATE = 16000

SF = ctypes.CDLL(ctypes.util.find_library("sndfile") or "libsndfile.so.1")


class SF_INFO(ctypes.Structure):
    _fields_ = [("frames", ctypes.c_int64), ("samplerate", ctypes.c_int), ("channels", ctypes.c_int),
                ("format", ctypes.c_int), ("sections", ctypes.c_int), ("seekable", ctypes.c_int)]


SF.sf_open.restype = ctypes.c_void_p
SF.sf_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(SF_INFO)]
SF.sf_writef_short.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_short), ctypes.c_int64]
SF.sf_readf_float.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float), ctypes.c_int64]
SF.sf_readf_float.restype = ctypes.c_int64
SF.sf_close.argtypes = [ctypes.c_void_p]
SFM_READ, SFM_WRITE = 0x10, 0x20
FLAC_PCM16 = 0x170000 | 0x0002


def write_flac(path, pcm16):
    info = SF_INFO(0, RATE, 1, FLAC_PCM16, 0, 0)
    f = SF.sf_open(path.encode(), SFM_WRITE, ctypes.byref(info))
    assert f, path
    buf = np.ascontiguousarray(pcm16, dtype=np.int16)
    SF.sf_writef_short(f, buf.ctypes.data_as(ctypes.POINTER(ctypes.c_short)), len(buf))
    SF.sf_close(f)


def read_f32(path):
    info = SF_INFO()
    f = SF.sf_open(path.encode(), SFM_READ, ctypes.byref(info))
    assert f and info.channels == 1 and info.samplerate == RATE, path
    out = np.zeros(info.frames, dtype=np.float32)
    got = SF.sf_readf_float(f, out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), info.frames)
    SF.sf_close(f)
    assert got == info.frames
    return out


def pcm(x):
    return np.clip(np.round(np.asarray(x, dtype=np.float64) * 32768.0), -32768, 32767).astype(np.int16)


def speechlike(n, rng, f0=140.0):
    """Harmonic bursts with a wandering pitch and pauses, at speech-like levels."""
    t = np.arange(n) / RATE
    pitch = f0 * (1 + 0.1 * np.sin(2 * np.pi * 0.7 * t))
    phase = 2 * np.pi * np.cumsum(pitch) / RATE
    x = sum((0.3 / k) * np.sin(k * phase) for k in range(1, 12))
    env = (np.sin(2 * np.pi * 2.3 * t) > -0.3).astype(np.float64) * (0.5 + 0.5 * np.sin(2 * np.pi * 4.1 * t) ** 2)
    return x * env + 0.003 * rng.standard_normal(n)


def clips():
    rng = np.random.default_rng(1234)
    t = lambda n: np.arange(n) / RATE  # noqa: E731
    yield "c00_short_0.1s", pcm(0.3 * np.sin(2 * np.pi * 440 * t(1600)))
    yield "c01_one_frame", pcm(0.2 * rng.standard_normal(400))
    n = 12345
    yield "c02_odd_chirp", pcm(0.4 * np.sin(2 * np.pi * (100 * t(n) + 0.5 * (6900 / (n / RATE)) * t(n) ** 2)))
    yield "c03_silence_1s", np.zeros(RATE, dtype=np.int16)
    sq = np.where(np.sin(2 * np.pi * 250 * t(24000)) >= 0, 32767, -32768).astype(np.int16)
    sq[12000:] = pcm(np.clip(2.5 * np.sin(2 * np.pi * 330 * t(12000)), -1, 1))
    yield "c04_clipping_1.5s", sq
    yield "c05_noise_2s", pcm(0.1 * rng.standard_normal(2 * RATE))
    yield "c06_near_floor_1s", pcm(1.2e-4 * rng.standard_normal(RATE))
    yield "c07_dc_offset_0.7s", pcm(0.5 + 0.05 * np.sin(2 * np.pi * 1000 * t(11200)))
    yield "c08_speechlike_5s", pcm(speechlike(5 * RATE, rng))
    yield "c09_speechlike_10s_odd", pcm(speechlike(10 * RATE + 77, rng, 210.0))
    yield "c10_speechlike_30s", pcm(speechlike(30 * RATE, rng, 120.0))


def kept_frames(n):
    if n <= 5 * 100:
        return list(range(n))
    keep = set(range(100)) | set(range(0, n, 10)) | set(range(n - 100, n))
    return sorted(keep)


def main():
    check = "--check" in sys.argv
    fe = Phi4MultimodalFeatureExtractor()
    meta_path = os.path.join(OUT, "meta.json")
    meta = json.load(open(meta_path)) if check else {
        "generator": "tools/hf_golden/make_audio_goldens.py",
        "command": "PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/make_audio_goldens.py",
        "transformers": transformers.__version__, "torch": torch.__version__, "numpy": np.__version__,
        "extractor": "Phi4MultimodalFeatureExtractor() (class defaults = the published "
                     "preprocessor_config.json audio keys)",
        "clips": {}}
    os.makedirs(OUT, exist_ok=True)
    worst = 0.0
    for name, samples in clips():
        flac = os.path.join(OUT, name + ".flac")
        if not check:
            write_flac(flac, samples)
        x = read_f32(flac)
        got = fe(x, sampling_rate=RATE, return_tensors="pt")
        feats = got["audio_input_features"][0].numpy().astype(np.float32)
        embed = int(got["audio_embed_sizes"][0])
        keep = kept_frames(feats.shape[0])
        if check:
            want = np.load(os.path.join(OUT, name + ".npy"))
            d = float(np.max(np.abs(feats[keep] - want) / np.maximum(1.0, np.abs(want))))
            worst = max(worst, d)
            assert meta["clips"][name]["embed_size"] == embed, name
            print(f"{name}: {feats.shape[0]} frames, max scaled difference {d:.3g}")
            continue
        np.save(os.path.join(OUT, name + ".npy"), feats[keep])
        meta["clips"][name] = {"samples": int(len(x)), "frames": int(feats.shape[0]), "embed_size": embed,
                               "kept_frames": keep if len(keep) < feats.shape[0] else "all"}
        print(f"{name}: {len(x)} samples, {feats.shape[0]} frames, embed {embed}")
    if check:
        print(f"transformers {transformers.__version__}: worst {worst:.3g}")
        return
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
