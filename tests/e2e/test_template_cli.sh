#!/usr/bin/env bash
# `omnic template` end to end: checkpoint resolution (chat_template.jinja over tokenizer_config.json,
# special tokens from tokenizer_config), stdin forms (a list, or an object with keyword arguments),
# flags, exact output bytes, and the errors a user sees for bad templates and bad input.
set -uo pipefail
OMNIC=${OMNIC:-build/release/omnic}
PY=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect_out NAME WANT STDIN ARGS... : exit 0 and stdout is exactly WANT
expect_out() {
  local name=$1 want=$2 input=$3; shift 3
  printf '%s' "$input" | "$OMNIC" template "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne 0 ]; then bad "$name (exit $rc): $(head -c 400 "$tmp/err")"; return; fi
  printf '%s' "$want" >"$tmp/want"
  if cmp -s "$tmp/out" "$tmp/want"; then ok; else bad "$name: got $(od -c "$tmp/out" | head -5)"; fi
}
# expect_err NAME CODE TEXT STDIN ARGS... : exits CODE and stderr contains TEXT
expect_err() {
  local name=$1 code=$2 text=$3 input=$4; shift 4
  printf '%s' "$input" | "$OMNIC" template "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne "$code" ]; then bad "$name: exit $rc, expected $code; stderr: $(head -c 300 "$tmp/err")"; return; fi
  if ! grep -qF -- "$text" "$tmp/err"; then bad "$name: stderr lacks '$text': $(head -c 300 "$tmp/err")"; return; fi
  ok
}

$PY tools/mktiny.py --family llama --out "$tmp/llama" >/dev/null || bad "mktiny llama"
$PY tools/mktiny.py --family qwen2 --out "$tmp/qwen2" >/dev/null || bad "mktiny qwen2"
msgs='[{"role": "user", "content": "Hi"}]'

# tokenizer_config.json's template and special tokens (llama3: bos from the template variables)
expect_out "llama3 template" $'<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n' \
  "$msgs" -m "$tmp/llama" --add-generation-prompt
expect_out "no generation prompt" $'<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>' "$msgs" -m "$tmp/llama"
expect_out "--bos overrides" $'<BOS><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>' "$msgs" -m "$tmp/llama" --bos '<BOS>'
expect_out "object form" $'<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n' \
  "{\"messages\": $msgs, \"add_generation_prompt\": true}" -m "$tmp/qwen2"

# chat_template.jinja wins over tokenizer_config.json; keyword arguments reach the template
printf '{{ bos_token }}|{{ eos_token }}|{{ greeting }}|{{ messages | length }}|{{ tools }}|{{ add_generation_prompt }}\n' \
  >"$tmp/llama/chat_template.jinja"
expect_out "chat_template.jinja + kwargs" '<|begin_of_text|>|<|eot_id|>|hello|1|None|False' \
  "{\"messages\": $msgs, \"greeting\": \"hello\"}" -m "$tmp/llama"
expect_out "--eos" '<|begin_of_text|>|</s>|hello|1|None|True' \
  "{\"messages\": $msgs, \"greeting\": \"hello\"}" -m "$tmp/llama" --eos '</s>' --add-generation-prompt
printf 'T:{{ messages[0].content }}' >"$tmp/t.jinja"
expect_out "--template file" 'T:Hi' "$msgs" --template "$tmp/t.jinja"

# errors
expect_err "no model" 2 "-m DIR is required" "$msgs"
expect_err "bad option" 2 "unknown option '--frob'" "$msgs" -m "$tmp/llama" --frob
expect_err "missing dir" 1 "no such checkpoint directory" "$msgs" -m "$tmp/nope"
expect_err "malformed stdin" 1 "malformed JSON at line 1" '[{"role": ' -m "$tmp/qwen2"
expect_err "messages not a list" 1 "'messages' must be a list" '{"messages": 3}' -m "$tmp/qwen2"
expect_err "stdin scalar" 1 "stdin must be a list of messages" '"hello"' -m "$tmp/qwen2"
printf 'line one\n{%% for m in messages %%}\n{{ m.role }' >"$tmp/syntax.jinja"
expect_err "syntax error position" 1 "line 3, column 1" "$msgs" --template "$tmp/syntax.jinja"
printf '{%% for m in messages %%}{%% endif %%}' >"$tmp/unmatched.jinja"
expect_err "unmatched end tag" 1 "the innermost open block is 'for'" "$msgs" --template "$tmp/unmatched.jinja"
printf 'x\n{{ raise_exception("only user messages please") }}' >"$tmp/raise.jinja"
expect_err "raise_exception" 1 "line 2: only user messages please" "$msgs" --template "$tmp/raise.jinja"
printf '{%% macro f(n) %%}{{ f(n + 1) }}{%% endmacro %%}{{ f(0) }}' >"$tmp/rec.jinja"
expect_err "runaway recursion" 1 "OMNIC_MAX_TEMPLATE_CALL_DEPTH" "$msgs" --template "$tmp/rec.jinja"
rm "$tmp/llama/chat_template.jinja"
$PY - "$tmp/llama/tokenizer_config.json" <<'EOF'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
del c["chat_template"]
json.dump(c, open(p, "w"))
EOF
expect_err "no template" 1 "has no chat template" "$msgs" -m "$tmp/llama"

echo "test_template_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
