"""Helpers of the e2e tests that drive one `omnic serve` from Python (standard library only): start
it on a free port and wait until it is ready, stream a greedy completion, read /metrics, and the
per-token gaps of streams."""
import http.client
import json
import re
import subprocess
import sys
import time


def start(args, log):
    """Starts `args` (an omnic serve command line without --port) and waits for "ready on";
    returns (process, port)."""
    p = subprocess.Popen(args + ["--port", "0"], stderr=open(log, "w"), stdout=subprocess.DEVNULL)
    for _ in range(1200):
        text = open(log).read()
        m = re.search(r"listening on http://[^:]*:(\d+)", text)
        if m and "ready on" in text:
            return p, int(m.group(1))
        if p.poll() is not None:
            sys.exit(f"server exited: {text}")
        time.sleep(0.1)
    p.kill()
    sys.exit("server not ready")


def metrics(port):
    """/metrics as {series: value}."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, v = line.rsplit(" ", 1)
            out[k] = float(v)
    return out


def gaps(outs, lo, hi):
    """Per-token gaps of streams (each out["times"]: (arrival, completion tokens so far) per
    chunk) whose chunk arrived inside [lo, hi]; a chunk of k tokens counts as k gaps of gap/k."""
    g = []
    for b in outs:
        tt = b.get("times", [])
        for (a, na), (c, nc) in zip(tt, tt[1:]):
            if lo <= c <= hi and nc > na:
                g.append((c - a) / (nc - na))
    return g


def stream(port, path, body, out):
    """POSTs body (its sampling made greedy, streamed with usage in every chunk) to path
    (/v1/chat/completions or /v1/completions); out gets the status, the text and (arrival time,
    completion tokens so far) per chunk; a non-200 answer's body is the text."""
    body = dict(body, temperature=0, ignore_eos=True, stream=True,
                stream_options={"include_usage": True, "continuous_usage_stats": True})
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    out["status"], out["text"], out["times"] = r.status, "", []
    if r.status != 200:
        out["text"] = r.read().decode(errors="replace")
        c.close()
        return
    while True:
        line = r.readline()
        if not line:
            break
        if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
            continue
        js = json.loads(line[6:])
        for ch in js.get("choices", []):
            out["text"] += ch.get("text") or ch.get("delta", {}).get("content") or ""
        if js.get("choices") and js.get("usage"):
            out["times"].append((time.time(), js["usage"]["completion_tokens"]))
    c.close()
