#!/usr/bin/python3
"""Writes the seed corpus of fuzz_tokenizer (tests/fuzz/corpus/tokenizer/): texts for the two fixed
tokenizers (first byte 0 or 1), id sequences to decode (first byte 2) and small tokenizer.json
files with each component type (first byte 3). Run from anywhere:
python3 tests/fuzz/make_tokenizer_corpus.py"""
import json, os, struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "tokenizer")

TEXTS = [
    "Hello world <|im_start|> hello world Ab 123",
    "it's  \n\t x   y\r\n",
    " hello 中文 ▁x <s>helloworld</s>",
    "ﬁ ① ＡＢ Straße İ 👨‍👩‍👧 1234567 'S 'll",
    "",
    " " * 40 + "\n" * 5,
    "a" * 300,
]

base = {
    "added_tokens": [{"id": 0, "content": "<unk>", "special": True}, {"id": 1, "content": "<s>", "special": True},
                     {"id": 5, "content": "x y", "lstrip": True, "rstrip": True, "single_word": True}],
    "normalizer": None, "pre_tokenizer": None, "post_processor": None, "decoder": None,
    "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": True, "fuse_unk": True,
              "vocab": {"<unk>": 0, "<s>": 1, "a": 2, "b": 3, "ab": 4, "<0x20>": 6, "▁": 7},
              "merges": ["a b"]},
}
VARIANTS = {
    "plain": {},
    "pairs": {"model": dict(base["model"], merges=[["a", "b"]])},
    "norms": {"normalizer": {"type": "Sequence", "normalizers": [
        {"type": "NFD"}, {"type": "Lowercase"}, {"type": "Strip", "strip_left": True, "strip_right": False},
        {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": "▁"}, {"type": "Prepend", "prepend": "▁"}]}},
    "split": {"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\p{L}+|\\p{N}"}, "behavior": "Isolated", "invert": False},
        {"type": "Split", "pattern": {"String": "b"}, "behavior": "MergedWithNext", "invert": True},
        {"type": "Digits", "individual_digits": True}, {"type": "Punctuation", "behavior": "Contiguous"}]}},
    "bytelevel": {"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True, "use_regex": True},
                  "decoder": {"type": "ByteLevel"}},
    "metaspace": {"pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first",
                                    "split": False},
                  "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"}},
    "whitespace": {"pre_tokenizer": {"type": "Whitespace"}},
    "template": {"post_processor": {"type": "Sequence", "processors": [
        {"type": "ByteLevel"}, {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}},
                                                                      {"Sequence": {"id": "A"}}],
                                "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}]}},
    "decoders": {"decoder": {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}},
    "bad_merge": {"model": dict(base["model"], merges=["a  b"])},
    "wordpiece": {"model": {"type": "WordPiece", "vocab": {}}},
}

os.makedirs(OUT, exist_ok=True)
for i, t in enumerate(TEXTS):
    for which in (0, 1):
        with open(os.path.join(OUT, f"text_{which}_{i}"), "wb") as f:
            f.write(bytes([which]) + t.encode())
with open(os.path.join(OUT, "text_0_invalid_utf8"), "wb") as f:
    f.write(b"\x00ab\xff\xe4\xb8")
for i, ids in enumerate([[1, 2, 3], [5, 260, 261, 3, 100], [200, 201, 202, 4, 205], [0xFFFFFFFF, 7, 2**31 + 5]]):
    with open(os.path.join(OUT, f"ids_{i}"), "wb") as f:
        f.write(b"\x02" + b"".join(struct.pack("<I", x) for x in ids))
for name, edits in VARIANTS.items():
    t = dict(base, **edits)
    with open(os.path.join(OUT, f"json_{name}"), "wb") as f:
        f.write(b"\x03" + json.dumps(t, ensure_ascii=False).encode())
