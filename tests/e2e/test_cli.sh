#!/usr/bin/env bash
# End to end through the omnic binary: inspect and bench on tiny checkpoints of each
# family, and the errors a user sees for bad checkpoints and bad options.
set -uo pipefail
OMNIC=${OMNIC:-build/release/omnic}
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect_ok NAME CMD... : exit 0
expect_ok() {
  local name=$1; shift
  if "$@" >"$tmp/out" 2>"$tmp/err"; then ok; else bad "$name (exit $?): $(head -c 400 "$tmp/err")"; fi
}
# expect_err NAME CODE TEXT CMD... : exits CODE and stderr contains TEXT
expect_err() {
  local name=$1 code=$2 text=$3; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne "$code" ]; then bad "$name: exit $rc, expected $code; stderr: $(head -c 300 "$tmp/err")"; return; fi
  if ! grep -qF -- "$text" "$tmp/err"; then bad "$name: stderr lacks '$text': $(head -c 300 "$tmp/err")"; return; fi
  ok
}

for fam in llama qwen2; do
  $PY tools/mktiny.py --family "$fam" --out "$tmp/$fam" >/dev/null || bad "mktiny $fam"
  expect_ok "inspect $fam" "$OMNIC" inspect -m "$tmp/$fam" --ctx 128
  grep -q "^family: *$fam" "$tmp/out" && ok || bad "inspect $fam: family line"
  grep -q "text.token_prefill" "$tmp/out" && grep -q "text.decode" "$tmp/out" && ok || bad "inspect $fam: modules"
  grep -Eq "^identity: +[0-9a-f]{64}$" "$tmp/out" && ok || bad "inspect $fam: identity"
  expect_ok "bench $fam" "$OMNIC" bench -m "$tmp/$fam" -p 16 -n 8 --batch 1,2 -r 1 -o json
  $PY -c "import json,sys; r=json.load(open('$tmp/out')); assert len(r)==3 and all(x['avg_ts']>0 for x in r), r" \
    && ok || bad "bench $fam: json"
done

# --bw: weight bytes per decode step from the decode graph, against the read probe run between the
# steps. qwen2 ties its embeddings (the lm_head reads the whole table: every weight, once, plus the
# RoPE frequencies); llama does not (one gathered embedding row per sequence).
for fam in llama qwen2; do
  expect_ok "bench --bw $fam" "$OMNIC" bench -m "$tmp/$fam" -p 8 -n 8 --batch 1,2 -r 1 --bw -o json
  cp "$tmp/out" "$tmp/bw_$fam.json"
done
$PY - "$tmp/bw_llama.json" "$tmp/bw_qwen2.json" "$tmp/llama/config.json" <<'PYEOF' && ok || bad "bench --bw: weight bytes"
import json, sys
llama, qwen2 = (json.load(open(f)) for f in sys.argv[1:3])
hidden = json.load(open(sys.argv[3]))["hidden_size"]
for rows in (llama, qwen2):
    assert "weight_bytes_per_step" not in rows[0], rows[0]  # pp row
    for r in rows[1:]:
        assert r["probe_gbps"] > 0 and 0 < r["probe_ratio"] == r["probe_ratio"], r
tg1, tg2 = (r["weight_bytes_per_step"] for r in llama[1:])
assert tg2 - tg1 == hidden * 2, (tg1, tg2)  # one more bf16 embedding row
assert tg1 < llama[1]["model_size"], tg1
for r in qwen2[1:]:
    assert r["model_size"] <= r["weight_bytes_per_step"] <= r["model_size"] + 1024, r
PYEOF
# a mixture-of-experts model reads the experts its router picks: no figure, said so
$PY tools/mktiny.py --family qwen3_moe --out "$tmp/moe" >/dev/null || bad "mktiny qwen3_moe"
expect_ok "bench --bw moe" "$OMNIC" bench -m "$tmp/moe" -p 0 -n 4 -r 1 --bw
grep -q "| tg4 | .* | - | - | n/a (MoE) |" "$tmp/out" && ok || bad "bench --bw moe: $(cat "$tmp/out")"
expect_err "bench --bw --image" 2 "--bw measures text generation" "$OMNIC" bench -m "$tmp/qwen2" --bw --image x.png

# identity depends on capacity and KV dtype, not on the thread count
"$OMNIC" inspect -m "$tmp/qwen2" --ctx 128 -t 1 | grep '^identity' >"$tmp/a"
"$OMNIC" inspect -m "$tmp/qwen2" --ctx 128 -t 2 | grep '^identity' >"$tmp/b"
"$OMNIC" inspect -m "$tmp/qwen2" --ctx 256 | grep '^identity' >"$tmp/c"
"$OMNIC" inspect -m "$tmp/qwen2" --ctx 128 --kv f32 | grep '^identity' >"$tmp/d"
cmp -s "$tmp/a" "$tmp/b" && ok || bad "identity changed with threads"
! cmp -s "$tmp/a" "$tmp/c" && ok || bad "identity ignores capacity"
! cmp -s "$tmp/a" "$tmp/d" && ok || bad "identity ignores KV dtype"

