#!/usr/bin/python3
"""The attack suite (issue 13): hostile clients against a live `omnic serve` on loopback, one case
at a time, each bounded in count and time. Every case asserts

  - the server's peak memory during the case (VmHWM, reset before it through clear_refs) grows
    by less than the case's stated bound over what it held when the case began,
  - a well-behaved client running alongside (polling /health every 20 ms from its own process,
    so the attackers' Python threads cannot stall its clock, and running a greedy completion,
    retrying on 429/503 as Retry-After says) keeps getting /health answers, the slowest under
    HEALTH_MAX_S, and its completion is bit-identical to the quiet run,
  - the server is still up and healthy afterwards,

plus what the attack itself must get (a 4xx naming the limit, a closed connection). Attackers
connect from 127.0.0.2.. (Linux routes all of 127/8 to lo), so the per-address connection cap
applies to them and not to the good client on 127.0.0.1. Latencies are printed (the benchmark
figures live in bench/hostile.md); the asserted bounds are loose on purpose (a shared 2-core
machine), the point is that nothing starves, hangs or grows.

The model is the tiny LLaVA from mktiny with two bombs added to its chat template: a message
text "WORKBOMB" builds 15 MB strings in a 100000-step loop, "STEPBOMB" runs 10^10 empty steps."""
import base64
import io
import json
import os
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

import numpy as np
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
HEALTH_MAX_S = 1.0  # the slowest /health the good client may see during any case
READ_TIMEOUT_S = 2.0
failures = []


def check(cond, what, extra=""):
    if not cond:
        failures.append(f"{what} {extra}")
        print(f"FAIL: {what} {extra}", flush=True)
    return cond


# ---- the server ----

