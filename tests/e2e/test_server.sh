#!/usr/bin/env bash
# End-to-end tests of `omnic serve` on a tiny qwen2 checkpoint, on 127.0.0.1 with free ports:
# the official OpenAI Node client (tests/oracle/server_client.mjs), curl, and Python checks
# (tests/e2e/server/checks.py): malformed-request matrix, 8 concurrent streams on 4 slots ==
# alone, disconnect cancels, prefix-cache reuse reported in usage, a client that stops reading
# is cancelled, 429 on queue overflow,
# timeouts, RSS over 1000 requests (release
# builds only: skipped when $OMNIC contains "asan"), SIGTERM drain, SIGINT past the drain
# deadline, load failure, 503 while loading. Run by scripts/test.sh with
# OMNIC=build/release/omnic and build/asan/omnic.
set -uo pipefail
cd "$(dirname "$0")/../.."
CHECKS=tests/e2e/server/checks.py
. tests/e2e/server/common.sh

$PY tools/mktiny.py --family qwen2 --out "$tmp/tiny" >/dev/null || {
  echo "FAIL: mktiny"
  exit 1
}

# ---- the model cannot load: clear message, non-zero exit ----
out=$("$OMNIC" serve -m "$tmp/nope" --port 0 2>&1)
rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "cannot load the model in $tmp/nope: .*no such checkpoint directory" ||
  fail "load failure: rc=$rc, output: $out"

# ---- /health 503 while loading (config.json is a FIFO: loading blocks until we write) ----
mkdir -p "$tmp/slow"
mkfifo "$tmp/slow/config.json"
"$OMNIC" serve -m "$tmp/slow" --port 0 2>"$tmp/slow.log" &
SLOW=$!
for _ in $(seq 1 200); do
  SP=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$tmp/slow.log" | head -1)
  [ -n "$SP" ] && break
  sleep 0.05
done
code=$(curl -s -o "$tmp/h.json" -w '%{http_code}' "http://127.0.0.1:$SP/health")
[ "$code" = 503 ] && grep -q loading "$tmp/h.json" || fail "health while loading: $code $(cat "$tmp/h.json")"
code=$(curl -s -o "$tmp/h.json" -w '%{http_code}' -H 'Content-Type: application/json' "http://127.0.0.1:$SP/v1/completions" -d '{"prompt":"x"}')
[ "$code" = 503 ] && grep -q model_loading "$tmp/h.json" || fail "completions while loading: $code"
# a FIFO is not a regular file: the load fails (in a subshell: the loader may close its end before
# the write, and SIGPIPE must not end this script)
(echo '{}' >"$tmp/slow/config.json") 2>/dev/null
wait "$SLOW"
rc=$?
[ $rc -ne 0 ] && grep -q "cannot load the model" "$tmp/slow.log" || fail "slow load failure: rc=$rc $(cat "$tmp/slow.log")"
echo "startup: load failure exits $rc with a message; /health 503 while loading"

# ---- main server: 4 slots ----
MAX_BODY=1048576
start_server main -m "$tmp/tiny" --parallel 4 --ctx 8192 --threads 2 --max-queue 16 --api-key "$KEY" \
  --cors-origin http://example.test --max-body $MAX_BODY --model-name tiny-qwen2 --shutdown-timeout 300 || exit 1
MAIN=$PID
B=http://127.0.0.1:$PORT
AUTH="Authorization: Bearer $KEY"

# curl: health, models, CORS, a stream, completions with token ids, tokenize/detokenize
[ "$(curl -s "$B/health")" = '{"status":"ok"}' ] || fail "health ok"
curl -s -H "$AUTH" "$B/v1/models" | grep -q '"id":"tiny-qwen2".*"context_length":8192.*"input_modalities":\["text"\]' ||
  fail "models: $(curl -s -H "$AUTH" "$B/v1/models")"
h=$(curl -s -i -X OPTIONS -H "Origin: http://example.test" -H "Access-Control-Request-Method: POST" "$B/v1/chat/completions")
echo "$h" | grep -q "204" && echo "$h" | grep -qi "access-control-allow-origin: http://example.test" &&
  echo "$h" | grep -qi "access-control-allow-headers: Authorization" || fail "CORS preflight: $h"
