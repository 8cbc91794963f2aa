#!/usr/bin/python3
"""A Full HD image at the published Qwen2-VL processor bounds goes through unscaled.

Qwen/Qwen2-VL-*'s preprocessor_config.json has min_pixels 3136 and max_pixels 12845056; HF's
smart_resize (transformers image_processing_qwen2_vl.py) maps 1920x1080 to 1932x1092, grid
(1, 78, 138): 10764 patches, 2691 image tokens. The vision.encode module is planned for
min(OMNIC_MAX_QWEN_IMAGE_PATCHES, max_pixels / 14^2) patches, so the image must not be
downscaled to fit (before the tiled attention it was capped at 4096 patches). Checked through
`omnic run --dump` on a tiny Qwen2-VL checkpoint (cpu backend): image_grid_thw, the number of
<|image_pad|> rows in inputs_embeds, and the shapes of vision_features / projected; the expected grid comes from
the smart_resize port in test_qwen2vl_preprocess.py and is pinned to the HF value."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import test_qwen2vl_preprocess as qprep  # noqa: E402

OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
PY = "/usr/bin/python3"
MIN_PIXELS, MAX_PIXELS = 3136, 12845056  # Qwen/Qwen2-VL-2B-Instruct preprocessor_config.json
HF_GRID, HF_TOKENS = (1, 78, 138), 2691  # transformers 4.57 smart_resize(1080, 1920, 28, 3136, 12845056)
failed = 0


def fail(msg):
    global failed
    failed += 1
    print("FAIL:", msg)


with tempfile.TemporaryDirectory() as tmp:
    model, image, dump = (os.path.join(tmp, x) for x in ("model", "fullhd.png", "dump"))
    subprocess.run([PY, os.path.join(ROOT, "tools/mktiny.py"), "--family", "qwen2_vl", "--dtype", "f32",
                    "--max-pixels", str(MAX_PIXELS), "--out", model], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(model, "preprocessor_config.json")) as f:
        pcfg = qprep.resolve(json.load(f), None, None)
    if (pcfg["min_pixels"], pcfg["max_pixels"]) != (MIN_PIXELS, MAX_PIXELS):
        fail(f"mktiny wrote min/max_pixels {pcfg['min_pixels']} / {pcfg['max_pixels']}")
    with open(os.path.join(model, "config.json")) as f:
        cfg = json.load(f)
    y, x = np.mgrid[0:1080, 0:1920]
    Image.fromarray(np.stack([x * 255 // 1919, y * 255 // 1079, (x + y) % 256], -1).astype(np.uint8)).save(image)

    factor = pcfg["patch_size"] * pcfg["merge_size"]
    h, w = qprep.smart_resize(1080, 1920, factor, MIN_PIXELS, MAX_PIXELS)
    want = (1, h // pcfg["patch_size"], w // pcfg["patch_size"])
    if want != HF_GRID:
        fail(f"smart_resize port gives grid {want}, HF gives {HF_GRID}")
    # the prompt (image tokens and all) must fit one prefill chunk for --dump
    r = subprocess.run([OMNIC, "run", "-m", model, "-p", "Describe the picture.", "-n", "1", "--ignore-eos",
                        "--backend", "cpu", "--ctx", "4096", "--chunk", "4096", "--image", image, "--dump", dump],
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"omnic run exit {r.returncode}: {r.stderr[-600:]}")
    else:
        ld = lambda name: np.load(os.path.join(dump, name + ".npy"))  # noqa: E731
        grid = tuple(int(v) for v in ld("image_grid_thw").reshape(-1))
        tokens = ld("tokens")  # logical: one <|image_pad|> placeholder, expanded in inputs_embeds
        n_pad = ld("inputs_embeds").shape[0] - (tokens.size - int((tokens == cfg["image_token_id"]).sum()))
        feats, proj = ld("vision_features"), ld("projected")
        patches = HF_GRID[0] * HF_GRID[1] * HF_GRID[2]
        if grid != HF_GRID:
            fail(f"image_grid_thw {grid}, HF {HF_GRID} (downscaled to fit the encoder?)")
        if n_pad != HF_TOKENS:
            fail(f"{n_pad} image rows in inputs_embeds, HF {HF_TOKENS} tokens")
        if feats.shape[0] != patches or proj.shape != (HF_TOKENS, cfg["hidden_size"]):
            fail(f"vision_features {feats.shape} / projected {proj.shape}, want {patches} rows / "
                 f"({HF_TOKENS}, {cfg['hidden_size']})")
        if not (np.isfinite(feats).all() and np.isfinite(proj).all()):
            fail("non-finite vision features")
        if not failed:
            print(f"1920x1080 at max_pixels {MAX_PIXELS}: grid {grid}, {n_pad} image tokens, as HF")

print("test_run_qwen2vl_max_pixels:", "FAILED" if failed else "ok")
sys.exit(1 if failed else 0)
