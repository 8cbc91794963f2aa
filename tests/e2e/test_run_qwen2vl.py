#!/usr/bin/python3
"""omnic run --image --dump on tiny Qwen2-VL and Qwen2.5-VL checkpoints, stage by stage against
independent references, reporting the first stage that diverges:

  pixel_values, image_grid_thw   tests/e2e/test_qwen2vl_preprocess.py's numpy port of the HF
                                 processor (torchvision uint8 path): exact
  vision_features, projected     tools/ref/qwen2vl_vision.py (float64 towers and merger): 1e-4
  positions [3, T]               a port of HF get_rope_index written here: exact
  inputs_embeds                  embedding rows with each <|image_pad|> run replaced: 1e-4
  prefill_logits, kv_l*          tools/ref/decoder.py with those rows and M-RoPE positions: 1e-4
  generated                      the reference's argmax at every step (decode coordinate =
                                 cache length + rope_delta on all axes), and ref == cpu backends
Two images in one prompt are checked the same way."""
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
import decoder  # noqa: E402
import qwen2vl_vision  # noqa: E402
import test_qwen2vl_preprocess as qprep  # noqa: E402
from test_image_preprocess import load_image_rgb  # noqa: E402

OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
PY = "/usr/bin/python3"
IMAGE = os.path.join(ROOT, "tests", "data", "demo.png")
N_GEN = 8
TOL = 1e-4
failed = 0


def fail(msg):
    global failed
    failed += 1
    print("FAIL:", msg)


def close(name, ref, got, tag):
    ref, got = np.asarray(ref, np.float64), np.asarray(got, np.float64)
    if ref.shape != got.shape:
        fail(f"{tag}: first divergent stage {name}: shape {got.shape} != reference {ref.shape}")
        return False
    d = np.abs(ref - got).max() if ref.size else 0.0
    if not d <= TOL * max(1.0, np.abs(ref).max()):
        fail(f"{tag}: first divergent stage {name}: max |diff| {d:.3g}")
        return False
    return True


def get_rope_index(ids, grids, image_id, vision_start, m):
    """HF Qwen2VLModel.get_rope_index (transformers 4.5x) for one sequence of text and images."""
    ids = list(ids)
    pos = [[], [], []]
    st, i, k = 0, 0, 0
    while i < len(ids):
        if ids[i] == image_id and i > 0 and ids[i - 1] == vision_start:
            t, h, w = grids[k]
            h, w = h // m, w // m
            for tt in range(t):
                for r in range(h):
                    for c in range(w):
                        pos[0].append(st + tt), pos[1].append(st + r), pos[2].append(st + c)
            st += max(t, h, w)
            i += t * h * w
            k += 1
        else:
            for a in range(3):
                pos[a].append(st)
            st += 1
            i += 1
    p = np.array(pos, np.int64)
    return p, int(p.max()) + 1 - len(ids)


def run(model, dump, backend, images):
    args = [OMNIC, "run", "-m", model, "-p", "Describe the pictures.", "-n", str(N_GEN), "--kv", "f32",
            "--ignore-eos", "--backend", backend, "--dump", dump]
    for im in images:
        args += ["--image", im]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{model} ({backend}): omnic run exit {r.returncode}: {r.stderr[-600:]}")
    return r.returncode == 0


