#!/usr/bin/python3
"""Goldens for images as Hugging Face loads them: EXIF orientation and the alpha rule.

Writes small input images (40x24 px) into tests/golden/image_loading/inputs/, small processor configs
into tests/golden/image_loading/configs/, and for every (image, config) the pixel_values that the real
transformers code gives for `load_image(path)` followed by the processor (CLIPImageProcessor and
Qwen2VLImageProcessor, the slow PIL path), into tests/golden/image_loading/pixel_values_<config>.npz
(one array per image; Qwen2-VL's image_grid_thw into meta.json), with the transformers and Pillow
versions and this command in meta.json. tests/e2e/test_image_loading.py compares `omnic
preprocess` against them with numpy only.

Not run in CI (it needs transformers). Run on the oracle machine:
  PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/make_image_goldens.py
"""
import io
import json
import os
import shutil
import struct
import sys
import warnings
import zlib

import numpy as np

import hfo_shim

hfo_shim.patch_transformers()
import PIL  # noqa: E402
import transformers  # noqa: E402
from PIL import Image, PngImagePlugin  # noqa: E402
from transformers import CLIPImageProcessor, Qwen2VLImageProcessor  # noqa: E402
from transformers.image_utils import load_image  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "golden", "image_loading")
W, H = 40, 24
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]

CONFIGS = {
    # The decoded, oriented RGB bytes (as floats): every other config builds on these.
    "raw": {"image_processor_type": "CLIPImageProcessor", "do_resize": False, "do_center_crop": False,
            "do_rescale": False, "do_normalize": False, "do_convert_rgb": True},
    # Resize by the shortest edge without a crop: the output shape shows the oriented size.
    "clip_nocrop": {"image_processor_type": "CLIPImageProcessor", "do_resize": True, "size": {"shortest_edge": 18},
                    "resample": 3, "do_center_crop": False, "do_rescale": True, "rescale_factor": 1 / 255,
                    "do_normalize": True, "image_mean": CLIP_MEAN, "image_std": CLIP_STD, "do_convert_rgb": True},
    "clip": {"image_processor_type": "CLIPImageProcessor", "do_resize": True, "size": {"shortest_edge": 20},
             "resample": 3, "do_center_crop": True, "crop_size": {"height": 16, "width": 16}, "do_rescale": True,
             "rescale_factor": 1 / 255, "do_normalize": True, "image_mean": CLIP_MEAN, "image_std": CLIP_STD,
             "do_convert_rgb": True},
    # Factor 8: 40x24 stays 40x24 (24x40 when rotated), grid [1, 6, 10] or [1, 10, 6].
    "qwen": {"image_processor_type": "Qwen2VLImageProcessor", "min_pixels": 64, "max_pixels": 1200,
             "patch_size": 4, "temporal_patch_size": 2, "merge_size": 2, "image_mean": CLIP_MEAN,
             "image_std": CLIP_STD, "do_convert_rgb": True},
    # max_pixels below 40 * 24: smart_resize shrinks, so the PIL resize runs.
    "qwen_resize": {"image_processor_type": "Qwen2VLImageProcessor", "min_pixels": 64, "max_pixels": 500,
                    "patch_size": 4, "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.5, 0.5, 0.5],
                    "image_std": [0.5, 0.5, 0.5], "do_convert_rgb": True},
}


# ---- image content -----------------------------------------------------------------------------