# --quant: weights converted at load; inspect reports both sizes; the identity names the transform
for q in q8_0 q4_0; do
  expect_ok "inspect --quant $q" "$OMNIC" inspect -m "$tmp/qwen2" --ctx 128 --quant $q
  grep -q "as stored, .* as loaded (.* linear weights in $q)" "$tmp/out" && ok || bad "inspect --quant $q: sizes"
  grep '^identity' "$tmp/out" >"$tmp/q_$q"
  ! cmp -s "$tmp/a" "$tmp/q_$q" && ok || bad "identity ignores --quant $q"
  expect_ok "bench --quant $q" "$OMNIC" bench -m "$tmp/qwen2" -p 24 -n 4 --batch 1,2 -r 1 --quant $q
  grep -q "qwen2 $q" "$tmp/out" && ok || bad "bench --quant $q: table"
done
! cmp -s "$tmp/q_q8_0" "$tmp/q_q4_0" && ok || bad "identity: q8_0 == q4_0"
expect_err "bad --quant" 1 "unknown weight quantization 'q3_k'" "$OMNIC" inspect -m "$tmp/qwen2" --quant q3_k

# --mmap: the weights read in place give the same greedy tokens as the default copies
expect_ok "run (weights copied)" "$OMNIC" run -m "$tmp/qwen2" --tokens 5,17,300,42 -n 12 --ignore-eos \
  --generation-config ignore
cp "$tmp/out" "$tmp/copied"
expect_ok "run --mmap" "$OMNIC" run -m "$tmp/qwen2" --tokens 5,17,300,42 -n 12 --ignore-eos \
  --generation-config ignore --mmap
[ -s "$tmp/copied" ] && cmp -s "$tmp/copied" "$tmp/out" && ok || bad "run --mmap: output differs from the default"
expect_ok "bench --mmap" "$OMNIC" bench -m "$tmp/qwen2" -p 16 -n 4 -r 1 --mmap

# bad input: each names the problem
expect_err "no model" 2 "-m DIR is required" "$OMNIC" inspect
expect_err "missing dir" 1 "no such checkpoint directory" "$OMNIC" inspect -m "$tmp/nope"
expect_err "bad option" 2 "unknown option '--frobnicate'" "$OMNIC" inspect -m "$tmp/llama" --frobnicate
expect_err "bad ctx" 2 "needs an integer" "$OMNIC" inspect -m "$tmp/llama" --ctx -5
expect_err "unknown command" 2 "unknown command 'frob'" "$OMNIC" frob
cp -r "$tmp/llama" "$tmp/trunc"
truncate -s 100000 "$tmp/trunc/model.safetensors"
expect_err "truncated weights" 1 "model.safetensors" "$OMNIC" inspect -m "$tmp/trunc"
cp -r "$tmp/llama" "$tmp/badjson"
printf '{"model_type": "llama", ' >"$tmp/badjson/config.json"
expect_err "malformed config" 1 "config.json" "$OMNIC" inspect -m "$tmp/badjson"
expect_err "bench bad list" 2 "comma-separated" "$OMNIC" bench -m "$tmp/llama" -p 12,x
expect_err "bench bad format" 2 "-o must be md or json" "$OMNIC" bench -m "$tmp/llama" -o xml

# run --tokens: the ids as given (the dump's tokens are exactly them), bad ids named
expect_ok "run --tokens" "$OMNIC" run -m "$tmp/llama" --tokens 5,17,300 -n 2 --ignore-eos --dump "$tmp/tokdump"
$PY -c "import numpy as np; t=np.load('$tmp/tokdump/tokens.npy').tolist(); assert t==[5,17,300], t" \
  && ok || bad "run --tokens: dumped tokens"
expect_err "run --tokens bad id" 2 "id 1 is not an integer" "$OMNIC" run -m "$tmp/llama" --tokens 5,x,7
expect_err "run --tokens empty id" 2 "id 2 is not an integer" "$OMNIC" run -m "$tmp/llama" --tokens 5,6,
expect_err "run --tokens negative" 2 "id 0 is not an integer" "$OMNIC" run -m "$tmp/llama" --tokens -3
expect_err "run --tokens too big" 2 "id 0 is not an integer in [0, 2147483647]" "$OMNIC" run -m "$tmp/llama" \
  --tokens 99999999999
expect_err "run --tokens outside vocab" 1 "prompt token 1 is 99999, outside the vocabulary" "$OMNIC" run \
  -m "$tmp/llama" --tokens 5,99999
expect_err "run --tokens and -p" 2 "one of -p PROMPT or --tokens IDS" "$OMNIC" run -m "$tmp/llama" --tokens 5 -p hi
expect_err "run --tokens --raw" 2 "drop --raw" "$OMNIC" run -m "$tmp/llama" --tokens 5 --raw

echo "test_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