h=$(curl -s -i -H "$AUTH" -H "Origin: http://elsewhere.test" "$B/v1/models")
echo "$h" | grep -qi "access-control-allow-origin" && fail "CORS: foreign origin allowed"
curl -s -N -H "$AUTH" -H "Content-Type: application/json" "$B/v1/completions" -d '{"prompt":"Hi","max_tokens":8,"stream":true,"temperature":0}' >"$tmp/s.txt"
tail -c 16 "$tmp/s.txt" | grep -q 'data: \[DONE\]' && [ "$(grep -c '^data: {' "$tmp/s.txt")" -ge 2 ] ||
  fail "curl stream: $(cat "$tmp/s.txt")"
ids=$(curl -s -H "$AUTH" -H "Content-Type: application/json" "$B/tokenize" -d '{"content":"Hello world"}' | $PY -c 'import json,sys; print(json.load(sys.stdin)["tokens"])')
a=$(curl -s -H "$AUTH" -H "Content-Type: application/json" "$B/v1/completions" -d "{\"prompt\":\"Hello world\",\"max_tokens\":6,\"temperature\":0}" |
  $PY -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["text"])')
b=$(curl -s -H "$AUTH" -H "Content-Type: application/json" "$B/v1/completions" -d "{\"prompt\":$ids,\"max_tokens\":6,\"temperature\":0}" |
  $PY -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["text"])')
[ -n "$a" ] && [ "$a" = "$b" ] || fail "token-id prompt == text prompt: '$a' vs '$b'"
d=$(curl -s -H "$AUTH" -H "Content-Type: application/json" "$B/detokenize" -d "{\"tokens\":$ids}")
echo "$d" | grep -q '"prompt":"Hello world"' || fail "detokenize: $d"
echo "curl: health, models, CORS, SSE stream, token-id prompts, tokenize/detokenize"

# the official OpenAI Node client
(cd tests/oracle && node server_client.mjs "$B/v1" "$KEY" tiny-qwen2 4) || fail "openai client"

$PY $CHECKS matrix "$PORT" "$KEY" 4 $MAX_BODY || fail "malformed-request matrix"
$PY $CHECKS concurrency "$PORT" "$KEY" || fail "concurrency"
$PY $CHECKS disconnect "$PORT" "$KEY" || fail "disconnect"
$PY $CHECKS prefix_cache "$PORT" "$KEY" || fail "prefix cache"
case "$OMNIC" in
*asan*) echo "rss: skipped under ASan (release builds only)" ;;
*) $PY $CHECKS rss "$PORT" "$KEY" "$MAIN" 1000 || fail "rss" ;;
esac
$PY $CHECKS drain "$PORT" "$KEY" "$MAIN" || fail "drain"
wait "$MAIN"
rc=$?
[ $rc -eq 0 ] && grep -q "stopped" "$tmp/main.log" || fail "SIGTERM exit status $rc: $(tail -5 "$tmp/main.log")"

# ---- queue overflow and timeouts: 1 slot, queue of 1, 2 s timeout, long generations ----
printf '%s\n' "$KEY" >"$tmp/key.txt"
start_server queue -m "$tmp/tiny" --parallel 1 --ctx 16384 --threads 2 --max-queue 1 --request-timeout 2 \
  --api-key-file "$tmp/key.txt" --shutdown-timeout 0.5 || exit 1
Q=$PID
$PY $CHECKS queue "$PORT" "$KEY" || fail "queue"
$PY $CHECKS deadline "$PORT" "$KEY" "$Q" || fail "deadline"
wait "$Q"
rc=$?
[ $rc -eq 0 ] || fail "SIGINT exit status $rc"
# ---- a client that stops reading: small backlog limit ----
start_server slow -m "$tmp/tiny" --parallel 1 --ctx 16384 --threads 2 --max-backlog 2048 --api-key "$KEY" || exit 1
S=$PID
$PY $CHECKS slow "$PORT" "$KEY" || fail "slow client"
kill -TERM "$S"
wait "$S" || fail "slow server exit status"

grep -qi "error\|panic\|sanitizer" "$tmp/main.log" "$tmp/queue.log" "$tmp/slow.log" && {
  fail "errors in the server logs"
  grep -i "error\|panic\|sanitizer" "$tmp/main.log" "$tmp/queue.log" "$tmp/slow.log" | head -20
}

if [ $failed -ne 0 ]; then
  echo "test_server: FAILED"
  exit 1
fi
echo "test_server: all passed"