def pattern(channels=3, seed=0):
    """Gradients plus noise, every pixel different: any flip or rotation shows."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:H, 0:W]
    base = [x * 6, y * 10, (x * 3 + y * 7) % 256, 255 - x * 5]
    out = [np.clip(base[c] + rng.integers(-20, 21, size=(H, W)), 0, 255) for c in range(channels)]
    return np.stack(out, -1).astype(np.uint8)


def alpha_ramp(a):
    """Alpha over the columns from 0 to 255, with some rows fully transparent."""
    a = a.copy()
    a[:, :, -1] = np.linspace(0, 255, W).astype(np.uint8)[None, :]
    a[:3, :, -1] = 0
    return a


# ---- EXIF blobs ----------------------------------------------------------------------------------

def exif_pillow(orientation):
    e = Image.Exif()
    e[0x0112] = orientation
    return e.tobytes()


def tiff_ifd(entries, big_endian=False):
    """A TIFF header + IFD0 with entries (tag, type, count, value bytes), out-of-line values
    placed after the table. Returns the bytes (no "Exif" prefix)."""
    e = ">" if big_endian else "<"
    head = (b"MM\0*" if big_endian else b"II*\0") + struct.pack(e + "I", 8)
    table_end = 8 + 2 + 12 * len(entries) + 4
    table, extra = b"", b""
    for tag, typ, count, value in entries:
        if len(value) <= 4:
            table += struct.pack(e + "HHI", tag, typ, count) + value.ljust(4, b"\0")
        else:
            table += struct.pack(e + "HHII", tag, typ, count, table_end + len(extra))
            extra += value
    return head + struct.pack(e + "H", len(entries)) + table + struct.pack(e + "I", 0) + extra


def raw_profile(exif_bytes):
    """ImageMagick's "Raw profile type exif" text: a blank line, the name, the length, hex lines."""
    hx = exif_bytes.hex()
    lines = [hx[i:i + 72] for i in range(0, len(hx), 72)]
    return "\nexif\n%8d\n" % len(exif_bytes) + "\n".join(lines) + "\n"


def xmp(orientation):
    return ('<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/">'
            '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description '
            f'xmlns:tiff="http://ns.adobe.com/tiff/1.0/"><tiff:Orientation>{orientation}</tiff:Orientation>'
            '</rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>')


# ---- PNG assembly (for chunk orders Pillow does not write) ---------------------------------------

def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_chunks(data):
    """[(type, payload)] of a PNG file."""
    pos, out = 8, []
    while pos < len(data):
        n = struct.unpack(">I", data[pos:pos + 4])[0]
        out.append((data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]))
        pos += 12 + n
    return out


def png_with(plain_png, before_idat=(), after_idat=()):
    """plain_png with extra chunks (type, payload) inserted before the first IDAT / before IEND."""
    out, seen_idat = b"\x89PNG\r\n\x1a\n", False
    for kind, payload in png_chunks(plain_png):
        if kind == b"IDAT" and not seen_idat:
            out += b"".join(chunk(k, p) for k, p in before_idat)
            seen_idat = True
        if kind == b"IEND":
            out += b"".join(chunk(k, p) for k, p in after_idat)
        out += chunk(kind, payload)
    return out


