#!/usr/bin/env bash
# What the server trusts, tried as a browser page on another site, a DNS-rebinding attacker and
# a connection hog would (loopback only, bounded): a foreign Host header is refused (403) but
# /health still answers; a foreign Origin is refused, the server's own and --cors-origin ones are
# served; text/plain and form bodies get 415; --allowed-hosts replaces the default list; one
# client address cannot hold more than --max-connections-per-ip connections while another is
# served at once; a connection that stops sending its headers is closed after --idle-timeout;
# the connection cap follows RLIMIT_NOFILE, and a limit too low to serve is a clear error.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/server/common.sh

$PY tools/mktiny.py --family llama --out "$tmp/m" >/dev/null || {
  echo "FAIL: mktiny"
  exit 1
}
start_server trust -m "$tmp/m" --max-connections-per-ip 8 --idle-timeout 2 --cors-origin http://ok.example || exit 1
B="http://127.0.0.1:$PORT"
body='{"prompt":"Hi","max_tokens":2}'
req() { # extra curl args... -> status; body in $tmp/r.json
  curl -s -m 20 -o "$tmp/r.json" -w '%{http_code}' "$@"
}
json=(-H 'Content-Type: application/json' -d "$body" "$B/v1/completions")

[ "$(req "${json[@]}")" = 200 ] || fail "a plain request: $(cat "$tmp/r.json")"
[ "$(req -H 'Host: attacker.example:8080' "${json[@]}")" = 403 ] && grep -q "host_not_allowed" "$tmp/r.json" ||
  fail "foreign Host: $(cat "$tmp/r.json")"
[ "$(req -H 'Host: attacker.example' "$B/health")" = 200 ] || fail "/health with a foreign Host"
[ "$(req -H "Host: localhost:$PORT" "${json[@]}")" = 200 ] || fail "Host localhost: $(cat "$tmp/r.json")"
[ "$(req -H 'Origin: https://evil.example' "${json[@]}")" = 403 ] && grep -q "origin_not_allowed" "$tmp/r.json" ||
  fail "foreign Origin: $(cat "$tmp/r.json")"
[ "$(req -H "Origin: http://127.0.0.1:$PORT" "${json[@]}")" = 200 ] || fail "own Origin: $(cat "$tmp/r.json")"
[ "$(req -H 'Origin: http://ok.example' "${json[@]}")" = 200 ] || fail "--cors-origin: $(cat "$tmp/r.json")"
[ "$(req -H 'Content-Type: text/plain' -d "$body" "$B/v1/completions")" = 415 ] && grep -q "not JSON" "$tmp/r.json" ||
  fail "text/plain body: $(cat "$tmp/r.json")"
[ "$(req -d "$body" "$B/v1/completions")" = 415 ] || fail "form body (curl's default): $(cat "$tmp/r.json")"
[ "$(req -H 'Content-Type: application/json; charset=utf-8' -d "$body" "$B/v1/completions")" = 200 ] ||
  fail "JSON with a charset: $(cat "$tmp/r.json")"
counted=0 # (a refused request's connection may linger a moment against the per-address cap)
for _ in 1 2 3 4 5; do
  curl -s -m 5 "$B/metrics" >"$tmp/metrics.txt" && grep -q 'reason="host_not_allowed"} [1-9]' "$tmp/metrics.txt" &&
    counted=1 && break
  sleep 0.3
done
[ $counted -eq 1 ] || fail "host rejections not counted: $(grep -i rejected "$tmp/metrics.txt" | head -5)"

# one address holds 8 connections (headers never finished); another is served meanwhile; the
# hog's connections are closed by the idle timeout
$PY - "$PORT" <<'PYEOF' || fail "per-address connection limit / idle timeout"
import socket, sys, time, urllib.request
port = int(sys.argv[1])
hog = []
for i in range(12):
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
    hog.append(s)
time.sleep(0.3)
closed = 0
for s in hog:
    s.settimeout(0.2)
    try:
        if s.recv(1) == b"":
            closed += 1
    except socket.timeout:
        pass
    except OSError:
        closed += 1
assert closed >= 4, f"only {closed} of 12 connections from one address were refused (limit 8)"
t0 = time.monotonic()
r = urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5)
assert r.status == 200 and time.monotonic() - t0 < 1.0, "health from another address"
time.sleep(3.5)  # --idle-timeout 2
still = 0
for s in hog:
    s.settimeout(0.5)
    try:
        if s.recv(1) != b"":
            still += 1
    except socket.timeout:
        still += 1
    except OSError:
        pass
assert still == 0, f"{still} stalled connections outlived the idle timeout"
print("hog: %d of 12 refused at once, all closed after the idle timeout" % closed)
PYEOF
kill "$PID" 2>/dev/null
wait "$PID" 2>/dev/null

# --allowed-hosts replaces the defaults
start_server named -m "$tmp/m" --allowed-hosts omnic.internal || exit 1
B="http://127.0.0.1:$PORT"
[ "$(req -H "Host: omnic.internal:$PORT" -H 'Content-Type: application/json' -d "$body" "$B/v1/completions")" = 200 ] ||
  fail "--allowed-hosts name: $(cat "$tmp/r.json")"
[ "$(req -H 'Content-Type: application/json' -d "$body" "$B/v1/completions")" = 403 ] ||
  fail "127.0.0.1 off an explicit --allowed-hosts list"
kill "$PID" 2>/dev/null
wait "$PID" 2>/dev/null

# the file-descriptor limit caps connections, and one too low is an error, not a hang
(
  ulimit -n 200
  start_server fd -m "$tmp/m" || exit 1
  grep -q "connections capped at 68 by the file-descriptor limit of 200" "$tmp/fd.log" ||
    { echo "FAIL: no fd cap in the log: $(grep -i connections "$tmp/fd.log")"; exit 1; }
  kill "$PID" 2>/dev/null
  wait "$PID" 2>/dev/null
  exit 0
) || failed=1
(
  ulimit -n 60
  timeout 20 "$OMNIC" serve -m "$tmp/m" --port 0 2>"$tmp/fdlow.log"
  rc=$?
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "RLIMIT_NOFILE) is 60" "$tmp/fdlow.log" ||
    { echo "FAIL: a too-low fd limit: exit $rc, $(cat "$tmp/fdlow.log")"; exit 1; }
) || failed=1

[ $failed -eq 0 ] && echo "test_server_trust: ok"
exit $failed
