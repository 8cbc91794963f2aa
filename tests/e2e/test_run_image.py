#!/usr/bin/python3
"""omnic run --image --dump on tiny LLaVA checkpoints (CLIP + Llama, SigLIP + Qwen2), stage by
stage against independent references:

  pixel_values      the numpy + Pillow reimplementation of the checkpoint's image processor
                    (tests/e2e/test_image_preprocess.py: Pillow does the resize): exact
  vision_features,  tools/ref/vision.py (float64 numpy CLIP / SigLIP tower and projector)
  projected         within 1e-4 absolute + 1e-4 relative
  inputs_embeds     the reference merge (embedding rows, placeholders replaced in order)
  attn_bias         the causal mask LLaVA uses (0 on and below the diagonal, masked above)
and the greedy tokens are identical between --backend ref and --backend cpu (f32 KV).
The first stage that diverges is named."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "ref"))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import vision  # noqa: E402
import test_image_preprocess as prep  # noqa: E402

OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
PY = "/usr/bin/python3"
IMAGE = os.path.join(ROOT, "tests", "data", "demo.png")
CASES = [("clip", "llama", "f32"), ("siglip", "qwen2", "bf16")]
N_GEN = 8
failed = 0


def fail(msg):
    global failed
    failed += 1
    print("FAIL:", msg)


def run(model, dump, backend, images):
    args = [OMNIC, "run", "-m", model, "-p", "What is in the picture?", "-n", str(N_GEN), "--kv", "f32",
            "--ignore-eos", "--backend", backend, "--dump", dump]
    for im in images:
        args += ["--image", im]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{model} ({backend}): omnic run exit {r.returncode}: {r.stderr[-500:]}")
        return False
    return True


with tempfile.TemporaryDirectory() as tmp:
    # a second image: wide, with alpha (dropped by load_image's convert("RGB"))
    second = os.path.join(tmp, "second.png")
    rgba = np.zeros((30, 71, 4), np.uint8)
    rgba[..., 0] = np.arange(71)[None, :] * 3
    rgba[..., 1] = np.arange(30)[:, None] * 8
    rgba[..., 2] = 120
    rgba[..., 3] = (np.arange(71)[None, :] * 3 + 40) % 256
    Image.fromarray(rgba, "RGBA").save(second)
    for tower, text, dtype in CASES:
        name = f"llava-{tower}-{text}"
        model = os.path.join(tmp, name)
        subprocess.run([PY, os.path.join(ROOT, "tools/mktiny.py"), "--family", "llava", "--vision", tower, "--text",
                        text, "--dtype", dtype, "--out", model], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(model, "preprocessor_config.json")) as f:
            pcfg = json.load(f)
        for images in ([IMAGE], [IMAGE, second]):
            tag = f"{name} ({len(images)} image{'s' if len(images) > 1 else ''})"
            dumps = {b: os.path.join(tmp, f"{name}-{len(images)}-{b}") for b in ("cpu", "ref")}
            if not all(run(model, dumps[b], b, images) for b in ("cpu", "ref")):
                continue
            d = dumps["cpu"]
            suffix = (lambda i: "") if len(images) == 1 else (lambda i: f"_{i}")
            stage_ok = True
            projected = []
            for i, path in enumerate(images):
                with Image.open(path) as im:
                    rgb = prep.load_image_rgb(im)
                    rgb.load()
                want = prep.reference(rgb, pcfg, "pil", {"pil_geometry": 0})
                got = np.load(os.path.join(d, f"pixel_values{suffix(i)}.npy"))
                if got.shape != want.shape or np.abs(got.astype(np.float64) - want).max() != 0:
                    fail(f"{tag}: first divergent stage pixel_values{suffix(i)} (max |diff| "
                         f"{np.abs(got.astype(np.float64) - want).max() if got.shape == want.shape else 'shape'})")
                    stage_ok = False
                    break
                ref = vision.encode(model, got.astype(np.float64))
                for stage in ("vision_features", "projected"):
                    out = np.load(os.path.join(d, f"{stage}{suffix(i)}.npy"))
                    if not vision.compare(f"{stage}{suffix(i)}", ref[stage], out, 1e-4, 1e-4):
                        fail(f"{tag}: first divergent stage {stage}{suffix(i)}")
                        stage_ok = False
                        break
                if not stage_ok:
                    break
                projected.append(ref["projected"])
            if not stage_ok:
                continue
            # tokens.npy holds the logical ids (one placeholder per image); the processor's
            # expansion repeats each placeholder once per projected row
            logical = np.load(os.path.join(d, "tokens.npy")).tolist()
            image_id = vision.load_config(model)["image_token_index"]
            rows = projected[0].shape[0]
            tokens = [t for t in logical for _ in range(rows if t == image_id else 1)]
            emb = vision.merge(model, tokens, projected)
            if not vision.compare("inputs_embeds", emb, np.load(os.path.join(d, "inputs_embeds.npy")), 1e-4, 1e-4):
                fail(f"{tag}: first divergent stage inputs_embeds")
                continue
            T = emb.shape[0]
            bias = np.load(os.path.join(d, "attn_bias.npy"))
            causal = np.tril(np.ones((T, T), bool))
            if bias.shape != (T, T) or np.any(bias[causal] != 0) or np.any(bias[~causal] > -1e29):
                fail(f"{tag}: attn_bias is not the causal mask over {T} rows")
                continue
            gen = {b: np.load(os.path.join(dumps[b], "generated.npy")).tolist() for b in dumps}
            if gen["cpu"] != gen["ref"] or len(gen["cpu"]) != N_GEN:
                fail(f"{tag}: greedy tokens differ between backends: cpu {gen['cpu']} ref {gen['ref']}")
                continue
            print(f"{tag}: pixel_values exact, features/projected/inputs_embeds within 1e-4 of the numpy "
                  f"reference, {T} rows causal, {N_GEN} greedy tokens equal on cpu and ref")

print(f"test_run_image: {'FAILED' if failed else 'ok'}")
sys.exit(1 if failed else 0)
