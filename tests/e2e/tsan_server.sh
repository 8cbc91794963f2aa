#!/usr/bin/env bash
# The server under ThreadSanitizer (run by scripts/test.sh with OMNIC=build/tsan/omnic; not a
# test_* file, so the release and ASan passes skip it): concurrent streamed and non-streamed
# chat and completion requests on 4 slots, image requests on the media pool, clients that hang
# up mid-stream, /health, /metrics, /tokenize alongside, then SIGTERM. Passes when every
# request got an answer and the server exited 0 with no ThreadSanitizer report.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/server/common.sh
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}"

$PY tools/mktiny.py --family llava --vision clip --text llama --out "$tmp/llava" >/dev/null || {
  echo "FAIL: mktiny"
  exit 1
}
$PY -c "
from PIL import Image
Image.new('RGB', (40, 30), (30, 140, 220)).save('$tmp/img.png')
" || { echo "FAIL: test image"; exit 1; }
img="data:image/png;base64,$(base64 -w0 "$tmp/img.png")"
start_server tsan -m "$tmp/llava" --parallel 4 --ctx 512 --media-workers 2 || exit 1
B="http://127.0.0.1:$PORT"
chat='{"messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":12}'
stream='{"messages":[{"role":"user","content":"Tell me a story"}],"max_tokens":24,"stream":true}'
comp='{"prompt":"Once upon a time","max_tokens":8,"n":2}'
image="{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":\"$img\"}},{\"type\":\"text\",\"text\":\"What?\"}]}],\"max_tokens\":6}"
post() { # route body out
  curl -s -m 60 -o "$3" -w '%{http_code}' -H 'Content-Type: application/json' -d "$2" "$B$1"
}
pids=()
for i in 1 2 3; do
  (post /v1/chat/completions "$chat" "$tmp/c$i.json" >"$tmp/c$i.st") &
  pids+=($!)
  (post /v1/chat/completions "$stream" "$tmp/s$i.txt" >"$tmp/s$i.st") &
  pids+=($!)
  (post /v1/completions "$comp" "$tmp/p$i.json" >"$tmp/p$i.st") &
  pids+=($!)
  (post /v1/chat/completions "$image" "$tmp/i$i.json" >"$tmp/i$i.st") &
  pids+=($!)
  # a client that hangs up mid-stream
  (curl -s -m 1 -H 'Content-Type: application/json' -d "$stream" "$B/v1/chat/completions" >/dev/null 2>&1) &
done
for _ in 1 2 3 4 5; do
  curl -s -m 30 "$B/health" >/dev/null
  curl -s -m 30 "$B/metrics" >/dev/null
  post /tokenize '{"content":"hello world"}' "$tmp/t.json" >/dev/null
done
for p in "${pids[@]}"; do wait "$p"; done
for f in "$tmp"/c?.st "$tmp"/p?.st "$tmp"/i?.st "$tmp"/s?.st; do
  [ "$(cat "$f")" = 200 ] || fail "$(basename "$f" .st): status $(cat "$f")"
done
grep -q "data: \[DONE\]" "$tmp/s1.txt" || fail "stream did not finish"
kill -TERM "$PID"
wait "$PID"
rc=$?
[ $rc -eq 0 ] || fail "server exit status $rc"
if grep -q "ThreadSanitizer" "$tmp/tsan.log"; then
  fail "ThreadSanitizer report:"
  grep -A40 "WARNING: ThreadSanitizer" "$tmp/tsan.log" | head -80
fi
ok=0
for f in "$tmp"/*.st; do [ "$(cat "$f")" = 200 ] && ok=$((ok + 1)); done
[ $failed -eq 0 ] && echo "tsan_server: ok ($ok requests answered 200, no ThreadSanitizer report)"
exit $failed
