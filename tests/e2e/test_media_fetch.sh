#!/usr/bin/env bash
# Media acquisition as a hostile client or a hostile environment would try it, on 127.0.0.1:
# proxies from the environment are never used (http_proxy / ALL_PROXY pointing at a dead port
# change nothing), --media-proxy routes fetches through the named proxy, --allow-remote-media-port
# refuses other ports naming the port, a FIFO under --media-dir is refused at once (no hang), a
# link out of --media-dir and a missing file get the same message.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/server/common.sh

$PY tools/mktiny.py --family llava --vision clip --text llama --out "$tmp/llava" >/dev/null || {
  echo "FAIL: mktiny"
  exit 1
}
media="$tmp/media"
mkdir -p "$media"
$PY -c "
from PIL import Image
Image.new('RGB', (32, 24), (10, 120, 200)).save('$media/photo.png')
Image.new('RGB', (32, 24), (200, 10, 20)).save('$tmp/secret.png')
" || { echo "FAIL: test images"; exit 1; }
mkfifo "$media/pipe.png"
ln -s "$tmp/secret.png" "$media/escape.png"

# an origin server and a forwarding proxy (absolute-URI requests), both on loopback
$PY -u -m http.server --bind 127.0.0.1 0 --directory "$media" >"$tmp/http.log" 2>&1 &
for _ in $(seq 1 100); do
  HPORT=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$tmp/http.log" | head -1)
  [ -n "$HPORT" ] && break
  sleep 0.05
done
$PY -u - "$tmp/proxy.log" >"$tmp/proxy.port" <<'PYEOF' &
import http.server, sys, urllib.request
log = open(sys.argv[1], "a")
class Proxy(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        log.write("proxied %s\n" % self.path)
        log.flush()
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # the proxy itself goes direct
        try:
            body = opener.open(self.path, timeout=5).read()
            self.send_response(200)
        except Exception:
            body = b""
            self.send_response(502)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), Proxy)
print(s.server_address[1], flush=True)
s.serve_forever()
PYEOF
for _ in $(seq 1 100); do
  PPORT=$(head -1 "$tmp/proxy.port")
  [ -n "$PPORT" ] && break
  sleep 0.05
done

ask() { # image URL -> status; body in $tmp/r.json
  curl -s -o "$tmp/r.json" -w '%{http_code}' -m 20 -H 'Content-Type: application/json' "$B/v1/chat/completions" -d \
    "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"$1\"}},{\"type\":\"text\",\"text\":\"Hi\"}]}],\"max_tokens\":2}"
}

# 1. environment proxies are ignored: the fetch goes direct and succeeds
http_proxy="http://127.0.0.1:9" HTTP_PROXY="http://127.0.0.1:9" ALL_PROXY="http://127.0.0.1:9" \
  start_server envproxy -m "$tmp/llava" --allow-remote-media 127.0.0.1 --media-dir "$media" \
  --allow-remote-media-port "$HPORT" --remote-media-timeout 5 || exit 1
B="http://127.0.0.1:$PORT"
[ "$(ask "http://127.0.0.1:$HPORT/photo.png")" = 200 ] || fail "fetch with proxy variables set: $(cat "$tmp/r.json")"
# 2. the port allow-list
[ "$(ask "http://127.0.0.1:$PPORT/photo.png")" = 400 ] && grep -q "port $PPORT is not on --allow-remote-media-port" "$tmp/r.json" ||
  fail "a port off the list: $(cat "$tmp/r.json")"
# 3. a FIFO is refused at once, a link out of --media-dir and a missing file alike
t0=$(date +%s)
[ "$(ask "pipe.png")" = 400 ] && grep -q "not a regular file" "$tmp/r.json" || fail "a FIFO: $(cat "$tmp/r.json")"
[ $(($(date +%s) - t0)) -lt 10 ] || fail "a FIFO took $(($(date +%s) - t0)) s"
[ "$(ask "escape.png")" = 400 ] && cp "$tmp/r.json" "$tmp/escape.json"
[ "$(ask "missing.png")" = 400 ] && cp "$tmp/r.json" "$tmp/missing.json"
m1=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"]["message"])' "$tmp/escape.json" 2>/dev/null)
m2=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"]["message"])' "$tmp/missing.json" 2>/dev/null)
[ -n "$m1" ] && [ "$m1" = "$m2" ] || fail "outside vs missing differ: '$m1' / '$m2'"
[ "$(ask "photo.png")" = 200 ] || fail "still serving: $(cat "$tmp/r.json")"
kill "$PID" 2>/dev/null
wait "$PID" 2>/dev/null

# 4. --media-proxy: the fetch goes through the proxy
start_server viaproxy -m "$tmp/llava" --allow-remote-media 127.0.0.1 --media-proxy "http://127.0.0.1:$PPORT" \
  --remote-media-timeout 5 || exit 1
B="http://127.0.0.1:$PORT"
[ "$(ask "http://127.0.0.1:$HPORT/photo.png")" = 200 ] || fail "fetch through --media-proxy: $(cat "$tmp/r.json")"
grep -q "proxied http://127.0.0.1:$HPORT/photo.png" "$tmp/proxy.log" 2>/dev/null || fail "the proxy saw no request"
kill "$PID" 2>/dev/null
wait "$PID" 2>/dev/null

[ $failed -eq 0 ] && echo "test_media_fetch: ok"
exit $failed
