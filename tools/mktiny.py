#!/usr/bin/python3
"""mktiny — write a small random Hugging Face-format checkpoint for a family.

Everything is numpy + the standard library (no torch, safetensors, tokenizers or
transformers), and everything is deterministic from --seed.

Written into --out DIR:
  config.json, generation_config.json        real HF keys for the family
  tokenizer.json, tokenizer_config.json      a real-format byte-level BPE tokenizer,
                                             trained here on a built-in sample text
  model.safetensors                          (--shards 1), or
  model-0000K-of-0000N.safetensors + model.safetensors.index.json   (--shards N)

Examples:
  /usr/bin/python3 tools/mktiny.py --family qwen2 --out /tmp/tiny-qwen2 --verify
  /usr/bin/python3 tools/mktiny.py --family llama --out /tmp/tiny-llama --dtype f32 --shards 3
  /usr/bin/python3 tools/mktiny.py --family qwen2 --dims real --preset qwen2-1.5b --out /tmp/q15

Adding a family: write a builder `build_<family>(dims, tok, tie) -> (config, weights)`
(weights: ordered list of (hf_name, shape) or (hf_name, shape, init)), and add a
`Family` entry to FAMILIES with its tiny dims, presets and tokenizer style.
A new tokenizer style goes into TOKENIZER_STYLES.

The module is importable: `train_tokenizer`, `encode`, `decode`, `read_safetensors`
are usable from tests and reference scripts.
"""

import argparse
import dataclasses
import json
import math
import os
import re
import struct
import sys
import time
import unicodedata
import zlib
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

# =============================================================================
# 1. Built-in training text (English prose, code, numbers, several languages)
# =============================================================================

SAMPLE_TEXT = r"""
The quick brown fox jumps over the lazy dog. The dog was not amused, and the fox
ran away into the forest before anyone could say a word about it.

Once upon a time there was a small village at the edge of a great forest. The
people of the village were farmers and fishermen, and they worked hard every day
of the year. In the morning they went out to the fields, and in the evening they
came back home to eat, to talk and to rest. The children played by the river and
the old men told stories about the mountains, the winters and the wolves.

One day a stranger arrived in the village. He was tall and thin, and he carried
a heavy bag on his shoulder. "Where are you going?" asked the baker. "I am going
to the city on the other side of the mountains," said the stranger. "It is a long
way, and the road is dangerous in the winter." The baker gave him some bread and
a little cheese, and the stranger thanked him and went on his way.

Machine learning models are trained on large amounts of text. A language model
reads a sequence of tokens and predicts the next token. The tokens are produced
by a tokenizer, which splits the text into words, pieces of words and single
bytes. Byte pair encoding starts from single bytes and repeatedly merges the most
frequent pair of adjacent symbols into a new symbol. The result is a vocabulary
that contains common words as single tokens and rare words as several pieces.

Inference engines load the weights of a model, run the forward pass on the input
tokens, and sample the next token from the output distribution. Greedy decoding
always takes the most likely token. The attention layers keep a cache of keys and
values so that each new token only needs one step of computation. Batching many
requests together makes better use of the hardware. The server streams tokens to
the client as soon as they are generated.

Questions and answers:
Q: What is the capital of France? A: The capital of France is Paris.
Q: How many days are there in a week? A: There are 7 days in a week.
Q: What is 12 + 30? A: 12 + 30 = 42.
Q: When was the meeting? A: It was on 2024-03-15 at 10:30, in room 101.
Prices: 3.50 EUR, 12.99 USD, 1,250 JPY; totals 100%, 75%, 0.5% and 1e-6.

```c
#include <stdio.h>
#include <stdlib.h>

static int add(int a, int b) {
    return a + b;
}

int main(int argc, char **argv) {
    int total = 0;
    for (int i = 0; i < argc; i++) {
        total = add(total, atoi(argv[i]));
    }
    printf("total = %d\n", total);
    return 0;
}
```

```python
import numpy as np

def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    '''Return the softmax of x along the given axis.'''
    x = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)

class Linear:
    def __init__(self, in_features, out_features):
        self.weight = np.zeros((out_features, in_features), dtype=np.float32)
        self.bias = None

    def forward(self, x):
        y = x @ self.weight.T
        if self.bias is not None:
            y = y + self.bias
        return y

for i in range(10):
    print(f"step {i}: loss = {1.0 / (i + 1):.4f}")
```

{"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "vocab_size": 32000}
<html><body><p class="note">Hello, world!</p></body></html>

Le renard brun rapide saute par-dessus le chien paresseux. Nous sommes allés à la
plage, et l'été était très chaud. Où est la bibliothèque ? Elle est à côté de la
gare. Ça va très bien, merci beaucoup !
Der schnelle braune Fuchs springt über den faulen Hund. Wir fahren morgen früh mit
dem Zug nach München. Die Straße ist schön, und das Wetter ist heute großartig.
El rápido zorro marrón salta sobre el perro perezoso. ¿Dónde está la estación? Mañana
vamos a la montaña con nuestros niños. ¡Qué día tan bonito!
Быстрая коричневая лиса прыгает через ленивую собаку. Привет, как дела? Сегодня
хорошая погода, и мы пойдём гулять в парк.
Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο. Καλημέρα, τι κάνεις;
敏捷的棕色狐狸跳过了懒狗。我们明天早上去北京。今天天气很好，我们去公园散步吧。
人工智能模型可以理解文本和图像。你好，世界！
素早い茶色の狐がのろまな犬を飛び越える。こんにちは、世界！今日はいい天気ですね。
빠른 갈색 여우가 게으른 개를 뛰어넘는다. 안녕하세요, 세계!
तेज़ भूरी लोमड़ी आलसी कुत्ते के ऊपर कूदती है। नमस्ते दुनिया!
مرحبا بالعالم! الثعلب البني السريع يقفز فوق الكلب الكسول.
Emoji: 😀 😂 👍 🎉 🚀 ❤️ ✨ — “quotes”, ‘single’, …ellipsis… and tabs	between	words.

The end. The end. The end of the story is the beginning of another one, and the
beginning of the next one is not the end of this one. Thank you for reading!
"""

