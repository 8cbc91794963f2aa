#!/usr/bin/env bash
# End-to-end image input through `omnic serve` on a tiny LLaVA checkpoint (CLIP tower,
# Llama decoder), on 127.0.0.1: the official OpenAI Node client (tests/oracle/image_client.mjs),
# curl, and tests/e2e/server/image_checks.py (bad media matrix, data: URL vs --media-dir files,
# mixed text/image concurrency == alone, counters back to zero). Test images are made here
# with Pillow; the bad ones by hand. Then Qwen2-VL, and Gemma 3 (bidirectional image spans) under
# --step-tokens with a chunk smaller than a span (tests/e2e/server/span_checks.py).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/server/common.sh

$PY tools/mktiny.py --family llava --vision clip --text llama --out "$tmp/llava" >/dev/null || {
  echo "FAIL: mktiny"
  exit 1
}
media="$tmp/media"
mkdir -p "$media"
$PY - "$media" "$tmp" <<'PYEOF' || { echo "FAIL: test images"; exit 1; }
import struct, sys, zlib
from PIL import Image
media, tmp = sys.argv[1], sys.argv[2]
img = Image.new("RGB", (64, 48))
img.putdata([((x * 4) % 256, (y * 5) % 256, (x * y) % 256) for y in range(48) for x in range(64)])
img.save(f"{media}/photo.jpg", quality=90)
rgba = Image.new("RGBA", (40, 30), (200, 30, 60, 90))
rgba.save(f"{media}/alpha.png")
img.save(f"{media}/lossless.webp", lossless=True)
Image.new("RGB", (1, 1), (10, 200, 30)).save(f"{media}/tiny1x1.png")
img.save(f"{media}/pic.bmp")
img.save(f"{media}/anim.gif")
img.save(f"{tmp}/outside.png")
img.resize((4000, 3000)).save(f"{media}/big.jpg", quality=95)
jpg = open(f"{media}/photo.jpg", "rb").read()
open(f"{media}/truncated.jpg", "wb").write(jpg[: len(jpg) // 2])
png = open(f"{media}/alpha.png", "rb").read()
open(f"{media}/truncated.png", "wb").write(png[: len(png) - 20])
webp = bytearray(open(f"{media}/lossless.webp", "rb").read())
for i in range(30, len(webp)):
    webp[i] ^= 0x5A
open(f"{media}/corrupt.webp", "wb").write(bytes(webp))
def png_with(w, h, payload):
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", payload) + chunk(b"IEND", b""))
open(f"{media}/huge.png", "wb").write(png_with(30000, 30000, zlib.compress(b"\0" * 1000)))
# a bomb: 20000 x 20000 RGB of zeros is 1.2 GB of pixels from a few hundred KB of zlib
row = b"\0" * (1 + 3 * 20000)
comp = zlib.compressobj(9)
data = b"".join(comp.compress(row) for _ in range(2000)) + comp.flush()
open(f"{media}/bomb.png", "wb").write(png_with(20000, 20000, data))
PYEOF

start_server server -m "$tmp/llava" --parallel 4 --api-key "$KEY" --media-dir "$media" --model-name tiny-llava ||
  exit 1
B="http://127.0.0.1:$PORT"

# curl: an image request by file path, then the OpenAI Node client (data: URLs) must agree
out=$(curl -s -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' "$B/v1/chat/completions" -d \
  '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"photo.jpg"}},{"type":"text","text":"Describe the image."}]}],"max_tokens":12,"temperature":0}')
curl_text=$(echo "$out" | $PY -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["message"]["content"])') ||
  fail "curl image request: $out"
(cd tests/oracle && node image_client.mjs "$B/v1" "$KEY" tiny-llava "$media/photo.jpg" "$curl_text") ||
  fail "openai client (images)"
$PY tests/e2e/server/image_checks.py "$PORT" "$KEY" "$media" || fail "image checks"

# per-request processor bounds are for Qwen2-VL-style processors: refused on LLaVA
st=$(curl -s -o "$tmp/o.json" -w '%{http_code}' -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  "$B/v1/chat/completions" -d '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"photo.jpg"}}]}],"mm_processor_kwargs":{"max_pixels":50000}}')
[ "$st" = 400 ] && grep -q "Qwen2-VL-style" "$tmp/o.json" || fail "mm_processor_kwargs on LLaVA: $st $(cat "$tmp/o.json")"
kill -TERM "$PID"
wait "$PID" || fail "server exit status $?"

# ---- remote image URLs: only allow-listed hosts, never loopback unless the address is listed ----
$PY -u -m http.server --bind 127.0.0.1 0 --directory "$media" >"$tmp/http.log" 2>&1 &
HTTP_PID=$!
for _ in $(seq 1 100); do
  HPORT=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$tmp/http.log" | head -1)
  [ -n "$HPORT" ] && break
  sleep 0.05
