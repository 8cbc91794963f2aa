#!/usr/bin/env python3
"""`omnic preprocess` against independent references, bit for bit.

Generates images of many sizes, aspect ratios and modes with Pillow (plus a small PNG writer for
what Pillow cannot write: 16-bit RGB/RGBA/LA, low-bit grey with tRNS, Adam7 interlace), then for
each image and processor config compares omnic's pixel_values (.npy) with:

* decode: Pillow's decoder + Hugging Face `load_image` (exif_transpose, convert("RGB"): alpha
  dropped; a config with every step off gives the decoded bytes as floats);
* PIL path: Hugging Face CLIPImageProcessor / SiglipImageProcessor re-implemented with numpy,
  Pillow's own Image.resize doing the resampling, rescale/normalise as image_transforms does;
* torchvision path: a numpy re-implementation of ATen's uint8 antialiased resize (int16 weights,
  per-axis precision), torchvision's round-half-even centre crop, and the fused rescale+normalise.
  Its resampling geometry is first checked against Pillow in a PIL-precision mode.

Every comparison must have max |diff| == 0. Run: OMNIC=build/release/omnic python3 this_file.
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np

try:
    from PIL import Image, ImageOps
except ImportError:
    sys.exit("FAIL: Pillow is not installed (python3-pil; run scripts/setup.sh)")

OMNIC = os.environ.get("OMNIC", "build/release/omnic")
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]
RESCALE = 0.00392156862745098

CONFIGS = {
    "raw": {"image_processor_type": "CLIPImageProcessor", "do_resize": False, "do_center_crop": False,
            "do_rescale": False, "do_normalize": False},
    "clip336": {"image_processor_type": "CLIPImageProcessor", "do_resize": True, "size": {"shortest_edge": 336},
                "resample": 3, "do_center_crop": True, "crop_size": {"height": 336, "width": 336},
                "do_rescale": True, "rescale_factor": RESCALE, "do_normalize": True, "image_mean": CLIP_MEAN,
                "image_std": CLIP_STD, "do_convert_rgb": True},
    "clip224_bilinear": {"image_processor_type": "CLIPImageProcessor", "size": {"shortest_edge": 224},
                         "resample": 2, "crop_size": {"height": 224, "width": 224}},
    "siglip384": {"image_processor_type": "SiglipImageProcessor", "do_resize": True,
                  "size": {"height": 384, "width": 384}, "resample": 3, "do_rescale": True,
                  "rescale_factor": RESCALE, "do_normalize": True, "image_mean": [0.5, 0.5, 0.5],
                  "image_std": [0.5, 0.5, 0.5]},
    "siglip224": {"image_processor_type": "SiglipImageProcessor", "size": {"height": 224, "width": 224},
                  "resample": 3, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]},
}


# ---- a minimal PNG writer -----------------------------------------------------------------------

def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _rows(arr, depth):
    """Serialises rows of arr ([H, W] or [H, W, C]) at the bit depth, each with filter byte 0."""
    out = b""
    for row in arr:
        if depth == 16:
            data = row.astype(">u2").tobytes()
        elif depth == 8:
            data = row.astype(np.uint8).tobytes()
        else:
            per = 8 // depth
            vals = list(row.reshape(-1))
            vals += [0] * (-len(vals) % per)
            data = bytes(sum(int(v) << (8 - depth * (k + 1)) for k, v in enumerate(vals[i:i + per]))
                         for i in range(0, len(vals), per))
        out += b"\0" + data
    return out


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def write_png(path, arr, color_type, depth, trns=None, interlace=False):
    h, w = arr.shape[:2]
    ihdr = struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, 1 if interlace else 0)
    if interlace:
        raw = b""
        for x0, y0, dx, dy in ADAM7:
            sub = arr[y0::dy, x0::dx]
            if sub.shape[0] and sub.shape[1]:
                raw += _rows(sub, depth)
    else:
        raw = _rows(arr, depth)
    body = _chunk(b"IHDR", ihdr)
    if trns is not None:
        body += _chunk(b"tRNS", trns)
    body += _chunk(b"IDAT", zlib.compress(raw, 9)) + _chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + body)


# ---- images ---------------------------------------------------------------------------------------

def pattern(w, h, seed, channels=3):
    """Smooth gradients, a sharp checkerboard and noise: every filter tap matters."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    out = []
    for c in range(channels):
        g = 127.5 + 90 * np.sin((x * (c + 1) / max(w, 1) + y / max(h, 1)) * 5 + c)
        g += np.where(((x // 7) + (y // 5)) % 2 == 0, 30, -30)
        g += rng.normal(0, 12, size=(h, w))
        out.append(np.clip(g, 0, 255))
    return np.stack(out, -1).astype(np.uint8)


def make_images(d):
    imgs = []

    def pil(name, im, **kw):
        p = os.path.join(d, name)
        im.save(p, **kw)
        imgs.append(p)

    rgb = lambda w, h, s: Image.fromarray(pattern(w, h, s))  # noqa: E731
    pil("rgb_640x480.png", rgb(640, 480, 1))
    pil("rgb_336x336.png", rgb(336, 336, 2))
    pil("rgb_336x339.png", rgb(336, 339, 3))  # crop offset 1.5: floor 1, round-half-even 2
    pil("rgb_343x336.png", rgb(343, 336, 4))  # 3.5: floor 3, round 4
    pil("rgb_1x1.png", rgb(1, 1, 5))
    pil("rgb_2x3.png", rgb(2, 3, 6))
    pil("rgb_7x5.png", rgb(7, 5, 7))
    pil("tall_60x1000.png", rgb(60, 1000, 8))
    pil("wide_1000x50.png", rgb(1000, 50, 9))
    pil("rgb_tRNS_120x80.png", rgb(120, 80, 10), transparency=(10, 20, 30))
    a = pattern(500, 300, 11, 4)
    a[:, :, 3] = np.linspace(0, 255, 500).astype(np.uint8)[None, :]  # includes 0 and 255
    a[:40, :, 3] = 0
    pil("rgba_partial_500x300.png", Image.fromarray(a, "RGBA"))
    pil("l_300x200.png", Image.fromarray(pattern(300, 200, 12, 1)[:, :, 0], "L"))
    pil("l_tRNS_90x70.png", Image.fromarray(pattern(90, 70, 13, 1)[:, :, 0], "L"), transparency=128)
    la = pattern(257, 129, 14, 2)
    pil("la_257x129.png", Image.fromarray(la, "LA"))
    q = rgb(200, 150, 15).quantize(64)
    pil("p_200x150.png", q)
    q2 = rgb(180, 240, 16).quantize(32)
    pil("p_tRNS_180x240.png", q2, transparency=bytes(range(0, 256, 8)))
    q3 = rgb(150, 100, 17).quantize(16)
    pil("p_tRNS1_150x100.png", q3, transparency=5)
    pil("gray16_I_100x90.png", Image.fromarray((pattern(100, 90, 18, 1)[:, :, 0].astype(np.uint16) * 3), "I;16"))
    pil("rgb_480x640.jpg", rgb(480, 640, 19), quality=90)
    pil("rgb_333x251_q75.jpg", rgb(333, 251, 20), quality=75)
    pil("rgb_progressive_400x300.jpg", rgb(400, 300, 21), quality=85, progressive=True)
    pil("rgb_444_200x100.jpg", rgb(200, 100, 22), quality=95, subsampling=0)
    pil("l_250x300.jpg", Image.fromarray(pattern(250, 300, 23, 1)[:, :, 0], "L"), quality=90)
    pil("cmyk_160x120.jpg", rgb(160, 120, 24).convert("CMYK"), quality=90)
    pil("webp_lossless_300x200.webp", rgb(300, 200, 25), lossless=True)
    wa = pattern(210, 190, 26, 4)
    wa[:, :, 3] = np.linspace(0, 255, 210).astype(np.uint8)[None, :]
    pil("webp_lossless_rgba_210x190.webp", Image.fromarray(wa, "RGBA"), lossless=True)
    pil("webp_lossy_320x240.webp", rgb(320, 240, 27), quality=80)
    pil("webp_lossy_rgba_200x120.webp", Image.fromarray(pattern(200, 120, 28, 4), "RGBA"), quality=80)

    def raw(name, arr, ct, depth, trns=None, interlace=False):
        p = os.path.join(d, name)
        write_png(p, arr, ct, depth, trns, interlace)
        imgs.append(p)

    rng = np.random.default_rng(29)
    big = lambda h, w, c: (pattern(w, h, int(rng.integers(1 << 30)), c).astype(np.uint16) * 257  # noqa: E731
                           + rng.integers(0, 257, size=(h, w, c))).astype(np.uint16)
    raw("rgb16_120x90.png", big(90, 120, 3), 2, 16)
    raw("rgba16_90x120.png", big(120, 90, 4), 6, 16)
    raw("la16_64x48.png", big(48, 64, 2), 4, 16)
    g16 = rng.integers(0, 700, size=(40, 50)).astype(np.uint16)
    g16[0, :5] = [0, 255, 256, 1000, 65535]
    raw("gray16_tRNS_50x40.png", g16, 0, 16, trns=struct.pack(">H", 200))
    g2 = rng.integers(0, 4, size=(33, 31)).astype(np.uint8)
    raw("gray2_tRNS_31x33.png", g2, 0, 2, trns=struct.pack(">H", 2))
    raw("gray1_20x10.png", rng.integers(0, 2, size=(10, 20)).astype(np.uint8), 0, 1)
    raw("rgb_adam7_77x45.png", pattern(77, 45, 30), 2, 8, interlace=True)
    raw("rgba_adam7_30x50.png", pattern(30, 50, 31, 4), 6, 8, interlace=True)
    return imgs


# ---- Hugging Face semantics (PIL path) -------------------------------------------------------------

def load_image_rgb(image):
    """transformers.image_utils.load_image on an opened file: ImageOps.exif_transpose, then
    convert("RGB") (alpha dropped, not composited). The processors' convert_to_rgb (4.57.6: the
    same convert("RGB") for a non-RGB image) then leaves it as is."""
    return ImageOps.exif_transpose(image).convert("RGB")


def output_size(cfg, w, h):
    """(width, height) after the resize step (get_resize_output_image_size, default_to_square=False)."""
    if not cfg.get("do_resize", True):
        return w, h
    size = cfg["size"]
    if "shortest_edge" in size:
        n = size["shortest_edge"]
        short, long = (w, h) if w <= h else (h, w)
        new_long = int(n * long / short)
        return (n, new_long) if w <= h else (new_long, n)
    return size["width"], size["height"]


def hf_center_crop(arr, ch, cw):
    """image_transforms.center_crop on an HWC array (floor offsets, zero padding)."""
    oh, ow = arr.shape[:2]
    top, left = (oh - ch) // 2, (ow - cw) // 2
    if top >= 0 and top + ch <= oh and left >= 0 and left + cw <= ow:
        return arr[top:top + ch, left:left + cw]
    nh, nw = max(ch, oh), max(cw, ow)
    new = np.zeros((nh, nw) + arr.shape[2:], dtype=arr.dtype)
    tp, lp = math.ceil((nh - oh) / 2), math.ceil((nw - ow) / 2)
    new[tp:tp + oh, lp:lp + ow] = arr
    top, left = top + tp, left + lp
    return new[max(0, top):min(nh, top + ch), max(0, left):min(nw, left + cw)]


def tv_center_crop(arr, ch, cw):
    """torchvision center_crop: pad floor((crop - size) / 2) first, then round((size - crop) / 2)."""
    oh, ow = arr.shape[:2]
    if ch > oh or cw > ow:
        pt, pl = (ch - oh) // 2 if ch > oh else 0, (cw - ow) // 2 if cw > ow else 0
        pb, pr = (ch - oh + 1) // 2 if ch > oh else 0, (cw - ow + 1) // 2 if cw > ow else 0
        arr = np.pad(arr, ((pt, pb), (pl, pr), (0, 0)))
        oh, ow = arr.shape[:2]
    top, left = int(round((oh - ch) / 2.0)), int(round((ow - cw) / 2.0))
    return arr[top:top + ch, left:left + cw]


def pil_normalize(arr, cfg):
    """image_transforms.rescale (float64 multiply, cast to float32) then normalize (float32)."""
    x = arr
    if cfg.get("do_rescale", True):
        x = (x.astype(np.float64) * cfg.get("rescale_factor", RESCALE)).astype(np.float32)
    else:
        x = x.astype(np.float32)
    if cfg.get("do_normalize", True):
        mean = np.array(cfg.get("image_mean", CLIP_MEAN), dtype=np.float32)
        std = np.array(cfg.get("image_std", CLIP_STD), dtype=np.float32)
        x = (x - mean) / std
    return x.astype(np.float32)


def tv_normalize(arr, cfg):
    """Fused rescale + normalize of the fast processors (torch float32 arithmetic)."""
    x = arr.astype(np.float32)
    rescale, norm = cfg.get("do_rescale", True), cfg.get("do_normalize", True)
    rf = cfg.get("rescale_factor", RESCALE)
    if rescale and norm:
        inv = np.float32(1.0 / rf)
        mean = np.array(cfg.get("image_mean", CLIP_MEAN), dtype=np.float32) * inv
        std = np.array(cfg.get("image_std", CLIP_STD), dtype=np.float32) * inv
        x = (x - mean) / std
    elif rescale:
        x = x * np.float32(rf)
    elif norm:
        x = (x - np.array(cfg["image_mean"], dtype=np.float32)) / np.array(cfg["image_std"], dtype=np.float32)
    return x.astype(np.float32)


# ---- separable uint8 resampling: Pillow precision (self-check) and ATen's int16 weights --------------

def _pil_cubic(x):
    a = -0.5
    x = abs(x)
    if x < 1.0:
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1
    if x < 2.0:
        return (((x - 5) * x + 8) * x - 4) * a
    return 0.0


def _aten_cubic(x):
    a = -0.5
    x = abs(x)
    if x < 1.0:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    if x < 2.0:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return 0.0


def _linear(x):
    x = abs(x)
    return 1.0 - x if x < 1.0 else 0.0


def axis_weights(n_in, n_out, resample, variant):
    """(xmin [out], int weights [out, k], precision) for one axis."""
    fn = _linear if resample == 2 else (_pil_cubic if variant == "pil" else _aten_cubic)
    fsupport = 1.0 if resample == 2 else 2.0
    scale = n_in / n_out
    filterscale = max(scale, 1.0)
    support = fsupport * filterscale
    ss = 1.0 / filterscale
    ksize = int(math.ceil(support)) * 2 + 1
    xmins = np.zeros(n_out, dtype=np.int64)
    wf = np.zeros((n_out, ksize))
    wmax = 0.0
    for i in range(n_out):
        center = (i + 0.5) * scale
        xmin = max(int(center - support + 0.5), 0)
        xmax = min(int(center + support + 0.5), n_in)
        n = min(max(xmax - xmin, 0), ksize)
        ws = [fn((j + xmin - center + 0.5) * ss) for j in range(n)]
        total = 0.0
        for v in ws:
            total += v
        if total != 0.0:
            ws = [v / total for v in ws]
            wmax = max([wmax] + ws)
        xmins[i] = xmin
        wf[i, :n] = ws
    if variant == "pil":
        prec = 22
    else:
        prec = 0
        while prec < 22 and int(0.5 + wmax * (1 << (prec + 1))) < (1 << 15):
            prec += 1
    scaled = wf * float(1 << prec)
    k = np.where(scaled < 0, np.trunc(scaled - 0.5), np.trunc(scaled + 0.5)).astype(np.int64)
    return xmins, k, prec


def resample_axis(arr, axis, n_out, resample, variant):
    n_in = arr.shape[axis]
    xmins, k, prec = axis_weights(n_in, n_out, resample, variant)
    src = np.moveaxis(arr, axis, 0).astype(np.int64)
    acc = np.full((n_out,) + src.shape[1:], 1 << (prec - 1), dtype=np.int64)
    for j in range(k.shape[1]):
        idx = np.minimum(xmins + j, n_in - 1)
        acc += src[idx] * k[:, j].reshape((-1,) + (1,) * (src.ndim - 1))
    out = np.clip(acc >> prec, 0, 255).astype(np.uint8)
    return np.moveaxis(out, 0, axis)


def resize_u8(arr, w, h, resample, variant):
    if arr.shape[1] != w:
        arr = resample_axis(arr, 1, w, resample, variant)
    if arr.shape[0] != h:
        arr = resample_axis(arr, 0, h, resample, variant)
    return arr


# ---- references ----------------------------------------------------------------------------------

def reference(rgb_img, cfg, variant, checks):
    arr = np.array(rgb_img)
    w, h = rgb_img.size
    ow, oh = output_size(cfg, w, h)
    resample = cfg.get("resample", 3)
    if variant == "pil":
        if cfg.get("do_resize", True):
            pil_out = np.array(rgb_img.resize((ow, oh), resample=resample))
            if (ow, oh) != (w, h) and max(w, h, ow, oh) <= 1200:
                mine = resize_u8(arr, ow, oh, resample, "pil")
                checks["pil_geometry"] += 1
                if not np.array_equal(mine, pil_out):
                    raise SystemExit(f"FAIL: reference resampler (PIL precision) differs from Pillow for "
                                     f"{w}x{h} -> {ow}x{oh} resample={resample}: the numpy geometry is wrong")
            arr = pil_out
        if cfg.get("do_center_crop", cfg.get("image_processor_type", "").startswith("CLIP")) and "crop_size" in cfg:
            arr = hf_center_crop(arr, cfg["crop_size"]["height"], cfg["crop_size"]["width"])
        out = pil_normalize(arr, cfg)
    else:
        if cfg.get("do_resize", True):
            arr = resize_u8(arr, ow, oh, resample, "aten")
        if cfg.get("do_center_crop", cfg.get("image_processor_type", "").startswith("CLIP")) and "crop_size" in cfg:
            arr = tv_center_crop(arr, cfg["crop_size"]["height"], cfg["crop_size"]["width"])
        out = tv_normalize(arr, cfg)
    return np.ascontiguousarray(out.transpose(2, 0, 1))


def main():
    if not os.path.exists(OMNIC):
        sys.exit(f"FAIL: {OMNIC} not found (set OMNIC)")
    failures = []
    compared = 0
    checks = {"pil_geometry": 0}
    with tempfile.TemporaryDirectory(prefix="omnic_img_") as d:
        images = make_images(d)
        cfg_paths = {}
        for name, cfg in CONFIGS.items():
            cfg_paths[name] = os.path.join(d, f"{name}.json")
            with open(cfg_paths[name], "w") as f:
                json.dump(cfg, f)
        for path in images:
            with Image.open(path) as im:
                rgb = load_image_rgb(im)
                rgb.load()
            for name, cfg in CONFIGS.items():
                for variant in (["pil"] if name == "raw" else ["pil", "torchvision"]):
                    out = os.path.join(d, "out.npy")
                    r = subprocess.run([OMNIC, "preprocess", "--image", path, "--config", cfg_paths[name],
                                        "--variant", variant, "--out", out], capture_output=True, text=True)
                    tag = f"{os.path.basename(path)} {name} {variant}"
                    if r.returncode != 0:
                        failures.append(f"{tag}: exit {r.returncode}: {r.stderr.strip()}")
                        continue
                    got = np.load(out)
                    want = reference(rgb, cfg, variant, checks)
                    compared += 1
                    if got.shape != want.shape or got.dtype != np.float32:
                        failures.append(f"{tag}: shape {got.shape} {got.dtype}, expected {want.shape} float32")
                        continue
                    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
                    if diff.max() != 0:
                        c, y, x = np.unravel_index(np.argmax(diff), diff.shape)
                        failures.append(f"{tag}: max |diff| {diff.max():.3g} at (c={c}, y={y}, x={x}): "
                                        f"got {got[c, y, x]!r}, want {want[c, y, x]!r}; "
                                        f"{int((diff > 0).sum())} of {diff.size} values differ")
        # Errors: unsupported format and a corrupt file exit non-zero with a message.
        gif = os.path.join(d, "x.gif")
        Image.fromarray(pattern(8, 8, 40)).save(gif)
        bad = os.path.join(d, "bad.png")
        with open(images[0], "rb") as f:
            data = f.read()
        with open(bad, "wb") as f:
            f.write(data[:len(data) // 2])
        for p, needle in ((gif, "GIF"), (bad, "PNG")):
            r = subprocess.run([OMNIC, "preprocess", "--image", p, "--config", cfg_paths["clip336"], "--out",
                                os.path.join(d, "e.npy")], capture_output=True, text=True)
            if r.returncode == 0 or needle not in r.stderr:
                failures.append(f"{os.path.basename(p)}: expected a failure naming {needle}, got exit "
                                f"{r.returncode}: {r.stderr.strip()}")
    if failures:
        print("\n".join("FAIL: " + f for f in failures))
        sys.exit(f"FAIL: {len(failures)} of {compared} comparisons differ or failed")
    print(f"image preprocess: {len(images)} images x {len(CONFIGS)} configs, {compared} comparisons "
          f"(PIL and torchvision paths) bit-identical; reference resampler matched Pillow "
          f"{checks['pil_geometry']} times")


if __name__ == "__main__":
    main()
