#!/usr/bin/env python3
"""`omnic preprocess` with Qwen2-VL image processor configs against Hugging Face, bit for bit.

The reference re-implements Hugging Face transformers 4.5x Qwen2VLImageProcessor(Fast) with numpy
(torch-free): smart_resize exactly as image_processing_qwen2_vl.py (Python float arithmetic,
round() ties-to-even, the height/width < factor and aspect ratio > 200 errors), the resize of the
torchvision path (ATen's uint8 antialiased bicubic, numpy version shared with
test_image_preprocess.py) or of the PIL path (Pillow's Image.resize), the fused (torchvision) or
two-step (PIL) rescale + normalise, the still image repeated to temporal_patch_size frames, and
the reshape / transpose(0, 3, 6, 4, 7, 2, 1, 5, 8) / reshape of the patch layout. For each image
and config, image_grid_thw, the resized size, the <|image_pad|> count and pixel_values (max |diff|
== 0) must match; images HF refuses must be refused by omnic with a message naming the reason.

Run: OMNIC=build/release/omnic python3 this_file.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_image_preprocess import load_image_rgb, pattern, pil_normalize, resize_u8, tv_normalize  # noqa: E402

from PIL import Image  # noqa: E402

OMNIC = os.environ.get("OMNIC", "build/release/omnic")
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]

CONFIGS = {
    # Qwen/Qwen2-VL-2B-Instruct (and Qwen2.5-VL) preprocessor_config.json.
    "qwen2vl": {"image_processor_type": "Qwen2VLImageProcessor", "min_pixels": 3136, "max_pixels": 12845056,
                "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2, "image_mean": CLIP_MEAN,
                "image_std": CLIP_STD, "do_convert_rgb": True, "processor_class": "Qwen2VLProcessor"},
    # Qwen3-VL: the Fast class, size dict, patch 16, mean = std = 0.5.
    "qwen3vl": {"image_processor_type": "Qwen2VLImageProcessorFast",
                "size": {"shortest_edge": 65536, "longest_edge": 16777216}, "patch_size": 16,
                "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.5, 0.5, 0.5],
                "image_std": [0.5, 0.5, 0.5], "do_convert_rgb": True},
    # A tiny-checkpoint style config: small max_pixels, so moderate images hit the max branch; also
    # min/max_pixels overriding a size dict.
    "tiny": {"image_processor_type": "Qwen2VLImageProcessor", "size": {"shortest_edge": 1, "longest_edge": 2},
             "min_pixels": 3136, "max_pixels": 28 * 28 * 64},
    # Unusual geometry: patch 8, 3 frames per patch, 3x3 merge (factor 24), bilinear, scalar mean/std.
    "odd": {"image_processor_type": "Qwen2VLImageProcessorFast", "min_pixels": 2000, "max_pixels": 40000,
            "patch_size": 8, "temporal_patch_size": 3, "merge_size": 3, "resample": 2, "image_mean": 0.25,
            "image_std": 0.75},
    # No resize: sizes must already be multiples of patch * merge.
    "noresize": {"image_processor_type": "Qwen2VLImageProcessor", "do_resize": False},
}
CLASS_DEFAULTS = {"min_pixels": 56 * 56, "max_pixels": 28 * 28 * 1280, "patch_size": 14, "temporal_patch_size": 2,
                  "merge_size": 2, "resample": 3, "do_resize": True, "do_rescale": True,
                  "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": CLIP_MEAN, "image_std": CLIP_STD}

# (name, width, height, config, variant, min_pixels override, max_pixels override, expected refusal text)
CASES = [
    ("std", 640, 480, "qwen2vl", "torchvision", None, None, None),   # -> 476x644, 391 tokens
    ("std_pil", 640, 480, "qwen2vl", "pil", None, None, None),
    ("portrait", 480, 640, "qwen2vl", "torchvision", None, None, None),
    ("odd_sizes", 333, 251, "qwen2vl", "torchvision", None, None, None),
    ("exact_224", 224, 224, "qwen2vl", "torchvision", None, None, None),   # already a multiple: no resize
    ("half_even_8", 238, 238, "qwen2vl", "torchvision", None, None, None),  # 238/28 = 8.5 -> 8 (ties to even)
    ("half_even_10", 266, 266, "qwen2vl", "torchvision", None, None, None),  # 9.5 -> 10
    ("min_edge_28", 28, 28, "qwen2vl", "torchvision", None, None, None),  # min branch -> 56x56
    ("tiny_50", 50, 50, "qwen2vl", "torchvision", None, None, None),     # 56x56 = min_pixels exactly
    ("near_min", 57, 55, "qwen2vl", "torchvision", None, None, None),
    ("small_wide", 100, 30, "qwen2vl", "pil", None, None, None),
    ("ratio_200", 5600, 28, "qwen2vl", "torchvision", None, None, None),  # aspect exactly 200: accepted
    ("ratio_166", 5000, 30, "qwen2vl", "torchvision", None, None, None),
    ("tall_ratio", 29, 3000, "qwen2vl", "torchvision", None, None, None),
    ("ratio_over", 5601, 28, "qwen2vl", "torchvision", None, None, "aspect ratio"),
    ("ratio_over_tall", 30, 6100, "qwen2vl", "torchvision", None, None, "aspect ratio"),
    ("below_factor_w", 27, 100, "qwen2vl", "torchvision", None, None, "too small"),
    ("below_factor_h", 800, 3, "qwen2vl", "torchvision", None, None, "too small"),
    ("one_px", 1, 1, "qwen2vl", "torchvision", None, None, "too small"),
    ("max_override", 800, 600, "qwen2vl", "torchvision", None, 200000, None),  # max branch via the call
    ("min_override", 60, 40, "qwen2vl", "torchvision", 100000, None, None),    # min branch via the call
    ("both_override", 300, 200, "qwen2vl", "pil", 20000, 30000, None),
    ("tiny_at_max", 224, 224, "tiny", "torchvision", None, None, None),   # 50176 = max_pixels: kept
    ("tiny_keep", 252, 200, "tiny", "torchvision", None, None, None),     # 252x196 < max
    ("tiny_over", 252, 210, "tiny", "torchvision", None, None, None),     # 7.5 -> 8: 224x252 > max
    ("tiny_big", 1000, 1000, "tiny", "torchvision", None, None, None),
    ("tiny_big_pil", 1000, 700, "tiny", "pil", None, None, None),
    ("tiny_wide_zero", 5600, 28, "tiny", "torchvision", None, None, "under max_pixels"),  # floor gives h = 0
    ("tiny_wide", 2000, 60, "tiny", "torchvision", None, None, None),
    ("q3_std", 640, 480, "qwen3vl", "torchvision", None, None, None),     # 480x640 -> 300 tokens
    ("q3_min", 100, 80, "qwen3vl", "torchvision", None, None, None),      # min branch (65536)
    ("q3_edge", 32, 32, "qwen3vl", "torchvision", None, None, None),
    ("q3_small", 31, 400, "qwen3vl", "torchvision", None, None, "too small"),
    ("q3_pil", 517, 389, "qwen3vl", "pil", None, None, None),
    ("odd_geom", 150, 100, "odd", "torchvision", None, None, None),
    ("odd_geom_max", 400, 300, "odd", "torchvision", None, None, None),
    ("odd_geom_pil", 90, 70, "odd", "pil", None, None, None),
    ("noresize", 84, 56, "noresize", "torchvision", None, None, None),
    ("noresize_bad", 85, 56, "noresize", "torchvision", None, None, "multiple of"),
]


def resolve(cfg, min_override, max_override):
    """The effective parameters (class defaults, size dict, then min/max_pixels keys, then the call)."""
    p = dict(CLASS_DEFAULTS)
    for k, v in cfg.items():
        if k in p:
            p[k] = v
    if "size" in cfg:
        p["min_pixels"], p["max_pixels"] = cfg["size"]["shortest_edge"], cfg["size"]["longest_edge"]
    for k in ("min_pixels", "max_pixels"):
        if k in cfg:
            p[k] = cfg[k]
    if min_override is not None:
        p["min_pixels"] = min_override
    if max_override is not None:
        p["max_pixels"] = max_override
    for k in ("image_mean", "image_std"):
        if not isinstance(p[k], list):
            p[k] = [p[k]] * 3
    return p


def smart_resize(height, width, factor, min_pixels, max_pixels):
    """transformers 4.5x image_processing_qwen2_vl.smart_resize."""
    if height < factor or width < factor:
        raise ValueError(f"height:{height} or width:{width} must be larger than factor:{factor}")
    elif max(height, width) / min(height, width) > 200:
        raise ValueError(f"absolute aspect ratio must be smaller than 200, got {max(height, width) / min(height, width)}")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def reference(rgb_img, p, variant):
    """(pixel_values, (t, h, w), (resized_h, resized_w)) of Qwen2VLImageProcessor(Fast)._preprocess."""
    arr = np.array(rgb_img)
    height, width = arr.shape[:2]
    ps, tps, m = p["patch_size"], p["temporal_patch_size"], p["merge_size"]
    if p["do_resize"]:
        rh, rw = smart_resize(height, width, ps * m, p["min_pixels"], p["max_pixels"])
        if rh == 0 or rw == 0:
            raise ValueError(f"resize to {rh}x{rw} fails")  # 4.5x: inside torchvision / PIL resize
        if variant == "pil":
            arr = np.array(rgb_img.resize((rw, rh), resample=p["resample"]))
        else:
            arr = resize_u8(arr, rw, rh, p["resample"], "aten")
    else:
        rh, rw = height, width
        if rh % (ps * m) or rw % (ps * m):
            raise ValueError("cannot reshape")  # the view below fails
    norm = pil_normalize if variant == "pil" else tv_normalize
    x = norm(arr, p).transpose(2, 0, 1)  # CHW float32
    patches = x[np.newaxis]
    if patches.shape[0] % tps != 0:
        repeats = np.repeat(patches[-1][np.newaxis], tps - 1, axis=0)
        patches = np.concatenate([patches, repeats], axis=0)
    channel = patches.shape[1]
    grid_t = patches.shape[0] // tps
    grid_h, grid_w = rh // ps, rw // ps
    patches = patches.reshape(grid_t, tps, channel, grid_h // m, m, ps, grid_w // m, m, ps)
    patches = patches.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    flat = patches.reshape(grid_t * grid_h * grid_w, channel * tps * ps * ps)
    return np.ascontiguousarray(flat), (grid_t, grid_h, grid_w), (rh, rw)


def main():
    if not os.path.exists(OMNIC):
        sys.exit(f"FAIL: {OMNIC} not found (set OMNIC)")
    failures = []
    compared = refused = 0
    sizes = set()
    with tempfile.TemporaryDirectory(prefix="omnic_qvl_") as d:
        cfg_paths = {}
        for name, cfg in CONFIGS.items():
            cfg_paths[name] = os.path.join(d, f"{name}.json")
            with open(cfg_paths[name], "w") as f:
                json.dump(cfg, f)
        for n, (tag, w, h, cfg_name, variant, mn, mx, refusal) in enumerate(CASES):
            sizes.add((w, h))
            img_path = os.path.join(d, f"{tag}.png")
            if tag == "portrait":  # an RGBA JPEG-free path: alpha dropped by both sides
                a = pattern(w, h, 100 + n, 4)
                a[:, :, 3] = np.linspace(0, 255, w).astype(np.uint8)[None, :]
                Image.fromarray(a, "RGBA").save(img_path)
            elif tag == "odd_sizes":
                img_path = img_path[:-4] + ".jpg"
                Image.fromarray(pattern(w, h, 100 + n)).save(img_path, quality=90)
            else:
                Image.fromarray(pattern(w, h, 100 + n)).save(img_path)
            with Image.open(img_path) as im:
                rgb = load_image_rgb(im)
                rgb.load()
            p = resolve(CONFIGS[cfg_name], mn, mx)
            out, grid_path = os.path.join(d, "pv.npy"), os.path.join(d, "grid.json")
            for f in (out, grid_path):
                if os.path.exists(f):
                    os.remove(f)
            cmd = [OMNIC, "preprocess", "--image", img_path, "--config", cfg_paths[cfg_name], "--variant", variant,
                   "--out", out, "--grid-out", grid_path]
            if mn is not None:
                cmd += ["--min-pixels", str(mn)]
            if mx is not None:
                cmd += ["--max-pixels", str(mx)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            label = f"{tag} ({w}x{h}, {cfg_name}, {variant})"
            try:
                want, want_grid, want_hw = reference(rgb, p, variant)
            except ValueError as e:
                if refusal is None:
                    failures.append(f"{label}: the reference refused it ({e}) but the case expects success")
                elif r.returncode == 0:
                    failures.append(f"{label}: HF refuses it ({e}), omnic accepted it")
                elif refusal not in r.stderr:
                    failures.append(f"{label}: refused, but the message lacks '{refusal}': {r.stderr.strip()}")
                else:
                    refused += 1
                continue
            if refusal is not None:
                failures.append(f"{label}: expected a refusal ('{refusal}'), the reference accepted it")
                continue
            if r.returncode != 0:
                failures.append(f"{label}: exit {r.returncode}: {r.stderr.strip()}")
                continue
            with open(grid_path) as f:
                grid = json.load(f)
            m2 = p["merge_size"] ** 2
            want_tokens = want_grid[0] * want_grid[1] * want_grid[2] // m2
            if (tuple(grid["image_grid_thw"]) != want_grid or tuple(grid["resized_hw"]) != want_hw
                    or grid["num_image_tokens"] != want_tokens or grid["num_patches"] != want.shape[0]
                    or grid["row_len"] != want.shape[1]):
                failures.append(f"{label}: grid {grid}, expected image_grid_thw {list(want_grid)}, resized "
                                f"{list(want_hw)}, {want_tokens} tokens, pixel_values {list(want.shape)}")
                continue
            got = np.load(out)
            compared += 1
            if got.shape != want.shape or got.dtype != np.float32:
                failures.append(f"{label}: pixel_values {got.shape} {got.dtype}, expected {want.shape} float32")
                continue
            diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
            if diff.max() != 0:
                r_, c_ = np.unravel_index(np.argmax(diff), diff.shape)
                failures.append(f"{label}: max |diff| {diff.max():.3g} at (row={r_}, col={c_}): got {got[r_, c_]!r}, "
                                f"want {want[r_, c_]!r}; {int((diff > 0).sum())} of {diff.size} values differ")
        # Known numbers from the reference notes (5.2, 7.2): 640x480 -> 391 and 300 tokens.
        for cfg_name, tokens in (("qwen2vl", 391), ("qwen3vl", 300)):
            img_path = os.path.join(d, "std.png")
            grid_path = os.path.join(d, "g.json")
            r = subprocess.run([OMNIC, "preprocess", "--image", img_path, "--config", cfg_paths[cfg_name], "--out",
                                os.path.join(d, "x.npy"), "--grid-out", grid_path], capture_output=True, text=True)
            if r.returncode != 0 or json.load(open(grid_path))["num_image_tokens"] != tokens:
                failures.append(f"640x480 {cfg_name}: expected {tokens} image tokens: exit {r.returncode} "
                                f"{r.stderr.strip()}")
        # Bad overrides and Qwen-only options are usage errors naming the values.
        bad = [(["--min-pixels", "5000", "--max-pixels", "4000"], "min_pixels 5000"),
               (["--max-pixels", "0"], "--max-pixels")]
        for extra, needle in bad:
            r = subprocess.run([OMNIC, "preprocess", "--image", os.path.join(d, "std.png"), "--config",
                                cfg_paths["qwen2vl"], "--out", os.path.join(d, "x.npy")] + extra,
                               capture_output=True, text=True)
            if r.returncode == 0 or needle not in r.stderr:
                failures.append(f"overrides {extra}: expected a failure naming '{needle}', got exit {r.returncode}: "
                                f"{r.stderr.strip()}")
        clip = os.path.join(d, "clip.json")
        with open(clip, "w") as f:
            json.dump({"image_processor_type": "CLIPImageProcessor"}, f)
        r = subprocess.run([OMNIC, "preprocess", "--image", os.path.join(d, "std.png"), "--config", clip, "--out",
                            os.path.join(d, "x.npy"), "--grid-out", os.path.join(d, "g.json")],
                           capture_output=True, text=True)
        if r.returncode == 0 or "Qwen2-VL" not in r.stderr:
            failures.append(f"--grid-out with a CLIP config: expected a usage error, got exit {r.returncode}")
        badcfg = os.path.join(d, "badcfg.json")
        with open(badcfg, "w") as f:
            json.dump({"image_processor_type": "Qwen2VLImageProcessor", "size": {"shortest_edge": 3136}}, f)
        r = subprocess.run([OMNIC, "preprocess", "--image", os.path.join(d, "std.png"), "--config", badcfg, "--out",
                            os.path.join(d, "x.npy")], capture_output=True, text=True)
        if r.returncode == 0 or "longest_edge" not in r.stderr:
            failures.append(f"size without longest_edge: expected a config error, got exit {r.returncode}: "
                            f"{r.stderr.strip()}")
    if failures:
        print("\n".join("FAIL: " + f for f in failures))
        sys.exit(f"FAIL: {len(failures)} problems ({compared} comparisons, {refused} refusals checked)")
    print(f"qwen2vl preprocess: {len(CASES)} cases over {len(sizes)} image sizes and {len(CONFIGS)} configs: "
          f"{compared} bit-identical (grid, token count, pixel_values), {refused} refused as HF refuses them")


if __name__ == "__main__":
    main()
