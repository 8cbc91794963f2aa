#!/usr/bin/python3
"""omnic against the real Hugging Face code: the goldens under tests/golden/<case>/ (made by
tools/hf_golden/make_goldens.py with transformers 4.57.6, eager attention, CPU, float32).

For each case: rebuild the tiny checkpoint with the mktiny command in meta.json (fixed seed:
the same weights), run `omnic run --tokens <prompt ids> --kv f32 --ignore-eos --dump D` on the
cpu and on the ref backend (Gemma 3n image prompts: cpu only, their tower is checked on ref by
tests/unit/test_gemma3n_vision.c), and compare stage by stage in pipeline order (pixel_values,
image_grid_thw, vision_features, projected, positions, inputs_embeds, hidden_l*, prefill_logits,
generated). The first stage that diverges is reported with its max abs / rel error and the
tolerance from meta.json; greedy tokens must be token-exact. numpy only (no torch)."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.environ.get("HF_GOLDEN_DIR", os.path.join(ROOT, "tests", "golden"))  # override: mutation checks
OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
PY = "/usr/bin/python3"
BACKENDS = ("cpu", "ref")


def stage_order(name):
    """Pipeline position of a stage (then image index / layer number)."""
    base, _, idx = name.rpartition("_")
    if not idx.isdigit():
        base, idx = name, "0"
    if name.startswith("attn_mask_"):
        base, idx = name, "0"
    if name.startswith("deepstack_"):  # deepstack_k[_i]: merger k's rows of image i, after projected
        k, _, i = name[len("deepstack_"):].partition("_")
        return (3.7, int(i or 0), int(k))
    for sub, prefix in enumerate(("q_l", "k_l", "v_l", "mlp_l", "router_logits_l", "experts_l",
                                  "hidden_l")):  # a layer's stages in order
        if name.startswith(prefix):
            return (6, int(name[len(prefix):]), sub)
    if base == "hidden":
        return (6, 0, 6)
    rank = {"tokens": 0, "pixel_values": 1, "input_features": 1, "image_grid_thw": 2, "vision_features": 3,
            "audio_features": 3.2, "projected": 3.5, "vision_speech": 3.6,
            "positions": 4, "attn_mask_full": 4.2, "attn_mask_sliding": 4.4, "inputs_embeds": 5,
            "per_layer_inputs": 5.5,
            "prefill_logits": 7, "generated": 8}
    if base not in rank:
        raise SystemExit(f"test_hf_golden: unknown stage {name!r} in a golden's meta.json")
    return (rank[base], int(idx), 0)


WORST = {}  # stage base name -> (max |omnic - hf| / max|hf|, case): printed at the end


def compare(name, want, got, tol, case=""):
    """None when got matches want within tol, else a message naming the error and the tolerance."""
    if name == "positions" and want.ndim == 2 and got.ndim == 1 and (want == want[:1]).all():
        want = want[0]  # text-only M-RoPE prompt: every axis equals the 1-D position
    if want.shape != got.shape:
        return f"shape {got.shape} != golden {want.shape}"
    if tol["atol"] == 0 and tol["rtol"] == 0:
        if np.array_equal(want, got):
            return None
        bad = np.flatnonzero(want.reshape(-1) != got.reshape(-1))
        d = np.abs(want.astype(np.float64) - got.astype(np.float64)).max()
        return (f"not exact: {bad.size} of {want.size} elements differ (first at flat index {bad[0]}: omnic "
                f"{got.reshape(-1)[bad[0]]} vs golden {want.reshape(-1)[bad[0]]}), max abs {d:.3g}; tolerance: exact")
    w, g = want.astype(np.float64), got.astype(np.float64)
    if not np.isfinite(g).all():
        return f"{np.count_nonzero(~np.isfinite(g))} non-finite values"
    d = np.abs(w - g).max() if w.size else 0.0
    scale = np.abs(w).max() if w.size else 0.0
    limit = tol["atol"] + tol["rtol"] * scale
    base = name.rstrip("0123456789_") if not name.startswith(("hidden_l", "router_logits_l")) else \
        name[:name.rindex("_l") + 2] + "*"
    rel = d / scale if scale else 0.0
    if rel >= WORST.get(base, (-1.0, ""))[0]:
        WORST[base] = (rel, case)
    if d <= limit:
        return None
    return (f"max abs {d:.3g}, max rel {d / scale if scale else float('inf'):.3g} (of max|golden| {scale:.3g}); "
            f"tolerance atol {tol['atol']:g} + rtol {tol['rtol']:g} * max|golden| = {limit:.3g}")


def build_checkpoint(meta, tmp, cache):
    mk = meta["mktiny"]
    key = " ".join(mk["flags"]) + f" {mk['dtype']} {mk['seed']}"
    if key not in cache:
        d = os.path.join(tmp, f"ckpt{len(cache)}")
        subprocess.run([PY, os.path.join(ROOT, "tools", "mktiny.py")] + mk["flags"] +
                       ["--dtype", mk["dtype"], "--seed", str(mk["seed"]), "--out", d],
                       check=True, stdout=subprocess.DEVNULL)
        pre = os.path.join(d, "preprocessor_config.json")
        if os.path.exists(pre):
            with open(pre) as f:
                cfg = json.load(f)
            if cfg.get("image_processor_type") == "SiglipImageProcessorFast" and \
                    cfg.get("feature_extractor_type") == "Gemma3nAudioFeatureExtractor":
                # the Gemma 3n goldens hold HF's slow (PIL) SiglipImageProcessor output (meta.json
                # image_processor_note): ask omnic for the same numerics
                cfg["image_processor_type"] = "SiglipImageProcessor"
                with open(pre, "w") as f:
                    json.dump(cfg, f)
            if cfg.get("image_processor_type") == "Qwen2VLImageProcessor":
                # the goldens hold HF's slow (PIL) Qwen2VLImageProcessor output (meta.json
                # image_processor_note): ask omnic for the same numerics
                cfg["image_processor_type"] = "Qwen2VLImageProcessorPil"
                with open(pre, "w") as f:
                    json.dump(cfg, f)
        cache[key] = d
    return cache[key]


def run_case(case, tmp, cache):
    """Returns a list of failure messages for this case."""
    gdir = os.path.join(GOLDEN, case)
    with open(os.path.join(gdir, "meta.json")) as f:
        meta = json.load(f)
    fails = []
    n_img = len(meta["images"])
    audios = meta.get("audios") or []
    sfx = [""] if n_img == 1 and not audios else [f"_{i}" for i in range(n_img)]  # items: images, then clips
    need = ["tokens", "positions", "inputs_embeds", "hidden_l0", "prefill_logits", "generated"]
    need += [f"{s}{x}" for x in sfx if n_img for s in ("pixel_values", "vision_features", "projected")]
    if meta["family"] == "phi4mm" and (n_img or audios):  # the adapter-adjusted projections, both layers
        need += [f"{t}_l{i}" for i in (0, 1) for t in ("q", "k", "v", "mlp")]
    if meta["family"] == "gemma3n":  # the per-layer embeddings of the merged rows
        need += ["per_layer_inputs"]
    if audios and meta["family"] == "gemma3n":  # each clip's features, tower output and embedder rows
        sx = [""] if len(audios) + n_img == 1 else [f"_{n_img + i}" for i in range(len(audios))]
        need += [f"{s}{x}" for x in sx for s in ("input_features", "audio_features", "projected")]
    elif audios:  # a clip's rows: the speech projection, or the vision-speech one beside an image
        need += ["input_features", "projected"] if not n_img else [f"input_features_{n_img}", f"vision_speech_{n_img}"]
    missing = [n for n in need if n not in meta["stages"]]
    if missing:  # a golden that lost a stage would otherwise pass silently
        return [f"{case}: golden lacks stages {missing}"], 0, ()
    model = build_checkpoint(meta, tmp, cache)
    n_gen = int(meta["generation"]["max_new_tokens"])
    # Gemma 3n images on cpu only: ref's double-precision MobileNetV5 takes ~20 s an image, and its
    # tower is checked on ref stage by stage (tests/unit/test_gemma3n_vision.c)
    backends = ("cpu",) if meta["family"] == "gemma3n" and n_img else BACKENDS
    for backend in backends:
        dump = os.path.join(tmp, f"{case}-{backend}")
        args = [OMNIC, "run", "-m", model, "--tokens", ",".join(map(str, meta["prompt_ids"])), "-n", str(n_gen),
                "--kv", "f32", "--ignore-eos", "--backend", backend, "--dump", dump]
        if len(meta["input_ids_hf"]) > 512:  # --dump reads one prefill: the whole prompt in one chunk
            args += ["--chunk", "2048"]
        for im in meta["images"]:
            args += ["--image", os.path.join(ROOT, im)]
        for au in audios:
            args += ["--audio", os.path.join(ROOT, au)]
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            fails.append(f"{case} ({backend}): omnic run exit {r.returncode}: {r.stderr[-600:]}")
            continue
        for name in sorted(meta["stages"], key=stage_order):
            path = os.path.join(dump, name + ".npy")
            if not os.path.exists(path):
                fails.append(f"{case} ({backend}): first divergent stage {name}: omnic --dump wrote no {name}.npy")
                break
            msg = compare(name, np.load(os.path.join(gdir, name + ".npy")), np.load(path), meta["tolerances"][name],
                          f"{case} ({backend})")
            if msg:
                extra = ""
                if name == "generated":
                    extra = (f"\n   omnic  {np.load(path).tolist()}\n   golden "
                             f"{np.load(os.path.join(gdir, name + '.npy')).tolist()}")
                fails.append(f"{case} ({backend}): first divergent stage {name}: {msg}{extra}")
                break
    return fails, len(meta["stages"]), backends


def main():
    def is_case(d):  # a model case (other golden folders, e.g. image_loading/, have their own tests)
        p = os.path.join(GOLDEN, d, "meta.json")
        return os.path.isfile(p) and "hf_class" in json.load(open(p))

    cases = sorted(d for d in os.listdir(GOLDEN) if is_case(d))
    only = os.environ.get("HF_GOLDEN_ONLY")  # a substring: run those cases alone (debugging)
    if only:
        cases = [c for c in cases if only in c]
    families = ("llama", "qwen2", "qwen3", "qwen3_moe", "qwen3_vl", "qwen3_vl_moe", "phi3", "gemma3_text", "gemma3n_text", "gemma3n", "llava_clip_llama", "llava_siglip_qwen2",
                "qwen2_vl", "qwen2_5_vl", "gemma3")
    want = [f"{f}-{d}-{m}" for f in families for d in ("f32", "bf16")
            for m in (("text",) if "_" not in f or f in ("gemma3_text", "gemma3n_text", "gemma3n", "qwen3_moe") else ("text", "1img", "2img"))]
    want += [f"phi3-{d}-{m}" for d in ("f32", "bf16") for m in ("long", "cross")]
    want += [f"gemma3_pas-{d}-2img" for d in ("f32", "bf16")]  # pan-and-scan: two crops per image
    # Phi-4-multimodal (HF conversion): text prompts, a clip with the speech LoRA adapter, images
    # (HD crops) and an image with a clip with the vision one
    want += [f"phi4mm-{d}-{m}" for d in ("f32", "bf16") for m in ("text", "audio", "1img", "2img", "image_audio")]
    # Gemma 3n: a clip (188 rows: the tower's, then the padding embedding) and two clips
    want += [f"gemma3n-{d}-{m}" for d in ("f32", "bf16") for m in ("audio", "2audio", "1img", "2img", "image_audio")]
    absent = sorted(set(want) - set(cases)) if not only else []
    if absent:
        print(f"FAIL: golden cases missing under {GOLDEN}: {absent}")
        return 1
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = {}
        for case in cases:
            fails, n, used = run_case(case, tmp, cache)
            for m in fails:
                print("FAIL:", m)
            if not fails:
                print(f"{case}: {n} stages match the HF golden on {' and '.join(used)}")
            failed += fails
    for base, (rel, case) in sorted(WORST.items()):
        print(f"  worst {base}: max rel {rel:.2g} ({case})")
    print(f"test_hf_golden: {len(cases)} cases, {len(failed)} failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
