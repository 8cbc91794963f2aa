#!/usr/bin/python3
"""Load generator for `omnic serve` (bench/serve.md).

Starts `omnic serve` on the given checkpoint (or uses --url), then:
  1. for each concurrency C in --concurrency: C clients, each sending --requests streaming
     completions back to back (random --prompt-tokens token ids, --max-tokens generated with
     ignore_eos); reports requests/s, total output tok/s, TTFT and inter-token latency p50/p99,
     errors;
  2. interference: --streams clients decoding while one client sends a --long-prompt token
     prompt; reports the decoding streams' inter-token latency p99 during the long prefill vs
     without it;
  3. prefix cache (--shared-prefix N): a prompt of N random tokens + 16, then another with the
     same N tokens and a different tail; reports both TTFTs and the ratio (the second reuses
     the first's KV blocks).
Inter-token latency comes from stream_options.continuous_usage_stats: every chunk carries the
tokens generated so far, so a chunk covering k tokens counts as k gaps of (gap / k); a server
that sends no usage per chunk (llama-server, --url) counts one token per chunk.
Standard library only."""
import argparse
import base64
import http.client
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


class Result:
    def __init__(self):
        self.ok = False
        self.error = None
        self.t_send = self.t_first = self.t_end = 0.0
        self.tokens = 0
        self.gaps = []  # (time of the chunk, per-token gap) pairs


