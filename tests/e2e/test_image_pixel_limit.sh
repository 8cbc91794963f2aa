#!/usr/bin/env bash
# Qwen2-VL at the checkpoint's own max_pixels (the published 12,845,056): a 1920x1080 image
# gives Hugging Face's 2691 image tokens (grid 1x78x138) through `omnic run`; a user limit
# (--max-image-pixels 802816) resizes it to 1008 tokens (grid 1x48x84, smart_resize) and says
# so on stderr; `omnic serve` with that limit reports it in /v1/models, a Warning header and
# the body's "warnings" field, and an image the limit does not touch carries no warning.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/server/common.sh

$PY tools/mktiny.py --family qwen2_vl --out "$tmp/qvl" >/dev/null || {
  echo "FAIL: mktiny"
  exit 1
}
$PY - "$tmp" <<'PYEOF' || { echo "FAIL: test setup"; exit 1; }
import json, sys
from PIL import Image
tmp = sys.argv[1]
p = f"{tmp}/qvl/preprocessor_config.json"
c = json.load(open(p))
c["min_pixels"], c["max_pixels"] = 3136, 12845056  # Qwen/Qwen2-VL-2B-Instruct's
c["size"] = {"shortest_edge": 3136, "longest_edge": 12845056}
json.dump(c, open(p, "w"), indent=2)
img = Image.new("RGB", (1920, 1080))
img.putdata([((x // 7) % 256, (y // 5) % 256, ((x + y) // 11) % 256) for y in range(1080) for x in range(1920)])
img.save(f"{tmp}/hd.png")
Image.new("RGB", (64, 48), (20, 120, 220)).save(f"{tmp}/small.png")
PYEOF

grid_of() { # dump dir -> "t h w"
  $PY -c "import numpy, sys; print(*numpy.load(sys.argv[1] + '/image_grid_thw.npy').reshape(-1))" "$1"
}

# default: the checkpoint's max_pixels, as HF
"$OMNIC" run -m "$tmp/qvl" --image "$tmp/hd.png" -p "Describe." -n 2 --chunk 4096 --ctx 4096 \
  --dump "$tmp/d0" >"$tmp/run0.out" 2>"$tmp/run0.err" || fail "run at default max_pixels: $(tail -3 "$tmp/run0.err")"
[ "$(grid_of "$tmp/d0" 2>/dev/null)" = "1 78 138" ] || fail "default grid: want 1 78 138 (2691 tokens), got '$(grid_of "$tmp/d0" 2>&1)'"
grep -q "resized" "$tmp/run0.err" && fail "a warning without a user limit: $(grep resized "$tmp/run0.err")"

# a user limit: resized, and said
"$OMNIC" run -m "$tmp/qvl" --image "$tmp/hd.png" -p "Describe." -n 2 --chunk 4096 --ctx 4096 \
  --max-image-pixels 802816 --dump "$tmp/d1" >"$tmp/run1.out" 2>"$tmp/run1.err" || fail "run with a limit"
[ "$(grid_of "$tmp/d1" 2>/dev/null)" = "1 48 84" ] || fail "limited grid: want 1 48 84 (1008 tokens), got '$(grid_of "$tmp/d1" 2>&1)'"
grep -q "resized from 1920x1080 to 1176x672 by --max-image-pixels 802816" "$tmp/run1.err" ||
  fail "no resize warning on stderr: $(cat "$tmp/run1.err")"

# inspect reports the bound requests get
"$OMNIC" inspect -m "$tmp/qvl" --max-image-pixels 802816 | grep -q "at most 802816 pixels (--max-image-pixels; the checkpoint.s max_pixels: 12845056)" ||
  fail "inspect does not report the limit"
"$OMNIC" inspect -m "$tmp/qvl" | grep -q "at most 12845056 pixels (the checkpoint's max_pixels)" ||
  fail "inspect does not report the checkpoint's max_pixels: $("$OMNIC" inspect -m "$tmp/qvl" | grep images:)"

# the server: /v1/models, a Warning header and "warnings" when the limit resized an image
start_server lim -m "$tmp/qvl" --ctx 4096 --chunk 4096 --max-image-pixels 802816 || exit 1
B="http://127.0.0.1:$PORT"
curl -s "$B/v1/models" >"$tmp/models.json"
grep -q '"max_image_pixels":802816,"max_image_pixels_limit":802816' "$tmp/models.json" ||
  fail "/v1/models: $(cat "$tmp/models.json")"
ask() { # image file -> status; headers in $tmp/h.txt, body in $tmp/b.json
  local url
  url="data:image/png;base64,$(base64 -w0 "$1")"
  printf '{"max_tokens":2,"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"%s"}},{"type":"text","text":"Hi"}]}]}' \
    "$url" >"$tmp/req.json"
  curl -s -D "$tmp/h.txt" -o "$tmp/b.json" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary @"$tmp/req.json" "$B/v1/chat/completions"
}
[ "$(ask "$tmp/hd.png")" = 200 ] || fail "hd image: $(cat "$tmp/b.json")"
grep -qi '^Warning: 199 omnic "image 0 was resized from 1920x1080 to 1176x672' "$tmp/h.txt" ||
  fail "no Warning header: $(cat "$tmp/h.txt")"
$PY -c "import json,sys; w=json.load(open(sys.argv[1]))['warnings']; assert len(w)==1 and '802816' in w[0], w" \
  "$tmp/b.json" || fail "no warnings field: $(cat "$tmp/b.json")"
grep -q "was resized from 1920x1080" "$tmp/lim.log" || fail "the log does not record the resize"
[ "$(ask "$tmp/small.png")" = 200 ] || fail "small image: $(cat "$tmp/b.json")"
grep -qi '^Warning:' "$tmp/h.txt" && fail "a Warning for an image the limit did not touch"
grep -q '"warnings"' "$tmp/b.json" && fail "warnings for an image the limit did not touch"
kill "$PID" 2>/dev/null
wait "$PID" 2>/dev/null

[ $failed -eq 0 ] && echo "test_image_pixel_limit: ok"
exit $failed