done
start_server rserver -m "$tmp/llava" --parallel 2 --allow-remote-media 127.0.0.1 --allow-remote-media localhost \
  --remote-media-timeout 5
B="http://127.0.0.1:$PORT"
rreq() { # $1: image URL
  curl -s -o "$tmp/r.json" -w '%{http_code}' -H 'Content-Type: application/json' "$B/v1/chat/completions" -d \
    "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"$1\"}},{\"type\":\"text\",\"text\":\"Describe the image.\"}]}],\"max_tokens\":12,\"temperature\":0}"
}
[ "$(rreq "http://127.0.0.1:$HPORT/photo.jpg")" = 200 ] &&
  [ "$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["choices"][0]["message"]["content"])' "$tmp/r.json")" = "$curl_text" ] ||
  fail "remote image from an allow-listed address: $(cat "$tmp/r.json")"
[ "$(rreq "http://localhost:$HPORT/photo.jpg")" = 400 ] && grep -q "loopback" "$tmp/r.json" ||
  fail "a listed name resolving to loopback: $(cat "$tmp/r.json")"
[ "$(rreq "http://127.0.0.1:$HPORT/nope.jpg")" = 400 ] && grep -q "HTTP status 404" "$tmp/r.json" ||
  fail "remote 404: $(cat "$tmp/r.json")"
[ "$(rreq "http://example.com/x.png")" = 400 ] && grep -q "not on --allow-remote-media" "$tmp/r.json" ||
  fail "a host not on the list: $(cat "$tmp/r.json")"
kill -TERM "$PID"
wait "$PID" || fail "remote-media server exit status $?"
kill "$HTTP_PID" 2>/dev/null

# ---- Qwen2-VL (M-RoPE, variable image sizes) ----
$PY tools/mktiny.py --family qwen2_vl --out "$tmp/qvl" >/dev/null || fail "mktiny qwen2_vl"
start_server qserver -m "$tmp/qvl" --parallel 2 --media-dir "$media"
B="http://127.0.0.1:$PORT"
curl -s "$B/v1/models" | grep -q '"input_modalities":\["text","image"\]' || fail "qwen2_vl /v1/models image input"
qreq() { # $1: extra JSON fields
  curl -s -o "$tmp/q.json" -w '%{http_code}' -H 'Content-Type: application/json' "$B/v1/chat/completions" -d \
    "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"photo.jpg\"}},{\"type\":\"text\",\"text\":\"Describe.\"}]}],\"max_tokens\":8,\"temperature\":0$1}"
}
[ "$(qreq '')" = 200 ] || fail "qwen2_vl image request: $(cat "$tmp/q.json")"
a=$(cat "$tmp/q.json" | $PY -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["message"]["content"])')
[ "$(qreq ',"mm_processor_kwargs":{"max_pixels":3136}')" = 200 ] || fail "qwen2_vl max_pixels: $(cat "$tmp/q.json")"
[ "$(qreq ',"mm_processor_kwargs":{"max_pixels":99999999}')" = 400 ] && grep -q "over this server's limit" "$tmp/q.json" ||
  fail "qwen2_vl max_pixels over the limit: $(cat "$tmp/q.json")"
[ "$(qreq ',"mm_processor_kwargs":{"min_pixels":40000,"max_pixels":4000}')" = 400 ] ||
  fail "qwen2_vl min_pixels > max_pixels: $(cat "$tmp/q.json")"
st=$(curl -s -o "$tmp/q.json" -w '%{http_code}' -H 'Content-Type: application/json' "$B/v1/chat/completions" -d \
  '{"messages":[{"role":"user","content":[{"type":"video_url","video_url":{"url":"x.mp4"}}]}]}')
[ "$st" = 400 ] && grep -q "video_url" "$tmp/q.json" || fail "qwen2_vl video refused: $st $(cat "$tmp/q.json")"
[ "$(qreq '')" = 200 ] && [ "$(cat "$tmp/q.json" | $PY -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["message"]["content"])')" = "$a" ] ||
  fail "qwen2_vl: same request, same output"
kill -TERM "$PID"
wait "$PID" || fail "qwen2_vl server exit status $?"
# ---- Gemma 3 (bidirectional image spans): mixed steps and a chunk smaller than a span ----
$PY tools/mktiny.py --family gemma3 --out "$tmp/g3" >/dev/null || fail "mktiny gemma3"
start_server gserver -m "$tmp/g3" --parallel 4 --step-tokens 4 --chunk 8 --api-key "$KEY" --media-dir "$media"
$PY tests/e2e/server/span_checks.py "$PORT" "$KEY" || fail "gemma3 span checks"
kill -TERM "$PID"
wait "$PID" || fail "gemma3 server exit status $?"
if [ $failed -ne 0 ]; then
  tail -20 "$tmp/server.log"
  exit 1
fi
echo "test_server_images: ok"
