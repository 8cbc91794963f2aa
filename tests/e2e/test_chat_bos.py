#!/usr/bin/python3
"""The special tokens of prompts, against goldens from the real Hugging Face code
(tests/data/chat_bos.json, made by tools/ref/chat_bos_golden.py with transformers 4.57.6 and
5.2.0 and the Rust tokenizers library):

  models with a processor (LLaVA, Qwen2-VL): processor.apply_chat_template(tokenize=True) adds
    the tokenizer's post-processor tokens unless the rendered text starts with bos_token, so the
    LLaVA-1.5 template (no BOS in it) with LLaVA-1.5's Llama-2 tokenizer (mktiny --tokenizer
    llama2) gets <s> exactly once, with or without an image, and a template that writes
    {{ bos_token }} does not get a second one;
  text-only models: tokenizer.apply_chat_template(tokenize=True) adds nothing;
  raw text (omnic run --raw, /v1/completions): tokenizer(text), special tokens added.

Checked through omnic run --dump (tokens.npy) and through the server (/tokenize with messages or
a prompt, and the prompt_tokens a chat completion reports)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
IMAGE = os.path.join(ROOT, "tests", "data", "demo.png")
GOLDEN = json.load(open(os.path.join(ROOT, "tests", "data", "chat_bos.json"), encoding="utf-8"))
failed = 0


def fail(msg):
    global failed
    failed += 1
    print("FAIL:", msg)


def checkpoint(tmp, case, cache={}):
    key = json.dumps([case["mktiny"], case["chat_template"]])
    if key in cache:
        return cache[key]
    d = os.path.join(tmp, f"ck{len(cache)}")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", "mktiny.py"), *case["mktiny"], "--out", d],
                   check=True, capture_output=True)
    if case["chat_template"] is not None:
        with open(os.path.join(d, "chat_template.jinja"), "w", encoding="utf-8") as f:
            f.write(case["chat_template"])
    cache[key] = d
    return d


def text_of(content):
    return content if isinstance(content, str) else "".join(p["text"] for p in content if p["type"] == "text")


def run_tokens(model, case, dump):
    args = [OMNIC, "run", "-m", model, "-n", "1", "--dump", dump]
    if case["route"] == "raw":
        args += ["--raw", "-p", case["conversation"]]
    else:
        conv = case["conversation"]
        for m in conv:
            if m["role"] == "system":
                args += ["--system", text_of(m["content"])]
        args += ["-p", text_of(conv[-1]["content"])]
        last = conv[-1]["content"]
        for _ in range(0 if isinstance(last, str) else sum(p["type"] == "image" for p in last)):
            args += ["--image", IMAGE]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"{case['name']}: omnic run exit {r.returncode}: {r.stderr[-400:]}")
        return None
    return np.load(os.path.join(dump, "tokens.npy")).tolist()


def bos_id(model):
    tc = json.load(open(os.path.join(model, "tokenizer_config.json")))
    bos = tc.get("bos_token")
    if bos is None:
        return None
    tok = json.load(open(os.path.join(model, "tokenizer.json")))
    return next(t["id"] for t in tok["added_tokens"] if t["content"] == bos)


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def serve(model, log):
    p = subprocess.Popen([OMNIC, "serve", "-m", model, "--port", "0", "--parallel", "1"], stderr=open(log, "w"))
    port = None
    for _ in range(600):
        text = open(log).read()
        if "ready on http://" in text:
            port = int(text.split("ready on http://127.0.0.1:")[1].split()[0])
            break
        if p.poll() is not None:
            break
        time.sleep(0.05)
    if port is None:
        fail(f"server on {model} did not start: {open(log).read()[-400:]}")
    return p, port


def main():
    tmp = tempfile.mkdtemp(prefix="omnic_chat_bos_")
    try:
        for case in GOLDEN["cases"]:
            model = checkpoint(tmp, case)
            dump = os.path.join(tmp, "dump_" + case["name"])
            os.makedirs(dump)
            got = run_tokens(model, case, dump)
            if got is None:
                continue
            want = case["ids"]
            if got != want:
                fail(f"{case['name']}: omnic run tokens {got[:8]}... ({len(got)}) != Hugging Face {want[:8]}... "
                     f"({len(want)}); add_special_tokens={case['add_special_tokens']}")
                continue
            bos = bos_id(model)
            n_bos = got.count(bos) if bos is not None else 0
            if bos is not None and got[0] == bos and n_bos != 1:
                fail(f"{case['name']}: BOS {bos} appears {n_bos} times")
            print(f"ok   {case['name']:30s} {case['route']:9s} add_special_tokens={case['add_special_tokens']!s:5s} "
                  f"{len(got)} ids, first {got[0]}, BOS x{n_bos}")
        # the server: same ids through /tokenize and the chat route
        by_name = {c["name"]: c for c in GOLDEN["cases"]}
        chat, raw = by_name["llava15_text_only"], by_name["llava15_raw"]
        p, port = serve(checkpoint(tmp, chat), os.path.join(tmp, "serve.log"))
        try:
            if port:
                before = failed
                msgs = [{"role": m["role"], "content": text_of(m["content"])} for m in chat["conversation"]]
                got = post(port, "/tokenize", {"messages": msgs, "add_generation_prompt": True})["tokens"]
                if got != chat["ids"]:
                    fail(f"server /tokenize messages: {got[:8]} != {chat['ids'][:8]}")
                got = post(port, "/tokenize", {"prompt": raw["conversation"]})["tokens"]
                if got != raw["ids"]:
                    fail(f"server /tokenize prompt: {got[:8]} != {raw['ids'][:8]}")
                r = post(port, "/v1/chat/completions", {"messages": msgs, "max_tokens": 1})
                if r["usage"]["prompt_tokens"] != len(chat["ids"]):
                    fail(f"server chat prompt_tokens {r['usage']['prompt_tokens']} != {len(chat['ids'])}")
                r = post(port, "/v1/completions", {"prompt": raw["conversation"], "max_tokens": 1})
                if r["usage"]["prompt_tokens"] != len(raw["ids"]):
                    fail(f"server completions prompt_tokens {r['usage']['prompt_tokens']} != {len(raw['ids'])}")
                if failed == before:
                    print("ok   server: /tokenize (messages, prompt) and chat / completions prompt_tokens match")
        finally:
            p.terminate()
            p.wait(timeout=30)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"test_chat_bos: {'ok' if not failed else f'{failed} failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
