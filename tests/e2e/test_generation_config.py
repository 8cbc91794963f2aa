#!/usr/bin/python3
"""generation_config.json end to end, on a tiny Llama (omnic run and omnic serve):

  stop ids    eos_token_id (an int, or a list: every id stops), generation_config.json's winning
              over config.json's, config.json's when the file has none (generate()'s fallback);
  defaults    do_sample=true, temperature=0.7, top_k=5 with a fixed seed give the tokens of
              explicit --temp 0.7 --top-k 5 with that seed; a request's own temperature wins;
              --generation-config ignore gives greedy (CLI) / OpenAI's temperature 1 (server);
              max_new_tokens is the default length; do_sample=false is greedy in the server too;
  errors      an out-of-range or wrong-typed value is a load error naming the key (not with
              --generation-config ignore, which does not read the sampling keys)."""
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
PROMPT = "Once upon a time"
failed = 0


def fail(msg):
    global failed
    failed += 1
    print("FAIL:", msg)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)


def run(model, dump, *args):
    """omnic run --raw: (generated ids, stdout text, stderr, exit code)."""
    shutil.rmtree(dump, ignore_errors=True)
    os.makedirs(dump)
    r = subprocess.run([OMNIC, "run", "-m", model, "--raw", "-p", PROMPT, "--dump", dump, *args],
                       capture_output=True, text=True)
    ids = np.load(os.path.join(dump, "generated.npy")).tolist() if r.returncode == 0 else None
    return ids, r.stdout[:-1] if r.stdout.endswith("\n") else r.stdout, r.stderr, r.returncode


def set_gen(model, gen, config_eos="keep"):
    write_json(os.path.join(model, "generation_config.json"), gen)
    if config_eos != "keep":
        cfg = json.load(open(os.path.join(model, "config.json")))
        if config_eos is None:
            cfg.pop("eos_token_id", None)
        else:
            cfg["eos_token_id"] = config_eos
        write_json(os.path.join(model, "config.json"), cfg)


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def serve(model, log, *args):
    p = subprocess.Popen([OMNIC, "serve", "-m", model, "--port", "0", "--parallel", "1", *args],
                         stderr=open(log, "w"))
    for _ in range(600):
        text = open(log).read()
        if "ready on http://" in text:
            return p, int(text.split("ready on http://127.0.0.1:")[1].split()[0])
        if p.poll() is not None:
            break
        time.sleep(0.05)
    p.kill()
    p.wait()
    return None, open(log).read()