# =============================================================================
# 2. Byte-level BPE: byte map, pre-tokenizer regexes, trainer, encoder
# =============================================================================

# The pre-tokenizer patterns as they appear in tokenizer.json (Oniguruma syntax).
QWEN2_SPLIT_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
LLAMA3_SPLIT_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def to_python_regex(pattern: str) -> "re.Pattern":
    """Approximate an Oniguruma \\p{L}/\\p{N} pattern with Python `re`.

    \\p{L} -> [^\\W\\d_] (letters), \\p{N} -> \\d, and the negated classes
    [^\\r\\n\\p{L}\\p{N}] / [^\\s\\p{L}\\p{N}] -> "not \\w, or underscore". Close
    enough for training and for the self-check; tokenizer.json keeps the real one.
    """
    p = pattern
    p = p.replace(r"[^\r\n\p{L}\p{N}]", r"(?:[^\r\n\w]|_)")
    p = p.replace(r"[^\s\p{L}\p{N}]", r"(?:[^\s\w]|_)")
    p = p.replace(r"\p{L}", r"[^\W\d_]")
    p = p.replace(r"\p{N}", r"\d")
    return re.compile(p)


def bytes_to_unicode() -> Dict[int, str]:
    """GPT-2's byte -> printable unicode symbol map (256 entries).

    Insertion order is the order of the base vocabulary (id 0 = '!', space = 'Ġ' = 220).
    """
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


BYTE_TO_SYM = bytes_to_unicode()
SYM_TO_BYTE = {s: b for b, s in BYTE_TO_SYM.items()}


def _word_symbols(piece: str) -> Tuple[str, ...]:
    return tuple(BYTE_TO_SYM[b] for b in piece.encode("utf-8"))


def train_bpe(text: str, split_re: "re.Pattern", n_merges: int) -> List[Tuple[str, str]]:
    """Deterministic byte-level BPE training; returns merges in rank order.

    Each step merges the most frequent adjacent pair (ties: smallest pair in
    string order); stops early when no pair occurs twice. Pair counts are kept
    incrementally with a lazy max-heap, so a few hundred merges take ~0.1 s.
    """
    import heapq
    from collections import Counter, defaultdict

    word_freq = Counter(_word_symbols(m.group(0)) for m in split_re.finditer(text))
    words = [list(w) for w in word_freq]
    freqs = [word_freq[w] for w in word_freq]

    pair_count: Dict[Tuple[str, str], int] = defaultdict(int)
    where: Dict[Tuple[str, str], set] = defaultdict(set)
    for i, w in enumerate(words):
        for p in zip(w, w[1:]):
            pair_count[p] += freqs[i]
            where[p].add(i)
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)

    merges: List[Tuple[str, str]] = []
    while len(merges) < n_merges and heap:
        negc, pair = heapq.heappop(heap)
        if pair_count.get(pair, 0) != -negc:
            continue  # stale heap entry
        if -negc < 2:
            break
        merges.append(pair)
        a, b = pair
        touched = set()
        for i in sorted(where.pop(pair, ())):
            w, f = words[i], freqs[i]
            for p in zip(w, w[1:]):
                pair_count[p] -= f
                touched.add(p)
            out, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    out.append(a + b)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for p in zip(out, out[1:]):
                pair_count[p] += f
                where[p].add(i)
                touched.add(p)
        pair_count.pop(pair, None)
        for p in touched:
            c = pair_count.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, p))
            else:
                pair_count.pop(p, None)
    return merges


@dataclasses.dataclass
class BpeTokenizer:
    """In-memory form of the trained tokenizer (what tokenizer.json describes)."""
    style: str                      # key of TOKENIZER_STYLES
    vocab: Dict[str, int]           # BPE vocab: 256 byte symbols + one per merge
    merges: List[Tuple[str, str]]   # rank order
    specials: Dict[str, int]        # added tokens (all special), ids after the vocab
    split_pattern: str              # Oniguruma pattern written to tokenizer.json
    nfc: bool                       # NFC normalizer
    ignore_merges: bool
    add_bos: Optional[str]          # special token prepended by the post-processor

    @property
    def size(self) -> int:
        return len(self.vocab) + len(self.specials)

    def id(self, token: str) -> int:
        return self.specials[token] if token in self.specials else self.vocab[token]


