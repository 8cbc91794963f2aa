#!/usr/bin/python3
"""Writes the seed corpus for fuzz_image_decode: tiny valid and broken PNG / JPEG / WebP files (each
under 2 KB), files carrying EXIF orientation (JPEG APP1, PNG eXIf before / after IDAT, raw-profile
and XMP text chunks, WebP EXIF; valid, big-endian, truncated and looping IFDs), a GIF, and data:
URLs. Run from anywhere: python3 tests/fuzz/make_image_corpus.py"""
import base64
import io
import os
import struct
import zlib

import numpy as np
from PIL import Image

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "image_decode")


def img(w, h, mode="RGB", seed=0):
    rng = np.random.default_rng(seed)
    ch = {"RGB": 3, "RGBA": 4, "L": 1, "LA": 2}[mode]
    a = rng.integers(0, 256, size=(h, w, ch), dtype=np.uint8)
    return Image.fromarray(a[:, :, 0] if ch == 1 else a, mode)


def save(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_raw(w, h, depth, ctype, rows, trns=None, interlace=0):
    body = chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, interlace))
    if trns is not None:
        body += chunk(b"tRNS", trns)
    return b"\x89PNG\r\n\x1a\n" + body + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def exif(orientation, big_endian=False, count=None, next_ifd=0, extra=()):
    """A TIFF-structured EXIF block with IFD0 = [Orientation SHORT] + extra (tag, type, count, value4)."""
    e = ">" if big_endian else "<"
    entries = [(0x0112, 3, 1, struct.pack(e + "H", orientation) + b"\0\0")] + list(extra)
    body = struct.pack(e + "H", len(entries) if count is None else count)
    body += b"".join(struct.pack(e + "HHI", t, ty, n) + v for t, ty, n, v in entries)
    return (b"MM\0*" if big_endian else b"II*\0") + struct.pack(e + "I", 8) + body + struct.pack(e + "I", next_ifd)


