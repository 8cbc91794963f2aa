#!/usr/bin/python3
"""Gemma 3n text through `omnic serve` (tiny gemma3n_text checkpoint from tools/mktiny.py): a chat
completion is served, /v1/models says text only, and an image part is refused with a 400 that
names the modality while the server keeps serving. Standard library only."""
import http.client
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
PNG = os.path.join(ROOT, "tests/golden/images/a.png")


def request(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request(method, path, json.dumps(body) if body is not None else None, {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, data


def main():
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "g3n")
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools/mktiny.py"), "--family", "gemma3n_text",
                        "--out", model], check=True, stdout=subprocess.DEVNULL)
        p, port = serve_util.start([OMNIC, "serve", "-m", model, "--parallel", "2"], os.path.join(tmp, "log"))
        try:
            st, body = request(port, "GET", "/v1/models")
            assert st == 200, body
            info = json.loads(body)["data"][0]
            assert info.get("input_modalities") == ["text"], info
            chat = {"messages": [{"role": "user", "content": "Tell me about the fox."}], "max_tokens": 12,
                    "temperature": 0}
            st, body = request(port, "POST", "/v1/chat/completions", chat)
            assert st == 200, body
            r = json.loads(body)
            assert r["usage"]["completion_tokens"] == 12 or r["choices"][0]["finish_reason"] == "stop", r
            import base64
            url = "data:image/png;base64," + base64.b64encode(open(PNG, "rb").read()).decode()
            img = {"messages": [{"role": "user", "content": [{"type": "text", "text": "what is it?"},
                                                             {"type": "image_url", "image_url": {"url": url}}]}],
                   "max_tokens": 4}
            st, body = request(port, "POST", "/v1/chat/completions", img)
            assert st == 400 and "image" in body, (st, body)
            print(f"image part refused: {body.strip()[:160]}")
            st, again = request(port, "POST", "/v1/chat/completions", chat)
            assert st == 200 and json.loads(again)["choices"][0]["message"]["content"] == \
                r["choices"][0]["message"]["content"], again
        finally:
            p.terminate()
            p.wait(timeout=30)
    print("test_serve_gemma3n: text served (greedy repeatable), text-only advertised, images refused with 400")
    return 0


if __name__ == "__main__":
    sys.exit(main())
