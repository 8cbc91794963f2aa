#!/usr/bin/python3
"""omnic run --dump against the numpy reference (tools/ref/decoder.py), every family.

For each tiny checkpoint: `omnic run --raw --dump DIR --kv f32` writes every prefill
stage; the reference recomputes them from the same tokens and the first stage that
diverges is reported (tolerance: f32 KV on both sides, so only summation order
differs: |omnic - ref| <= 1e-4 absolute; observed ~4e-6). The greedy continuation
omnic generated through its decode module must be the reference's argmax at every
step (the reference runs the prompt plus the generated tokens in one pass)."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "ref"))
import decoder  # noqa: E402

OMNIC = os.environ.get("OMNIC", os.path.join(ROOT, "build/release/omnic"))
PY = "/usr/bin/python3"
FAMILIES = [("llama", "f32"), ("qwen2", "bf16"), ("qwen3", "bf16"), ("phi3", "f32"), ("gemma3_text", "bf16")]
PROMPT = "The quick brown fox jumps over the lazy dog, again and again."
N_GEN = 12

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


with tempfile.TemporaryDirectory() as tmp:
    for fam, dtype in FAMILIES:
        model = os.path.join(tmp, fam)
        subprocess.run([PY, os.path.join(ROOT, "tools/mktiny.py"), "--family", fam, "--dtype", dtype, "--out", model],
                       check=True, stdout=subprocess.DEVNULL)
        dump = os.path.join(tmp, fam + "-dump")
        r = subprocess.run([OMNIC, "run", "-m", model, "--raw", "-p", PROMPT, "-n", str(N_GEN), "--kv", "f32",
                            "--ignore-eos", "--dump", dump], capture_output=True, text=True)
        check(r.returncode == 0, f"{fam}: omnic run exit {r.returncode}: {r.stderr[-400:]}")
        if r.returncode != 0:
            continue
        tokens = np.load(os.path.join(dump, "tokens.npy")).tolist()
        generated = np.load(os.path.join(dump, "generated.npy")).tolist()
        check(len(generated) == N_GEN, f"{fam}: {len(generated)} tokens generated, expected {N_GEN}")
        cmp = subprocess.run([PY, os.path.join(ROOT, "tools/ref/decoder.py"), "--model", model, "--tokens",
                              ",".join(map(str, tokens)), "--compare", dump, "--atol", "1e-4", "--rtol", "0"],
                             capture_output=True, text=True)
        check(cmp.returncode == 0, f"{fam}: stage comparison failed:\n{cmp.stdout}{cmp.stderr}")
        n_stages = sum(1 for line in cmp.stdout.splitlines() if line.strip().startswith("ok"))
        check(n_stages >= 4, f"{fam}: only {n_stages} stages compared:\n{cmp.stdout}")
        # greedy continuation: reference argmax after prompt + generated[:i]
        stages = decoder.forward(model, tokens + generated[:-1])
        ref_next = np.argmax(stages["logits"][len(tokens) - 1:], axis=-1).tolist()
        check(ref_next == generated, f"{fam}: greedy tokens differ from the reference:\n omnic {generated}\n ref   {ref_next}")
        print(f"{fam}: {n_stages} stages within 1e-4, {len(generated)} greedy tokens equal the reference")

    # LongRoPE past original_max_position_embeddings (tiny phi3: 64, max 256). HF picks the
    # factors per forward (long when the sequence is longer than 64), and its generate
    # recomputes the whole cache when a sequence first grows past 64 (Phi3ForCausalLM.
    # prepare_inputs_for_generation), so the logits of the row at position p are those of one
    # forward over tokens 0..p. Two cases: a prompt longer than 64 (every row long), and a
    # shorter prompt whose generation crosses 64 (omnic replays the history at the crossing).
    model = os.path.join(tmp, "phi3")
    words = (PROMPT + " ") * 8

    def n_tokens(text):
        r = subprocess.run([OMNIC, "tokenize", "-m", model], input=text, capture_output=True, text=True, check=True)
        return len(json.loads(r.stdout))

    cut = len(words)
    while n_tokens(words[:cut]) > 58:
        cut -= 1
    for label, text in (("prompt past 64", (PROMPT + " ") * 3), ("generation crossing 64", words[:cut])):
        dump = os.path.join(tmp, "phi3-long-dump")
        r = subprocess.run([OMNIC, "run", "-m", model, "--raw", "-p", text, "-n", str(N_GEN), "--kv", "f32",
                            "--ctx", "256", "--ignore-eos", "--dump", dump], capture_output=True, text=True)
        check(r.returncode == 0, f"phi3 {label}: omnic run exit {r.returncode}: {r.stderr[-400:]}")
        if r.returncode != 0:
            continue
        tokens = np.load(os.path.join(dump, "tokens.npy")).tolist()
        generated = np.load(os.path.join(dump, "generated.npy")).tolist()
        T = len(tokens)
        check((T > 64) == (label == "prompt past 64") and T + N_GEN > 65, f"phi3 {label}: prompt of {T} tokens")
        cmp = subprocess.run([PY, os.path.join(ROOT, "tools/ref/decoder.py"), "--model", model, "--tokens",
                              ",".join(map(str, tokens)), "--compare", dump, "--atol", "1e-4", "--rtol", "0"],
                             capture_output=True, text=True)
        check(cmp.returncode == 0, f"phi3 {label}: stage comparison failed:\n{cmp.stdout}{cmp.stderr}")
        seq = tokens + generated[:-1]
        long_rows = decoder.forward(model, seq)["logits"]            # one forward past 64: long factors
        short_rows = decoder.forward(model, seq[:64])["logits"] if T <= 64 else None  # rows 0..63, short
        ref_next = [int(np.argmax(short_rows[p] if p < 64 else long_rows[p])) for p in range(T - 1, len(seq))]
        check(ref_next == generated, f"phi3 {label}: greedy tokens differ:\n omnic {generated}\n ref   {ref_next}")
        print(f"phi3 LongRoPE, {label} (prompt {T} tokens, {N_GEN} generated): stages within 1e-4, greedy tokens "
              f"equal the reference")

print(f"test_run_dump: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
