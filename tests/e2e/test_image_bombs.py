#!/usr/bin/python3
"""Hostile images through `omnic preprocess` (the decode path every request takes), each with a
bound on the process's peak memory (GNU time's %M): a 172-byte progressive CMYK JPEG whose
header claims 9000x9000 (its coefficient buffers would take 648 MB) is refused naming the
decoder's working-memory limit; a 16x16 PNG carrying 200 zTXt chunks of 8 KB (1.6 MB, once
~1.6 GB through libpng's chunk cache) decodes within the bound; a progressive JPEG cut after
its first scan is refused as truncated, as Pillow refuses it. Test images are made here."""
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
PEAK_MB = 120  # peak RSS bound for one decode of a tiny file (the process itself is ~12 MB)


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def run(image, cfg_dir, out):
    """(exit status, stderr, peak RSS in MB) of one omnic preprocess."""
    r = subprocess.run(["/usr/bin/time", "-f", "PEAK %M", OMNIC, "preprocess", "--image", image, "-m", cfg_dir,
                        "--out", out], capture_output=True, text=True, timeout=60)
    peak = [ln for ln in r.stderr.splitlines() if ln.startswith("PEAK ")]
    return r.returncode, r.stderr, int(peak[-1].split()[1]) / 1024 if peak else float("inf")


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(f"{d}/cfg")
        json.dump({"image_processor_type": "CLIPImageProcessor", "size": {"shortest_edge": 32},
                   "crop_size": {"height": 32, "width": 32}}, open(f"{d}/cfg/preprocessor_config.json", "w"))
        # 1. a progressive CMYK JPEG header claiming 9000x9000, cut inside its first scan
        b = io.BytesIO()
        Image.new("CMYK", (16, 16), (10, 20, 30, 40)).save(b, "JPEG", progressive=True, quality=50)
        j = bytearray(b.getvalue())
        sof = j.find(b"\xff\xc2")
        struct.pack_into(">HH", j, sof + 5, 9000, 9000)
        bomb = bytes(j[: j.find(b"\xff\xda") + 40])
        open(f"{d}/bomb.jpg", "wb").write(bomb)
        rc, err, peak = run(f"{d}/bomb.jpg", f"{d}/cfg", f"{d}/o.npy")
        if rc == 0 or "working memory" not in err or "9000x9000" not in err:
            failures.append(f"JPEG bomb ({len(bomb)} bytes): exit {rc}: {err.strip()}")
        if peak > PEAK_MB:
            failures.append(f"JPEG bomb: peak RSS {peak:.0f} MB > {PEAK_MB} MB")
        # 2. 200 zTXt chunks of 8 KB of compressed text in a 16x16 PNG
        b = io.BytesIO()
        Image.new("RGB", (16, 16), (200, 10, 10)).save(b, "PNG")
        png = b.getvalue()
        iend = png.rfind(b"IEND") - 4
        text = os.urandom(8000)  # incompressible: each chunk stays ~8 KB
        extra = b"".join(chunk(b"zTXt", b"k%d\x00\x00" % i + zlib.compress(text)) for i in range(200))
        open(f"{d}/ztxt.png", "wb").write(png[:iend] + extra + png[iend:])
        rc, err, peak = run(f"{d}/ztxt.png", f"{d}/cfg", f"{d}/o.npy")
        if rc != 0:
            failures.append(f"PNG with 200 zTXt chunks: exit {rc}: {err.strip()}")
        if peak > PEAK_MB:
            failures.append(f"PNG with 200 zTXt chunks: peak RSS {peak:.0f} MB > {PEAK_MB} MB")
        # 3. a real progressive JPEG cut after its first scan: truncated, refused
        b = io.BytesIO()
        Image.new("RGB", (64, 48), (10, 120, 200)).save(b, "JPEG", progressive=True, quality=90)
        p = b.getvalue()
        first = p.find(b"\xff\xda")
        second = p.find(b"\xff\xda", first + 2)
        open(f"{d}/cut.jpg", "wb").write(p[: second if second > 0 else len(p) // 2])
        rc, err, peak = run(f"{d}/cut.jpg", f"{d}/cfg", f"{d}/o.npy")
        if rc == 0 or "JPEG" not in err:
            failures.append(f"truncated progressive JPEG: exit {rc}: {err.strip()}")
    for f in failures:
        print("FAIL:", f)
    print(f"test_image_bombs: {len(failures)} of 3 cases failed" if failures else "test_image_bombs: 3 of 3 cases ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
