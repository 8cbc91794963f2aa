#!/usr/bin/python3
"""Golden outputs of the real Hugging Face transformers code on omnic's tiny checkpoints.

For every case (family x dtype x {text, 1 image, 2 images}) this builds the tiny checkpoint with
tools/mktiny.py (fixed seed: deterministic), runs the transformers model class on it (eager
attention, CPU, float32) and writes tests/golden/<case>/:

  tokens.npy            i32 [n]   the logical prompt fed to `omnic run --tokens` (one image
                                  placeholder per image: <image> for LLaVA, <|image_pad|> inside
                                  <|vision_start|> ... <|vision_end|> for Qwen2-VL)
  input_ids_hf.npy      i32 [T]   what HF's processor feeds the model (placeholders expanded)
  pixel_values[_i].npy  f32       HF's slow (PIL) image processor output, per image
  image_grid_thw.npy    i32 [n,3] Qwen2-VL / Qwen2.5-VL
  vision_features[_i]   f32       LLaVA: the selected tower features (projector input); Qwen:
                                  the last block's output in the processor's patch order
  projected[_i]         f32       projector / merger output (the rows merged into the prompt)
  inputs_embeds         f32 [T,H] the decoder's input (post embedding scale, images merged)
  positions             i32 [T] or [3,T] (M-RoPE, HF get_rope_index)
  hidden_l{i}           f32 [T,H] decoder layer i's output (before the final norm)
  prefill_logits        f32 [1,V] the last prompt row
  generated             i32 [16]  greedy tokens (generate(): do_sample=False, repetition_penalty=1.0, EOS
                                  off; checked equal to one causal forward per step, except phi3 "cross":
                                  see the note in run_case)
  meta.json             versions, commands, prompt, images, per-stage tolerances

Runs only where the oracle site exists:
  PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/make_goldens.py [--only SUBSTR]
"""
import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(ROOT, "tests", "golden")
IMAGES = os.path.join(GOLDEN, "images")
PY = "/usr/bin/python3"
SEED = 0
N_GEN = 16

try:
    import hfo_shim  # noqa: E402

    hfo_shim.patch_transformers()
    import torch  # noqa: E402
    import transformers  # noqa: E402
    from PIL import Image  # noqa: E402
except ImportError as e:
    sys.exit(f"make_goldens: needs the transformers oracle site (PYTHONPATH=/opt/hfo/site457, python3-torch, "
             f"python3-pil); import failed: {e}")

sys.path.insert(0, os.path.join(ROOT, "tools"))
import mktiny  # noqa: E402

# name -> mktiny flags, tokenizer style, extra specials, kind
FAMILIES = {
    "llama": (["--family", "llama"], "text"),
    "qwen2": (["--family", "qwen2"], "text"),
    "qwen3": (["--family", "qwen3"], "text"),
    "qwen3_moe": (["--family", "qwen3_moe"], "text"),
    "phi3": (["--family", "phi3"], "text"),
    "gemma3_text": (["--family", "gemma3_text"], "text"),
    "gemma3n_text": (["--family", "gemma3n_text"], "text"),
    "llava_clip_llama": (["--family", "llava", "--vision", "clip", "--text", "llama"], "llava"),
    "llava_siglip_qwen2": (["--family", "llava", "--vision", "siglip", "--text", "qwen2"], "llava"),
    "qwen2_vl": (["--family", "qwen2_vl"], "qwen"),
    "qwen2_5_vl": (["--family", "qwen2_5_vl"], "qwen"),
    "qwen3_vl": (["--family", "qwen3_vl"], "qwen"),
    "qwen3_vl_moe": (["--family", "qwen3_vl_moe"], "qwen"),
    "gemma3": (["--family", "gemma3"], "gemma3"),
    # pan-and-scan on (crops >= 16 px): a.png (40x30) and b.png (40x88) each get 2 crops
    "gemma3_pas": (["--family", "gemma3", "--pan-and-scan", "16"], "gemma3"),
    "gemma3n": (["--family", "gemma3n"], "gemma3n"),
    # Phi-4-multimodal (HF conversion), text prompts: the phi3 decoder under Phi4MultimodalForCausalLM
    "phi4mm": (["--family", "phi4mm"], "phi4mm"),
}
DTYPES = ("f32", "bf16")
TEXT = "The quick brown fox jumps over the lazy dog."
# Phi-3 LongRoPE (tiny: original_max_position_embeddings 64): "long" is a prompt past 64 tokens
# (every row uses the long factors), "cross" one whose generation crosses 64 (HF's generate then
# drops the cache and recomputes the sequence with the long factors).
PHI3_PROMPTS = {"long": " ".join([TEXT] * 3), "cross": " ".join([TEXT] * 2)}
IMAGE_FILES = ("a.png", "b.png", "c.png", "d.png", "e.png")

# Per-stage tolerances: pass iff max|omnic - hf| <= atol + rtol * max|hf|. Both sides compute in
# float32 (bf16 weights are upcast exactly), so only summation order and transcendental
# implementations differ; observed errors are ~1e-6 relative.
FLOAT_TOL = {"atol": 1e-5, "rtol": 1e-4}
EXACT = {"atol": 0.0, "rtol": 0.0}


def tolerances(names):
    tol = {}
    for n in names:
        exact = n in ("tokens", "image_grid_thw", "positions", "generated") or n.startswith(("pixel_values",
                                                                                              "attn_mask", "experts_l"))
        tol[n] = dict(EXACT) if exact else dict(FLOAT_TOL)
    tol["generated"]["note"] = "token-exact"
    return tol


def phi4mm_tolerances(tol):
    """Phi-4-multimodal's pixel values hold an f32 bicubic resize (the global crop): float tolerance."""
    for k in tol:
        if k.startswith("pixel_values"):
            tol[k] = dict(FLOAT_TOL, note="the global crop is ATen's f32 bicubic of the normalised HD image")
    return tol


