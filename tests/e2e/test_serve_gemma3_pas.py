#!/usr/bin/python3
"""Gemma 3 pan-and-scan through `omnic serve` (tiny mktiny gemma3 checkpoint, pan-and-scan off in
its preprocessor_config.json): a chat request with mm_processor_kwargs {"do_pan_and_scan": true,
"pan_and_scan_min_crop_size": 16} gets each of its two images as the image and 2 crops (the
prompt rendered again with them) and answers as `omnic run` does on a checkpoint whose config
switches pan-and-scan on (greedy, the same text); the same request without the kwargs answers
otherwise; bad kwargs get a 400 naming them and the server keeps serving. Standard library only."""
import base64
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_util  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
IMAGES = [os.path.join(ROOT, "tests/golden/images", n) for n in ("a.png", "b.png")]
PROMPT = "What is in the picture?"
N = 8


def post(port, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    return r.status, data


def chat(kwargs=None):
    parts = [{"type": "image_url", "image_url": {"url": "data:image/png;base64," +
                                                  base64.b64encode(open(p, "rb").read()).decode()}} for p in IMAGES]
    body = {"messages": [{"role": "user", "content": parts + [{"type": "text", "text": PROMPT}]}],
            "max_tokens": N, "temperature": 0, "ignore_eos": True}
    if kwargs is not None:
        body["mm_processor_kwargs"] = kwargs
    return body


def main():
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "g3")
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools/mktiny.py"), "--family", "gemma3", "--dtype",
                        "f32", "--out", model], check=True, stdout=subprocess.DEVNULL)
        pas = os.path.join(tmp, "g3-pas")  # the same weights, pan-and-scan on in the config
        shutil.copytree(model, pas)
        pc = os.path.join(pas, "preprocessor_config.json")
        c = json.load(open(pc))
        c.update(do_pan_and_scan=True, pan_and_scan_min_crop_size=16)
        json.dump(c, open(pc, "w"))
        args = [OMNIC, "run", "-m", pas, "-p", PROMPT, "-n", str(N), "--ignore-eos"]
        for im in IMAGES:
            args += ["--image", im]
        want = subprocess.run(args, capture_output=True, text=True, check=True).stdout
        p, port = serve_util.start([OMNIC, "serve", "-m", model, "--parallel", "2"], os.path.join(tmp, "log"))
        try:
            st, body = post(port, chat({"do_pan_and_scan": True, "pan_and_scan_min_crop_size": 16}))
            got = json.loads(body)["choices"][0]["message"]["content"] if st == 200 else body
            if st != 200 or got != want.rstrip("\n"):
                print(f"FAIL: pan-and-scan request: {st} {got!r}, omnic run on the pan-and-scan config {want!r}")
                fails += 1
            usage = json.loads(body)["usage"] if st == 200 else {}
            st2, body2 = post(port, chat())
            plain = json.loads(body2)["choices"][0]["message"]["content"] if st2 == 200 else None
            if st2 != 200 or plain == got or json.loads(body2)["usage"]["prompt_tokens"] >= usage.get("prompt_tokens", 0):
                print(f"FAIL: without the kwargs: {st2} {plain!r} (want another answer from a shorter prompt)")
                fails += 1
            for kw, needle in (({"pan_and_scan_min_crop_size": 0}, "pan_and_scan_min_crop_size"),
                               ({"do_pan_and_scan": True, "pan_and_scan_max_num_crops": 99}, "pan_and_scan_max_num_crops 99"),
                               ({"do_pan_and_scan": "yes"}, "do_pan_and_scan"),
                               ({"crop_everything": True}, "crop_everything"),
                               ({"max_pixels": 1000}, "min_pixels / max_pixels")):
                st3, body3 = post(port, chat(kw))
                if st3 != 400 or needle not in body3:
                    print(f"FAIL: mm_processor_kwargs {kw}: {st3} {body3[:200]}")
                    fails += 1
            st4, _ = post(port, chat({"do_pan_and_scan": True, "pan_and_scan_min_crop_size": 16}))
            if st4 != 200:
                print(f"FAIL: the server stopped serving: {st4}")
                fails += 1
        finally:
            p.terminate()
            p.wait(timeout=30)
        print(f"pan-and-scan request: {usage.get('prompt_tokens')} prompt tokens, answer {got!r} (== omnic run)")
    print("test_serve_gemma3_pas:", "ok" if not fails else f"{fails} failures")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
