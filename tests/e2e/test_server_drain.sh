#!/usr/bin/env bash
# Shutdown is bounded by --shutdown-timeout while image jobs are queued: one media worker, six
# requests of sixteen 3000x2000 PNG images each (tens of seconds of decoding in all), SIGTERM soon after:
# queued jobs are cancelled, the running one stops at its next stage, clients get 503 or see
# their connection closed, and the process exits 0 within a few seconds, not after the decodes.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/server/common.sh

$PY tools/mktiny.py --family llava --vision clip --text llama --out "$tmp/llava" >/dev/null || {
  echo "FAIL: mktiny"
  exit 1
}
$PY - "$tmp" <<'PYEOF' || { echo "FAIL: test request"; exit 1; }
import base64, io, json, sys
import numpy as np
from PIL import Image
tmp = sys.argv[1]
y, x = np.mgrid[0:2000, 0:3000]
img = Image.fromarray(np.stack([x % 256, y % 256, (x + y) % 256], -1).astype(np.uint8))
b = io.BytesIO()
img.save(b, "PNG")  # compresses well, decodes slowly (18 MB of pixels through zlib)
url = "data:image/png;base64," + base64.b64encode(b.getvalue()).decode()
parts = [{"type": "image_url", "image_url": {"url": url}}] * 16 + [{"type": "text", "text": "Hi"}]
json.dump({"messages": [{"role": "user", "content": parts}], "max_tokens": 2}, open(f"{tmp}/req.json", "w"))
PYEOF
start_server drain -m "$tmp/llava" --media-workers 1 --shutdown-timeout 1 --max-body 8388608 || exit 1
B="http://127.0.0.1:$PORT"
pids=()
for i in 1 2 3 4 5 6; do
  (curl -s -m 120 -o "$tmp/r$i.json" -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary @"$tmp/req.json" "$B/v1/chat/completions" >"$tmp/r$i.st") &
  pids+=($!)
done
sleep 1.5
t0=$(date +%s.%N)
kill -TERM "$PID"
wait "$PID"
rc=$?
took=$($PY -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 1))" "$t0")
[ $rc -eq 0 ] || fail "exit status $rc after SIGTERM"
$PY -c "import sys; sys.exit(0 if float(sys.argv[1]) < 3 else 1)" "$took" ||
  fail "shutdown took $took s with image jobs queued (--shutdown-timeout 1)"
for p in "${pids[@]}"; do wait "$p"; done
n503=0
n429=0
for i in 1 2 3 4 5 6; do
  st=$(cat "$tmp/r$i.st")
  case "$st" in
  503) n503=$((n503 + 1)) ;;
  429) n429=$((n429 + 1)) ;; # the media queue (1 running + 4 waiting) was full
  200 | 000) ;;               # answered, or its connection closed by the stopping server
  *) fail "request $i: status '$st' $(head -c 300 "$tmp/r$i.json")" ;;
  esac
done
[ $failed -eq 0 ] && echo "test_server_drain: ok (exit $took s after SIGTERM; $n503 of 6 image requests answered 503, $n429 429, the rest closed)"
exit $failed