def png_with(plain, before=(), after=()):
    """plain (a PNG file) with chunks inserted before its first IDAT / before IEND."""
    out, pos, seen = plain[:8], 8, False
    while pos < len(plain):
        n = struct.unpack(">I", plain[pos:pos + 4])[0]
        kind = plain[pos + 4:pos + 8]
        if kind == b"IDAT" and not seen:
            out += b"".join(chunk(k, d) for k, d in before)
            seen = True
        if kind == b"IEND":
            out += b"".join(chunk(k, d) for k, d in after)
        out += plain[pos:pos + 12 + n]
        pos += 12 + n
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {
        "rgb.png": save(img(8, 6), "PNG"),
        "rgba.png": save(img(7, 5, "RGBA", 1), "PNG"),
        "la.png": save(img(5, 4, "LA", 2), "PNG"),
        "p_trns.png": save(img(9, 7, seed=3).quantize(8), "PNG", transparency=bytes([0, 128, 255, 7])),
        "gray16.png": png_raw(4, 3, 16, 0, b"".join(b"\0" + bytes(range(i, i + 8)) for i in range(3)),
                              trns=struct.pack(">H", 5)),
        "gray2.png": png_raw(9, 2, 2, 0, b"\0\x1b\xe4\x40" * 2, trns=struct.pack(">H", 1)),
        "rgb16.png": png_raw(2, 2, 16, 2, b"\0" + bytes(range(12)) + b"\0" + bytes(range(12, 24))),
        "adam7.png": png_raw(9, 9, 8, 0, bytes(200), interlace=1),
        "huge_ihdr.png": png_raw(30000, 30000, 8, 2, b"\0\0\0\0"),
        "rgb.jpg": save(img(16, 8, seed=4), "JPEG", quality=50),
        "progressive.jpg": save(img(16, 16, seed=5), "JPEG", quality=50, progressive=True),
        "gray.jpg": save(img(8, 8, "L", 6), "JPEG", quality=50),
        "cmyk.jpg": save(img(8, 8, seed=7).convert("CMYK"), "JPEG", quality=50),
        "lossless.webp": save(img(8, 8, seed=8), "WEBP", lossless=True),
        "lossless_alpha.webp": save(img(6, 6, "RGBA", 9), "WEBP", lossless=True),
        "lossy.webp": save(img(16, 16, seed=10), "WEBP", quality=30),
        "lossy_alpha.webp": save(img(8, 8, "RGBA", 11), "WEBP", quality=30),
        "x.gif": save(img(4, 4, seed=12), "GIF"),
        "x.bmp": save(img(2, 2, seed=13), "BMP"),
    }
    xmp = b'<x:xmpmeta><rdf:Description tiff:Orientation="8"/><tiff:Orientation>5</tiff:Orientation></x:xmpmeta>'
    raw = b"\nexif\n      %d\n" % (len(exif(3)) + 6) + (b"Exif\0\0" + exif(3)).hex().encode() + b"\n"
    seeds.update({
        "exif6.jpg": save(img(8, 6, seed=14), "JPEG", quality=50, exif=b"Exif\0\0" + exif(6)),
        "exif8_mm.jpg": save(img(6, 8, seed=15), "JPEG", quality=50, exif=b"Exif\0\0" + exif(8, True)),
        "exif_trunc.jpg": save(img(8, 8, seed=16), "JPEG", quality=50, exif=b"Exif\0\0" + exif(5, count=40)[:30]),
        "exif_loop.jpg": save(img(8, 8, seed=17), "JPEG", quality=50,
                              exif=b"Exif\0\0" + exif(7, next_ifd=8, extra=[(0x8769, 4, 1, struct.pack("<I", 8))])),
        "exif6.png": save(img(5, 3, seed=18), "PNG", exif=b"Exif\0\0" + exif(6)),
        "exif_after_idat.png": png_with(save(img(5, 3, seed=19), "PNG"), after=[(b"eXIf", exif(7, True))]),
        "xmp_ztxt.png": png_with(save(img(4, 6, "RGBA", 20), "PNG"),
                                 before=[(b"zTXt", b"XML:com.adobe.xmp\0\0" + zlib.compress(xmp))]),
        "xmp_itxt.png": png_with(save(img(4, 6, "LA", 21), "PNG"),
                                 before=[(b"iTXt", b"XML:com.adobe.xmp\0\1\0en\0\0" + zlib.compress(xmp))]),
        "raw_profile.png": png_with(save(img(3, 7, seed=22), "PNG"),
                                    after=[(b"tEXt", b"Raw profile type exif\0" + raw)]),
        "exif5.webp": save(img(6, 4, seed=23), "WEBP", lossless=True, exif=b"Exif\0\0" + exif(5)),
        "exif2_alpha.webp": save(img(4, 4, "RGBA", 24), "WEBP", quality=30, exif=exif(2, True)),
    })
    # A text chunk declaring ~1 GB: libpng allocated its length before reading (found by fuzzing).
    rgb_png = seeds["rgb.png"]
    seeds["itxt_huge_length.png"] = rgb_png[:33] + struct.pack(">I", 0x3F00005D) + b"iTXtXML:com.adobe.xmp\0\1\0" + rgb_png[33:]
    seeds["truncated.png"] = seeds["rgb.png"][: len(seeds["rgb.png"]) // 2]
    seeds["truncated.jpg"] = seeds["rgb.jpg"][: len(seeds["rgb.jpg"]) // 2]
    seeds["truncated.webp"] = seeds["lossless.webp"][: len(seeds["lossless.webp"]) // 2]
    seeds["dataurl_png.txt"] = b"data:image/png;base64," + base64.b64encode(seeds["rgba.png"])
    seeds["dataurl_mismatch.txt"] = b"data:image/jpeg;base64," + base64.b64encode(seeds["lossless.webp"])
    seeds["dataurl_bad.txt"] = b"data:image/webp;base64,UklGR*=="
    for name, data in seeds.items():
        assert len(data) < 2048, (name, len(data))
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(seeds)} seeds to {OUT}")


if __name__ == "__main__":
    main()
