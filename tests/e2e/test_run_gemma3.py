#!/usr/bin/python3
"""omnic run on a tiny Gemma 3 vision-language checkpoint (mktiny --family gemma3: 16 rows per
image, more than the text model's sliding window of 8):

  - the chat prompt: the template's <start_of_image> rewritten as Gemma3Processor writes it
    ("\\n\\n<start_of_image>" placeholder "<end_of_image>\\n\\n"), one BOS, tokenized as
    mktiny's tokenizer tokenizes that text;
  - --dump: the effective masks are causal (and windowed) plus each image's rows seeing one
    another, the image rows form one span each;
  - greedy tokens with 1 and 2 images are identical for prefill chunks 1, 7, 20, 64 and the default
    (the 16-row image span is never split: a chunk smaller than it runs the span as one call),
    on cpu, and equal to the ref backend's;
  - pan-and-scan switched on in preprocessor_config.json: the prompt as Gemma3Processor writes a
    panned-and-scanned image, every sub-image encoded, chunking and ref agree;
  - bad input: a context smaller than one image's span, pan-and-scan settings out of range or more
    crops than a request may encode, a config with an unknown layer type or a non-square
    mm_tokens_per_image: clear errors naming the value.
The image path against the real Hugging Face classes is tests/e2e/test_hf_golden.py."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import mktiny  # noqa: E402

OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
PY = "/usr/bin/python3"
IMAGES = [os.path.join(ROOT, "tests", "golden", "images", n) for n in ("a.png", "b.png")]
PROMPT = "What is in the picture?"
N_GEN = 8
failed = 0


def fail(msg):
    global failed
    failed += 1
    print("FAIL:", msg)


def run(model, dump=None, images=(), extra=(), expect_ok=True):
    args = [OMNIC, "run", "-m", model, "-p", PROMPT, "-n", str(N_GEN), "--kv", "f32", "--ignore-eos",
            "--threads", "1"] + list(extra)
    if dump:
        args += ["--dump", dump]
    for im in images:
        args += ["--image", im]
    r = subprocess.run(args, capture_output=True, text=True)
    if expect_ok and r.returncode != 0:
        fail(f"omnic run {' '.join(extra)} with {len(images)} image(s): exit {r.returncode}: {r.stderr[-400:]}")
    return r


def main():
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "g3")
        subprocess.run([PY, os.path.join(ROOT, "tools", "mktiny.py"), "--family", "gemma3", "--dtype", "f32",
                        "--out", model], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(model, "config.json")) as f:
            cfg = json.load(f)
        R, W = cfg["mm_tokens_per_image"], cfg["text_config"]["sliding_window"]
        tok = mktiny.train_tokenizer("gemma", extra_specials=mktiny.FAMILIES["gemma3_text"].extra_specials)
        for n_img in (1, 2):
            imgs = IMAGES[:n_img]
            d = os.path.join(tmp, f"dump{n_img}")
            if run(model, d, imgs).returncode != 0:
                continue
            seq = "\n\n<start_of_image><image_soft_token><end_of_image>\n\n"
            text = "<bos><start_of_turn>user\n" + seq * n_img + PROMPT + "<end_of_turn>\n<start_of_turn>model\n"
            want = mktiny.encode(tok, text, add_special_tokens=False)
            got = np.load(os.path.join(d, "tokens.npy")).tolist()
            if got != want:
                fail(f"{n_img} image(s): logical prompt {got} != the processor's text tokenized {want}")
            ids = []
            for t in got:  # the rows: each placeholder becomes R image rows
                ids += [t] * R if t == cfg["image_token_index"] else [t]
            T = len(ids)
            img = np.array(ids) == cfg["image_token_index"]
            full = np.tril(np.ones((T, T), np.int32))
            sliding = full * (np.subtract.outer(np.arange(T), np.arange(T)) < W)
            starts = [i for i in range(T) if img[i] and (i == 0 or not img[i - 1])]
            for s in starts:
                full[s:s + R, s:s + R] = 1
                sliding[s:s + R, s:s + R] = 1
            for name, m in (("attn_mask_full", full), ("attn_mask_sliding", sliding)):
                got_m = np.load(os.path.join(d, name + ".npy"))
                if not np.array_equal(got_m, m):
                    bad = np.argwhere(got_m != m)[0]
                    fail(f"{n_img} image(s): {name} differs first at row {bad[0]}, key {bad[1]}")
            base = np.load(os.path.join(d, "generated.npy")).tolist()
            r0 = run(model, images=imgs)  # the same, without --dump (which needs one chunk): its text
            for chunk in ("1", "7", "20", "64"):  # 20 would cut the first image's span (rows 9..24)
                r = run(model, images=imgs, extra=["--chunk", chunk])
                if r.returncode == 0 and r.stdout != r0.stdout:
                    fail(f"{n_img} image(s): --chunk {chunk} gives {r.stdout!r}, the default chunk {r0.stdout!r}")
            dr = os.path.join(tmp, f"ref{n_img}")
            if run(model, dr, imgs, ["--backend", "ref"]).returncode == 0:
                g = np.load(os.path.join(dr, "generated.npy")).tolist()
                if g != base:
                    fail(f"{n_img} image(s): ref backend {g} != cpu {base}")
            print(f"gemma3 {n_img} image(s): {T} rows, masks and prompt as HF's processor, chunks 1/7/20/64/512 and "
                  f"ref agree: {base}")

        # bad input
        r = run(model, images=IMAGES[:1], extra=["--ctx", "8"], expect_ok=False)
        if r.returncode == 0 or "16-row attention span" not in r.stderr or "8 rows" not in r.stderr:
            fail(f"--ctx 8 (an image span of 16 rows): {r.returncode} {r.stderr[-300:]}")

        def variant(name, edit, file="config.json"):
            d = os.path.join(tmp, name)
            shutil.copytree(model, d)
            with open(os.path.join(d, file)) as f:
                c = json.load(f)
            edit(c)
            with open(os.path.join(d, file), "w") as f:
                json.dump(c, f)
            return d

        # pan-and-scan (crops >= 16 px): each test image gets 2 crops; the chat prompt is written as
        # Gemma3Processor writes it, the 6 sub-images encode and merge in order, chunking and the ref
        # backend agree (tests/e2e/test_hf_golden.py checks the same path against HF)
        pas = variant("pas", lambda c: c.update(do_pan_and_scan=True, pan_and_scan_min_crop_size=16),
                      "preprocessor_config.json")
        d = os.path.join(tmp, "dump-pas")
        if run(pas, d, IMAGES).returncode == 0:
            seq = "\n\n<start_of_image><image_soft_token><end_of_image>\n\n"
            one = "Here is the original image " + seq + " and here are some crops to help you see better " + \
                seq + " " + seq
            text = "<bos><start_of_turn>user\n" + one * 2 + PROMPT + "<end_of_turn>\n<start_of_turn>model\n"
            want = mktiny.encode(tok, text, add_special_tokens=False)
            got = np.load(os.path.join(d, "tokens.npy")).tolist()
            if got != want:
                fail(f"pan-and-scan: logical prompt {got} != the processor's text tokenized {want}")
            if np.load(os.path.join(d, "pixel_values_0.npy")).shape[0] != 3 or \
                    not os.path.exists(os.path.join(d, "projected_5.npy")):
                fail("pan-and-scan: want pixel_values_0 [3, 3, S, S] and six encoder outputs")
            base = np.load(os.path.join(d, "generated.npy")).tolist()
            r0 = run(pas, images=IMAGES)
            for chunk in ("7", "20"):
                r = run(pas, images=IMAGES, extra=["--chunk", chunk])
                if r.returncode == 0 and r.stdout != r0.stdout:
                    fail(f"pan-and-scan: --chunk {chunk} gives {r.stdout!r}, the default chunk {r0.stdout!r}")
            dr = os.path.join(tmp, "ref-pas")
            if run(pas, dr, IMAGES, ["--backend", "ref"]).returncode == 0:
                if np.load(os.path.join(dr, "generated.npy")).tolist() != base:
                    fail("pan-and-scan: ref backend differs from cpu")
            print(f"gemma3 pan-and-scan, 2 images x (1 + 2 crops): prompt as Gemma3Processor's, chunks and ref "
                  f"agree: {base}")
        r = run(pas, images=IMAGES * 3, expect_ok=False)  # 6 images x 3 parts = 18 encoder inputs
        if r.returncode == 0 or "18 encoder inputs" not in r.stderr:
            fail(f"pan-and-scan over the per-request limit: {r.returncode} {r.stderr[-300:]}")
        cases = [
            (variant("pas0", lambda c: c.update(do_pan_and_scan=True, pan_and_scan_max_num_crops=0),
                     "preprocessor_config.json"), "pan_and_scan_max_num_crops 0"),
            (variant("types", lambda c: c["text_config"]["layer_types"].__setitem__(1, "chunked_attention")),
             "layer_types[1]"),
            (variant("tokens", lambda c: c.update(mm_tokens_per_image=15)), "mm_tokens_per_image 15"),
            (variant("vision", lambda c: c["vision_config"].update(model_type="clip_vision_model")),
             "siglip_vision_model"),
        ]
        for d, needle in cases:
            r = run(d, images=IMAGES[:1], expect_ok=False)
            if r.returncode == 0 or needle not in r.stderr:
                fail(f"{os.path.basename(d)}: want an error naming {needle!r}, got {r.returncode}: {r.stderr[-300:]}")
    print("test_run_gemma3:", "ok" if not failed else f"{failed} failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
