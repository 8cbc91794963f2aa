#!/usr/bin/env bash
# The public C API as a user gets it: `cmake --install` of the build into a scratch prefix, then
# examples/chat.c compiled against the installed omnic.h and libomnic.so alone
# (`pkg-config --cflags --libs omnic`, nothing from src/), run on tiny text (Qwen2) and image
# (LLaVA) checkpoints: its greedy replies equal `omnic run`'s; bad calls fail with the error
# naming the problem; the header compiles on its own under -std=c99 -Wall -Wextra -Wpedantic;
# libomnic.so exports only omnic_* symbols (no omnic__ internals).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/e2e/server/common.sh
build=$(dirname "$OMNIC")
prefix="$tmp/prefix"

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 || {
  cat "$tmp/install.log"
  echo "FAIL: cmake --install"
  exit 1
}
libdir=$(dirname "$(find "$prefix" -name 'libomnic.so' | head -1)")
[ -f "$libdir/pkgconfig/omnic.pc" ] && [ -f "$prefix/include/omnic/omnic.h" ] || fail "installed header and omnic.pc"
san=
grep -q '^OMNIC_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null && san="-fsanitize=address,undefined"

# the header alone, strictly
printf '#include <omnic/omnic.h>\nint main(void) { return omnic_api_version() == OMNIC_API_VERSION ? 0 : 1; }\n' >"$tmp/h.c"
cc -std=c99 -Wall -Wextra -Wpedantic -Werror $san -I"$prefix/include" -c "$tmp/h.c" -o "$tmp/h.o" ||
  fail "omnic.h compiles alone under -std=c99 -Wpedantic"

export PKG_CONFIG_PATH="$libdir/pkgconfig"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror $san examples/chat.c $(pkg-config --cflags --libs omnic) -lpthread \
  -Wl,-rpath,"$libdir" -o "$tmp/chat" || fail "examples/chat.c against the installed library"
if [ -x "$tmp/chat" ]; then
  $PY tools/mktiny.py --family qwen2 --out "$tmp/q" >/dev/null || fail "mktiny qwen2"
  $PY tools/mktiny.py --family llava --vision clip --text llama --out "$tmp/llava" >/dev/null || fail "mktiny llava"
  got=$("$tmp/chat" "$tmp/q" "Tell me about foxes." "" 16 2>"$tmp/chat.err")
  want=$("$OMNIC" run -m "$tmp/q" -p "Tell me about foxes." -n 16 --kv f32 2>/dev/null)
  [ -n "$got" ] && [ "$got" = "$want" ] || fail "text reply through the C API '$got' != omnic run '$want'"
  grep -q "finish: length; prompt [0-9]* tokens, completion 16 tokens" "$tmp/chat.err" &&
    grep -q "model: qwen2, 2 layers" "$tmp/chat.err" || fail "events and info: $(cat "$tmp/chat.err")"
  got=$("$tmp/chat" "$tmp/llava" "What is in the picture?" tests/data/demo.png 12 2>"$tmp/chat.err")
  want=$("$OMNIC" run -m "$tmp/llava" -p "What is in the picture?" --image tests/data/demo.png -n 12 --kv f32 2>/dev/null)
  [ -n "$got" ] && [ "$got" = "$want" ] || fail "image reply through the C API '$got' != omnic run '$want'"
  grep -q "inputs: text image" "$tmp/chat.err" || fail "image input in the info: $(cat "$tmp/chat.err")"
  # bad calls: a missing checkpoint, an image to a text model, an image that is not one
  "$tmp/chat" "$tmp/nope" "hi" >/dev/null 2>"$tmp/e1" && fail "a missing checkpoint loaded"
  grep -q "nope" "$tmp/e1" || fail "missing checkpoint error: $(cat "$tmp/e1")"
  "$tmp/chat" "$tmp/q" "hi" tests/data/demo.png >/dev/null 2>"$tmp/e2" && fail "an image went to a text model"
  grep -q "does not take image input" "$tmp/e2" || fail "image to a text model: $(cat "$tmp/e2")"
  head -c 100 tests/data/demo.png >"$tmp/trunc.png"
  "$tmp/chat" "$tmp/llava" "hi" "$tmp/trunc.png" >/dev/null 2>"$tmp/e3" && fail "a truncated PNG was accepted"
  grep -q "images\[0\]" "$tmp/e3" || fail "truncated image error: $(cat "$tmp/e3")"
fi

bad=$(nm -D --defined-only "$libdir/libomnic.so" | awk 'NF == 3 {print $3}' | grep -Ev '^omnic_[a-z]' || true)
internal=$(nm -D --defined-only "$libdir/libomnic.so" | awk 'NF == 3 {print $3}' | grep -E '^omnic__' || true)
[ -z "$bad" ] && [ -z "$internal" ] || fail "libomnic.so exports more than omnic_*: $bad $internal"
n=$(nm -D --defined-only "$libdir/libomnic.so" | awk 'NF == 3' | grep -c '^' || true)
[ $failed -eq 0 ] && echo "test_c_api: ok ($n exported symbols, all omnic_*)"
exit $failed
