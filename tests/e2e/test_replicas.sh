#!/usr/bin/env bash
# Two omnic serve replicas behind nginx with deploy/nginx-omnic.conf (docs/deploy.md), on
# loopback: requests spread over both; once streams run on both, one replica is killed
# (SIGKILL): its streams end with an error (the connection closes before [DONE], no hang), the
# other replica's streams finish, and every new request succeeds on the survivor.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/server/common.sh
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] || { echo "FAIL: nginx is not installed (scripts/setup.sh installs it)"; exit 1; }

$PY tools/mktiny.py --family qwen2 --out "$tmp/m" >/dev/null || { echo "FAIL: mktiny"; exit 1; }
start_server r1 -m "$tmp/m" --parallel 4 --ctx 2048 || exit 1
P1=$PORT PID1=$PID
start_server r2 -m "$tmp/m" --parallel 4 --ctx 2048 || exit 1
P2=$PORT PID2=$PID
NP=$($PY -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
mkdir -p "$tmp/ngx"
sed -e "s/@REPLICA_1@/127.0.0.1:$P1/" -e "s/@REPLICA_2@/127.0.0.1:$P2/" -e "s/@LISTEN@/127.0.0.1:$NP/" \
  deploy/nginx-omnic.conf >"$tmp/ngx/omnic.conf"
cat >"$tmp/ngx/nginx.conf" <<NGX
daemon off;
worker_processes 1;
pid $tmp/ngx/nginx.pid;
error_log $tmp/ngx/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $tmp/ngx/body;
    proxy_temp_path $tmp/ngx/proxy;
    fastcgi_temp_path $tmp/ngx/fastcgi;
    uwsgi_temp_path $tmp/ngx/uwsgi;
    scgi_temp_path $tmp/ngx/scgi;
    include $tmp/ngx/omnic.conf;
}
NGX
"$NGINX" -p "$tmp/ngx" -c "$tmp/ngx/nginx.conf" 2>"$tmp/ngx/stderr.log" &
NGXPID=$!
for _ in $(seq 1 100); do
  curl -s -o /dev/null "http://127.0.0.1:$NP/health" && break
  sleep 0.05
done
curl -s -o /dev/null "http://127.0.0.1:$NP/health" || { fail "nginx did not start"; cat "$tmp/ngx/stderr.log" "$tmp/ngx/error.log"; exit 1; }

$PY - "$NP" "$P1" "$P2" "$PID1" <<'PYEOF' || failed=1
import http.client, json, os, signal, sys, threading, time
NP, P1, P2, PID1 = (int(a) for a in sys.argv[1:])
bad = []
def check(c, what, extra=""):
    print(("ok: " if c else "FAIL: ") + what + (f" {extra}" if extra and not c else ""), flush=True)
    if not c: bad.append(what)

def served(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics"); t = c.getresponse().read().decode()
    return sum(float(l.split()[-1]) for l in t.splitlines() if l.startswith("omnic_requests_total{"))

def complete(i, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", NP, timeout=timeout)
    c.request("POST", "/v1/completions", json.dumps({"prompt": f"req {i}", "max_tokens": 8, "temperature": 0}),
              {"Content-Type": "application/json"})
    r = c.getresponse(); return r.status, r.read()

# 1. spread: concurrent requests through nginx land on both replicas (least_conn)
res = [None] * 8
ts = [threading.Thread(target=lambda i=i: res.__setitem__(i, complete(i))) for i in range(8)]
[t.start() for t in ts]; [t.join(60) for t in ts]
check(all(r and r[0] == 200 for r in res), "8 requests through nginx answered 200", [r and r[0] for r in res])
a, b = served(P1), served(P2)
check(a >= 1 and b >= 1 and a + b >= 8, f"requests spread over both replicas ({a:.0f} + {b:.0f})")

# 2. streams on both; replica 1 is killed mid-stream
out = {}
started = [threading.Event() for _ in range(6)]
def stream(i):
    c = http.client.HTTPConnection("127.0.0.1", NP, timeout=120)
    try:
        c.request("POST", "/v1/completions", json.dumps({"prompt": f"long {i}", "max_tokens": 2000, "ignore_eos": True,
                                                        "temperature": 0, "stream": True}),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        data = b""
        while True:
            chunk = r.read1(65536) if hasattr(r, "read1") else r.read(65536)
            if not chunk: break
            data += chunk
            started[i].set()
        out[i] = ("done" if b"[DONE]" in data else "cut", len(data))
    except Exception as e:  # the connection closed before the end of the chunked body
        out[i] = ("error", type(e).__name__)
    started[i].set()
t0 = time.time()
ts = [threading.Thread(target=stream, args=(i,)) for i in range(6)]
[t.start() for t in ts]
for ev in started:  # every stream is under way: kill replica 1 now
    ev.wait(60)
running = sum(t.is_alive() for t in ts)
os.kill(PID1, signal.SIGKILL)
check(running == 6, f"the kill came while all 6 streams ran ({running} running)")
[t.join(120) for t in ts]
took = time.time() - t0
check(len(out) == 6, f"every stream ended (none hangs; {took:.1f} s)", out)
cut = [i for i, v in out.items() if v[0] != "done"]
done = [i for i, v in out.items() if v[0] == "done"]
check(len(cut) >= 1 and len(done) >= 1, f"the killed replica's streams ended early ({len(cut)}), the survivor's "
      f"finished ({len(done)})", out)

# 3. everything new goes to the survivor and succeeds
res = [complete(100 + i) for i in range(10)]
check(all(r[0] == 200 for r in res), "10 new requests after the kill: all 200", [r[0] for r in res])
sys.exit(1 if bad else 0)
PYEOF
kill "$NGXPID" 2>/dev/null
wait "$NGXPID" 2>/dev/null
kill -TERM "$PID2" 2>/dev/null
wait "$PID2" 2>/dev/null
[ $failed -eq 0 ] && echo "test_replicas: ok" || { echo "test_replicas: FAILED"; tail -20 "$tmp/ngx/error.log"; }
exit $failed