with tempfile.TemporaryDirectory() as tmp:
    second = os.path.join(tmp, "tall.png")
    a = np.zeros((90, 40, 3), np.uint8)
    a[..., 0] = np.arange(90)[:, None] * 2
    a[..., 1] = np.arange(40)[None, :] * 5
    a[..., 2] = 77
    Image.fromarray(a).save(second)
    for fam in ("qwen2_vl", "qwen2_5_vl"):
        model = os.path.join(tmp, fam)
        subprocess.run([PY, os.path.join(ROOT, "tools/mktiny.py"), "--family", fam, "--dtype", "f32", "--out", model],
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(model, "preprocessor_config.json")) as f:
            pcfg = qprep.resolve(json.load(f), None, None)
        with open(os.path.join(model, "config.json")) as f:
            cfg = json.load(f)
        image_id, vstart = cfg["image_token_id"], cfg["vision_start_token_id"]
        merge = cfg["vision_config"].get("spatial_merge_size", 2)
        for images in ([IMAGE], [IMAGE, second]):
            tag = f"{fam} ({len(images)} image{'s' if len(images) > 1 else ''})"
            dumps = {b: os.path.join(tmp, f"{fam}-{len(images)}-{b}") for b in ("cpu", "ref")}
            if not all(run(model, dumps[b], b, images) for b in ("cpu", "ref")):
                continue
            d = dumps["cpu"]
            ld = lambda name: np.load(os.path.join(d, name + ".npy"))  # noqa: E731
            sfx = (lambda i: "") if len(images) == 1 else (lambda i: f"_{i}")
            grids, proj, ok = [], [], True
            got_grid = ld("image_grid_thw")
            for i, path in enumerate(images):
                with Image.open(path) as im:
                    rgb = load_image_rgb(im)
                    rgb.load()
                want_pv, thw, _ = qprep.reference(rgb, pcfg, "torchvision")
                got_pv = ld(f"pixel_values{sfx(i)}")
                if tuple(got_grid[i]) != thw or got_pv.shape != want_pv.shape or np.abs(got_pv - want_pv).max() != 0:
                    fail(f"{tag}: first divergent stage pixel_values{sfx(i)} / image_grid_thw "
                         f"(grid {tuple(got_grid[i])} vs {thw})")
                    ok = False
                    break
                ref = qwen2vl_vision.encode(model, want_pv.astype(np.float64), np.array([thw]))
                if not (close(f"vision_features{sfx(i)}", ref["vision_features"], ld(f"vision_features{sfx(i)}"), tag)
                        and close(f"projected{sfx(i)}", ref["projected"], ld(f"projected{sfx(i)}"), tag)):
                    ok = False
                    break
                grids.append(thw)
                proj.append(ref["projected"])
            if not ok:
                continue
            logical = ld("tokens").tolist()
            ids = []
            k = 0
            for t in logical:
                if t == image_id:
                    n = int(np.prod(grids[k])) // (merge * merge)
                    ids += [image_id] * n
                    k += 1
                else:
                    ids.append(t)
            want_pos, delta = get_rope_index(ids, grids, image_id, vstart, merge)
            if not np.array_equal(ld("positions"), want_pos):
                fail(f"{tag}: first divergent stage positions")
                continue
            W = decoder.Weights(decoder.Checkpoint(model), np.float64)
            emb = W("model.embed_tokens.weight")[np.array(ids)]
            emb[np.array(ids) == image_id] = np.concatenate(proj)
            if not close("inputs_embeds", emb, ld("inputs_embeds"), tag):
                continue
            st = decoder.forward(model, ids, inputs_embeds=emb, mrope_positions=want_pos)
            stage_ok = close("prefill_logits", st["logits"][-1:], ld("prefill_logits"), tag)
            for layer in range(cfg["num_hidden_layers"]):
                if not stage_ok:
                    break
                for kv in ("k", "v"):
                    name = f"kv_l{layer}_{kv}"
                    stage_ok = stage_ok and close(name, st[name], ld(name), tag)
            if not stage_ok:
                continue
            gen = {b: np.load(os.path.join(dumps[b], "generated.npy")).tolist() for b in dumps}
            if gen["cpu"] != gen["ref"] or len(gen["cpu"]) != N_GEN:
                fail(f"{tag}: greedy tokens differ between backends: cpu {gen['cpu']} ref {gen['ref']}")
                continue
            # greedy continuation: generated token j sits at position T + j, coordinate T + j + delta
            T = len(ids)
            ext_ids = ids + gen["cpu"][:-1]
            ext_pos = np.concatenate([want_pos, np.stack([np.arange(T, T + N_GEN - 1) + delta] * 3)], axis=1)
            ext_emb = np.concatenate([emb, W("model.embed_tokens.weight")[np.array(gen["cpu"][:-1], np.int64)]])
            logits = decoder.forward(model, ext_ids, inputs_embeds=ext_emb, mrope_positions=ext_pos)["logits"]
            ref_next = np.argmax(logits[T - 1:], axis=-1).tolist()
            if ref_next != gen["cpu"]:
                fail(f"{tag}: greedy tokens differ from the reference:\n omnic {gen['cpu']}\n ref   {ref_next}")
                continue
            # the decode coordinate matters: without rope_delta the reference would pick other tokens
            ext_pos0 = np.concatenate([want_pos, np.stack([np.arange(T, T + N_GEN - 1)] * 3)], axis=1)
            logits0 = decoder.forward(model, ext_ids, inputs_embeds=ext_emb, mrope_positions=ext_pos0)["logits"]
            sensitive = not np.allclose(logits0[T:], logits[T:], atol=1e-3)
            if not sensitive:
                fail(f"{tag}: the check cannot see rope_delta (logits equal without it)")
                continue
            print(f"{tag}: grid {grids}, pixel_values exact, positions exact (rope_delta {delta}), features/projected/"
                  f"inputs_embeds/logits/KV within {TOL}, {N_GEN} greedy tokens equal the reference and ref == cpu")

print(f"test_run_qwen2vl: {'FAILED' if failed else 'ok'}")
sys.exit(1 if failed else 0)