def encode(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def make_inputs():
    """{file name: bytes}. Names say what each file tests."""
    rgb = Image.fromarray(pattern(3, 1))
    files = {}
    for k in range(1, 9):
        files[f"jpeg_orient{k}.jpg"] = encode(rgb, "JPEG", quality=92, exif=exif_pillow(k))
    # Byte order, type and count variants Pillow reads: big-endian; LONG; two SHORTs (the first
    # counts); a RATIONAL 12/2; an out-of-range value (ignored); BYTE (a bytes value: ignored).
    variants = {
        "jpeg_exif_mm_orient6.jpg": tiff_ifd([(0x0112, 3, 1, struct.pack(">H", 6))], big_endian=True),
        "jpeg_exif_long_orient8.jpg": tiff_ifd([(0x0112, 4, 1, struct.pack("<I", 8))]),
        "jpeg_exif_count2_orient3.jpg": tiff_ifd([(0x010F, 2, 4, b"omn\0"), (0x0112, 3, 2, struct.pack("<HH", 3, 1))]),
        "jpeg_exif_rational_orient6.jpg": tiff_ifd([(0x0112, 5, 1, struct.pack("<II", 12, 2))]),
        "jpeg_exif_orient9_ignored.jpg": tiff_ifd([(0x0112, 3, 1, struct.pack("<H", 9))]),
        "jpeg_exif_byte_ignored.jpg": tiff_ifd([(0x0112, 1, 1, b"\x06")]),
    }
    for name, blob in variants.items():
        files[name] = encode(rgb, "JPEG", quality=92, exif=b"Exif\0\0" + blob)
    plain = encode(rgb, "PNG")
    files["png_exif_orient6.png"] = encode(rgb, "PNG", exif=exif_pillow(6))
    files["png_exif_after_idat_orient8.png"] = png_with(plain, after_idat=[(b"eXIf", exif_pillow(8)[6:])])
    info = PngImagePlugin.PngInfo()
    info.add_text("Raw profile type exif", raw_profile(exif_pillow(3)), zip=True)
    files["png_raw_profile_ztxt_orient3.png"] = encode(rgb, "PNG", pnginfo=info)
    info = PngImagePlugin.PngInfo()
    info.add_itxt("XML:com.adobe.xmp", xmp(5))
    files["png_xmp_itxt_orient5.png"] = encode(rgb, "PNG", pnginfo=info)
    info = PngImagePlugin.PngInfo()
    info.add_itxt("XML:com.adobe.xmp", xmp(6))
    files["png_exif1_xmp6_not_rotated.png"] = encode(rgb, "PNG", pnginfo=info, exif=exif_pillow(1))
    info = PngImagePlugin.PngInfo()
    info.add_text("exif", exif_pillow(7))
    files["png_text_exif_orient7.png"] = encode(rgb, "PNG", pnginfo=info)
    files["webp_exif_orient6.webp"] = encode(rgb, "WEBP", lossless=True, exif=exif_pillow(6))
    files["webp_lossy_exif_orient5.webp"] = encode(rgb, "WEBP", quality=90, exif=exif_pillow(5))
    # The alpha rule: colour under transparent pixels, partial alpha.
    rgba = Image.fromarray(alpha_ramp(pattern(4, 2)), "RGBA")
    files["png_rgba.png"] = encode(rgba, "PNG")
    files["png_rgba_exif_orient6.png"] = encode(rgba, "PNG", exif=exif_pillow(6))
    files["webp_rgba_exact_exif_orient8.webp"] = encode(rgba, "WEBP", lossless=True, exact=True,
                                                         exif=exif_pillow(8))
    files["png_la.png"] = encode(Image.fromarray(alpha_ramp(pattern(2, 3)), "LA"), "PNG")
    files["png_l_trns.png"] = encode(Image.fromarray(pattern(1, 4)[:, :, 0], "L"), "PNG", transparency=int(
        pattern(1, 4)[5, 7, 0]))
    pal = rgb.quantize(16)
    files["png_p_trns.png"] = encode(pal, "PNG", transparency=bytes(range(0, 256, 16)))
    files["png_p_trns_one.png"] = encode(pal, "PNG", transparency=3)
    return files


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    inputs_dir, configs_dir = os.path.join(OUT, "inputs"), os.path.join(OUT, "configs")
    os.makedirs(inputs_dir)
    os.makedirs(configs_dir)
    files = make_inputs()
    for name, data in files.items():
        with open(os.path.join(inputs_dir, name), "wb") as f:
            f.write(data)
    meta = {"transformers": transformers.__version__, "pillow": PIL.__version__, "numpy": np.__version__,
            "command": "PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/make_image_goldens.py",
            "pipeline": "transformers.image_utils.load_image(path), then the processor(images=..., "
                        "return_tensors='np') built from configs/<config>.json (slow PIL path)",
            "images": {}, "image_grid_thw": {}}
    for cname, cfg in CONFIGS.items():
        with open(os.path.join(configs_dir, cname + ".json"), "w") as f:
            json.dump(cfg, f, indent=1)
        kw = {k: v for k, v in cfg.items() if k != "image_processor_type"}
        proc = (CLIPImageProcessor if cfg["image_processor_type"] == "CLIPImageProcessor" else Qwen2VLImageProcessor)(**kw)
        arrays = {}
        for name in files:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # palette + bytes transparency: Pillow warns
                img = load_image(os.path.join(inputs_dir, name))
            meta["images"][name] = {"loaded_size": list(img.size)}
            out = proc(images=img, return_tensors="np")
            pv = np.asarray(out["pixel_values"])
            arrays[name] = pv[0] if cfg["image_processor_type"] == "CLIPImageProcessor" else pv
            if "image_grid_thw" in out:
                meta["image_grid_thw"].setdefault(cname, {})[name] = [int(v) for v in out["image_grid_thw"][0]]
        np.savez_compressed(os.path.join(OUT, f"pixel_values_{cname}.npz"), **arrays)
    with open(os.path.join(OUT, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
    total = sum(os.path.getsize(os.path.join(dp, fn)) for dp, _, fns in os.walk(OUT) for fn in fns)
    print(f"wrote {len(files)} images x {len(CONFIGS)} configs to {OUT} ({total} bytes)")


if __name__ == "__main__":
    sys.exit(main())
