#!/usr/bin/env bash
# End to end through the omnic binary: `omnic tokenize` and `omnic detokenize` on the tiny
# checkpoints (tokenizer.json of both families): round trips, --special, --jsonl, --stream,
# and the errors a user sees for bad input. Conformance against Hugging Face is
# test_tokenizer_conformance.py.
set -uo pipefail
OMNIC=${OMNIC:-build/release/omnic}
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect_out NAME WANT STDIN CMD... : exit 0 and stdout == WANT
expect_out() {
  local name=$1 want=$2 input=$3; shift 3
  if ! printf '%s' "$input" | "$@" >"$tmp/out" 2>"$tmp/err"; then
    bad "$name (exit $?): $(head -c 400 "$tmp/err")"; return
  fi
  if [ "$(cat "$tmp/out")" != "$want" ]; then bad "$name: got '$(head -c 300 "$tmp/out")', expected '$want'"; return; fi
  ok
}
# expect_err NAME CODE TEXT STDIN CMD... : exits CODE and stderr contains TEXT
expect_err() {
  local name=$1 code=$2 text=$3 input=$4; shift 4
  printf '%s' "$input" | "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne "$code" ]; then bad "$name: exit $rc, expected $code; stderr: $(head -c 300 "$tmp/err")"; return; fi
  if ! grep -qF -- "$text" "$tmp/err"; then bad "$name: stderr lacks '$text': $(head -c 300 "$tmp/err")"; return; fi
  ok
}

for fam in llama qwen2; do
  $PY tools/mktiny.py --family "$fam" --out "$tmp/$fam" --dtype f32 >/dev/null || bad "mktiny $fam"
done
L="$tmp/llama"
Q="$tmp/qwen2/tokenizer.json"

# round trips through both forms of -m (directory, file)
text='Hello world, tokenizers!'
ids=$(printf '%s' "$text" | "$OMNIC" tokenize -m "$L") && ok || bad "tokenize llama"
case "$ids" in \[*\]) ok ;; *) bad "tokenize prints a JSON array: '$ids'" ;; esac
expect_out "detokenize llama" "$text" "$ids" "$OMNIC" detokenize -m "$L"
expect_out "detokenize llama --stream" "$text" "$ids" "$OMNIC" detokenize -m "$L" --stream
sids=$(printf '%s' "$text" | "$OMNIC" tokenize -m "$L" --special)
bos=$($PY -c "import json,sys; a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); assert b[1:]==a, (a,b); print(b[0])" "$ids" "$sids") \
  && ok || bad "llama --special adds exactly a BOS: $ids vs $sids"
expect_out "detokenize keeps specials" "<|begin_of_text|>$text" "$sids" "$OMNIC" detokenize -m "$L"
expect_out "detokenize --skip-special" "$text" "$sids" "$OMNIC" detokenize -m "$L" --skip-special
qids=$(printf 'a\nb' | "$OMNIC" tokenize -m "$Q") && ok || bad "tokenize qwen2 file path"
expect_out "qwen2 newline round trip" "$(printf 'a\nb')" "$qids" "$OMNIC" detokenize -m "$Q"
expect_out "empty text" "[]" "" "$OMNIC" tokenize -m "$Q"

# --jsonl: one JSON string per line in, one array per line out; and back
printf '"Hello"\n""\n"a\\nb \\u00e9\\u4e2d"\n"<|im_start|>x"\n' >"$tmp/in.jsonl"
"$OMNIC" tokenize -m "$Q" --jsonl <"$tmp/in.jsonl" >"$tmp/ids.jsonl" 2>"$tmp/err" && ok || bad "tokenize --jsonl: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/ids.jsonl")" -eq 4 ] && ok || bad "tokenize --jsonl: 4 lines expected, got $(wc -l <"$tmp/ids.jsonl")"
"$OMNIC" detokenize -m "$Q" --jsonl <"$tmp/ids.jsonl" >"$tmp/back.jsonl" 2>"$tmp/err" && ok || bad "detokenize --jsonl"
"$OMNIC" detokenize -m "$Q" --jsonl --stream <"$tmp/ids.jsonl" >"$tmp/back2.jsonl" 2>"$tmp/err" && ok || bad "detokenize --jsonl --stream"
$PY - "$tmp/in.jsonl" "$tmp/back.jsonl" "$tmp/back2.jsonl" <<'EOF' && ok || bad "jsonl round trip"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
c = [json.loads(l) for l in open(sys.argv[3])]
assert a == b == c, (a, b, c)
EOF
sp=$(printf '"<|im_start|>x"\n' | "$OMNIC" tokenize -m "$Q" --jsonl)
$PY -c "import json,sys; a=json.loads(sys.argv[1]); assert len(a)==2 and a[0]>=512, a" "$sp" && ok \
  || bad "an inline special token is one id: $sp"

# bad input: each names the problem
expect_err "no model" 2 "-m DIR|tokenizer.json is required" "" "$OMNIC" tokenize
expect_err "bad option" 2 "unknown option '--frob'" "" "$OMNIC" detokenize -m "$L" --frob
expect_err "missing tokenizer" 1 "no such file" "" "$OMNIC" tokenize -m "$tmp/nope"
mkdir -p "$tmp/empty"
expect_err "dir without tokenizer.json" 1 "tokenizer.json" "" "$OMNIC" tokenize -m "$tmp/empty"
printf '{"model": {"type": "WordPiece", "vocab": {}}}' >"$tmp/wp.json"
expect_err "unsupported model" 1 "model type 'WordPiece' is not supported" "" "$OMNIC" tokenize -m "$tmp/wp.json"
printf '{"model": ' >"$tmp/trunc.json"
expect_err "malformed tokenizer.json" 1 "trunc.json:1:" "" "$OMNIC" tokenize -m "$tmp/trunc.json"
expect_err "jsonl malformed line" 1 "stdin line 3:" "$(printf '"a"\n"b"\nnot json\n"c"\n')" "$OMNIC" tokenize -m "$Q" --jsonl
expect_err "jsonl not a string" 1 "stdin line 2: expected a JSON string" "$(printf '"a"\n[1]\n')" "$OMNIC" tokenize -m "$Q" --jsonl
expect_err "invalid utf-8" 1 "not valid UTF-8: byte 0xFF at offset 2" "$(printf 'ab\377')" "$OMNIC" tokenize -m "$Q"
expect_err "id out of range" 1 "token id 99999 (at index 1) is not in the vocabulary (vocab size 515)" "[1, 99999]" \
  "$OMNIC" detokenize -m "$Q"
expect_err "negative id" 1 "token id -3" "[-3]" "$OMNIC" detokenize -m "$Q"
expect_err "stream id out of range" 1 "token id 600" "[1, 600]" "$OMNIC" detokenize -m "$Q" --stream
expect_err "not an id" 1 "element 1 is not a token id" '[1, "x"]' "$OMNIC" detokenize -m "$Q"
expect_err "not an array" 1 "expected a JSON array" '{"a": 1}' "$OMNIC" detokenize -m "$Q"
expect_err "detok jsonl bad line" 1 "stdin line 2" "$(printf '[1]\n[1,\n')" "$OMNIC" detokenize -m "$Q" --jsonl
expect_err "detok jsonl range" 1 "stdin line 2: tokenizer: token id 70000" "$(printf '[1]\n[70000]\n')" \
  "$OMNIC" detokenize -m "$Q" --jsonl

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
