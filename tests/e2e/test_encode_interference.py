#!/usr/bin/python3
"""An image encode never stalls the decoding streams (issue 18, bounded steps): `omnic serve` on a
LLaVA checkpoint with the real CLIP ViT-L/14-336 tower (mktiny --preset llava-1.5-clip336-tower:
23 layers over 577 patches, a few seconds per image here) and a tiny Llama text model, 2 slots
streaming long completions; an image request arrives while they decode.

  - the streams' text is the same as in a quiet run (nothing of the image leaks into them);
  - the longest gap between two of their tokens while the image is encoded stays far below the
    encode time (the encoder runs in slices between decode steps: asserted < 1/4 of the encode,
    a generous bound; bench figures are in bench/serve.md);
  - /metrics counts the slices (more than one) and the image request succeeds with the text it
    gives on a quiet server.
Standard library only; release builds (run by scripts/test.sh with the release omnic)."""
import base64
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
PY = "/usr/bin/python3"
failed = 0


def fail(msg):
    global failed
    failed += 1
    print("FAIL:", msg, flush=True)


def start(model, log):
    return serve_util.start([OMNIC, "serve", "-m", model, "--parallel", "3", "--ctx", "1024",
                             "--encoder-cache-mb", "0"], log)  # every request encodes its image


def stream_chat(port, messages, max_tokens, out):
    """Streams one chat completion; out gets the text and (time, token count) per chunk."""
    serve_util.stream(port, "/v1/chat/completions", {"messages": messages, "max_tokens": max_tokens}, out)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "llava")
        subprocess.run([PY, os.path.join(ROOT, "tools", "mktiny.py"), "--family", "llava", "--preset",
                        "llava-1.5-clip336-tower", "--out", model], check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(ROOT, "tests", "data", "demo.png"), "rb") as f:
            url = "data:image/png;base64," + base64.b64encode(f.read()).decode()
        image_msg = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                                  {"type": "text", "text": "Describe the image."}]}]
        text_msgs = [[{"role": "user", "content": f"Tell me a long story about {k} foxes."}] for k in (3, 7)]
        proc, port = start(model, os.path.join(tmp, "server.log"))
        try:
            quiet = [{} for _ in text_msgs]
            for k, msgs in enumerate(text_msgs):
                stream_chat(port, msgs, 900, quiet[k])
            img_quiet = {}
            t0 = time.time()
            stream_chat(port, image_msg, 8, img_quiet)
            encode_s = serve_util.metrics(port).get('omnic_media_encode_seconds_sum{modality="image"}', 0.0)
            print(f"quiet: image request {time.time() - t0:.2f} s, encode {encode_s:.2f} s", flush=True)
            if encode_s < 0.3:
                fail(f"the tower encodes in {encode_s:.2f} s: too fast to measure interference")
            slices0 = serve_util.metrics(port).get("omnic_encode_slices_total", 0)
            busy = [{} for _ in text_msgs]
            ts = [threading.Thread(target=stream_chat, args=(port, text_msgs[k], 900, busy[k]))
                  for k in range(len(text_msgs))]
            for t in ts:
                t.start()
            while any(len(b.get("times", [])) < 20 for b in busy):  # both decoding
                time.sleep(0.01)
            img = {}
            t_img = time.time()
            stream_chat(port, image_msg, 8, img)
            t_done = time.time()
            for t in ts:
                t.join()
            if img.get("status") != 200 or img.get("text") != img_quiet.get("text"):
                fail(f"image request during decoding: {img.get('status')} {img.get('text')!r} vs quiet "
                     f"{img_quiet.get('text')!r}")
            for k in range(len(text_msgs)):
                if busy[k].get("text") != quiet[k].get("text"):
                    fail(f"stream {k}: text differs from its quiet run")
            gaps = []
            for b in busy:
                tt = b.get("times", [])
                for (a, na), (c, nc) in zip(tt, tt[1:]):
                    if t_img <= c <= t_done:
                        gaps.append((c - a) / max(nc - na, 1) if nc > na else c - a)
            worst = max(gaps) if gaps else float("inf")
            slices = serve_util.metrics(port).get("omnic_encode_slices_total", 0) - slices0
            print(f"during the encode: {len(gaps)} stream gaps, longest {worst * 1000:.0f} ms; image request "
                  f"{t_done - t_img:.2f} s; {slices:.0f} encoder slices", flush=True)
            if not gaps or worst > encode_s / 4:
                fail(f"the streams waited {worst:.2f} s at once while a {encode_s:.2f} s encode ran")
            if slices < 2:
                fail(f"{slices} encoder slices while streams decoded")
        finally:
            proc.terminate()
            proc.wait()
    print("test_encode_interference:", "ok" if not failed else f"{failed} failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
