#!/usr/bin/env python3
"""Images as Hugging Face loads them (EXIF orientation, alpha), against recorded goldens.

tests/golden/image_loading/ holds small input images (EXIF orientations 1..8 in JPEG, the places Pillow
reads orientation from in PNG and WebP, RGBA / LA / palette+tRNS / grey+tRNS for the alpha rule)
and the pixel_values that transformers' `load_image(path)` + CLIPImageProcessor /
Qwen2VLImageProcessor (slow PIL path) gave for them (tools/hf_golden/make_image_goldens.py; meta.json
names the versions). For each image and config, `omnic preprocess` must give the same shape and
values with max |diff| == 0 (and Qwen2-VL the same image_grid_thw). numpy only.

Run: OMNIC=build/release/omnic python3 this_file.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

OMNIC = os.environ.get("OMNIC", "build/release/omnic")
GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "golden", "image_loading")


def main():
    if not os.path.exists(OMNIC):
        sys.exit(f"FAIL: {OMNIC} not found (set OMNIC)")
    with open(os.path.join(GOLDEN, "meta.json")) as f:
        meta = json.load(f)
    configs = sorted(fn[:-5] for fn in os.listdir(os.path.join(GOLDEN, "configs")) if fn.endswith(".json"))
    images = sorted(meta["images"])
    failures, compared = [], 0

    # The goldens must be able to tell orientations apart: each rotated / flipped image differs
    # from the unrotated one.
    with np.load(os.path.join(GOLDEN, "pixel_values_raw.npz")) as raw:
        base = raw["jpeg_orient1.jpg"]
        for k in range(2, 9):
            other = raw[f"jpeg_orient{k}.jpg"]
            if other.shape == base.shape and np.array_equal(other, base):
                failures.append(f"golden jpeg_orient{k}.jpg equals jpeg_orient1.jpg: the goldens do not test orientation")

    with tempfile.TemporaryDirectory(prefix="omnic_imgload_") as d:
        out, grid_out = os.path.join(d, "pv.npy"), os.path.join(d, "grid.json")
        for cname in configs:
            cfg_path = os.path.join(GOLDEN, "configs", cname + ".json")
            with open(cfg_path) as f:
                is_qwen = json.load(f)["image_processor_type"].startswith("Qwen2VL")
            with np.load(os.path.join(GOLDEN, f"pixel_values_{cname}.npz")) as gold:
                for name in images:
                    want = gold[name]
                    cmd = [OMNIC, "preprocess", "--image", os.path.join(GOLDEN, "inputs", name), "--config", cfg_path,
                           "--variant", "pil", "--out", out]
                    if is_qwen:
                        cmd += ["--grid-out", grid_out]
                    r = subprocess.run(cmd, capture_output=True, text=True)
                    tag = f"{name} {cname}"
                    if r.returncode != 0:
                        failures.append(f"{tag}: exit {r.returncode}: {r.stderr.strip()}")
                        continue
                    got = np.load(out)
                    compared += 1
                    if is_qwen:
                        with open(grid_out) as f:
                            grid = json.load(f)["image_grid_thw"]
                        want_grid = meta["image_grid_thw"][cname][name]
                        if list(grid) != want_grid:
                            failures.append(f"{tag}: image_grid_thw {grid}, Hugging Face {want_grid}")
                            continue
                    if got.shape != want.shape:
                        failures.append(f"{tag}: shape {got.shape}, Hugging Face {want.shape}")
                        continue
                    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
                    if diff.max() != 0:
                        idx = np.unravel_index(np.argmax(diff), diff.shape)
                        failures.append(f"{tag}: max |diff| {diff.max():.3g} at {tuple(int(i) for i in idx)}: got "
                                        f"{got[idx]!r}, Hugging Face {want[idx]!r}; {int((diff > 0).sum())} of "
                                        f"{diff.size} values differ")
    if failures:
        print("\n".join("FAIL: " + f for f in failures))
        sys.exit(f"FAIL: {len(failures)} problems in {compared} comparisons")
    print(f"image loading: {len(images)} images x {len(configs)} configs, {compared} comparisons identical to "
          f"transformers {meta['transformers']} load_image + processor (max |diff| 0)")


if __name__ == "__main__":
    main()
