#!/usr/bin/python3
"""Qwen3-VL through `omnic serve` (tiny qwen3_vl_moe checkpoint from tools/mktiny.py: DeepStack
mergers and routed experts), 3 slots with mixed steps (--step-tokens 4) and a chunk (8) smaller
than an image's rows, so DeepStack rows are split across prefill calls:

  - `omnic inspect` shows the DeepStack mergers, interleaved M-RoPE and the routed experts;
  - /v1/models advertises text and image input;
  - text, one-image and two-image chats each served alone, then all together (concurrent
    clients): every greedy answer is the same as alone;
  - the `omnic run` CLI with the same template and images gives the same text as the server;
  - after the image requests, the text chat is unchanged (no DeepStack rows or rope_delta left
    in a slot);
  - a corrupt image and a video part are refused with a 400 naming the problem, and the server
    keeps serving. Standard library only."""
import base64
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
IMAGES = [os.path.join(ROOT, "tests/golden/images", n) for n in ("c.png", "d.png")]
N = 12


def request(port, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, data


def data_url(path):
    return "data:image/png;base64," + base64.b64encode(open(path, "rb").read()).decode()


def chat(images, text):
    parts = [{"type": "image_url", "image_url": {"url": data_url(p)}} for p in images]
    parts.append({"type": "text", "text": text})
    return {"messages": [{"role": "user", "content": parts}], "max_tokens": N, "temperature": 0,
            "ignore_eos": True}


def answer(port, body):
    st, data = request(port, body)
    assert st == 200, (st, data)
    r = json.loads(data)
    assert r["usage"]["completion_tokens"] == N, r
    return r["choices"][0]["message"]["content"]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "q3vlm")
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools/mktiny.py"), "--family", "qwen3_vl_moe",
                        "--out", model], check=True, stdout=subprocess.DEVNULL)
        info = subprocess.run([OMNIC, "inspect", "-m", model], capture_output=True, check=True).stdout.decode()
        for want in ("deepstack:  2 mergers after vision blocks 0, 1", "M-RoPE sections 6/5/5 interleaved",
                     "experts:    2 of 3 layers routed: top 2 of 8 experts (ffn 48, renormalized)", "inputs:     text image"):
            assert want in info, (want, info)
        cases = [chat([], "Tell me about the fox."), chat(IMAGES[:1], "What is in the picture?"),
                 chat(IMAGES, "Compare the two pictures.")]
        p, port = serve_util.start([OMNIC, "serve", "-m", model, "--parallel", "3", "--step-tokens", "4",
                                    "--chunk", "8"], os.path.join(tmp, "log"))
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            c.request("GET", "/v1/models")
            info = json.loads(c.getresponse().read().decode())["data"][0]
            c.close()
            assert info.get("input_modalities") == ["text", "image"], info
            alone = [answer(port, b) for b in cases]
            together = [None] * len(cases)

            def run(i):
                together[i] = answer(port, cases[i])
            threads = [threading.Thread(target=run, args=(i,)) for i in range(len(cases)) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert together == alone, (together, alone)
            assert answer(port, cases[0]) == alone[0], "the text chat changed after image requests"
            bad = {"messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64," +
                                                    base64.b64encode(b"\x89PNG\r\n\x1a\nnot a png").decode()}},
                {"type": "text", "text": "what?"}]}], "max_tokens": 4}
            st, body = request(port, bad)
            assert st == 400 and "image" in body, (st, body)
            print(f"corrupt image refused: {body.strip()[:160]}")
            video = {"messages": [{"role": "user", "content": [{"type": "video_url", "video_url": {"url": "x.mp4"}}]}]}
            st, body = request(port, video)
            assert st == 400 and "video_url" in body, (st, body)
            assert answer(port, cases[2]) == alone[2], "the two-image chat changed after refused requests"
        finally:
            p.terminate()
            p.wait(timeout=30)
        # the CLI with the chat template and the same images: the server's text
        for body, want in zip(cases, alone):
            imgs = [a for p in body["messages"][0]["content"] if p["type"] == "image_url"
                    for a in ("--image", IMAGES[[data_url(x) for x in IMAGES].index(p["image_url"]["url"])])]
            text = body["messages"][0]["content"][-1]["text"]
            out = subprocess.run([OMNIC, "run", "-m", model, "-p", text, "-n", str(N), "--ignore-eos",
                                  "--generation-config", "ignore"] + imgs, capture_output=True, check=True)
            got = out.stdout.decode(errors="replace")
            assert got.strip() == want.strip(), (got, want)
    print(f"test_serve_qwen3vl: text / 1 / 2 images alone == 6 concurrent == CLI; no slot leak; bad media 400")
    return 0


if __name__ == "__main__":
    sys.exit(main())