def main():
    tmp = tempfile.mkdtemp(prefix="omnic_genconfig_")
    model, dump = os.path.join(tmp, "llama"), os.path.join(tmp, "dump")
    try:
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", "mktiny.py"), "--family", "llama", "--out",
                        model], check=True, capture_output=True)
        tok_cfg = json.load(open(os.path.join(model, "tokenizer_config.json")))
        tok = json.load(open(os.path.join(model, "tokenizer.json")))
        tok_eos = next(t["id"] for t in tok["added_tokens"] if t["content"] == tok_cfg["eos_token"])
        set_gen(model, {"bos_token_id": 512}, config_eos=None)  # no stop ids but the tokenizer's
        greedy, greedy_text, _, rc = run(model, dump, "-n", "12", "--ignore-eos")
        assert rc == 0, "omnic run failed"
        if tok_eos in greedy:
            print(f"note: the tokenizer's eos {tok_eos} is among the greedy tokens {greedy}")

        # ---- stop ids ----
        def first_new(k):  # position of a token not seen before position k (so it stops exactly there)
            for i in range(k, len(greedy)):
                if greedy[i] not in greedy[:i] and greedy[i] != tok_eos:
                    return i
            raise SystemExit(f"no fresh token in {greedy}")
        i1 = first_new(1)
        i2 = first_new(i1 + 1)
        for what, gen, cfg_eos, stop_at in [
                ("generation_config int", {"eos_token_id": greedy[i1]}, None, i1),
                ("generation_config list", {"eos_token_id": [99999 % 512, greedy[i2], greedy[i1]]}, None, i1),
                ("generation_config wins over config.json", {"eos_token_id": greedy[i2]}, greedy[i1], i2),
                ("config.json fallback", {"bos_token_id": 512}, [greedy[i1]], i1)]:
            if 99999 % 512 in greedy[:stop_at + 1]:
                raise SystemExit("pick another never-generated id")
            set_gen(model, gen, cfg_eos)
            ids, _, err, rc = run(model, dump, "-n", "12")
            # the stop token itself is not part of the text (nor of generated.npy)
            if rc != 0 or ids != greedy[:stop_at] or "finish stop" not in err:
                fail(f"{what}: generated {ids} (rc {rc}), expected {greedy[:stop_at]} and finish stop")
            else:
                print(f"ok   stop ids: {what}: stopped at {greedy[stop_at]} after {len(ids)} tokens")
        set_gen(model, {"bos_token_id": 512}, config_eos=None)

        # ---- sampling defaults (CLI) ----
        set_gen(model, {"do_sample": True, "temperature": 0.7, "top_k": 5})
        sampled, sampled_text, err, _ = run(model, dump, "-n", "12", "--seed", "7", "--ignore-eos")
        explicit, _, _, _ = run(model, dump, "-n", "12", "--seed", "7", "--ignore-eos", "--temp", "0.7", "--top-k",
                                "5", "--generation-config", "ignore")
        if sampled != explicit:
            fail(f"defaults from generation_config.json {sampled} != explicit --temp 0.7 --top-k 5 {explicit}")
        elif sampled == greedy:
            fail(f"the sampled run {sampled} equals greedy: the test cannot tell (pick another seed)")
        else:
            print("ok   do_sample/temperature/top_k from generation_config.json == explicit --temp 0.7 --top-k 5")
        if "temperature=0.7 top_k=5" not in err:
            fail(f"the load does not log the defaults: {err[-300:]}")
        ids, _, _, _ = run(model, dump, "-n", "12", "--seed", "7", "--ignore-eos", "--temp", "0")
        if ids != greedy:
            fail(f"--temp 0 does not override the file's temperature: {ids} != {greedy}")
        ids, _, err, _ = run(model, dump, "-n", "12", "--seed", "7", "--ignore-eos", "--generation-config", "ignore")
        if ids != greedy or "generation_config.json sets" in err:
            fail(f"--generation-config ignore is not greedy: {ids} != {greedy}")
        else:
            print("ok   a request's --temp 0 wins; --generation-config ignore: greedy")
        set_gen(model, {"max_new_tokens": 5})
        ids, _, _, _ = run(model, dump, "--ignore-eos")
        if ids != greedy[:5]:
            fail(f"max_new_tokens 5: generated {ids}")
        ids, _, _, _ = run(model, dump, "--ignore-eos", "-n", "7")
        if ids != greedy[:7]:
            fail(f"-n 7 does not override max_new_tokens: {ids}")
        else:
            print("ok   max_new_tokens is the default -n; -n wins")

        # ---- sampling defaults (server) ----
        set_gen(model, {"do_sample": True, "temperature": 0.7, "top_k": 5})
        for args in ([], ["--generation-config", "ignore"]):
            p, port = serve(model, os.path.join(tmp, "serve.log"), *args)
            if p is None:
                fail(f"omnic serve {args} did not start: {port[-300:]}")
                continue
            try:
                body = {"prompt": PROMPT, "max_tokens": 12, "seed": 7, "ignore_eos": True}
                text = post(port, "/v1/completions", body)["choices"][0]["text"]
                greedy_srv = post(port, "/v1/completions", {**body, "temperature": 0})["choices"][0]["text"]
                if greedy_srv != greedy_text:
                    fail(f"server {args} temperature 0: {greedy_srv!r} != {greedy_text!r}")
                if not args:
                    if text != sampled_text:
                        fail(f"server defaults: {text!r} != omnic run's {sampled_text!r}")
                    else:
                        print("ok   server: the file's defaults apply to a request without them; temperature 0 wins")
                else:
                    _, want, _, _ = run(model, dump, "-n", "12", "--seed", "7", "--ignore-eos", "--temp", "1",
                                        "--generation-config", "ignore")
                    if text != want:
                        fail(f"server --generation-config ignore: {text!r} != temperature 1 {want!r}")
                    else:
                        print("ok   server --generation-config ignore: OpenAI's temperature 1")
            finally:
                p.terminate()
                p.wait(timeout=30)
        set_gen(model, {"do_sample": False, "temperature": 0.7})
        p, port = serve(model, os.path.join(tmp, "serve.log"))
        if p is None:
            fail(f"omnic serve did not start: {port[-300:]}")
        else:
            try:
                text = post(port, "/v1/completions", {"prompt": PROMPT, "max_tokens": 12, "ignore_eos": True})
                if text["choices"][0]["text"] != greedy_text:
                    fail(f"server do_sample false: {text['choices'][0]['text']!r} is not greedy {greedy_text!r}")
                else:
                    print("ok   server: do_sample false is greedy")
            finally:
                p.terminate()
                p.wait(timeout=30)

        # ---- bad values ----
        for gen, key in [({"temperature": -1}, "temperature"), ({"top_p": 1.5}, "top_p"),
                         ({"top_k": "five"}, "top_k"), ({"repetition_penalty": 0}, "repetition_penalty"),
                         ({"max_new_tokens": 0}, "max_new_tokens"), ({"do_sample": "yes"}, "do_sample"),
                         ({"eos_token_id": "</s>"}, "eos_token_id")]:
            set_gen(model, gen)
            _, _, err, rc = run(model, dump, "-n", "2")
            msg = err.strip().splitlines()[-1] if err.strip() else ""
            if rc == 0 or f"generation_config.json: {key}" not in err and f"field '{key}'" not in err:
                fail(f"{gen}: omnic run exit {rc}, stderr {err[-300:]!r} does not name {key}")
                continue
            p, out = serve(model, os.path.join(tmp, "serve.log"))
            if p is not None or key not in out:
                fail(f"{gen}: omnic serve loaded it or did not name {key}: {out[-300:] if p is None else ''}")
                if p is not None:
                    p.terminate()
                    p.wait()
                continue
            _, _, err, rc = run(model, dump, "-n", "2", "--generation-config", "ignore")
            if (rc == 0) != (key != "eos_token_id"):
                fail(f"{gen} with --generation-config ignore: exit {rc}: {err[-200:]}")
                continue
            print(f"ok   bad {key}: CLI and server refuse to load: {msg[:110]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"test_generation_config: {'ok' if not failed else f'{failed} failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