def one_request(host, port, key, prompt, max_tokens, timeout=3600, image=None):
    """A streamed completion of token ids, or (image: a data URL) a streamed chat turn with that
    image and a short question."""
    r = Result()
    opts = {"max_tokens": max_tokens, "ignore_eos": True, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    if image:
        path = "/v1/chat/completions"
        body = json.dumps(dict(opts, messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": image}}, {"type": "text", "text": "Describe it."}]}]))
    else:
        path = "/v1/completions"
        body = json.dumps(dict(opts, prompt=prompt))
    hdr = {"Content-Type": "application/json"}
    if key:
        hdr["Authorization"] = "Bearer " + key
    try:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        r.t_send = time.time()
        conn.request("POST", path, body=body, headers=hdr)
        resp = conn.getresponse()
        if resp.status != 200:
            r.error = f"HTTP {resp.status}: {resp.read()[:200]!r}"
            return r
        last_t, last_n = None, 0
        while True:
            line = resp.readline()
            if not line:
                break
            if not line.startswith(b"data: "):
                continue
            data = line[6:].strip()
            if data == b"[DONE]":
                r.ok = True
                break
            js = json.loads(data)
            if "error" in js:
                r.error = js["error"]["message"]
                break
            now = time.time()
            n = (js.get("usage") or {}).get("completion_tokens")
            if n is None:  # a server without continuous usage stats (llama-server): a token per chunk
                n = last_n + 1 if js.get("choices") else last_n
            if not js.get("choices"):
                r.tokens = n
                continue
            if n > last_n:
                if last_t is None:
                    r.t_first = now
                    if n - 1 > 0:  # tokens before the first chunk: no gap information
                        pass
                else:
                    k = n - last_n
                    r.gaps.extend([(now, (now - last_t) / k)] * k)
                last_t, last_n = now, n
        r.t_end = time.time()
        r.tokens = max(r.tokens, last_n)  # (no final usage chunk: the chunks counted)
        conn.close()
    except Exception as e:  # noqa: BLE001 - any failure is an error of the run
        r.error = repr(e)
    return r


def run_clients(args, port, conc, requests, max_tokens, prompt_tokens, rng):
    results = []
    lock = threading.Lock()

    def client(seed):
        local = random.Random(seed)
        for _ in range(requests):
            prompt = [local.randrange(0, args.vocab) for _ in range(prompt_tokens)]
            res = one_request(args.host, port, args.api_key, prompt, max_tokens)
            with lock:
                results.append(res)

    ts = [threading.Thread(target=client, args=(rng.random(),)) for _ in range(conc)]
    t0 = time.time()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return results, time.time() - t0


def summarize(name, results, wall):
    ok = [r for r in results if r.ok]
    errors = len(results) - len(ok)
    toks = sum(r.tokens for r in ok)
    ttft = [r.t_first - r.t_send for r in ok if r.t_first]
    itl = [g for r in ok for _, g in r.gaps]
    row = {"name": name, "requests": len(results), "errors": errors, "wall_s": wall,
           "req_s": len(ok) / wall, "tok_s": toks / wall,
           "ttft_p50": pct(ttft, 50), "ttft_p99": pct(ttft, 99), "itl_p50": pct(itl, 50), "itl_p99": pct(itl, 99)}
    for r in results:
        if r.error:
            print(f"  error: {r.error}", file=sys.stderr)
    return row


def interference(args, port, rng, image=None):
    """--streams decoding clients; after they warm up, one client sends a --long-prompt prompt (or,
    with image, a data URL, a chat turn with that image). The decoding streams' per-token gaps are
    split into those that fell inside the interfering request's window (send -> its first token)
    and those outside it."""
    decode_tokens = args.interference_tokens
    results = []
    lock = threading.Lock()

    def stream_client(seed):
        local = random.Random(seed)
        prompt = [local.randrange(0, args.vocab) for _ in range(args.prompt_tokens)]
        res = one_request(args.host, port, args.api_key, prompt, decode_tokens)
        with lock:
            results.append(res)

    ts = [threading.Thread(target=stream_client, args=(rng.random(),)) for _ in range(args.streams)]
    for t in ts:
        t.start()
    time.sleep(args.interference_delay)
    long_prompt = [rng.randrange(0, args.vocab) for _ in range(args.long_prompt)]
    long = one_request(args.host, port, args.api_key, long_prompt, 4, image=image)
    for t in ts:
        t.join()
    lo, hi = long.t_send, long.t_first or long.t_end
    # baseline: every stream decoding (their own prompts prefilled), no long prompt in flight
    started = max((r.t_first for r in results if r.ok), default=lo)
    during = [g for r in results if r.ok for t, g in r.gaps if lo <= t <= hi]
    outside = [g for r in results if r.ok for t, g in r.gaps if t > started and not (lo <= t <= hi + 1.0)]
    errors = sum(1 for r in results if not r.ok) + (0 if long.ok else 1)
    return {"prefill_s": hi - lo, "during_p99": pct(during, 99), "during_p50": pct(during, 50),
            "during_n": len(during), "base_p99": pct(outside, 99), "base_p50": pct(outside, 50),
            "base_n": len(outside), "errors": errors, "long_error": long.error}


def start_server(args):
    cmd = [args.omnic, "serve", "-m", args.model, "--port", "0", "--parallel", str(args.parallel), "--ctx",
           str(args.ctx), "--max-queue", "256"]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    if args.quant:
        cmd += ["--quant", args.quant]
    if args.chunk:
        cmd += ["--chunk", str(args.chunk)]
    if args.step_tokens >= 0:
        cmd += ["--step-tokens", str(args.step_tokens)]
    if args.encoder_cache_mb >= 0:
        cmd += ["--encoder-cache-mb", str(args.encoder_cache_mb)]
    if args.prefix_cache_mb >= 0:
        cmd += ["--prefix-cache-mb", str(args.prefix_cache_mb)]
    log = open(args.log, "w")
    p = subprocess.Popen(cmd, stderr=log, stdout=log)
    port = None
    t0 = time.time()
    while time.time() - t0 < 600:
        text = open(args.log).read()
        if port is None and "listening on" in text:
            port = int(text.split("listening on http://")[1].split()[0].rsplit(":", 1)[1])
        if "ready on" in text:
            return p, port, time.time() - t0
        if p.poll() is not None:
            sys.exit(f"server exited: {text}")
        time.sleep(0.2)
    p.kill()
    sys.exit("server did not become ready")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--omnic", default="build/release/omnic")
    ap.add_argument("--model", help="checkpoint directory (starts a server)")
    ap.add_argument("--url", help="use a running server instead, e.g. http://127.0.0.1:8080")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--api-key")
    ap.add_argument("--quant", default="q4_0")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--chunk", type=int, default=0, help="prefill chunk (server default when 0)")
    ap.add_argument("--step-tokens", type=int, default=-1,
                    help="server --step-tokens: cap of a mixed step's rows (-1: the server's default; 0: off)")
    ap.add_argument("--concurrency", default="1,4,8")
    ap.add_argument("--requests", type=int, default=2, help="requests per client per concurrency level")
    ap.add_argument("--prompt-tokens", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=500, help="prompt token ids are drawn from 0..vocab-1")
    ap.add_argument("--long-prompt", type=int, default=2000)
    ap.add_argument("--streams", type=int, default=3, help="decoding streams in the interference run")
    ap.add_argument("--interference-tokens", type=int, default=160)
    ap.add_argument("--interference-delay", type=float, default=5.0,
                    help="seconds the streams decode before the long prompt arrives")
    ap.add_argument("--image", help="image interference run: a chat turn with this image (PNG/JPEG) while "
                                    "--streams decode")
    ap.add_argument("--encoder-cache-mb", type=int, default=-1, help="server --encoder-cache-mb (-1: its default)")
    ap.add_argument("--shared-prefix", type=int, default=0,
                    help="prefix-cache run: two prompts sharing this many tokens (0: skip)")
    ap.add_argument("--prefix-cache-mb", type=int, default=-1, help="server --prefix-cache-mb (-1: its default)")
    ap.add_argument("--log", default="/tmp/omnic-bench-serve.log")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    proc = None
    if args.url:
        port = int(args.url.rsplit(":", 1)[1].strip("/"))
        load_s = 0
    else:
        if not args.model:
            sys.exit("--model or --url is required")
        proc, port, load_s = start_server(args)
    rng = random.Random(1234)
    out = {"load_s": load_s, "args": vars(args), "levels": []}
    print(f"# omnic serve bench: model {args.model or args.url}, quant {args.quant}, parallel {args.parallel}, "
          f"threads {args.threads or 'all'}, step tokens {args.step_tokens if args.step_tokens >= 0 else 'default'}, prompt {args.prompt_tokens} tokens, {args.max_tokens} generated, "
          f"{args.requests} requests per client (load {load_s:.1f} s)")
    try:
        one_request(args.host, port, args.api_key, [1, 2, 3, 4], 4)  # warm-up
        print("| concurrency | requests | errors | req/s | output tok/s | TTFT p50 (s) | TTFT p99 (s) | "
              "ITL p50 (ms) | ITL p99 (ms) |")
        print("|---|---|---|---|---|---|---|---|---|")
        for c in [int(x) for x in args.concurrency.split(",") if x]:
            res, wall = run_clients(args, port, c, args.requests, args.max_tokens, args.prompt_tokens, rng)
            row = summarize(str(c), res, wall)
            out["levels"].append(row)
            print(f"| {c} | {row['requests']} | {row['errors']} | {row['req_s']:.3f} | {row['tok_s']:.2f} | "
                  f"{row['ttft_p50']:.2f} | {row['ttft_p99']:.2f} | {row['itl_p50'] * 1000:.0f} | "
                  f"{row['itl_p99'] * 1000:.0f} |", flush=True)
        lv = {r["name"]: r for r in out["levels"]}
        if "1" in lv and "4" in lv:
            ratio = lv["4"]["tok_s"] / lv["1"]["tok_s"]
            out["decode_ratio_4_vs_1"] = ratio
            print(f"\ntotal output throughput, concurrency 4 vs 1: {ratio:.2f}x (target >= 2.5x)")
        if args.image:
            with open(args.image, "rb") as f:
                mime = "image/png" if args.image.endswith(".png") else "image/jpeg"
                url = f"data:{mime};base64," + base64.b64encode(f.read()).decode()
            inter = interference(args, port, rng, image=url)
            out["image_interference"] = inter
            ratio = inter["during_p99"] / inter["base_p99"] if inter["base_p99"] else float("nan")
            print(f"image interference: {args.streams} decoding streams while an image request is encoded and "
                  f"prefilled ({inter['prefill_s']:.2f} s to its first token): ITL p99 {inter['during_p99'] * 1000:.0f} "
                  f"ms (p50 {inter['during_p50'] * 1000:.0f}, {inter['during_n']} gaps) vs "
                  f"{inter['base_p99'] * 1000:.0f} ms without: {ratio:.2f}x (target < 1.5x); errors {inter['errors']} "
                  f"{inter['long_error'] or ''}", flush=True)
        if args.shared_prefix > 0:
            shared = [rng.randrange(args.vocab) for _ in range(args.shared_prefix)]
            ttft = []
            for k in range(2):
                tail = [rng.randrange(args.vocab) for _ in range(16)]
                r = one_request(args.host, port, args.api_key, shared + tail, 4)
                if r.error:
                    print(f"prefix cache: request {k}: {r.error}", flush=True)
                ttft.append(r.t_first - r.t_send if r.ok and r.t_first else float("nan"))
            out["prefix_cache"] = {"shared": args.shared_prefix, "ttft_cold": ttft[0], "ttft_warm": ttft[1]}
            print(f"prefix cache: {args.shared_prefix}-token shared prefix + 16: TTFT {ttft[0]:.3f} s cold, "
                  f"{ttft[1]:.3f} s with the prefix cached: {ttft[0] / ttft[1]:.1f}x (target >= 10x)", flush=True)
        if args.long_prompt > 0:
            # the long prompt's own time to first token alone (other random ids: no prefix-cache hit)
            alone = one_request(args.host, port, args.api_key,
                                [rng.randrange(0, args.vocab) for _ in range(args.long_prompt)], 4)
            alone_s = (alone.t_first or alone.t_end) - alone.t_send
            inter = interference(args, port, rng)
            inter["alone_s"] = alone_s
            out["interference"] = inter
            print(f"long prompt alone: {alone_s:.2f} s to its first token; with {args.streams} streams decoding "
                  f"{inter['prefill_s']:.2f} s: {inter['prefill_s'] / alone_s:.2f}x (target <= 1.3x)", flush=True)
            rise = inter["during_p99"] / inter["base_p99"] - 1 if inter["base_p99"] else float("nan")
            print(f"interference: {args.streams} decoding streams while a {args.long_prompt}-token prompt prefills "
                  f"({inter['prefill_s']:.1f} s): ITL p99 {inter['during_p99'] * 1000:.0f} ms "
                  f"(p50 {inter['during_p50'] * 1000:.0f}, {inter['during_n']} gaps) vs "
                  f"{inter['base_p99'] * 1000:.0f} ms without (p50 {inter['base_p50'] * 1000:.0f}, "
                  f"{inter['base_n']} gaps): {rise * 100:+.0f}% (target < +50%); errors {inter['errors']}")
        errors = sum(r["errors"] for r in out["levels"]) + out.get("interference", {}).get("errors", 0)
        print(f"errors: {errors}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)
    finally:
        if proc:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    main()