def train_tokenizer(style: str, n_merges: int = 256, extra_specials: Sequence[str] = ()) -> BpeTokenizer:
    """Train the built-in sample for a tokenizer style (see TOKENIZER_STYLES)."""
    st = TOKENIZER_STYLES[style]
    text = SAMPLE_TEXT
    if st["nfc"]:
        text = unicodedata.normalize("NFC", text)
    merges = train_bpe(text, to_python_regex(st["pattern"]), n_merges)
    vocab = {sym: i for i, sym in enumerate(BYTE_TO_SYM.values())}
    for a, b in merges:
        if a + b not in vocab:  # two merges can spell the same token; it keeps one id
            vocab[a + b] = len(vocab)
    specials = {}
    for s in list(st["specials"]) + list(extra_specials):
        specials[s] = len(vocab) + len(specials)
    return BpeTokenizer(style, vocab, merges, specials, st["pattern"], st["nfc"],
                        st["ignore_merges"], st.get("add_bos"))


def _bpe_word(tok: BpeTokenizer, ranks: Dict[Tuple[str, str], int], word: str) -> List[int]:
    if tok.ignore_merges and word in tok.vocab:
        return [tok.vocab[word]]
    syms = list(word)
    while len(syms) > 1:
        best = min(range(len(syms) - 1), key=lambda j: ranks.get((syms[j], syms[j + 1]), 1 << 30))
        if (syms[best], syms[best + 1]) not in ranks:
            break
        a, b = syms[best], syms[best + 1]
        out, j = [], 0
        while j < len(syms):
            if j + 1 < len(syms) and syms[j] == a and syms[j + 1] == b:
                out.append(a + b)
                j += 2
            else:
                out.append(syms[j])
                j += 1
        syms = out
    return [tok.vocab[s] for s in syms]


def encode(tok: BpeTokenizer, text: str, add_special_tokens: bool = True) -> List[int]:
    """Reference encoder (Python-regex pre-tokenizer, so exact for ASCII/Latin text)."""
    ranks = {m: r for r, m in enumerate(tok.merges)}
    split_re = to_python_regex(tok.split_pattern)
    ids: List[int] = []
    if add_special_tokens and tok.add_bos:
        ids.append(tok.specials[tok.add_bos])
    if tok.specials:
        parts = re.split("(" + "|".join(re.escape(s) for s in sorted(tok.specials, key=len, reverse=True)) + ")", text)
    else:
        parts = [text]
    for k, part in enumerate(parts):
        if k % 2 == 1:
            ids.append(tok.specials[part])
            continue
        if tok.nfc:
            part = unicodedata.normalize("NFC", part)
        for m in split_re.finditer(part):
            ids.extend(_bpe_word(tok, ranks, "".join(_word_symbols(m.group(0)))))
    return ids


def decode(tok: BpeTokenizer, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
    inv = {i: t for t, i in tok.vocab.items()}
    inv_sp = {i: t for t, i in tok.specials.items()}
    out = bytearray()
    for i in ids:
        if i in inv_sp:
            if not skip_special_tokens:
                out += inv_sp[i].encode("utf-8")
        else:
            out += bytes(SYM_TO_BYTE[c] for c in inv[i])
    return out.decode("utf-8", errors="replace")


# =============================================================================
# 3. Tokenizer styles: tokenizer.json / tokenizer_config.json / chat templates
# =============================================================================

QWEN2_CHAT_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# Meta-Llama-3-8B-Instruct's template.
LLAMA3_CHAT_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

# Per style: pattern, specials (in id order), normalizer, BOS handling, which
# specials are bos/eos/pad, chat template, and the ByteLevel flags HF uses.
TOKENIZER_STYLES = {
    "qwen2": {
        "pattern": QWEN2_SPLIT_PATTERN,
        "specials": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        "nfc": True,
        "ignore_merges": False,
        "add_bos": None,
        "bos": None,                     # tokenizer_config bos_token (Qwen2: null)
        "bos_id_token": "<|endoftext|>",  # config bos_token_id
        "eos": "<|im_end|>",
        "eos_ids": ["<|im_end|>"],        # generation_config eos (single -> int)
        "pad": "<|endoftext|>",
        "chat_template": QWEN2_CHAT_TEMPLATE,
        "model_max_length": 32768,
    },
    "llama3": {
        "pattern": LLAMA3_SPLIT_PATTERN,
        "specials": ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                     "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
                     "<|reserved_special_token_2|>", "<|start_header_id|>", "<|end_header_id|>",
                     "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"],
        "nfc": False,
        "ignore_merges": True,
        "add_bos": "<|begin_of_text|>",
        "bos": "<|begin_of_text|>",
        "bos_id_token": "<|begin_of_text|>",
        "eos": "<|eot_id|>",
        "eos_ids": ["<|end_of_text|>", "<|eom_id|>", "<|eot_id|>"],  # list
        "pad": None,
        "chat_template": LLAMA3_CHAT_TEMPLATE,
        "model_max_length": 131072,
    },
}