class Server:
    def __init__(self, model, tmp, *args):
        self.log = open(os.path.join(tmp, "server.log"), "w+")
        self.proc = subprocess.Popen([OMNIC, "serve", "-m", model, "--port", "0", "--host", "127.0.0.1",
                                      "--allowed-hosts", "*", "--read-timeout", str(READ_TIMEOUT_S),
                                      "--parallel", "2", "--ctx", "512", *args],
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        self.port = None
        for _ in range(600):
            self.log.seek(0)
            text = self.log.read()
            if "listening on http://" in text and self.port is None:
                self.port = int(text.split("listening on http://")[1].split(":")[1].split()[0])
            if "ready on" in text:
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("server did not start:\n" + text)

    def peak_reset(self):
        with open(f"/proc/{self.proc.pid}/clear_refs", "w") as f:
            f.write("5")

    def peak_mb(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("inf")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            check(False, "server exits on SIGTERM within 30 s")


def http(port, method, path, body=None, headers=None, timeout=60, src="127.0.0.1"):
    """(status, headers dict, body bytes) over a raw socket (HTTP/1.1, Connection: close)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(src, 0))
    data = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else b"")
    h = {"Host": "127.0.0.1", "Connection": "close"}
    if body is not None:
        h["Content-Type"] = "application/json"
        h["Content-Length"] = str(len(data))
    h.update(headers or {})
    s.sendall(f"{method} {path} HTTP/1.1\r\n".encode() + "".join(f"{k}: {v}\r\n" for k, v in h.items()).encode()
              + b"\r\n" + data)
    out = b""
    try:
        while True:
            c = s.recv(65536)
            if not c:
                break
            out += c
    except (ConnectionResetError, socket.timeout):
        pass
    s.close()
    head, _, rest = out.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
    hdrs = {ln.split(":", 1)[0].lower(): ln.split(":", 1)[1].strip() for ln in lines[1:] if ":" in ln}
    if hdrs.get("transfer-encoding") == "chunked":
        body_out, r = b"", rest
        while r:
            size_line, _, r = r.partition(b"\r\n")
            n = int(size_line.split(b";")[0] or b"0", 16)
            if n == 0:
                break
            body_out += r[:n]
            r = r[n + 2:]
        rest = body_out
    return status, hdrs, rest


GOOD_REQ = {"prompt": "The quick brown fox", "max_tokens": 64, "temperature": 0, "ignore_eos": True}


def good_completion(port, deadline_s=60):
    """The well-behaved client's completion: retries on 429/503 after Retry-After."""
    t_end = time.time() + deadline_s
    while time.time() < t_end:
        st, h, b = http(port, "POST", "/v1/completions", GOOD_REQ)
        if st == 200:
            return json.loads(b)["choices"][0]["text"]
        if st in (429, 503):
            time.sleep(float(h.get("retry-after", "1")))
            continue
        return f"HTTP {st}: {b[:200]!r}"
    return "gave up"


def poll_health(port):
    """The good client's /health poller, run as its own process (--poll-health PORT) so that the
    attackers' threads, which hold this interpreter's GIL for up to a second while they build and
    read their bodies, cannot stall its clock. Says "polling" after its first poll, polls every
    20 ms until stdin closes, then prints [[seconds, status], ...] as JSON."""
    out = []
    while not out or not select.select([sys.stdin], [], [], 0.02)[0]:
        t0 = time.time()
        try:
            st, _, _ = http(port, "GET", "/health", timeout=10)
        except OSError:
            st = 0
        out.append([time.time() - t0, st])
        if len(out) == 1:
            print("polling", flush=True)
    print(json.dumps(out), flush=True)


class GoodClient(threading.Thread):
    """Polls /health every 20 ms (from a child process) and runs one completion, until stopped."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.stop_ev, self.polling = port, threading.Event(), threading.Event()
        self.health, self.health_fail, self.text = [], 0, None

    def run(self):
        comp = threading.Thread(target=lambda: setattr(self, "text", good_completion(self.port)), daemon=True)
        poller = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--poll-health", str(self.port)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        started = poller.stdout.readline() == b"polling\n"  # its first poll is done: the case may begin
        self.polling.set()
        comp.start()
        self.stop_ev.wait()
        try:
            out, _ = poller.communicate(b"stop\n", timeout=60)
        except subprocess.TimeoutExpired:  # a hung poller fails the check below, not this thread
            poller.kill()
            out, _ = poller.communicate()
        polls = json.loads(out) if started and poller.returncode == 0 else []
        check(polls, "the good client's /health poller ran", f"(exit {poller.returncode})")
        self.health = [t for t, _ in polls]
        self.health_fail = sum(st != 200 for _, st in polls)
        comp.join(90)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))] if xs else float("nan")


def run_case(srv, name, attack, mem_mb, quiet_text):
    srv.peak_reset()
    base = srv.peak_mb()
    good = GoodClient(srv.port)
    good.start()
    good.polling.wait(60)
    t0 = time.time()
    try:
        attack(srv)
    except Exception as e:  # an attack helper failing is a test failure, not a crash of the suite
        check(False, f"{name}: attack raised {type(e).__name__}: {e}")
    took = time.time() - t0
    time.sleep(0.2)
    good.stop_ev.set()
    good.join(120)
    peak = srv.peak_mb()
    h = good.health
    print(f"{name}: {took:.1f} s; peak RSS {peak:.0f} MB ({base:.0f} before, bound +{mem_mb}); /health "
          f"p50 {pct(h, 50) * 1000:.1f} ms p99 {pct(h, 99) * 1000:.1f} ms max {max(h or [0]) * 1000:.1f} ms "
          f"({len(h)} polls)", flush=True)
    check(srv.proc.poll() is None, f"{name}: the server is still running")
    check(peak - base < mem_mb, f"{name}: peak RSS {peak:.0f} MB, {peak - base:.0f} MB over the case's start, "
          f"under {mem_mb} MB")
    check(good.health_fail == 0, f"{name}: every /health answered 200", f"({good.health_fail} failed)")
    check(max(h or [0]) < HEALTH_MAX_S, f"{name}: slowest /health {max(h or [0]):.2f} s < {HEALTH_MAX_S} s")
    check(good.text == quiet_text, f"{name}: the good client's completion is bit-identical to the quiet run",
          repr(good.text)[:200])
    st, _, _ = http(srv.port, "GET", "/health")
    check(st == 200, f"{name}: /health 200 afterwards")


# ---- hostile inputs ----

def png_ztxt():
    b = io.BytesIO()
    Image.new("RGB", (16, 16), (200, 10, 10)).save(b, "PNG")
    png = b.getvalue()
    iend = png.rfind(b"IEND") - 4

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    text = b"k\0\0" + zlib.compress(b"a" * 8_000_000, 9)  # each inflates to 8 MB
    return png[:iend] + b"".join(chunk(b"zTXt", text) for _ in range(200)) + png[iend:]


def jpeg_cmyk_bomb(side=6000):
    b = io.BytesIO()
    Image.new("CMYK", (16, 16), (10, 20, 30, 40)).save(b, "JPEG", progressive=True, quality=50)
    j = bytearray(b.getvalue())
    sof = j.find(b"\xff\xc2")
    struct.pack_into(">HH", j, sof + 5, side, side)
    return bytes(j[: j.find(b"\xff\xda") + 40])


def data_url(mime, raw):
    return f"data:{mime};base64," + base64.b64encode(raw).decode()


def chat(parts, max_tokens=2):
    return {"messages": [{"role": "user", "content": parts}], "max_tokens": max_tokens, "temperature": 0}


def parallel(fns):
    out = [None] * len(fns)
    ts = [threading.Thread(target=lambda i=i, f=f: out.__setitem__(i, f()), daemon=True) for i, f in enumerate(fns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    return out


# ---- the cases ----

def attack_png(srv):
    url = data_url("image/png", png_ztxt())
    r = parallel([lambda: http(srv.port, "POST", "/v1/chat/completions",
                               chat([{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "Hi"}]),
                               src="127.0.0.2")] * 2)
    check(all(x[0] in (200, 400) for x in r), "png zTXt: answered 200 or 400", [x[0] for x in r])


def attack_jpeg(srv):
    url = data_url("image/jpeg", jpeg_cmyk_bomb())
    parts = [{"type": "image_url", "image_url": {"url": url}}] * 4 + [{"type": "text", "text": "Hi"}]
    t0 = time.time()
    st, _, b = http(srv.port, "POST", "/v1/chat/completions", chat(parts), src="127.0.0.2")
    check(st == 400 and b"working memory" in b, "CMYK JPEG bomb: 400 naming the decoder's memory limit", b[:300])
    check(time.time() - t0 < 10, "CMYK JPEG bomb: refused within 10 s", f"{time.time() - t0:.1f}")


def hold_sockets(port, n, srcs, payload):
    socks = []
    for i in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(srcs[i % len(srcs)], 0))
            s.sendall(payload)
            socks.append(s)
        except OSError:
            pass  # refused past the per-address cap: what should happen
    return socks


def closed_by_server(s, wait_s):
    s.settimeout(wait_s)
    try:
        while True:
            c = s.recv(65536)
            if not c:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def attack_idle_headers(srv):
    srcs = ["127.0.0.2", "127.0.0.3"]
    socks = hold_sockets(srv.port, 300, srcs, b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    check(len(socks) > 0, "idle headers: some connections opened")
    time.sleep(0.5)
    st, _, _ = http(srv.port, "GET", "/health")
    check(st == 200, "idle headers: /health answers while they are held")
    closed = sum(closed_by_server(s, READ_TIMEOUT_S + 3) for s in socks)
    check(closed == len(socks), f"idle headers: all {len(socks)} connections closed by the read deadline",
          f"({closed} closed)")
    for s in socks:
        s.close()


def attack_slowloris(srv):
    socks = hold_sockets(srv.port, 40, ["127.0.0.4"], b"P")
    t_end = time.time() + READ_TIMEOUT_S + 2.5
    alive = list(socks)
    while alive and time.time() < t_end:
        nxt = []
        for s in alive:
            try:
                s.sendall(b"O")  # a byte every 0.25 s: never idle, never done
                nxt.append(s)
            except OSError:
                pass
        alive = nxt
        time.sleep(0.25)
    closed = sum(closed_by_server(s, 2) for s in alive) + (len(socks) - len(alive))
    check(closed == len(socks), f"slow-loris: all {len(socks)} trickling connections cut off", f"({closed})")
    for s in socks:
        s.close()


def attack_uploads(srv):
    srcs = ["127.0.0.5", "127.0.0.6", "127.0.0.7"]
    head = (b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 8388608\r\n\r\n")
    socks = hold_sockets(srv.port, 64, srcs, head)
    chunk = b" " * (1 << 20)
    for s in socks:
        try:
            s.sendall(chunk)
        except OSError:
            pass  # refused and closed already
    time.sleep(0.5)
    refused = 0
    for s in socks:  # a refused one got its 503 and was closed; an accepted one still waits for its body
        s.settimeout(0.05)
        try:
            got = s.recv(64)
            refused += got.startswith(b"HTTP/1.1 503") or got == b""
        except socket.timeout:
            pass
        except OSError:  # reset after the 503 (its unread upload)
            refused += 1
    check(refused >= 64 - 8, "stalled 8 MiB uploads: all but the 8 that fit the 64 MiB budget refused",
          f"({refused} of 64)")
    for s in socks:
        closed_by_server(s, READ_TIMEOUT_S + 2)  # the read deadline ends the rest
        s.close()


def attack_json(srv):
    body = b'{"prompt": [' + b",".join([b"1"] * 4_000_000) + b'], "max_tokens": 1}'
    r = parallel([lambda: http(srv.port, "POST", "/v1/completions", body, src="127.0.0.8")] * 4)
    check(all(x[0] == 413 and b"max-json-memory" in x[2] for x in r),
          "8 MB of [1,1,...]: 413 naming --max-json-memory", [(x[0], x[2][:160]) for x in r][:1])


def attack_template(srv):
    for word, what in (("WORKBOMB", "builds more than"), ("STEPBOMB", "loop iterations")):
        t0 = time.time()
        st, _, b = http(srv.port, "POST", "/v1/chat/completions", chat([{"type": "text", "text": word}]),
                        src="127.0.0.9")
        check(st == 400 and what.encode() in b, f"template {word}: 400 naming the budget", b[:300])
        check(time.time() - t0 < 10, f"template {word}: refused within 10 s", f"{time.time() - t0:.1f}")


def attack_flood(srv):
    reqs = [lambda i=i: http(srv.port, "POST", "/v1/completions",
                             {"prompt": f"flood {i}", "max_tokens": 32, "temperature": 0},
                             src=f"127.0.1.{i % 8 + 1}") for i in range(120)]
    r = parallel(reqs)
    codes = sorted({x[0] for x in r})
    check(set(codes) <= {200, 429}, "flood of 120 completions: 200 or 429 each", codes)
    check(all("retry-after" in x[1] for x in r if x[0] == 429), "flood: every 429 has Retry-After")
    print(f"flood: {sum(x[0] == 200 for x in r)} answered, {sum(x[0] == 429 for x in r)} got 429", flush=True)


def attack_images_busy(srv):
    y, x = np.mgrid[0:1500, 0:2000]
    img = Image.fromarray(np.stack([x % 256, y % 256, (x + y) % 256], -1).astype(np.uint8))
    b = io.BytesIO()
    img.save(b, "PNG")
    url = data_url("image/png", b.getvalue())
    parts = [{"type": "image_url", "image_url": {"url": url}}] * 6 + [{"type": "text", "text": "Hi"}]
    r = parallel([lambda: http(srv.port, "POST", "/v1/chat/completions", chat(parts), src="127.0.0.10")] * 2)
    check(all(x[0] == 200 for x in r), "two requests of six 2000x1500 PNGs: 200", [x[0] for x in r])


def attack_http(srv):
    junk = [b"GARBAGE\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"POST /v1/completions HTTP/1.1\r\nHost: a\r\n"
            b"Content-Length: -5\r\n\r\n", b"POST /v1/completions HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: "
            b"chunked\r\n\r\nzz\r\n", b"GET /health HTTP/1.1\r\nHost: a\r\nX: " + b"a" * 100_000 + b"\r\n\r\n",
            b"\x00\xff" * 500, b"GET /health HTTP/1.1\r\nHost: a\r\n\r\n" * 50]
    for i, payload in enumerate(junk * 3):  # the invalid chunked body waits for the read deadline
        try:
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=5, source_address=("127.0.0.11", 0))
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            closed_by_server(s, 5)
            s.close()
        except OSError:
            pass


def attack_half_close(srv):
    for stream in (False, True):
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=60, source_address=("127.0.0.12", 0))
        body = json.dumps({"prompt": "Half", "max_tokens": 40, "temperature": 0, "stream": stream}).encode()
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        time.sleep(0.1)  # libmicrohttpd 0.9.75 aborts on a FIN it reads before the request's end
        s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            c = s.recv(65536)
            if not c:
                break
            out += c
        s.close()
        ok = out.startswith(b"HTTP/1.1 200") and (b"[DONE]" in out if stream else b'"finish_reason"' in out)
        check(ok, f"half-closed client (stream={stream}) gets its answer", out[:200])


def make_model(tmp):
    """The tiny LLaVA with the two template bombs in front of its chat template."""
    model = os.path.join(tmp, "llava")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools/mktiny.py"), "--family", "llava", "--vision",
                    "clip", "--text", "llama", "--out", model], check=True, stdout=subprocess.DEVNULL)
    ct_path = os.path.join(model, "chat_template.json")
    ct = json.load(open(ct_path))
    bombs = ("{% for m in messages %}{% for c in m['content'] %}{% if c['type'] == 'text' %}"
             "{% if c['text'] == 'WORKBOMB' %}{% for i in range(100000) %}{% set x = 'a' * 15000000 %}"
             "{% endfor %}{% endif %}"
             "{% if c['text'] == 'STEPBOMB' %}{% for i in range(100000) %}{% for j in range(100000) %}"
             "{% endfor %}{% endfor %}{% endif %}"
             "{% endif %}{% endfor %}{% endfor %}")
    ct["chat_template"] = bombs + ct["chat_template"]
    json.dump(ct, open(ct_path, "w"))
    return model


def main():
    with tempfile.TemporaryDirectory() as tmp:
        model = make_model(tmp)
        srv = Server(model, tmp)
        try:
            quiet = good_completion(srv.port)
            check(quiet and not quiet.startswith("HTTP"), "quiet run", quiet)
            # (name, attack, peak RSS growth bound in MB)
            cases = [("png zTXt chunks", attack_png, 100),
                     ("CMYK JPEG bomb", attack_jpeg, 100),
                     ("300 idle header connections", attack_idle_headers, 50),
                     ("slow-loris", attack_slowloris, 50),
                     ("stalled 8 MiB uploads", attack_uploads, 150),  # the 64 MiB body budget
                     ("JSON expansion", attack_json, 400),  # 2 workers x 128 MiB + 4 bodies
                     ("template bombs", attack_template, 100),
                     ("completion flood", attack_flood, 150),
                     ("image decode load", attack_images_busy, 500),
                     ("malformed HTTP", attack_http, 50),
                     ("half-close", attack_half_close, 50)]
            only = os.environ.get("HOSTILE_ONLY")
            for name, fn, mem in cases:
                if only and not any(o in name for o in only.split(",")):
                    continue
                run_case(srv, name, fn, mem, quiet)
        finally:
            srv.stop()
            srv.log.seek(0)
            log = srv.log.read()
            if failures:
                print(log[-3000:])
    if failures:
        print(f"test_hostile: {len(failures)} failed")
        return 1
    print("test_hostile: ok")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--poll-health":
        poll_health(int(sys.argv[2]))
        sys.exit(0)
    sys.exit(main())
