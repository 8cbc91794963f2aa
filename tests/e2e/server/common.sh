# Sourced by the server e2e tests (from the repository root): OMNIC, PY, KEY, a scratch $tmp
# removed on exit with this shell's own background jobs, fail(), and start_server().
OMNIC=${OMNIC:-build/release/omnic}
PY=/usr/bin/python3
KEY=test-key-$$
tmp=$(mktemp -d)
failed=0
cleanup() {
  # only this shell's own background jobs that are still running (never a reused pid)
  for p in $(jobs -pr); do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  failed=1
}

# start_server NAME ARGS...: omnic serve on a free port in the background, log in $tmp/NAME.log;
# sets PID and PORT, fails (printing the log) if it is not ready
start_server() {
  local name=$1
  shift
  "$OMNIC" serve --port 0 "$@" 2>"$tmp/$name.log" &
  PID=$!
  PORT=
  for _ in $(seq 1 600); do
    PORT=$(sed -n 's/.*listening on http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$tmp/$name.log" 2>/dev/null | head -1)
    grep -qs "ready on" "$tmp/$name.log" && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.05
  done
  grep -q "ready on" "$tmp/$name.log" && return 0
  fail "server $name did not start"
  cat "$tmp/$name.log"
  return 1
}