def make_images():
    """Small deterministic RGB images (a: 40x30 landscape, b: 40x88 portrait, c / d larger, e: 640x480)."""
    os.makedirs(IMAGES, exist_ok=True)
    rng = np.random.RandomState(1234)
    a = np.zeros((30, 40, 3), np.float64)
    a[..., 0] = np.linspace(0, 255, 40)[None, :]
    a[..., 1] = np.linspace(255, 0, 30)[:, None]
    a[..., 2] = 128
    b = np.zeros((88, 40, 3), np.float64)
    b[..., 0] = (np.arange(88)[:, None] * 7) % 256
    b[..., 1] = np.linspace(0, 255, 40)[None, :]
    b[..., 2] = ((np.arange(88)[:, None] // 8 + np.arange(40)[None, :] // 8) % 2) * 200
    paths = []
    e = np.zeros((480, 640, 3), np.float64)  # Phi-4-multimodal: 2x2 HD crops, 16 padded patch rows (1065 rows)
    e[..., 0] = np.linspace(0, 255, 640)[None, :]
    e[..., 1] = np.linspace(255, 0, 480)[:, None]
    e[..., 2] = ((np.arange(480)[:, None] // 24 + np.arange(640)[None, :] // 24) % 2) * 200
    e = np.clip(e + np.random.RandomState(99).randint(-40, 41, e.shape), 0, 255).astype(np.uint8)
    c = np.kron(a, np.ones((2, 2, 1)))[:, :72]  # 60x72 and 100x64: larger sizes (Qwen3-VL's 32-px factor)
    d = np.kron(b, np.ones((2, 2, 1)))[:100, :64]
    for name, x in zip(IMAGE_FILES, (a, b, c, d, e)):
        x = np.clip(x + rng.randint(-40, 41, x.shape), 0, 255).astype(np.uint8)
        p = os.path.join(IMAGES, name)
        Image.fromarray(x, "RGB").save(p, optimize=True)
        paths.append(p)
    return paths


def phi4mm_image_processor(model_dir):
    """Phi4MultimodalImageProcessorFast from model_dir, its torchvision.transforms.v2 calls supplied."""
    import types
    import torchvision.transforms.functional as F1
    sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
    import test_image_preprocess as tip
    v2f = types.ModuleType("torchvision.transforms.v2.functional")
    for k in dir(F1):
        setattr(v2f, k, getattr(F1, k))

    def resize(img, size, interpolation=F1.InterpolationMode.BILINEAR, antialias=True, **kw):
        if img.dtype == torch.uint8:  # [3, H, W] uint8, bilinear, antialiased (v2's default)
            assert interpolation == F1.InterpolationMode.BILINEAR and antialias
            hwc = img.permute(1, 2, 0).numpy()
            out = tip.resize_u8(hwc, int(size[1]), int(size[0]), 2, "torchvision")
            return torch.from_numpy(np.ascontiguousarray(out)).permute(2, 0, 1).contiguous()
        return F1.resize(img, list(size), interpolation=interpolation, antialias=antialias)

    def pad(img, padding, fill=0, **kw):
        if isinstance(fill, (list, tuple)):
            assert len(set(fill)) == 1
            fill = fill[0]
        return F1.pad(img, padding, fill=fill, **kw)

    v2f.resize, v2f.pad = resize, pad
    v2 = types.ModuleType("torchvision.transforms.v2")
    v2.functional = v2f
    sys.modules["torchvision.transforms.v2"], sys.modules["torchvision.transforms.v2.functional"] = v2, v2f
    import transformers.image_processing_utils_fast as ipf
    import transformers.image_utils as iu
    from transformers.image_utils import PILImageResampling as R
    M = {R.NEAREST: F1.InterpolationMode.NEAREST, R.BILINEAR: F1.InterpolationMode.BILINEAR,
         R.BICUBIC: F1.InterpolationMode.BICUBIC}
    ipf.pil_torch_interpolation_mapping = iu.pil_torch_interpolation_mapping = M
    ipf.F = v2f
    from transformers.models.phi4_multimodal.image_processing_phi4_multimodal_fast import \
        Phi4MultimodalImageProcessorFast
    return Phi4MultimodalImageProcessorFast.from_pretrained(model_dir)


def prompt_ids(fam, kind, model_dir, n_images, mode):
    """Logical ids (one placeholder per image) and the HF-expanded ids."""
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    if kind == "text":
        f = mktiny.FAMILIES[fam]
        tok = mktiny.train_tokenizer(f.tokenizer, extra_specials=f.extra_specials)
    elif kind == "phi4mm":
        f = mktiny.FAMILIES["phi3"]
        tok = mktiny.train_tokenizer(f.tokenizer, extra_specials=tuple(f.extra_specials) + mktiny.PHI4MM_SPECIALS)
        if mode == "audio":  # one clip: its placeholder between text (merge positions)
            text = "Listen: <|endoftext11|>\nSay it."  # 29 audio rows + 16 tokens stay under 64 (LongRoPE)
            return text, mktiny.encode(tok, text, add_special_tokens=True), cfg
        if n_images:  # images (and a clip) between text: over 64 rows, LongRoPE's long factors from the start
            text = "Look: " + " then ".join(["<|endoftext10|>"] * n_images) + \
                (" and listen: <|endoftext11|>" if mode == "image_audio" else "") + "\nSay it."
            return text, mktiny.encode(tok, text, add_special_tokens=True), cfg
    elif kind == "llava":
        text = cfg["text_config"]["model_type"]
        f = mktiny.FAMILIES[text]
        tok = mktiny.train_tokenizer(f.tokenizer, extra_specials=tuple(f.extra_specials) + ("<image>",))
    elif kind == "gemma3":
        f = mktiny.FAMILIES["gemma3_text"]
        tok = mktiny.train_tokenizer(f.tokenizer, extra_specials=f.extra_specials)
    elif kind == "gemma3n":
        tok, _ = mktiny.gemma3n_tokenizer()
        if mode in ("audio", "2audio", "1img", "2img", "image_audio"):  # the text Gemma3nProcessor receives, and
            # omnic's logical prompt: its rewrite with one soft token per item (the merge expands each)
            n = 2 if mode == "2audio" else 1
            hf_text = "Listen: " + " then ".join(["<audio_soft_token>"] * n) + "\nSay it."
            if mode in ("1img", "2img"):
                hf_text = "Look: " + " then ".join(["<image_soft_token>"] * n_images) + "\nSay it."
            if mode == "image_audio":
                hf_text = "Look: <image_soft_token> and listen: <audio_soft_token>\nSay it."
            text = hf_text.replace("<audio_soft_token>", "\n\n<start_of_audio><audio_soft_token><end_of_audio>\n\n")
            text = text.replace("<image_soft_token>", "\n\n<start_of_image><image_soft_token><end_of_image>\n\n")
            return hf_text, mktiny.encode(tok, text, add_special_tokens=True), cfg
        # text with two multimodal ids (hard embeddings: eoi of the vision ids, eoa of the audio ids)
        ids = mktiny.encode(tok, TEXT, add_special_tokens=True)
        ids = ids[:4] + [cfg["eoi_token_id"], cfg["eoa_token_id"]] + ids[4:]
        return TEXT, ids, cfg
    else:
        tok = mktiny.train_tokenizer("qwen2", extra_specials=mktiny.QWEN2VL_SPECIALS)
    if kind == "gemma3":
        # the text Gemma3Processor receives (one <start_of_image> per image) and the logical
        # prompt omnic runs: Gemma3Processor's rewrite with one <image_soft_token> per image
        hf_text = ("Look: " + " then ".join(["<start_of_image>"] * n_images) + "\n" if n_images else "") + TEXT
        text = hf_text.replace("<start_of_image>", "\n\n<start_of_image><image_soft_token><end_of_image>\n\n")
        ids = mktiny.encode(tok, text, add_special_tokens=True)
        return hf_text, ids, cfg
    if kind not in ("text", "phi4mm"):  # text before, between and after the images (M-RoPE offsets, merge positions)
        ph = "<image>" if kind == "llava" else "<|vision_start|><|image_pad|><|vision_end|>"
        text = ("Look: " + " then ".join([ph] * n_images) + "\n" if n_images else "") + TEXT
    else:
        text = PHI3_PROMPTS.get(mode, TEXT)
    ids = mktiny.encode(tok, text, add_special_tokens=True)
    assert all(0 <= i < tok.size for i in ids)
    return text, ids, cfg


def load_model(kind, model_dir):
    cls = {"text": transformers.AutoModelForCausalLM, "llava": transformers.LlavaForConditionalGeneration,
           "qwen": None, "gemma3": transformers.Gemma3ForConditionalGeneration,
           "gemma3n": transformers.Gemma3nForConditionalGeneration,
           "phi4mm": transformers.Phi4MultimodalForCausalLM}[kind]
    config = transformers.AutoConfig.from_pretrained(model_dir)
    if kind == "qwen":
        cls = {"qwen2_vl": transformers.Qwen2VLForConditionalGeneration,
               "qwen2_5_vl": transformers.Qwen2_5_VLForConditionalGeneration,
               "qwen3_vl": transformers.Qwen3VLForConditionalGeneration,
               "qwen3_vl_moe": transformers.Qwen3VLMoeForConditionalGeneration}[config.model_type]
    config._attn_implementation = "eager"
    for sub in ("text_config", "vision_config", "audio_config"):
        if getattr(config, sub, None) is not None:
            getattr(config, sub)._attn_implementation = "eager"
    torch.manual_seed(0)
    # bf16 checkpoints: upcast to float32 exactly (omnic computes in f32 with the stored weights)
    model = cls.from_pretrained(model_dir, config=config, torch_dtype=torch.float32, attn_implementation="eager")
    model.eval()
    return model


def text_layers(model, kind):
    inner = model.model
    return inner.layers if kind in ("text", "phi4mm") else inner.language_model.layers


def f32(t):
    return t.detach().to(torch.float32).cpu().numpy().astype(np.float32)


def run_case(name, fam, kind, dtype, n_images, mode, tmp, image_paths, only):
    out = os.path.join(GOLDEN, name)
    model_dir = os.path.join(tmp, f"{fam}-{dtype}")
    flags, _ = FAMILIES[fam]
    mk = ["tools/mktiny.py"] + flags + ["--dtype", dtype, "--seed", str(SEED), "--out", "DIR"]
    if not os.path.isdir(model_dir):
        subprocess.run([PY, os.path.join(ROOT, mk[0])] + mk[1:-1] + [model_dir], check=True,
                       stdout=subprocess.DEVNULL)
    text, ids, cfg = prompt_ids(fam, kind, model_dir, n_images, mode)
    model = load_model(kind, model_dir)
    stages = {}
    if fam.startswith("qwen3_vl"):  # patch 16 x merge 2: images of at least 32 px a side (the larger pair)
        image_paths = image_paths[2:]
    if kind == "phi4mm":  # e.png (2x2 HD crops with padding), then a.png (one crop, 8 padded patch rows)
        image_paths = [image_paths[4], image_paths[0]]
    images = [Image.open(p).convert("RGB") for p in image_paths[:n_images]]
    inputs = {}
    hf_ids = list(ids)
    proc_name = None
    if kind == "llava" and n_images:
        pc = "clip" if cfg["vision_config"]["model_type"] == "clip_vision_model" else "siglip"
        proc_cls = transformers.CLIPImageProcessor if pc == "clip" else transformers.SiglipImageProcessor
        proc_name = proc_cls.__name__
        proc = proc_cls.from_pretrained(model_dir)
        pv = proc(images=images, return_tensors="pt")["pixel_values"]
        inputs["pixel_values"] = pv
        for i in range(n_images):
            stages[f"pixel_values{'_' + str(i) if n_images > 1 else ''}"] = f32(pv[i])
        image_id, n_rows = cfg["image_token_index"], cfg["image_seq_length"]
        hf_ids = []
        for t in ids:  # LlavaProcessor: each <image> becomes image_seq_length copies
            hf_ids += [t] * n_rows if t == image_id else [t]
    elif kind == "qwen" and n_images:
        proc = transformers.Qwen2VLImageProcessor.from_pretrained(model_dir)
        proc_name = type(proc).__name__
        r = proc(images=images, return_tensors="pt")
        pv, grid = r["pixel_values"], r["image_grid_thw"]
        inputs["pixel_values"], inputs["image_grid_thw"] = pv, grid
        stages["image_grid_thw"] = grid.numpy().astype(np.int32)
        off = 0
        for i in range(n_images):
            n = int(grid[i].prod())
            stages[f"pixel_values{'_' + str(i) if n_images > 1 else ''}"] = f32(pv[off:off + n])
            off += n
        image_id, merge = cfg["image_token_id"], cfg["vision_config"]["spatial_merge_size"]
        hf_ids, k = [], 0
        for t in ids:  # Qwen2VLProcessor: each <|image_pad|> becomes grid.prod() / merge^2 copies
            if t == image_id:
                hf_ids += [t] * (int(grid[k].prod()) // (merge * merge))
                k += 1
            else:
                hf_ids.append(t)
    elif kind == "gemma3":
        # Gemma3Processor (processing_gemma3.py) without its tokenizer (the oracle has no
        # `tokenizers`): the slow PIL Gemma3ImageProcessor for pixel_values, its text rule
        # (each boi token -> "\n\n" boi + image_seq_length soft tokens + eoi "\n\n") tokenized
        # by mktiny's tokenizer (checked against HF's in the tokenizer conformance tests), and
        # token_type_ids = (ids == image_token_id) as it returns them
        n_rows = cfg["mm_tokens_per_image"]
        full = "\n\n<start_of_image>" + "<image_soft_token>" * n_rows + "<end_of_image>\n\n"
        tok = mktiny.train_tokenizer("gemma", extra_specials=mktiny.FAMILIES["gemma3_text"].extra_specials)
        num_crops = [0] * n_images
        if n_images:  # (the image processor reads the checkpoint's pan-and-scan settings)
            proc = transformers.Gemma3ImageProcessor.from_pretrained(model_dir)
            proc_name = type(proc).__name__
            r = proc(images=images, return_tensors="pt")
            pv = r["pixel_values"]
            num_crops = [int(c) for c in r["num_crops"]]
            inputs["pixel_values"] = pv
            off = 0
            for i in range(n_images):  # each image with its crops after it
                k = 1 + num_crops[i]
                stages[f"pixel_values{'_' + str(i) if n_images > 1 else ''}"] = f32(pv[off] if k == 1 else pv[off:off + k])
                off += k
        if any(num_crops):  # Gemma3Processor's pan-and-scan text, image by image (processing_gemma3.py)
            pieces = text.split("<start_of_image>")
            text = pieces[0]
            for i, rest in enumerate(pieces[1:]):
                k = num_crops[i]
                text += ("Here is the original image <start_of_image> and here are some crops to help you see better "
                         + " ".join(["<start_of_image>"] * k) if k else "<start_of_image>") + rest
            hf_text = text
            logical = text.replace("<start_of_image>", "\n\n<start_of_image><image_soft_token><end_of_image>\n\n")
            ids = mktiny.encode(tok, logical, add_special_tokens=True)
        hf_ids = mktiny.encode(tok, text.replace("<start_of_image>", full), add_special_tokens=True)
        image_id = cfg["image_token_index"]
        inputs["token_type_ids"] = torch.tensor([[int(t == image_id) for t in hf_ids]], dtype=torch.long)
        want = []
        for t in ids:  # omnic's logical prompt, each placeholder expanded: must be HF's ids
            want += [t] * n_rows if t == image_id else [t]
        assert want == hf_ids, f"{name}: logical prompt expands to {want}, the processor's text gives {hf_ids}"
    caps = {}
    audio_files = []
    if kind == "gemma3n" and n_images:
        # the slow (PIL) SiglipImageProcessor: the oracle cannot run the torchvision one (the test asks
        # omnic for the same numerics, meta.json image_processor_note); Gemma3nProcessor's text rule for
        # images (each <image_soft_token> -> "\n\n" boi + 256 soft tokens + eoi "\n\n")
        proc = transformers.SiglipImageProcessor.from_pretrained(model_dir)
        proc_name = type(proc).__name__
        pv = proc(images=images, return_tensors="pt")["pixel_values"]
        inputs["pixel_values"] = pv
        for i in range(n_images):
            stages["pixel_values" + ("" if n_images == 1 and mode != "image_audio" else f"_{i}")] = f32(pv[i])
        n_rows = cfg["vision_soft_tokens_per_image"]
        full = "\n\n<start_of_image>" + "<image_soft_token>" * n_rows + "<end_of_image>\n\n"
        text = text.replace("<image_soft_token>", full)
        tok, _ = mktiny.gemma3n_tokenizer()
        hf_ids = mktiny.encode(tok, text.replace("<audio_soft_token>", "\n\n<start_of_audio>" + "<audio_soft_token>" *
                                                 cfg["audio_soft_tokens_per_image"] + "<end_of_audio>\n\n"),
                               add_special_tokens=True)
        caps["vision_out"] = []
        model.model.vision_tower.register_forward_hook(  # (a copy: get_image_features scales it in place)
            lambda m, a, o: caps["vision_out"].append(o.last_hidden_state.clone()))
    if kind == "gemma3n" and mode in ("audio", "2audio", "image_audio"):
        # Gemma3nProcessor without its tokenizer: the real Gemma3nAudioFeatureExtractor on the clips as
        # libsndfile reads them (16-bit PCM / 32768; the clips of one prompt have one length, so the
        # batch's padding is each clip's own), its text rule (each <audio_soft_token> -> "\n\n" boa +
        # 188 soft tokens + eoa "\n\n") tokenized by mktiny's tokenizer
        import wave
        audio_files = [os.path.join(GOLDEN, "gemma3n_audio", "model", c) for c in
                       (("clip_a.wav", "clip_b.wav") if mode == "2audio" else ("clip_a.wav",))]
        clips = []
        for wav in audio_files:
            with wave.open(wav) as w:
                clips.append(np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / np.float32(32768))
        fe = transformers.Gemma3nAudioFeatureExtractor.from_pretrained(model_dir)
        feats = fe(clips, return_tensors="pt")
        inputs["input_features"] = feats["input_features"]
        inputs["input_features_mask"] = feats["input_features_mask"]
        for i in range(len(clips)):
            stages["input_features" + ("" if len(clips) + n_images == 1 else f"_{n_images + i}")] = \
                f32(feats["input_features"][i])
        n_rows = cfg["audio_soft_tokens_per_image"]
        full = "\n\n<start_of_audio>" + "<audio_soft_token>" * n_rows + "<end_of_audio>\n\n"
        tok, _ = mktiny.gemma3n_tokenizer()
        hf_ids = mktiny.encode(tok, text.replace("<audio_soft_token>", full), add_special_tokens=True)
        audio_id = cfg["audio_token_id"]
        want = []
        for t in ids:  # omnic's logical prompt, each placeholder expanded: must be HF's ids
            want += [t] * n_rows if t == audio_id else [t] * cfg["vision_soft_tokens_per_image"] \
                if t == cfg["image_token_id"] else [t]
        assert want == hf_ids, f"{name}: logical prompt expands to {want}, the processor's text gives {hf_ids}"
        caps["audio_out"] = []  # the tower's output per forward (its padded rows zeroed)
        model.model.audio_tower.register_forward_hook(lambda m, a, o: caps["audio_out"].append(o[0]))
    if kind == "phi4mm" and n_images:
        # Phi4MultimodalImageProcessorFast itself, with torchvision.transforms.v2's two primitives it
        # calls supplied here (Debian's torchvision 0.14 has no v2): the uint8 antialiased bilinear
        # resize by tests/e2e/test_image_preprocess.py's numpy port of ATen's uint8 kernel (what
        # torch >= 2.1 runs), the float bicubic (antialias=False) by torch's own interpolate
        proc = phi4mm_image_processor(model_dir)
        proc_name = type(proc).__name__ + " (v2 resize: numpy ATen-uint8 port / torch interpolate)"
        r = proc(images=images, return_tensors="pt")
        inputs["image_pixel_values"] = r["image_pixel_values"]
        inputs["image_sizes"] = r["image_sizes"]
        inputs["image_attention_mask"] = r["image_attention_mask"]
        counts = [int(c) for c in r["num_img_tokens"]]
        for i in range(n_images):
            h, w = [int(v) for v in r["image_sizes"][i]]
            crops = 1 + (h // 448) * (w // 448)
            stages[f"pixel_values{'_' + str(i) if n_images > 1 or mode == 'image_audio' else ''}"] = \
                f32(r["image_pixel_values"][i, :crops])
        image_id = cfg["vision_config"]["image_token_id"]
        hf_ids, k = [], 0
        for t in ids:
            if t == image_id:
                hf_ids += [t] * counts[k]
                k += 1
            else:
                hf_ids.append(t)
    if kind == "phi4mm" and mode in ("audio", "image_audio"):
        # the clip as libsndfile reads it (16-bit PCM / 32768), HF's feature extractor, the placeholder
        # expanded to audio_embed_sizes rows; the speech LoRA adapter on every forward (hooks: PEFT's
        # base(x) + lora_B(lora_A(x)) * alpha / r; HF's Phi4MultimodalForCausalLM has no routing)
        import wave
        wav = os.path.join(GOLDEN, "phi4mm_audio", "model", "clip.wav")
        audio_files = [wav]
        with wave.open(wav) as w:
            samples = np.frombuffer(w.readframes(w.getnframes()), "<i2").astype(np.float32) / np.float32(32768)
        fe = transformers.Phi4MultimodalFeatureExtractor.from_pretrained(model_dir)
        feats = fe(samples, sampling_rate=16000, return_tensors="pt")
        inputs["audio_input_features"] = feats["audio_input_features"]
        inputs["audio_embed_sizes"] = feats["audio_embed_sizes"]
        stages["input_features" + ("_1" if n_images else "")] = f32(feats["audio_input_features"][0])
        audio_id, rows = cfg["audio_config"]["audio_token_id"], int(feats["audio_embed_sizes"][0])
        src_ids = hf_ids if n_images else ids
        hf_ids = []
        for t in src_ids:
            hf_ids += [t] * rows if t == audio_id else [t]
        model.model.embed_tokens_extend.audio_embed.encoder.config._attn_implementation = "eager"
    if kind == "phi4mm" and (n_images or mode == "audio"):
        # the mode's LoRA adapter on every forward (hooks: PEFT's base(x) + lora_B(lora_A(x)) * alpha / r;
        # HF's Phi4MultimodalForCausalLM has no routing): vision with an image, else speech
        from safetensors.torch import load_file
        ad = os.path.join(model_dir, "vision-lora" if n_images else "speech-lora")
        lw = load_file(os.path.join(ad, "adapter_model.safetensors"))
        ac = json.load(open(os.path.join(ad, "adapter_config.json")))
        scale = ac["lora_alpha"] / ac["r"]
        for li, layer in enumerate(model.model.layers):
            for mod_name, mod in (("self_attn.qkv_proj", layer.self_attn.qkv_proj), ("self_attn.o_proj", layer.self_attn.o_proj),
                                  ("mlp.gate_up_proj", layer.mlp.gate_up_proj), ("mlp.down_proj", layer.mlp.down_proj)):
                base = f"base_model.model.model.layers.{li}.{mod_name}"
                A = lw[base + ".lora_A.weight"].to(torch.float32)
                B = lw[base + ".lora_B.weight"].to(torch.float32)
                mod.register_forward_hook(lambda m, a, o, A=A, B=B: o + ((a[0] @ A.T) @ B.T) * scale)
            # the adapter-adjusted q / k / v (qkv_proj's output, after the LoRA hook) and MLP output
            qd = cfg["num_attention_heads"] * (cfg["hidden_size"] // cfg["num_attention_heads"])
            kvd = cfg["num_key_value_heads"] * (cfg["hidden_size"] // cfg["num_attention_heads"])

            def qkv_tap(m, a, o, li=li):  # (returns None: a hook's value would replace the output)
                caps.setdefault(f"q_l{li}", o[..., :qd])
                caps.setdefault(f"k_l{li}", o[..., qd:qd + kvd])
                caps.setdefault(f"v_l{li}", o[..., qd + kvd:])

            def mlp_tap(m, a, o, li=li):
                caps.setdefault(f"mlp_l{li}", o)
            layer.self_attn.qkv_proj.register_forward_hook(qkv_tap)
            layer.mlp.register_forward_hook(mlp_tap)
    input_ids = torch.tensor([hf_ids], dtype=torch.long)
    attn = torch.ones_like(input_ids)

    # hooks: decoder input, layer outputs, vision features and projector/merger output
    hooks = []
    layers = text_layers(model, kind)

    def pre0(mod, args):
        caps.setdefault("inputs_embeds", args[0])

    hooks.append(layers[0].register_forward_pre_hook(pre0))
    for li, layer in enumerate(layers):  # mixture of experts: the router's logits and each row's experts
        gate = getattr(getattr(layer, "mlp", None), "gate", None)
        if isinstance(gate, torch.nn.Linear) and hasattr(layer.mlp, "experts"):
            def moe(mod, args, output, li=li, block=layer.mlp):
                caps.setdefault(f"router_logits_l{li}", output)
                p = torch.softmax(output.float(), dim=-1)
                caps.setdefault(f"experts_l{li}", torch.sort(torch.topk(p, block.top_k, dim=-1).indices, -1).values)
            hooks.append(gate.register_forward_hook(moe))
    for li, layer in enumerate(layers):
        def post(mod, args, output, li=li):
            caps.setdefault(f"hidden_l{li}", output[0] if isinstance(output, tuple) else output)
        hooks.append(layer.register_forward_hook(post))
    if kind == "llava" and n_images:
        proj = model.model.multi_modal_projector
        hooks.append(proj.register_forward_pre_hook(lambda m, a: caps.setdefault("vf", a[0])))
        hooks.append(proj.register_forward_hook(lambda m, a, o: caps.setdefault("proj", o)))
    if kind == "gemma3" and n_images:
        proj = model.model.multi_modal_projector
        hooks.append(proj.register_forward_pre_hook(lambda m, a: caps.setdefault("vf", a[0])))
        hooks.append(proj.register_forward_hook(lambda m, a, o: caps.setdefault("proj", o)))
    if kind == "phi4mm" and n_images:  # hidden_states[feature_layer] per crop, and each image's projected rows
        emb = model.model.embed_tokens_extend.image_embed
        vl = emb.img_processor.encoder.layers[emb.layer_idx] if emb.layer_idx >= 0 else \
            emb.img_processor.encoder.layers[len(emb.img_processor.encoder.layers) + emb.layer_idx]
        hooks.append(vl.register_forward_hook(lambda m, a, o: caps.setdefault("vf", o[0] if isinstance(o, tuple) else o)))
        caps["proj_list"] = []
        hooks.append(emb.img_projection_down.register_forward_hook(lambda m, a, o: caps["proj_list"].append(o)))
    patched = []  # (layer, its forward): the masks each layer kind gets (eager: additive, 0 visible)
    if kind == "gemma3":  # (torch 1.13 has no kwargs pre-hooks: the first layer of each kind is wrapped)
        types = model.config.text_config.layer_types
        for kind_name in ("full_attention", "sliding_attention"):
            layer = layers[types.index(kind_name)]

            def wrapped(*a, _orig=layer.forward, _key=kind_name, **k):
                caps.setdefault("mask_" + _key, k["attention_mask"])
                return _orig(*a, **k)
            patched.append((layer, layer.forward))
            layer.forward = wrapped
    if kind == "qwen" and n_images:
        vis = model.model.visual
        hooks.append(vis.merger.register_forward_pre_hook(lambda m, a: caps.setdefault("vf", a[0])))
        def vis_out(m, a, o):  # Qwen3-VL returns (rows, DeepStack features); None keeps the output
            caps.setdefault("proj", o[0] if isinstance(o, tuple) else o)
            if isinstance(o, tuple):
                caps.setdefault("deepstack", o[1])
        hooks.append(vis.register_forward_hook(vis_out))
    if kind == "gemma3n":  # the per-layer embeddings of the merged rows (Gemma3nTextModel's [T, L, P])
        lm = model.model.language_model
        proj_ple = lm.project_per_layer_inputs

        def ple_tap(*a, _orig=proj_ple, **k):
            out = _orig(*a, **k)
            caps.setdefault("per_layer_inputs", out.detach().clone())
            return out
        lm.project_per_layer_inputs = ple_tap
    # Gemma 3n's KV sharing only happens through a cache (use_cache=False makes the shared layers
    # compute their own K/V: families-gemma-phi.md B7.3): its forwards run with a fresh cache
    cache = fam.startswith("gemma3n")
    with torch.no_grad():
        res = model(input_ids=input_ids, attention_mask=attn, use_cache=cache, **inputs)
    for h in hooks:
        h.remove()
    for layer, fwd in patched:
        layer.forward = fwd
    T = len(hf_ids)
    # Gemma 3n layers take and return the AltUp streams [n, 1, T, H]: stream 0 is compared
    # (the embeddings before the first layer; the streams feed every later stage)
    first = (lambda t: t[0][0]) if cache else (lambda t: t[0])
    stages["inputs_embeds"] = f32(first(caps["inputs_embeds"]))
    if "per_layer_inputs" in caps:
        ple = caps["per_layer_inputs"][0]
        stages["per_layer_inputs"] = f32(ple.reshape(ple.shape[0], -1))
    for li in range(len(layers)):
        for tap in ("q", "k", "v", "mlp"):  # Phi-4-multimodal with an adapter: its adjusted projections
            if f"{tap}_l{li}" in caps:
                stages[f"{tap}_l{li}"] = f32(caps[f"{tap}_l{li}"][0])
        stages[f"hidden_l{li}"] = f32(first(caps[f"hidden_l{li}"]))
        if f"router_logits_l{li}" in caps:
            stages[f"router_logits_l{li}"] = f32(caps[f"router_logits_l{li}"].reshape(T, -1))
            stages[f"experts_l{li}"] = caps[f"experts_l{li}"].reshape(T, -1).numpy().astype(np.int32)
    logits = res.logits[0]
    stages["prefill_logits"] = f32(logits[-1:])
    if kind == "phi4mm" and mode in ("audio", "image_audio"):  # the clip's rows in the decoder input
        audio_id = cfg["audio_config"]["audio_token_id"]
        where = [i for i, t in enumerate(hf_ids) if t == audio_id]
        # with an image the clip takes the vision-speech projection (omnic's side output vision_speech)
        stages["vision_speech_1" if n_images else "projected"] = stages["inputs_embeds"][where[0]:where[-1] + 1]
    if kind == "gemma3n" and n_images:  # the fusion's rows [256, 2048] and the 256 merged rows
        image_id, n_rows = cfg["image_token_id"], cfg["vision_soft_tokens_per_image"]
        where = [i for i, t in enumerate(hf_ids) if t == image_id]
        vo = caps["vision_out"][0]
        for i in range(n_images):
            s = "" if n_images == 1 and mode != "image_audio" else f"_{i}"
            stages["vision_features" + s] = np.ascontiguousarray(f32(vo[i].reshape(vo.shape[1], -1).T))
            stages["projected" + s] = stages["inputs_embeds"][where[i * n_rows]:where[i * n_rows + n_rows - 1] + 1]
    if kind == "gemma3n" and mode in ("audio", "2audio", "image_audio"):
        # per clip: the tower's output (padded rows zeroed) and the 188 rows the merge scatters (the
        # embedder's soft rows, then the padding embedding), as the decoder input holds them
        tower = f32(caps["audio_out"][0])  # [clips, n_a, audio hidden]
        audio_id = cfg["audio_token_id"]
        where = [i for i, t in enumerate(hf_ids) if t == audio_id]
        n_rows = cfg["audio_soft_tokens_per_image"]
        for i in range(tower.shape[0]):
            s = "" if tower.shape[0] + n_images == 1 else f"_{n_images + i}"
            stages["audio_features" + s] = tower[i]
            stages["projected" + s] = stages["inputs_embeds"][where[i * n_rows]:where[i * n_rows + n_rows - 1] + 1]
    if kind == "phi4mm" and n_images:
        vf = f32(caps["vf"])  # [images * max crops, patches, C]
        per = vf.shape[0] // n_images
        many = n_images > 1 or mode == "image_audio"
        for i in range(n_images):
            h, w = [int(v) for v in inputs["image_sizes"][i]]
            crops = 1 + (h // 448) * (w // 448)
            stages[f"vision_features{'_' + str(i) if many else ''}"] = vf[i * per:i * per + crops].reshape(-1, vf.shape[-1])
            stages[f"projected{'_' + str(i) if many else ''}"] = f32(caps["proj_list"][i][0])
    sfx = (lambda i: "") if n_images == 1 else (lambda i: f"_{i}")
    if kind == "gemma3" and n_images:
        vf, pj = f32(caps["vf"]), f32(caps["proj"])  # [n, patches, C], [n, rows, H]: every encoder input
        for i in range(vf.shape[0]):
            name_i = "" if vf.shape[0] == 1 else f"_{i}"
            stages[f"vision_features{name_i}"] = vf[i]
            stages[f"projected{name_i}"] = pj[i]
    if kind == "gemma3" and n_images:  # the effective masks (text only: plain causal, not compared)
        for key, stage in (("full_attention", "attn_mask_full"), ("sliding_attention", "attn_mask_sliding")):
            mask = caps["mask_" + key]
            stages[stage] = (mask[0, 0] == 0).numpy().astype(np.int32) if mask.dtype != torch.bool \
                else mask[0, 0].numpy().astype(np.int32)
    if kind == "llava" and n_images:
        vf, pj = f32(caps["vf"]), f32(caps["proj"])  # [n, rows, C], [n, rows, H]
        for i in range(n_images):
            stages[f"vision_features{sfx(i)}"] = vf[i]
            stages[f"projected{sfx(i)}"] = pj[i]
    if kind == "qwen" and n_images:
        vf, pj = caps["vf"], f32(caps["proj"])
        grid = inputs["image_grid_thw"]
        unit = cfg["vision_config"]["spatial_merge_size"] ** 2
        if cfg["model_type"] == "qwen2_5_vl":  # blocks run in window order: back to the processor's
            window_index, _ = model.model.visual.get_window_index(grid)
            rev = torch.argsort(window_index)
            vf = vf.reshape(vf.shape[0] // unit, unit, -1)[rev].reshape(vf.shape[0], -1)
        vf = f32(vf)
        off = 0
        for i in range(n_images):
            n = int(grid[i].prod())
            stages[f"vision_features{sfx(i)}"] = vf[off:off + n]
            stages[f"projected{sfx(i)}"] = pj[off // unit:(off + n) // unit]
            for k, ds in enumerate(caps.get("deepstack") or []):  # Qwen3-VL: merger k's rows of image i
                stages[f"deepstack_{k}{sfx(i)}"] = f32(ds)[off // unit:(off + n) // unit]
            off += n
    if kind == "qwen" and n_images and hasattr(model.model.visual, "fast_pos_embed_interpolate"):
        # Qwen3-VL: the learned position table interpolated to each grid (processor row order),
        # a host computation in omnic: compared by tests/unit/test_qvit_pos_embeds.c
        pe = f32(model.model.visual.fast_pos_embed_interpolate(inputs["image_grid_thw"]))
        off = 0
        for i in range(n_images):
            n = int(inputs["image_grid_thw"][i].prod())
            stages[f"pos_embeds{sfx(i)}"] = pe[off:off + n]
            off += n
    if kind == "qwen":
        pos, delta = model.model.get_rope_index(input_ids, inputs.get("image_grid_thw"), None, attention_mask=attn)
        stages["positions"] = pos[:, 0, :].numpy().astype(np.int32)
        rope_delta = int(delta.reshape(-1)[0])
    else:
        stages["positions"] = np.arange(T, dtype=np.int32)
        rope_delta = None

    # greedy tokens: the checkpoint's generation_config with sampling off and EOS not stopping
    gc = copy.deepcopy(model.generation_config)
    gc_file = gc.to_dict()
    gc.do_sample, gc.repetition_penalty, gc.max_new_tokens, gc.min_new_tokens = False, 1.0, N_GEN, None
    gc.temperature, gc.top_k, gc.top_p = None, None, None
    gc.eos_token_id = None
    with torch.no_grad():
        seq = model.generate(input_ids=input_ids, attention_mask=attn, generation_config=gc, use_model_defaults=False,
                             **inputs)
    gen_generate = seq[0, T:].tolist()
    assert len(gen_generate) == N_GEN, f"{name}: generate returned {len(gen_generate)} tokens"
    # the same greedy tokens by one causal forward over the whole sequence per step (no cache)
    gen = []
    with torch.no_grad():
        for _ in range(N_GEN):
            x = torch.tensor([hf_ids + gen], dtype=torch.long)
            extra = {}
            if kind == "gemma3":  # generated tokens are text (token type 0)
                extra["token_type_ids"] = torch.cat([inputs["token_type_ids"],
                                                     torch.zeros((1, len(gen)), dtype=torch.long)], 1)
            if kind == "qwen":  # M-RoPE: generated token j at coordinate T + j + rope_delta on every axis
                tail = torch.arange(T, T + len(gen), dtype=torch.long) + rope_delta
                extra["position_ids"] = torch.cat([pos[:, 0, :], tail[None].expand(3, -1)], 1)[:, None, :]
            kw = {k: v for k, v in inputs.items() if k not in extra}
            gen.append(int(model(input_ids=x, attention_mask=torch.ones_like(x), use_cache=cache, **kw,
                                 **extra).logits[0, -1].argmax()))
    generate_note = None
    if mode == "cross":
        # transformers 4.57.6 (and 5.2.0) Phi3ForCausalLM.prepare_inputs_for_generation drops the cache when
        # the sequence first reaches original_max_position_embeddings + 1 and recomputes it, but the generic
        # prepare_inputs_for_generation keeps cache_position = [64] (one entry) for that 65-token forward,
        # so create_causal_mask builds a [1, 1, 1, 65] mask: the recompute is bidirectional and the K/V
        # of every layer after the first are not causal. The golden is the causal semantics HF intends
        # (one forward over tokens 0..p for the row at position p); generate()'s own tokens are kept in
        # generated_hf_generate.npy and not compared.
        stages["generated_hf_generate"] = np.array(gen_generate, np.int32)
        generate_note = ("generated = greedy argmax of one causal forward per step; HF generate() differs from "
                         "the crossing step on (upstream bug: the cache recompute at 65 tokens runs with "
                         "cache_position [64] and a non-causal [1,1,1,65] mask): generated_hf_generate.npy, "
                         "not compared")
    else:
        assert gen == gen_generate, f"{name}: generate() {gen_generate} != full-forward greedy {gen}"
    stages["generated"] = np.array(gen, np.int32)
    stages["tokens"] = np.array(ids, np.int32)
    stages["input_ids_hf"] = np.array(hf_ids, np.int32)

    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    for k, v in stages.items():
        np.save(os.path.join(out, k + ".npy"), v)
    compared = [k for k in stages if k not in ("input_ids_hf", "generated_hf_generate") and
                not k.startswith("pos_embeds")]
    meta = {
        "case": name,
        "family": fam,
        "hf_class": type(model).__name__,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "attn_implementation": "eager",
        "device": "cpu",
        "command": "PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/make_goldens.py" +
                   (f" --only {only}" if only else ""),
        "mktiny": {"command": " ".join(mk), "flags": flags, "seed": SEED, "dtype": dtype},
        "dtype_note": ("bf16 checkpoint: HF runs it with torch_dtype=float32 (weights upcast exactly), because "
                       "omnic computes in float32 with the stored bf16 weights widened exactly") if dtype == "bf16"
                      else "f32 checkpoint, float32 compute",
        "prompt_text": text,
        "prompt_ids": ids,
        "input_ids_hf": hf_ids,
        "images": [os.path.relpath(p, ROOT) for p in image_paths[:n_images]],
        "audios": [os.path.relpath(p, ROOT) for p in audio_files],
        "image_processor": proc_name,
        "image_processor_note": ("HF's slow (PIL) Qwen2VLImageProcessor: the test sets the scratch checkpoint's "
                                 "image_processor_type to Qwen2VLImageProcessorPil so omnic takes the same PIL path "
                                 "(transformers 4.5x would pick the torchvision one, which cannot run here)")
                                if kind == "qwen" and n_images else
                                ("HF's slow (PIL) SiglipImageProcessor: the test sets the scratch checkpoint's "
                                 "image_processor_type to SiglipImageProcessor so omnic takes the same PIL path "
                                 "(the checkpoint's SiglipImageProcessorFast needs torchvision.v2, which cannot run here)")
                                if kind == "gemma3n" and n_images else None,
        "rope_delta": rope_delta,
        "generation": {"checkpoint_generation_config": gc_file, "do_sample": False, "repetition_penalty": 1.0,
                       "max_new_tokens": N_GEN, "eos_token_id": None, "use_model_defaults": False,
                       "note": generate_note or ("EOS does not stop generation (omnic run --ignore-eos); generate() "
                                                 "equals the greedy argmax of one causal forward per step (checked)")},
        "omnic_run": "omnic run -m DIR --tokens <prompt_ids> -n 16 --kv f32 --ignore-eos [--image FILE]... --dump D",
        "stages": compared,
        "host_stages": {k: "tests/unit/test_qvit_pos_embeds.c" for k in stages if k.startswith("pos_embeds")}
                       or None,
        "tolerances": phi4mm_tolerances(tolerances(compared)) if kind == "phi4mm" else tolerances(compared),
        "tolerance_rule": "max|omnic - hf| <= atol + rtol * max|hf|; exact stages compare bit for bit",
    }
    text_meta = json.dumps(meta, indent=1)  # numeric lists on one line each
    text_meta = re.sub(r"\[[-0-9,\s]*\]", lambda m: json.dumps(json.loads(m.group(0))), text_meta)
    with open(os.path.join(out, "meta.json"), "w") as f:
        f.write(text_meta + "\n")
    print(f"{name}: T={T}, generated {gen}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="only cases whose name contains this")
    args = ap.parse_args()
    torch.set_num_threads(1)
    image_paths = make_images()
    with tempfile.TemporaryDirectory() as tmp:
        for fam, (_, kind) in FAMILIES.items():
            for dtype in DTYPES:
                modes = [("text", 0)] if kind in ("text", "gemma3n", "phi4mm") else [("text", 0), ("1img", 1), ("2img", 2)]
                if fam == "gemma3_pas":
                    modes = [("2img", 2)]
                if fam == "phi3":
                    modes += [(m, 0) for m in PHI3_PROMPTS]
                if fam == "phi4mm":
                    modes += [("audio", 0), ("1img", 1), ("2img", 2), ("image_audio", 1)]
                if fam == "gemma3n":
                    modes += [("audio", 0), ("2audio", 0), ("1img", 1), ("2img", 2), ("image_audio", 1)]
                for mode, n_images in modes:
                    name = f"{fam}-{dtype}-{mode}"
                    if args.only and args.only not in name:
                        continue
                    run_case(name, fam, kind, dtype, n_images, mode, tmp, image_paths, args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