def _added_token(tid: int, content: str) -> dict:
    return {"id": tid, "content": content, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": False, "special": True}


def tokenizer_json(tok: BpeTokenizer, merges_style: str = "str") -> dict:
    """tokenizer.json as HF `tokenizers` serializes it for this style."""
    merges = [f"{a} {b}" for a, b in tok.merges] if merges_style == "str" else [[a, b] for a, b in tok.merges]
    split = {"type": "Split", "pattern": {"Regex": tok.split_pattern}, "behavior": "Isolated", "invert": False}
    added = [_added_token(i, s) for s, i in tok.specials.items()]
    if tok.style == "qwen2":
        bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
        return {
            "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": {"type": "NFC"},
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [split, dict(bl)]},
            "post_processor": dict(bl),
            "decoder": dict(bl),
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": "", "end_of_word_suffix": "",
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": tok.vocab, "merges": merges},
        }
    if tok.style == "llama3":
        bos = tok.add_bos
        bos_id = tok.specials[bos]
        return {
            "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": None,
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                split,
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
            "post_processor": {"type": "Sequence", "processors": [
                {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
                {"type": "TemplateProcessing",
                 "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                            {"Sequence": {"id": "A", "type_id": 0}}],
                 "pair": [{"SpecialToken": {"id": bos, "type_id": 0}},
                          {"Sequence": {"id": "A", "type_id": 0}},
                          {"SpecialToken": {"id": bos, "type_id": 1}},
                          {"Sequence": {"id": "B", "type_id": 1}}],
                 "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}}]},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                      "vocab": tok.vocab, "merges": merges},
        }
    raise ValueError(f"no tokenizer.json writer for style {tok.style!r}")


def tokenizer_config_json(tok: BpeTokenizer) -> dict:
    st = TOKENIZER_STYLES[tok.style]
    cfg = {
        "added_tokens_decoder": {
            str(i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                     "single_word": False, "special": True} for s, i in tok.specials.items()},
        "bos_token": st["bos"],
        "chat_template": st["chat_template"],
        "clean_up_tokenization_spaces": False,
        "eos_token": st["eos"],
        "model_max_length": st["model_max_length"],
        "pad_token": st["pad"],
    }
    if tok.style == "qwen2":
        cfg.update({"add_prefix_space": False,
                    "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
                    "errors": "replace", "split_special_tokens": False,
                    "tokenizer_class": "Qwen2Tokenizer", "unk_token": None})
    else:
        cfg.update({"add_bos_token": True, "clean_up_tokenization_spaces": True,
                    "model_input_names": ["input_ids", "attention_mask"],
                    "tokenizer_class": "PreTrainedTokenizerFast"})
    return cfg


def special_ids(tok: BpeTokenizer) -> dict:
    """bos/eos/pad ids for config.json and generation_config.json."""
    st = TOKENIZER_STYLES[tok.style]
    eos = [tok.specials[s] for s in st["eos_ids"]]
    return {"bos": tok.specials[st["bos_id_token"]],
            "eos": eos[0] if len(eos) == 1 else eos,
            "pad": tok.specials[st["pad"]] if st["pad"] else None}


# =============================================================================
# 4. Families: config.json + ordered weight list
# =============================================================================

# A weight entry: (hf_name, shape) or (hf_name, shape, init) where init is
# "normal" (N(0, std)), "norm" (1 + N(0, NORM_NOISE)), "zeros" or "ones".
# Without an explicit init, names ending in "norm.weight" get "norm".
WeightSpec = Tuple


def _decoder_weights(d: dict, *, qkv_bias: bool, tie: bool) -> List[WeightSpec]:
    """Llama-style decoder weights, in HF module order.

    embed [V,H]; per layer: q [nh*hd,H], k/v [nkv*hd,H] (+ biases [out]),
    o [H,nh*hd], gate/up [I,H], down [H,I], input/post_attention norms [H];
    final norm [H]; lm_head [V,H] unless tied.
    """
    H, V, I = d["hidden"], d["vocab"], d["intermediate"]
    nh, nkv, hd = d["heads"], d["kv_heads"], d["head_dim"]
    w: List[WeightSpec] = [("model.embed_tokens.weight", (V, H))]
    for i in range(d["layers"]):
        p = f"model.layers.{i}."
        for proj, out in (("q", nh * hd), ("k", nkv * hd), ("v", nkv * hd)):
            w.append((f"{p}self_attn.{proj}_proj.weight", (out, H)))
            if qkv_bias:
                w.append((f"{p}self_attn.{proj}_proj.bias", (out,)))
        w.append((f"{p}self_attn.o_proj.weight", (H, nh * hd)))
        w += [(f"{p}mlp.gate_proj.weight", (I, H)), (f"{p}mlp.up_proj.weight", (I, H)),
              (f"{p}mlp.down_proj.weight", (H, I))]
        w += [(f"{p}input_layernorm.weight", (H,)), (f"{p}post_attention_layernorm.weight", (H,))]
    w.append(("model.norm.weight", (H,)))
    if not tie:
        w.append(("lm_head.weight", (V, H)))
    return w


def build_llama(d: dict, ids: dict, tie: bool) -> Tuple[dict, List[WeightSpec]]:
    config = {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": ids["bos"],
        "eos_token_id": ids["eos"],
        "head_dim": d["head_dim"],
        "hidden_act": "silu",
        "hidden_size": d["hidden"],
        "initializer_range": 0.02,
        "intermediate_size": d["intermediate"],
        "max_position_embeddings": d["max_pos"],
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": d["heads"],
        "num_hidden_layers": d["layers"],
        "num_key_value_heads": d["kv_heads"],
        "pretraining_tp": 1,
        "rms_norm_eps": d["rms_eps"],
        "rope_scaling": d.get("rope_scaling"),
        "rope_theta": d["rope_theta"],
        "tie_word_embeddings": tie,
        "use_cache": True,
        "vocab_size": d["vocab"],
    }
    return config, _decoder_weights(d, qkv_bias=False, tie=tie)


def build_qwen2(d: dict, ids: dict, tie: bool) -> Tuple[dict, List[WeightSpec]]:
    # config.json has no head_dim for Qwen2: HF derives it as hidden / heads
    assert d["hidden"] == d["heads"] * d["head_dim"], "qwen2 needs hidden == heads * head_dim"
    config = {
        "architectures": ["Qwen2ForCausalLM"],
        "attention_dropout": 0.0,
        "bos_token_id": ids["bos"],
        "eos_token_id": ids["eos"],
        "hidden_act": "silu",
        "hidden_size": d["hidden"],
        "initializer_range": 0.02,
        "intermediate_size": d["intermediate"],
        "max_position_embeddings": d["max_pos"],
        "max_window_layers": d["layers"],
        "model_type": "qwen2",
        "num_attention_heads": d["heads"],
        "num_hidden_layers": d["layers"],
        "num_key_value_heads": d["kv_heads"],
        "rms_norm_eps": d["rms_eps"],
        "rope_scaling": d.get("rope_scaling"),
        "rope_theta": d["rope_theta"],
        "sliding_window": d["max_pos"],
        "tie_word_embeddings": tie,
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": d["vocab"],
    }
    return config, _decoder_weights(d, qkv_bias=True, tie=tie)


@dataclasses.dataclass
class Family:
    build: Callable[[dict, dict, bool], Tuple[dict, List[WeightSpec]]]  # (dims, special ids, tie)
    tokenizer: str              # key of TOKENIZER_STYLES
    tiny: dict                  # tiny dims; "vocab": None = tokenizer size
    tiny_tie: bool
    presets: Dict[str, dict]    # real dims (full dicts); first one is the default
    extra_specials: Tuple[str, ...] = ()


_TINY_COMMON = {"hidden": 64, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 16,
                "vocab": None, "max_pos": 2048}

FAMILIES: Dict[str, Family] = {
    "llama": Family(
        build=build_llama, tokenizer="llama3", tiny_tie=False,
        tiny=dict(_TINY_COMMON, intermediate=96, rms_eps=1e-5, rope_theta=500000.0,
                  # original_max_position_embeddings 64 so all three llama3 bands occur at hd 16
                  rope_scaling={"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                "original_max_position_embeddings": 64, "rope_type": "llama3"}),
        presets={"llama-1b": {  # Llama-3.2-1B
            "hidden": 2048, "layers": 16, "heads": 32, "kv_heads": 8, "head_dim": 64,
            "intermediate": 8192, "vocab": 128256, "max_pos": 131072, "rms_eps": 1e-5,
            "rope_theta": 500000.0, "tie": True,
            "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                             "original_max_position_embeddings": 8192, "rope_type": "llama3"}}},
    ),
    "qwen2": Family(
        build=build_qwen2, tokenizer="qwen2", tiny_tie=True,
        tiny=dict(_TINY_COMMON, intermediate=128, rms_eps=1e-6, rope_theta=1000000.0, rope_scaling=None),
        presets={"qwen2-1.5b": {  # Qwen2-1.5B
            "hidden": 1536, "layers": 28, "heads": 12, "kv_heads": 2, "head_dim": 128,
            "intermediate": 8960, "vocab": 151936, "max_pos": 32768, "rms_eps": 1e-6,
            "rope_theta": 1000000.0, "rope_scaling": None, "tie": True}},
    ),
}

# =============================================================================
# 5. Tensor values
# =============================================================================

DTYPES = {  # --dtype -> (safetensors dtype, bytes per element, torch_dtype)
    "f32": ("F32", 4, "float32"),
    "f16": ("F16", 2, "float16"),
    "bf16": ("BF16", 2, "bfloat16"),
}
ST_ITEMSIZE = {"F32": 4, "F16": 2, "BF16": 2}

STD_TINY = 0.2     # tiny dims: attention/MLP matter, logit std ~1.6, greedy output varies (tied too)
STD_REAL = 0.02    # real dims: HF initializer_range
NORM_NOISE = 0.05  # norm weights = 1 + N(0, NORM_NOISE)
CHUNK = 1 << 18    # elements generated per step (fixed, so values do not depend on memory)


def f32_to_bf16_bits(a: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bit patterns (uint16), round to nearest even; NaN stays a quiet NaN."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    u = a.view(np.uint32)
    r = u >> 16
    r &= 1
    r += 0x7FFF
    r += u            # wraps only for NaN payloads with all high bits set; fixed below
    r >>= 16
    out = r.astype(np.uint16)
    nan = np.isnan(a)
    if nan.any():
        out[nan] = ((u[nan] >> 16) | 0x0040).astype(np.uint16)
    return out


def bf16_bits_to_f32(b: np.ndarray) -> np.ndarray:
    return (b.astype(np.uint32) << 16).view(np.float32)


def weight_init(spec: WeightSpec) -> str:
    if len(spec) > 2:
        return spec[2]
    return "norm" if spec[0].endswith("norm.weight") else "normal"


def tensor_chunks(spec: WeightSpec, seed: int, std: float, dtype: str, limit: Optional[int] = None):
    """Yield the tensor's bytes (row-major) in chunks of CHUNK elements.

    Values come from a generator seeded by (seed, crc32(name)), so a tensor does
    not depend on the others or on the order they are written in.
    """
    name, shape = spec[0], spec[1]
    init = weight_init(spec)
    n = int(np.prod(shape, dtype=np.int64))
    if limit is not None:
        n = min(n, limit)
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    done = 0
    while done < n:
        m = min(CHUNK, n - done)
        if init == "normal":
            a = rng.standard_normal(m, dtype=np.float32)
            a *= np.float32(std)
        elif init == "norm":
            a = rng.standard_normal(m, dtype=np.float32)
            a *= np.float32(NORM_NOISE)
            a += np.float32(1.0)
        elif init == "zeros":
            a = np.zeros(m, np.float32)
        elif init == "ones":
            a = np.ones(m, np.float32)
        else:
            raise ValueError(f"{name}: unknown init {init!r}")
        if dtype == "bf16":
            yield f32_to_bf16_bits(a)
        elif dtype == "f16":
            yield a.astype(np.float16)
        else:
            yield a
        done += m


# =============================================================================
# 6. safetensors writer (+ sharding and index)
# =============================================================================

def safetensors_header(specs: Sequence[WeightSpec], st_dtype: str) -> Tuple[bytes, int]:
    """Header bytes (length prefix + JSON padded with spaces to a multiple of 8) and data size.

    Tensors are laid out in the order given; the JSON lists __metadata__ first.
    """
    item = ST_ITEMSIZE[st_dtype]
    header = {"__metadata__": {"format": "pt"}}
    off = 0
    for spec in specs:
        nbytes = int(np.prod(spec[1], dtype=np.int64)) * item
        header[spec[0]] = {"dtype": st_dtype, "shape": list(spec[1]), "data_offsets": [off, off + nbytes]}
        off += nbytes
    js = json.dumps(header, separators=(",", ":")).encode("utf-8")
    js += b" " * ((-len(js)) % 8)
    return struct.pack("<Q", len(js)) + js, off


def write_safetensors(path: str, specs: Sequence[WeightSpec], seed: int, std: float, dtype: str) -> int:
    """Stream tensors into one file (one chunk in memory at a time); returns data bytes."""
    head, size = safetensors_header(specs, DTYPES[dtype][0])
    with open(path, "wb") as f:
        f.write(head)
        for spec in specs:
            for chunk in tensor_chunks(spec, seed, std, dtype):
                f.write(memoryview(chunk).cast("B"))
    return size


def split_shards(specs: Sequence[WeightSpec], n: int, itemsize: int) -> List[List[WeightSpec]]:
    """Cut the model-order list into n contiguous, non-empty groups of about equal bytes."""
    if n > len(specs):
        raise SystemExit(f"--shards {n}: only {len(specs)} tensors")
    sizes = [int(np.prod(s[1], dtype=np.int64)) * itemsize for s in specs]
    total = sum(sizes)
    cuts, cum, i = [], 0, 0
    for k in range(1, n):
        while i < len(specs) and cum + sizes[i] / 2 < k * total / n:
            cum += sizes[i]
            i += 1
        lo = (cuts[-1] + 1) if cuts else 1
        hi = len(specs) - (n - k)
        c = min(max(i, lo), hi)
        while i < c:
            cum += sizes[i]
            i += 1
        cuts.append(c)
    bounds = [0] + cuts + [len(specs)]
    return [list(specs[bounds[k]:bounds[k + 1]]) for k in range(n)]


def write_weights(out: str, specs: Sequence[WeightSpec], seed: int, std: float, dtype: str, shards: int) -> List[str]:
    """Write model.safetensors or N shards + index. Within a file tensors are sorted by name (as safetensors does)."""
    for f in os.listdir(out):  # stale weights of an earlier run would confuse loaders
        if re.fullmatch(r"model(-\d{5}-of-\d{5})?\.safetensors(\.index\.json)?", f):
            os.remove(os.path.join(out, f))
    if shards <= 1:
        write_safetensors(os.path.join(out, "model.safetensors"), sorted(specs), seed, std, dtype)
        return ["model.safetensors"]
    groups = split_shards(specs, shards, DTYPES[dtype][1])
    weight_map, total, files = {}, 0, []
    for k, g in enumerate(groups):
        fn = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        total += write_safetensors(os.path.join(out, fn), sorted(g), seed, std, dtype)
        files.append(fn)
        for s in g:
            weight_map[s[0]] = fn
    index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
    write_json(os.path.join(out, "model.safetensors.index.json"), index, sort_keys=False)
    return files + ["model.safetensors.index.json"]


def write_json(path: str, obj, sort_keys: bool = True) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=sort_keys, ensure_ascii=False)
        f.write("\n")


# =============================================================================
# 7. Reader and --verify
# =============================================================================

def read_safetensors(path: str) -> Tuple[dict, int]:
    """Return (header dict without __metadata__, data start offset); checks the framing."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        if n % 8 or 8 + n > size:
            raise AssertionError(f"{path}: bad header length {n}")
        raw = f.read(n)
    header = json.loads(raw.decode("utf-8"))
    if header.pop("__metadata__", None) != {"format": "pt"}:
        raise AssertionError(f"{path}: __metadata__ missing or not format=pt")
    return header, 8 + n


def tensor_f32(path: str, start: int, info: dict, count: Optional[int] = None) -> np.ndarray:
    """Read (the first `count` elements of) one tensor as float32."""
    st = info["dtype"]
    n = int(np.prod(info["shape"], dtype=np.int64))
    count = n if count is None else min(n, count)
    raw = np.memmap(path, dtype=np.uint8, mode="r", offset=start + info["data_offsets"][0],
                    shape=(count * ST_ITEMSIZE[st],))
    if st == "F32":
        return np.frombuffer(raw, np.float32).copy()
    if st == "F16":
        return np.frombuffer(raw, np.float16).astype(np.float32)
    return bf16_bits_to_f32(np.frombuffer(raw, np.uint16))


def verify(out: str, specs: Sequence[WeightSpec], seed: int, std: float, dtype: str,
           shards: int, tok: BpeTokenizer, full: bool) -> None:
    """Re-read everything written and check it; raises AssertionError on a problem."""
    def check(cond, msg):
        if not cond:
            raise AssertionError(msg)

    st_dtype, item, _ = DTYPES[dtype]
    expect = {s[0]: s for s in specs}
    if shards <= 1:
        files = {"model.safetensors": None}
    else:
        with open(os.path.join(out, "model.safetensors.index.json")) as f:
            index = json.load(f)
        wm = index["weight_map"]
        check(set(wm) == set(expect), "index weight_map names differ from the model's")
        files = {fn: None for fn in sorted(set(wm.values()))}
        check(len(files) == shards, f"index names {len(files)} files, expected {shards}")
        check(index["metadata"]["total_size"] == sum(int(np.prod(s[1])) * item for s in specs),
              "index total_size wrong")
    seen = {}
    for fn in files:
        path = os.path.join(out, fn)
        header, start = read_safetensors(path)
        off = 0
        for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
            check(name in expect, f"{fn}: unexpected tensor {name}")
            check(name not in seen, f"{name} in two files")
            if shards > 1:
                check(wm[name] == fn, f"{name}: index says {wm[name]}, found in {fn}")
            seen[name] = fn
            shape = tuple(expect[name][1])
            check(tuple(info["shape"]) == shape, f"{name}: shape {info['shape']} != {shape}")
            check(info["dtype"] == st_dtype, f"{name}: dtype {info['dtype']} != {st_dtype}")
            b, e = info["data_offsets"]
            check(b == off and e - b == int(np.prod(shape)) * item, f"{name}: bad data_offsets {b},{e}")
            off = e
            # values: regenerate (all of it for tiny, the first chunk otherwise) and compare bytes
            limit = None if full else CHUNK
            want = np.concatenate([c.view(np.uint8) for c in tensor_chunks(expect[name], seed, std, dtype, limit)])
            got = np.memmap(path, dtype=np.uint8, mode="r", offset=start + b, shape=(want.size,))
            check(np.array_equal(want, got), f"{name}: bytes differ from the generator")
            v = tensor_f32(path, start, info, limit)
            check(np.isfinite(v).all(), f"{name}: non-finite values")
            if weight_init(expect[name]) == "norm":
                check(abs(float(v.mean()) - 1.0) < 0.1, f"{name}: norm weights not near 1")
        check(start + off == os.path.getsize(path), f"{fn}: file size != header + data")
    check(set(seen) == set(expect), f"missing tensors: {sorted(set(expect) - set(seen))[:5]}")

    # config / generation config / tokenizer consistency
    def load(name):
        with open(os.path.join(out, name), encoding="utf-8") as f:
            return json.load(f)
    cfg, gen = load("config.json"), load("generation_config.json")
    tj, tc = load("tokenizer.json"), load("tokenizer_config.json")
    check(cfg["vocab_size"] == expect["model.embed_tokens.weight"][1][0], "vocab_size != embedding rows")
    check(cfg["vocab_size"] >= tok.size, "vocab_size smaller than the tokenizer")
    check(("lm_head.weight" in expect) == (not cfg["tie_word_embeddings"]), "tie flag vs lm_head")
    vocab = tj["model"]["vocab"]
    check(sorted(vocab.values()) == list(range(len(vocab))), "BPE vocab ids not 0..n-1")
    for m in tj["model"]["merges"]:
        a, b = m.split(" ") if isinstance(m, str) else m
        check(a in vocab and b in vocab and a + b in vocab, f"merge {m!r} not closed over vocab")
    for k, t in enumerate(tj["added_tokens"]):
        check(t["id"] == len(vocab) + k and t["content"] not in vocab, f"added token {t} id")
        check(tc["added_tokens_decoder"][str(t["id"])]["content"] == t["content"], "added_tokens_decoder mismatch")
    for key in ("bos_token_id", "eos_token_id"):
        for d in (cfg, gen):
            v = d.get(key)
            for i in (v if isinstance(v, list) else [v]):
                check(i is None or len(vocab) <= i < tok.size, f"{key} {i} is not a special token")
    for s in ("bos_token", "eos_token", "pad_token"):
        check(tc.get(s) is None or tc[s] in tok.specials, f"tokenizer_config {s} not a special token")
    samples = ["Hello, world! The quick brown fox.", "int main(void) { return 0; }\n\n",
               "Où est la gare ? 12345 über", "你好，世界！😀", "<|im_start|>user\nhi<|im_end|>"]
    for s in samples:
        ids = encode(tok, s, add_special_tokens=False)
        check(all(0 <= i < tok.size for i in ids), "encoded id out of range")
        want = unicodedata.normalize("NFC", s) if tok.nfc else s
        check(decode(tok, ids) == want, f"round trip failed: {s!r}")
        if tok.add_bos:
            check(encode(tok, s) == [tok.specials[tok.add_bos]] + ids, "post-processor BOS missing")


# =============================================================================
# 8. CLI
# =============================================================================

def resolve_dims(fam_name: str, fam: Family, dims: str, preset: Optional[str], tok: BpeTokenizer) -> Tuple[dict, str]:
    if preset is not None and dims == "tiny":
        raise SystemExit("--preset needs --dims real (or no --dims)")
    if preset is None and dims == "real":
        preset = next(iter(fam.presets))
    if preset is None:
        d = dict(fam.tiny)
        d["vocab"] = d["vocab"] or tok.size
        d["tie"] = fam.tiny_tie
        return d, "tiny"
    if preset not in fam.presets:
        raise SystemExit(f"family {fam_name} has no preset {preset!r} (has: {', '.join(fam.presets)})")
    return dict(fam.presets[preset]), preset


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="Write a tiny random HF-format checkpoint.")
    ap.add_argument("--family", choices=sorted(FAMILIES), required=True)
    ap.add_argument("--out", required=True, help="output directory (created; old model*.safetensors removed)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--dims", choices=["tiny", "real"], default=None, help="default tiny (real with --preset)")
    ap.add_argument("--preset", default=None, help="real-size dims, e.g. qwen2-1.5b, llama-1b")
    tie = ap.add_mutually_exclusive_group()
    tie.add_argument("--tie", dest="tie", action="store_true", default=None, help="tie lm_head to embeddings")
    tie.add_argument("--no-tie", dest="tie", action="store_false", help="write a separate lm_head.weight")
    ap.add_argument("--merges-style", choices=["str", "pairs"], default="str",
                    help='tokenizer.json merges as "a b" strings (default) or [a, b] pairs')
    ap.add_argument("--verify", action="store_true", help="re-read and check everything written")
    args = ap.parse_args(argv)

    t0 = time.time()
    fam = FAMILIES[args.family]
    tok = train_tokenizer(fam.tokenizer, extra_specials=fam.extra_specials)
    d, label = resolve_dims(args.family, fam, args.dims, args.preset, tok)
    tie_flag = d.pop("tie") if args.tie is None else args.tie
    d.pop("tie", None)
    ids = special_ids(tok)
    config, specs = fam.build(d, ids, tie_flag)
    config["torch_dtype"] = DTYPES[args.dtype][2]
    config["transformers_version"] = "4.45.0"
    std = STD_TINY if label == "tiny" else STD_REAL
    if not 1 <= args.shards <= len(specs):
        raise SystemExit(f"--shards {args.shards}: must be between 1 and the tensor count {len(specs)}")

    os.makedirs(args.out, exist_ok=True)
    write_json(os.path.join(args.out, "config.json"), config)
    gen = {"bos_token_id": ids["bos"], "do_sample": False, "eos_token_id": ids["eos"],
           "transformers_version": "4.45.0"}
    if ids["pad"] is not None:
        gen["pad_token_id"] = ids["pad"]
    write_json(os.path.join(args.out, "generation_config.json"), gen)
    write_json(os.path.join(args.out, "tokenizer.json"), tokenizer_json(tok, args.merges_style), sort_keys=False)
    write_json(os.path.join(args.out, "tokenizer_config.json"), tokenizer_config_json(tok))
    files = write_weights(args.out, specs, args.seed, std, args.dtype, args.shards)
    t1 = time.time()

    nparams = sum(int(np.prod(s[1], dtype=np.int64)) for s in specs)
    nbytes = sum(os.path.getsize(os.path.join(args.out, f)) for f in files)
    print(f"mktiny: {args.family} [{label}] dtype={args.dtype} tie={tie_flag} seed={args.seed} -> {args.out}")
    print(f"  {len(specs)} tensors, {nparams:,} params, {nbytes / 2**20:.1f} MiB in {max(args.shards, 1)} shard(s); "
          f"tokenizer {tok.size} tokens ({len(tok.merges)} merges); {t1 - t0:.2f} s")
    if args.verify:
        verify(args.out, specs, args.seed, std, args.dtype, args.shards, tok, full=(label == "tiny"))
        print(f"  verify: ok ({time.time() - t1:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
