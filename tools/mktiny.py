#!/usr/bin/python3
"""mktiny — write a small random Hugging Face-format checkpoint for a family.

Everything is numpy + the standard library (no torch, safetensors, tokenizers or
transformers), and everything is deterministic from --seed.

Families (--family; config.json model_type in brackets):
  llama        LlamaForCausalLM [llama], llama3 rope scaling, Llama-3 tokenizer
  qwen2        Qwen2ForCausalLM [qwen2], q/k/v biases, ChatML
  qwen3        Qwen3ForCausalLM [qwen3], q_norm/k_norm, head_dim != hidden/heads, Qwen3 template
  phi3         Phi3ForCausalLM [phi3] (Phi-4-mini layout), fused qkv/gate_up, partial rotary,
               LongRoPE, o200k-style tokenizer, Phi-3 template
  gemma3_text  Gemma3ForCausalLM [gemma3_text], (1 + w) sandwich norms, q/k norms, sliding and
               global layers, softcapping, SentencePiece-style BPE with byte fallback
  gemma3n_text Gemma3nForCausalLM [gemma3n_text]: AltUp streams, Laurel, per-layer embeddings,
               activation sparsity, KV sharing, v_norm, final softcap
  phi4mm       Phi4MultimodalForCausalLM [phi4_multimodal] (HF conversion): the phi3 decoder,
               the audio conformer and its projections, the SigLIP-NaViT tower, separators and
               image projection, one preprocessor config for both; --dims real:
               Phi-4-multimodal-instruct's shapes

  llava        LlavaForConditionalGeneration [llava]: --vision clip|siglip tower + projector in
               front of a --text llama|qwen2 model; <image> added token; preprocessor_config.json,
               processor_config.json, chat_template.json; --new-names for the re-rooted weight
               names; --dims real --preset llava-1.5-clip336 for LLaVA-1.5-7B shapes;
               --tokenizer llama2: LLaVA-1.5's own Llama-2 tokenizer (<s> added by the
               post-processor, the published chat template writes none) instead of Llama-3's

Written into --out DIR:
  config.json, generation_config.json        real HF keys for the family
  tokenizer.json, tokenizer_config.json      a real-format BPE tokenizer (byte-level, or
                                             Gemma's byte-fallback BPE), trained here on a
                                             built-in sample text; chat_template included
  model.safetensors                          (--shards 1), or
  model-0000K-of-0000N.safetensors + model.safetensors.index.json   (--shards N)

Examples:
  /usr/bin/python3 tools/mktiny.py --family qwen2 --out /tmp/tiny-qwen2 --verify
  /usr/bin/python3 tools/mktiny.py --family llama --out /tmp/tiny-llama --dtype f32 --shards 3
  /usr/bin/python3 tools/mktiny.py --family gemma3_text --out /tmp/tiny-gemma3 --verify
  /usr/bin/python3 tools/mktiny.py --family qwen2 --dims real --preset qwen2-1.5b --out /tmp/q15

Adding a family: write a builder `build_<family>(dims, ids, tie) -> (config, weights)`
(weights: ordered list of (hf_name, shape) or (hf_name, shape, init)), and add a
`Family` entry to FAMILIES with its tiny dims, presets and tokenizer style.
A new tokenizer style goes into TOKENIZER_STYLES (and tokenizer_json()).

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
# 2. BPE tokenizers: byte map, pre-tokenizer regexes, trainers, encoders
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
# tiktoken's o200k_base split (GPT-4o; Phi-4-mini's tokenizer): case-aware letter runs,
# contraction suffix glued to the word, "/" allowed after a punctuation run.
O200K_SPLIT_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def to_python_regex(pattern: str) -> "re.Pattern":
    """Approximate an Oniguruma \\p{L}/\\p{N} pattern with Python `re`.

    \\p{L} -> [^\\W\\d_] (letters), \\p{N} -> \\d, and the negated classes
    [^\\r\\n\\p{L}\\p{N}] / [^\\s\\p{L}\\p{N}] -> "not \\w, or underscore". Close
    enough for training and for the self-check; tokenizer.json keeps the real one.
    (Kept as is so the qwen2/llama3 tokenizers stay byte-identical; new styles use
    `to_python_regex_exact`.)
    """
    p = pattern
    p = p.replace(r"[^\r\n\p{L}\p{N}]", r"(?:[^\r\n\w]|_)")
    p = p.replace(r"[^\s\p{L}\p{N}]", r"(?:[^\s\w]|_)")
    p = p.replace(r"\p{L}", r"[^\W\d_]")
    p = p.replace(r"\p{N}", r"\d")
    return re.compile(p)


_CATEGORY_RANGES: Dict[str, str] = {}


def _category_ranges(cat: str) -> str:
    """Python char-class body (no brackets) for a Unicode general category or a
    one-letter major class ("L", "N", "M", "Lu", ...), built from `unicodedata`."""
    if not _CATEGORY_RANGES:
        runs: Dict[str, List[List[int]]] = {}
        for cp in range(sys.maxunicode + 1):
            c = unicodedata.category(chr(cp))
            for key in (c, c[0]):
                r = runs.setdefault(key, [])
                if r and r[-1][1] == cp - 1:
                    r[-1][1] = cp
                else:
                    r.append([cp, cp])

        def esc(cp: int) -> str:
            return "\\U%08x" % cp

        for key, r in runs.items():
            _CATEGORY_RANGES[key] = "".join(esc(a) if a == b else esc(a) + "-" + esc(b) for a, b in r)
    return _CATEGORY_RANGES[cat]


def to_python_regex_exact(pattern: str) -> "re.Pattern":
    """Translate \\p{X} classes of an Oniguruma pattern into explicit Python ranges.

    Exact up to Python's `\\s` (str.isspace) vs Oniguruma's and the Unicode version
    of `unicodedata`; used for styles whose pattern has \\p{Lu}/\\p{Ll}/\\p{M}...
    """
    out, i, in_class = [], 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            m = re.match(r"\\p\{(\w+)\}", pattern[i:])
            if m:
                body = _category_ranges(m.group(1))
                out.append(body if in_class else "[" + body + "]")
                i += m.end()
                continue
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
        elif ch == "]" and in_class:
            in_class = False
        out.append(ch)
        i += 1
    return re.compile("".join(out))


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
    """Deterministic byte-level BPE training; returns merges in rank order."""
    from collections import Counter
    return train_bpe_words(Counter(_word_symbols(m.group(0)) for m in split_re.finditer(text)), n_merges)


def train_bpe_words(word_freq: "Dict[Tuple[str, ...], int]", n_merges: int) -> List[Tuple[str, str]]:
    """BPE over words given as symbol tuples with counts; returns merges in rank order.

    Each step merges the most frequent adjacent pair (ties: smallest pair in
    string order); stops early when no pair occurs twice. Pair counts are kept
    incrementally with a lazy max-heap, so a few hundred merges take ~0.1 s.
    """
    import heapq
    from collections import defaultdict

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
    """In-memory form of the trained tokenizer (what tokenizer.json describes).

    kind "bytelevel": GPT-2 byte symbols, regex Split pre-tokenizer, added tokens
    after the vocab. kind "spm": SentencePiece-style BPE (Gemma): characters plus
    <0xNN> byte-fallback tokens, spaces as "▁", no effective pre-tokenizer, control
    tokens inside the vocab (ids 0..) and possibly added tokens after it.
    """
    style: str                      # key of TOKENIZER_STYLES
    vocab: Dict[str, int]           # model vocab (tokenizer.json model.vocab)
    merges: List[Tuple[str, str]]   # rank order
    specials: Dict[str, int]        # every added token -> id (in or after the vocab)
    split_pattern: str              # Oniguruma pattern written to tokenizer.json ("" for spm)
    nfc: bool                       # NFC normalizer
    ignore_merges: bool
    add_bos: Optional[str]          # special token prepended by the post-processor
    kind: str = "bytelevel"         # "bytelevel" | "spm"
    nonspecial: frozenset = frozenset()  # added tokens written with "special": false

    @property
    def size(self) -> int:
        return max(max(self.vocab.values()), max(self.specials.values(), default=-1)) + 1

    def id(self, token: str) -> int:
        return self.specials[token] if token in self.specials else self.vocab[token]

    def is_special(self, token: str) -> bool:
        return token in self.specials and token not in self.nonspecial


def train_tokenizer(style: str, n_merges: int = 256, extra_specials: Sequence[str] = ()) -> BpeTokenizer:
    """Train the built-in sample for a tokenizer style (see TOKENIZER_STYLES)."""
    st = TOKENIZER_STYLES[style]
    if st.get("kind") == "spm":
        return _train_spm_tokenizer(style, st, n_merges, extra_specials)
    text = SAMPLE_TEXT
    if st["nfc"]:
        text = unicodedata.normalize("NFC", text)
    split_re = to_python_regex_exact(st["pattern"]) if st.get("exact_regex") else to_python_regex(st["pattern"])
    merges = train_bpe(text, split_re, n_merges)
    vocab = {sym: i for i, sym in enumerate(BYTE_TO_SYM.values())}
    for a, b in merges:
        if a + b not in vocab:  # two merges can spell the same token; it keeps one id
            vocab[a + b] = len(vocab)
    specials = {}
    for s in list(st["specials"]) + list(extra_specials):
        specials[s] = len(vocab) + len(specials)
    return BpeTokenizer(style, vocab, merges, specials, st["pattern"], st["nfc"],
                        st["ignore_merges"], st.get("add_bos"),
                        nonspecial=frozenset(st.get("nonspecial", ())))


SPM_SPACE = "\u2581"  # "▁", SentencePiece's whitespace symbol
# Training-only word split for the spm style (SentencePiece splits by whitespace,
# script and digit before it counts pairs); encoding runs BPE over the whole text.
_SPM_TRAIN_SPLIT = re.compile(
    "\u2581?[^\\W\\d_]+|\u2581?[^\\w\\s\u2581]+|\u2581?_+|\\d|\\n+|\\t+|\u2581+?(?=\u2581[^\u2581\\s\\d])|\u2581+")


def _spm_byte_token(b: int) -> str:
    # HF's GemmaConverter writes the tab byte piece as a literal "\t" token.
    return "\t" if b == 0x09 else "<0x%02X>" % b


def _train_spm_tokenizer(style: str, st: dict, n_merges: int, extra_specials: Sequence[str]) -> BpeTokenizer:
    """Gemma-style vocab: control tokens, 256 byte-fallback tokens, the characters
    seen at least twice (others fall back to bytes), then one token per merge."""
    from collections import Counter
    text = SAMPLE_TEXT.replace(" ", SPM_SPACE)
    vocab: Dict[str, int] = {}
    for s in st["specials"]:
        vocab[s] = len(vocab)
    for b in range(256):
        vocab[_spm_byte_token(b)] = len(vocab)
    counts = Counter(text)
    for ch, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if c >= 2 and ch not in vocab:
            vocab[ch] = len(vocab)
    word_freq: Counter = Counter()
    for m in _SPM_TRAIN_SPLIT.finditer(text):
        # characters outside the alphabet become byte tokens and never merge: cut there
        for part in re.split("([^" + re.escape("".join(ch for ch in counts if ch in vocab)) + "])", m.group(0)):
            if len(part) > 1 or (part and part in vocab):
                word_freq[tuple(part)] += 1
    merges = train_bpe_words(word_freq, n_merges)
    for a, b in merges:
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
    specials = {s: vocab[s] for s in st["specials"]}
    for s in list(st.get("added_specials", ())) + list(extra_specials):
        specials[s] = len(vocab) + len(specials) - len(st["specials"])
    return BpeTokenizer(style, vocab, merges, specials, "", False, st["ignore_merges"], st.get("add_bos"),
                        kind="spm", nonspecial=frozenset(st.get("nonspecial", ())))


def _bpe_merge(syms: List[str], ranks: Dict[Tuple[str, str], int]) -> List[str]:
    """Apply merges lowest rank first (all occurrences of a pair, left to right),
    which is what HF's BPE model does for merges learned in rank order."""
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
    return syms


def _bpe_word(tok: BpeTokenizer, ranks: Dict[Tuple[str, str], int], word: str) -> List[int]:
    if tok.ignore_merges and word in tok.vocab:
        return [tok.vocab[word]]
    return [tok.vocab[s] for s in _bpe_merge(list(word), ranks)]


def _spm_segment(tok: BpeTokenizer, ranks: Dict[Tuple[str, str], int], seg: str) -> List[int]:
    """Normalizer Replace(" " -> "▁") (llama2: after Prepend("▁"), per piece between added tokens),
    then BPE with byte_fallback over the whole segment (the Split(" ") pre-tokenizer runs on the
    normalized text, so it never splits)."""
    syms: List[str] = []
    if TOKENIZER_STYLES[tok.style].get("prepend"):
        seg = " " + seg
    for ch in seg.replace(" ", SPM_SPACE):
        if ch in tok.vocab:
            syms.append(ch)
        else:
            syms.extend(_spm_byte_token(b) for b in ch.encode("utf-8"))
    return [tok.vocab[s] for s in _bpe_merge(syms, ranks)]


def encode(tok: BpeTokenizer, text: str, add_special_tokens: bool = True) -> List[int]:
    """Reference encoder. Byte-level styles: Python-regex pre-tokenizer (exact for
    ASCII/Latin text with the approximated qwen2/llama3 regexes, exact up to the
    Unicode tables for `exact_regex` styles). spm: exact."""
    ranks = {m: r for r, m in enumerate(tok.merges)}
    split_re = None
    if tok.kind == "bytelevel":
        exact = TOKENIZER_STYLES[tok.style].get("exact_regex")
        split_re = to_python_regex_exact(tok.split_pattern) if exact else to_python_regex(tok.split_pattern)
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
        if not part:
            continue
        if tok.kind == "spm":
            ids.extend(_spm_segment(tok, ranks, part))
            continue
        if tok.nfc:
            part = unicodedata.normalize("NFC", part)
        for m in split_re.finditer(part):
            ids.extend(_bpe_word(tok, ranks, "".join(_word_symbols(m.group(0)))))
    return ids


def decode(tok: BpeTokenizer, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
    inv = {i: t for t, i in tok.vocab.items()}
    inv_sp = {i: t for t, i in tok.specials.items()}
    if tok.kind == "spm":  # decoder: Replace("▁", " "), ByteFallback, Fuse
        out, pending = [], bytearray()
        for i in ids:
            t = inv_sp[i] if i in inv_sp else inv[i]
            if skip_special_tokens and tok.is_special(t):
                continue
            m = re.fullmatch(r"<0x([0-9A-F]{2})>", t)
            if m and i not in inv_sp:
                pending.append(int(m.group(1), 16))
                continue
            if pending:
                out.append(pending.decode("utf-8", errors="replace"))
                pending = bytearray()
            out.append(t.replace(SPM_SPACE, " "))
        if pending:
            out.append(pending.decode("utf-8", errors="replace"))
        text = "".join(out)
        if TOKENIZER_STYLES[tok.style].get("prepend") and text.startswith(" "):
            text = text[1:]  # decoder Strip(" ", 1, 0) on the fused text
        return text
    out_b = bytearray()
    for i in ids:
        if i in inv_sp:
            if not (skip_special_tokens and tok.is_special(inv_sp[i])):
                out_b += inv_sp[i].encode("utf-8")
        else:
            out_b += bytes(SYM_TO_BYTE[c] for c in inv[i])
    return out_b.decode("utf-8", errors="replace")


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

# Qwen3 (Qwen3-0.6B ... -32B, first release) template: tools, <think> handling,
# enable_thinking=false appends an empty think block. "\n" inside the Jinja string
# literals is a Jinja escape (backslash + n), as in the real tokenizer_config.json.
QWEN3_CHAT_TEMPLATE = r'''{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set content = message.content %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is defined and message.reasoning_content is not none %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in message.content %}
                {%- set content = message.content.split('</think>')[-1].lstrip('\n') %}
                {%- set reasoning_content = message.content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}'''

# Phi-3-mini-4k-instruct's template (Phi-4-mini's is the same without the "\n" after
# the role tags and with tool support; see tools/README.md).
PHI3_CHAT_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'system' %}"
    "{{'<|system|>\n' + message['content'] + '<|end|>\n'}}"
    "{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}"
    "{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}"
    "{% else %}{{ eos_token }}{% endif %}"
)

# gemma-3n-E2B-it's template: Gemma 3's, but an image part writes <image_soft_token> and an audio
# part <audio_soft_token> (Gemma3nProcessor expands each).
def _gemma3n_template(t: str) -> str:
    return t.replace("""            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}""", """            {%- if item['type'] == 'audio' -%}
                {{ '<audio_soft_token>' }}
            {%- elif item['type'] == 'image' -%}
                {{ '<image_soft_token>' }}""")


# gemma-3-*-it's template: BOS from the template (so render, then encode without
# special tokens), system text folded into the first user turn, "assistant" -> "model".
# Newlines inside its string literals are real newline characters, as in the file.
GEMMA3_CHAT_TEMPLATE = """{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '

' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '

' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '
' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>
' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model
'}}
{%- endif -%}
"""

HF_VERY_LARGE_INTEGER = int(1e30)  # tokenizer_config model_max_length when unset (Gemma's files carry it)

# Per style: kind, pattern, specials (in id order), normalizer, BOS handling, which
# specials are bos/eos/pad, chat template, and the ByteLevel flags HF uses.
# eos_ids -> config.json eos_token_id; gen_eos_ids (default eos_ids) -> generation_config.
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
    "qwen3": {
        "pattern": QWEN2_SPLIT_PATTERN,
        # Qwen3 ids 151643-151645, then <tool_call> 151657 ... </think> 151668; the
        # tool/think tokens are added tokens with "special": false.
        "specials": ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>",
                     "<tool_response>", "</tool_response>", "<think>", "</think>"],
        "nonspecial": ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
                       "<think>", "</think>"],
        "nfc": True,
        "ignore_merges": False,
        "add_bos": None,
        "bos": None,
        "bos_id_token": "<|endoftext|>",
        "eos": "<|im_end|>",
        "eos_ids": ["<|im_end|>"],
        "gen_eos_ids": ["<|im_end|>", "<|endoftext|>"],
        "pad": "<|endoftext|>",
        "chat_template": QWEN3_CHAT_TEMPLATE,
        "model_max_length": 131072,
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
    "phi3": {
        # Phi-4-mini: tiktoken o200k-style byte-level BPE (HF's TikTokenConverter
        # layout: Split(o200k) + ByteLevel, ignore_merges), no BOS added. Phi-4-mini ids:
        # <|endoftext|> 199999, <|assistant|> 200019, <|end|> 200020, <|user|> 200021,
        # <|system|> 200022.
        "pattern": O200K_SPLIT_PATTERN,
        "exact_regex": True,
        "specials": ["<|endoftext|>", "<|assistant|>", "<|end|>", "<|user|>", "<|system|>"],
        "nfc": False,
        "ignore_merges": True,
        "add_bos": None,
        "bos": "<|endoftext|>",
        "bos_id_token": "<|endoftext|>",
        "eos": "<|endoftext|>",
        "eos_ids": ["<|end|>"],
        "gen_eos_ids": ["<|end|>", "<|endoftext|>"],
        "pad": "<|endoftext|>",
        "unk": "<|endoftext|>",
        "chat_template": PHI3_CHAT_TEMPLATE,
        "model_max_length": 131072,
    },
    "llama2": {
        # Llama-2 / Vicuna, as llava-hf/llava-1.5-7b-hf ships it (LlamaConverter, legacy layout):
        # SentencePiece-style BPE with byte_fallback, normalizer Prepend("▁") + Replace(" " -> "▁"),
        # no pre-tokenizer, post-processor TemplateProcessing "<s> $A", decoder Replace, ByteFallback,
        # Fuse, Strip(1 leading space). Real ids: <unk> 0, <s> 1, </s> 2; LLaVA adds <image> 32000
        # and <pad> 32001 after the vocab (--tokenizer llama2 with --family llava).
        "kind": "spm",
        "prepend": True,
        "pattern": "",
        "specials": ["<unk>", "<s>", "</s>"],
        "nfc": False,
        "ignore_merges": False,
        "add_bos": "<s>",
        "bos": "<s>",
        "bos_id_token": "<s>",
        "eos": "</s>",
        "eos_ids": ["</s>"],
        "pad": None,
        "unk": "<unk>",
        "chat_template": None,
        "model_max_length": HF_VERY_LARGE_INTEGER,
    },
    "gemma": {
        # Gemma 3 (HF GemmaConverter layout): BPE with byte_fallback, normalizer
        # Replace(" " -> "▁"), Split(" ") pre-tokenizer (a no-op after the normalizer),
        # <bos> added by the post-processor. Real ids: <pad> 0, <eos> 1, <bos> 2, <unk> 3,
        # <mask> 4, <start_of_turn> 105, <end_of_turn> 106, <start_of_image> 255999,
        # <end_of_image> 256000 (all in the SentencePiece vocab), <image_soft_token> 262144
        # (an added token after it).
        "kind": "spm",
        "pattern": "",
        "specials": ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>",
                     "<start_of_image>", "<end_of_image>"],
        "added_specials": ["<image_soft_token>"],
        "nfc": False,
        "ignore_merges": False,
        "add_bos": "<bos>",
        "bos": "<bos>",
        "bos_id_token": "<bos>",
        "eos": "<eos>",
        "eos_ids": ["<eos>", "<end_of_turn>"],
        "pad": "<pad>",
        "unk": "<unk>",
        "chat_template": GEMMA3_CHAT_TEMPLATE,
        "model_max_length": HF_VERY_LARGE_INTEGER,
    },
}
# Gemma 3n: the text range ends with <start_of_image> and <start_of_audio> (real 255999, 256000);
# <end_of_image>, <image_soft_token> open the vision ids and <end_of_audio>, <audio_soft_token> the
# audio ids (real 262144.., 262272..), which main_gemma3n appends.
TOKENIZER_STYLES["gemma3n"] = dict(
    TOKENIZER_STYLES["gemma"], added_specials=(),
    specials=["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>",
              "<start_of_image>", "<start_of_audio>"],
    chat_template=_gemma3n_template(GEMMA3_CHAT_TEMPLATE))


def _added_token(tid: int, content: str, special: bool = True) -> dict:
    return {"id": tid, "content": content, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": False, "special": special}


def _bos_template(bos: str, bos_id: int) -> dict:
    return {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}}


def tokenizer_json(tok: BpeTokenizer, merges_style: str = "str") -> dict:
    """tokenizer.json as HF `tokenizers` serializes it for this style."""
    merges = [f"{a} {b}" for a, b in tok.merges] if merges_style == "str" else [[a, b] for a, b in tok.merges]
    split = {"type": "Split", "pattern": {"Regex": tok.split_pattern}, "behavior": "Isolated", "invert": False}
    added = [_added_token(i, s, tok.is_special(s)) for s, i in sorted(tok.specials.items(), key=lambda kv: kv[1])]
    head = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added}
    if tok.style in ("qwen2", "qwen3"):
        bl = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
        return dict(head, **{
            "normalizer": {"type": "NFC"},
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [split, dict(bl)]},
            "post_processor": dict(bl),
            "decoder": dict(bl),
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": "", "end_of_word_suffix": "",
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": tok.vocab, "merges": merges},
        })
    if tok.style == "llama3":
        return dict(head, **{
            "normalizer": None,
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                split,
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
            "post_processor": {"type": "Sequence", "processors": [
                {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
                _bos_template(tok.add_bos, tok.specials[tok.add_bos])]},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                      "vocab": tok.vocab, "merges": merges},
        })
    if tok.style == "phi3":
        # transformers' TikTokenConverter: Split + ByteLevel(use_regex False), ByteLevel
        # post-processor (offsets only, no BOS), ByteLevel decoder, ignore_merges.
        return dict(head, **{
            "normalizer": None,
            "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                split,
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
            "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                               "use_regex": True},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                      "vocab": tok.vocab, "merges": merges},
        })
    if tok.style in ("gemma", "gemma3n"):
        return dict(head, **{
            "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": SPM_SPACE},
            "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious",
                              "invert": False},
            "post_processor": _bos_template(tok.add_bos, tok.specials[tok.add_bos]),
            "decoder": {"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": SPM_SPACE}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"}]},
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                      "vocab": tok.vocab, "merges": merges},
        })
    if tok.style == "llama2":
        return dict(head, **{
            "normalizer": {"type": "Sequence", "normalizers": [
                {"type": "Prepend", "prepend": SPM_SPACE},
                {"type": "Replace", "pattern": {"String": " "}, "content": SPM_SPACE}]},
            "pre_tokenizer": None,
            "post_processor": _bos_template(tok.add_bos, tok.specials[tok.add_bos]),
            "decoder": {"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": SPM_SPACE}, "content": " "},
                {"type": "ByteFallback"},
                {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>",
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                      "vocab": tok.vocab, "merges": merges},
        })
    raise ValueError(f"no tokenizer.json writer for style {tok.style!r}")


def tokenizer_config_json(tok: BpeTokenizer) -> dict:
    st = TOKENIZER_STYLES[tok.style]
    cfg = {
        "added_tokens_decoder": {
            str(i): {"content": s, "lstrip": False, "normalized": False, "rstrip": False,
                     "single_word": False, "special": tok.is_special(s)}
            for s, i in sorted(tok.specials.items(), key=lambda kv: kv[1])},
        "bos_token": st["bos"],
        "chat_template": st["chat_template"],
        "clean_up_tokenization_spaces": False,
        "eos_token": st["eos"],
        "model_max_length": st["model_max_length"],
        "pad_token": st["pad"],
    }
    if tok.style in ("qwen2", "qwen3"):
        cfg.update({"add_prefix_space": False,
                    "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
                    "errors": "replace", "split_special_tokens": False,
                    "tokenizer_class": "Qwen2Tokenizer", "unk_token": None})
        if tok.style == "qwen3":
            cfg["add_bos_token"] = False
    elif tok.style == "llama3":
        cfg.update({"add_bos_token": True, "clean_up_tokenization_spaces": True,
                    "model_input_names": ["input_ids", "attention_mask"],
                    "tokenizer_class": "PreTrainedTokenizerFast"})
    elif tok.style == "phi3":
        cfg.update({"add_bos_token": False, "add_eos_token": False,
                    "tokenizer_class": "GPT2Tokenizer", "unk_token": st["unk"]})
    elif tok.style == "llama2":
        cfg.update({"add_bos_token": True, "add_eos_token": False, "legacy": False, "padding_side": "left",
                    "sp_model_kwargs": {}, "spaces_between_special_tokens": False,
                    "tokenizer_class": "LlamaTokenizer", "unk_token": st["unk"],
                    "use_default_system_prompt": False})
        if "<pad>" in tok.specials:
            cfg["pad_token"] = "<pad>"
    elif tok.style in ("gemma", "gemma3n"):
        mm = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
        if tok.style == "gemma3n":
            mm.update({"boa_token": "<start_of_audio>", "eoa_token": "<end_of_audio>",
                       "audio_token": "<audio_soft_token>"})
        cfg.update(mm)
        cfg.update({"add_bos_token": True, "add_eos_token": False, "extra_special_tokens": dict(mm),
                    "sp_model_kwargs": {}, "spaces_between_special_tokens": False,
                    "tokenizer_class": "GemmaTokenizer", "unk_token": st["unk"],
                    "use_default_system_prompt": False})
    return cfg


def special_ids(tok: BpeTokenizer) -> dict:
    """bos/eos/pad ids for config.json (eos) and generation_config.json (gen_eos)."""
    st = TOKENIZER_STYLES[tok.style]

    def one_or_list(names):
        v = [tok.specials[s] for s in names]
        return v[0] if len(v) == 1 else v

    return {"bos": tok.specials[st["bos_id_token"]],
            "eos": one_or_list(st["eos_ids"]),
            "gen_eos": one_or_list(st.get("gen_eos_ids", st["eos_ids"])),
            "pad": tok.specials[st["pad"]] if st["pad"] else tok.specials.get("<pad>") if tok.style == "llama2" else None}


# =============================================================================
# 4. Families: config.json + ordered weight list
# =============================================================================

# A weight entry: (hf_name, shape) or (hf_name, shape, init) where init is
# "normal" (N(0, std)), "normal*K" (N(0, K*std)), "norm" (1 + N(0, NORM_NOISE)),
# "norm0" (N(0, NORM0_STD), for Gemma's (1 + w) RMSNorms), "norm0+C" (C + N(0, NORM0_STD)),
# "zeros" or "ones". Without an explicit init, names ending in "norm.weight" get "norm".
WeightSpec = Tuple


def _decoder_weights(d: dict, *, qkv_bias: bool, tie: bool, qk_norm: bool = False, fused: bool = False,
                     sandwich: bool = False, norm_init: Optional[str] = None) -> List[WeightSpec]:
    """Llama-style decoder weights, in HF module order.

    embed [V,H]; per layer: q [nh*hd,H], k/v [nkv*hd,H] (+ biases [out]), or the fused
    qkv_proj [(nh+2*nkv)*hd, H] (Phi-3); o [H,nh*hd]; q_norm/k_norm [hd] (Qwen3, Gemma3);
    gate/up [I,H] or fused gate_up_proj [2I,H] (Phi-3), down [H,I]; input/post_attention
    norms [H] (+ pre/post_feedforward norms for Gemma3); final norm [H]; lm_head [V,H]
    unless tied.
    """
    H, V, I = d["hidden"], d["vocab"], d["intermediate"]
    nh, nkv, hd = d["heads"], d["kv_heads"], d["head_dim"]

    def norm(name: str, n: int) -> WeightSpec:
        return (name, (n,), norm_init) if norm_init else (name, (n,))

    w: List[WeightSpec] = [("model.embed_tokens.weight", (V, H))]
    for i in range(d["layers"]):
        p = f"model.layers.{i}."
        if fused:
            w.append((f"{p}self_attn.qkv_proj.weight", ((nh + 2 * nkv) * hd, H)))
        else:
            for proj, out in (("q", nh * hd), ("k", nkv * hd), ("v", nkv * hd)):
                w.append((f"{p}self_attn.{proj}_proj.weight", (out, H)))
                if qkv_bias:
                    w.append((f"{p}self_attn.{proj}_proj.bias", (out,)))
        w.append((f"{p}self_attn.o_proj.weight", (H, nh * hd)))
        if qk_norm:
            w += [norm(f"{p}self_attn.q_norm.weight", hd), norm(f"{p}self_attn.k_norm.weight", hd)]
        if fused:
            w += [(f"{p}mlp.gate_up_proj.weight", (2 * I, H)), (f"{p}mlp.down_proj.weight", (H, I))]
        else:
            w += [(f"{p}mlp.gate_proj.weight", (I, H)), (f"{p}mlp.up_proj.weight", (I, H)),
                  (f"{p}mlp.down_proj.weight", (H, I))]
        w += [norm(f"{p}input_layernorm.weight", H), norm(f"{p}post_attention_layernorm.weight", H)]
        if sandwich:
            w += [norm(f"{p}pre_feedforward_layernorm.weight", H), norm(f"{p}post_feedforward_layernorm.weight", H)]
    w.append(norm("model.norm.weight", H))
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


def build_qwen3(d: dict, ids: dict, tie: bool) -> Tuple[dict, List[WeightSpec]]:
    """Qwen3ForCausalLM: explicit head_dim (may differ from hidden / heads), no q/k/v
    biases, per-head RMSNorm q_norm/k_norm [head_dim] on q and k before RoPE."""
    config = {
        "architectures": ["Qwen3ForCausalLM"],
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
        "max_window_layers": d["layers"],
        "model_type": "qwen3",
        "num_attention_heads": d["heads"],
        "num_hidden_layers": d["layers"],
        "num_key_value_heads": d["kv_heads"],
        "rms_norm_eps": d["rms_eps"],
        "rope_scaling": None,
        "rope_theta": d["rope_theta"],
        "sliding_window": None,
        "tie_word_embeddings": tie,
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": d["vocab"],
    }
    return config, _decoder_weights(d, qkv_bias=False, tie=tie, qk_norm=True)


def build_qwen3_moe(d: dict, ids: dict, tie: bool) -> Tuple[dict, List[WeightSpec]]:
    """Qwen3MoeForCausalLM: Qwen3's attention; layers not in mlp_only_layers have a router
    (mlp.gate [E, H]) and E experts of moe_intermediate_size stored one tensor each."""
    config, _ = build_qwen3(d, ids, tie)
    config.update({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
                   "decoder_sparse_step": 1, "moe_intermediate_size": d["moe_intermediate"],
                   "num_experts": d["experts"], "num_experts_per_tok": d["experts_per_tok"],
                   "norm_topk_prob": d["norm_topk_prob"], "mlp_only_layers": d["mlp_only_layers"],
                   "output_router_logits": False, "router_aux_loss_coef": 0.001})
    H, E, Im = d["hidden"], d["experts"], d["moe_intermediate"]
    out: List[WeightSpec] = []
    for sp in _decoder_weights(d, qkv_bias=False, tie=tie, qk_norm=True):
        m = re.match(r"model\.layers\.(\d+)\.mlp\.(gate|up|down)_proj\.weight$", sp[0])
        if not m or int(m.group(1)) in d["mlp_only_layers"]:
            out.append(sp)
            continue
        if m.group(2) != "gate":
            continue
        p = f"model.layers.{m.group(1)}.mlp."
        out.append((p + "gate.weight", (E, H)))
        for e in range(E):
            out += [(f"{p}experts.{e}.gate_proj.weight", (Im, H)), (f"{p}experts.{e}.up_proj.weight", (Im, H)),
                    (f"{p}experts.{e}.down_proj.weight", (H, Im))]
    return config, out


def build_phi3(d: dict, ids: dict, tie: bool) -> Tuple[dict, List[WeightSpec]]:
    """Phi3ForCausalLM (Phi-4-mini layout): fused qkv_proj and gate_up_proj, partial
    rotary (first int(head_dim * partial_rotary_factor) dims), LongRoPE short/long
    factors of length rotary_dim / 2 switched at original_max_position_embeddings.
    No head_dim key: HF derives hidden / heads."""
    assert d["hidden"] == d["heads"] * d["head_dim"], "phi3 needs hidden == heads * head_dim"
    rot = int(d["head_dim"] * d["partial_rotary_factor"])
    for k in ("short_factor", "long_factor"):
        assert len(d[k]) == rot // 2, f"phi3 {k} needs {rot // 2} entries"
    config = {
        "architectures": ["Phi3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": ids["bos"],
        "embd_pdrop": 0.0,
        "eos_token_id": ids["eos"],
        "full_attn_mod": 1,
        "hidden_act": "silu",
        "hidden_size": d["hidden"],
        "initializer_range": 0.02,
        "intermediate_size": d["intermediate"],
        "interpolate_factor": 1,
        "lm_head_bias": False,
        "max_position_embeddings": d["max_pos"],
        "mlp_bias": False,
        "model_type": "phi3",
        "num_attention_heads": d["heads"],
        "num_hidden_layers": d["layers"],
        "num_key_value_heads": d["kv_heads"],
        "original_max_position_embeddings": d["orig_max_pos"],
        "pad_token_id": ids["pad"],
        "partial_rotary_factor": d["partial_rotary_factor"],
        "resid_pdrop": 0.0,
        "rms_norm_eps": d["rms_eps"],
        # "type" (not "rope_type") as in the Phi-3/Phi-4 checkpoints
        "rope_scaling": {"long_factor": list(d["long_factor"]), "short_factor": list(d["short_factor"]),
                         "type": "longrope"},
        "rope_theta": d["rope_theta"],
        "sliding_window": d["sliding_window"],
        "tie_word_embeddings": tie,
        "use_cache": True,
        "vocab_size": d["vocab"],
    }
    return config, _decoder_weights(d, qkv_bias=False, tie=tie, fused=True)


def gemma3_layer_types(n_layers: int, pattern: int) -> List[str]:
    """Layer i is global ("full_attention") iff (i + 1) % pattern == 0, as HF derives it."""
    return ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n_layers)]


def build_gemma3_text(d: dict, ids: dict, tie: bool) -> Tuple[dict, List[WeightSpec]]:
    """Gemma3ForCausalLM: (1 + w) RMSNorms (stored near 0) incl. q_norm/k_norm and
    pre/post feed-forward norms, embeddings scaled by sqrt(hidden) in the model,
    gelu_pytorch_tanh MLP, attention scale query_pre_attn_scalar^-0.5, sliding-window
    layers (rope_local_base_freq) and global layers (rope_theta)."""
    config = {
        "architectures": ["Gemma3ForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "attn_logit_softcapping": None,
        "bos_token_id": ids["bos"],
        "cache_implementation": "hybrid",
        "eos_token_id": ids["eos"],
        "final_logit_softcapping": d["final_logit_softcapping"],
        "head_dim": d["head_dim"],
        "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": d["hidden"],
        "initializer_range": 0.02,
        "intermediate_size": d["intermediate"],
        # newer transformers read layer_types; 4.50-4.52 derive it from sliding_window_pattern
        "layer_types": gemma3_layer_types(d["layers"], d["sliding_window_pattern"]),
        "max_position_embeddings": d["max_pos"],
        "model_type": "gemma3_text",
        "num_attention_heads": d["heads"],
        "num_hidden_layers": d["layers"],
        "num_key_value_heads": d["kv_heads"],
        "pad_token_id": ids["pad"],
        "query_pre_attn_scalar": d["query_pre_attn_scalar"],
        "rms_norm_eps": d["rms_eps"],
        "rope_local_base_freq": d["rope_local_base_freq"],
        "rope_scaling": d.get("rope_scaling"),
        "rope_theta": d["rope_theta"],
        "sliding_window": d["sliding_window"],
        "sliding_window_pattern": d["sliding_window_pattern"],
        "tie_word_embeddings": tie,
        "use_cache": True,
        "vocab_size": d["vocab"],
    }
    w = _decoder_weights(d, qkv_bias=False, tie=tie, qk_norm=True, sandwich=True, norm_init="norm0")

    def init(spec: WeightSpec) -> str:
        name = spec[0]
        key = name.split(".")[-2] if name.endswith(("q_norm.weight", "k_norm.weight")) else name
        return GEMMA3_INIT.get(key, weight_init(spec))

    return config, [(s[0], s[1], init(s)) for s in w]


# Random Gemma3 with tied embeddings and every (1 + w) near 1 repeats one token forever:
# the sqrt(hidden)-scaled embedding of the current token dominates the residual stream,
# and the tied lm_head then scores that same token highest. Measured on the tiny model
# (5 prompts x 32 greedy tokens): these overrides take it from 1 distinct token to 26-28 of 32.
GEMMA3_INIT = {
    "model.embed_tokens.weight": "normal*0.1",  # small share of the residual stream
    "model.norm.weight": "norm0+9",             # (1 + w) ~ 10: logits std ~1.6 again
    "lm_head.weight": "normal*0.1",             # (--no-tie) same logit scale as tied
    "q_norm": "norm0+1",                        # (1 + w) ~ 2 on q and k: sharper attention
    "k_norm": "norm0+1",
}


def build_gemma3n_text(d: dict, ids: dict, tie: bool) -> Tuple[dict, List[WeightSpec]]:
    """Gemma3nForCausalLM: AltUp streams (predict / correct around each layer), Laurel,
    per-layer embeddings (embed_tokens_per_layer + per_layer_model_projection), plain-w
    RMSNorms (v_norm without weight), attention scale 1, gaussian top-k sparsity in the first
    layers, KV sharing in the last num_kv_shared_layers, final softcap (HF names under model.)."""
    L, H, P, n, r = d["layers"], d["hidden"], d["ple_dim"], d["altup"], d["laurel_rank"]
    config = {
        "activation_sparsity_pattern": d["sparsity"],
        "altup_active_idx": 0,
        "altup_coef_clip": 120.0,
        "altup_correct_scale": True,
        "altup_lr_multiplier": 1.0,
        "altup_num_inputs": n,
        "architectures": ["Gemma3nForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": ids["bos"],
        "eos_token_id": ids["eos"],
        "final_logit_softcapping": d["final_logit_softcapping"],
        "head_dim": d["head_dim"],
        "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": H,
        "hidden_size_per_layer_input": P,
        "initializer_range": 0.02,
        "intermediate_size": [d["intermediate"]] * L,
        "laurel_rank": r,
        "layer_types": gemma3_layer_types(L, d["full_every"]),
        "max_position_embeddings": d["max_pos"],
        "model_type": "gemma3n_text",
        "num_attention_heads": d["heads"],
        "num_hidden_layers": L,
        "num_key_value_heads": d["kv_heads"],
        "num_kv_shared_layers": d["kv_shared"],
        "pad_token_id": ids["pad"],
        "query_pre_attn_scalar": d["head_dim"],
        "rms_norm_eps": d["rms_eps"],
        "rope_local_base_freq": d["rope_local_base_freq"],
        "rope_scaling": None,
        "rope_theta": d["rope_theta"],
        "sliding_window": d["sliding_window"],
        "tie_word_embeddings": tie,
        "use_cache": True,
        "vocab_size": d["vocab"],
        "vocab_size_per_layer_input": d["ple_vocab"] or d["vocab"],
    }
    w = _decoder_weights(d, qkv_bias=False, tie=tie, qk_norm=True, sandwich=True)
    out: List[WeightSpec] = []
    for sp in w:
        out.append(sp)
        m = re.match(r"model\.layers\.(\d+)\.post_feedforward_layernorm\.weight$", sp[0])
        if m:  # the layer's Gemma 3n extras after its norms
            p = f"model.layers.{m.group(1)}."
            out += [(p + "altup.correct_output_scale", (H,), "norm"),
                    (p + "altup.correction_coefs.weight", (n, n), "normal*5"),
                    (p + "altup.prediction_coefs.weight", (n * n, n), "normal*5"),
                    (p + "altup.modality_router.weight", (n, H), "normal*5"),
                    (p + "altup.router_norm.weight", (H,)),
                    (p + "laurel.linear_left.weight", (r, H)), (p + "laurel.linear_right.weight", (H, r)),
                    (p + "laurel.post_laurel_norm.weight", (H,)),
                    (p + "per_layer_input_gate.weight", (P, H)), (p + "per_layer_projection.weight", (H, P)),
                    (p + "post_per_layer_input_norm.weight", (H,))]
    out += [("model.embed_tokens_per_layer.weight", (config["vocab_size_per_layer_input"], L * P)),
            ("model.per_layer_model_projection.weight", (L * P, H)),
            ("model.per_layer_projection_norm.weight", (P,))]
    out += [(f"model.altup_projections.{i}.weight", (H, H)) for i in range(n - 1)]
    out += [(f"model.altup_unembed_projections.{i}.weight", (H, H)) for i in range(n - 1)]
    return config, out


@dataclasses.dataclass
class Family:
    build: Callable[[dict, dict, bool], Tuple[dict, List[WeightSpec]]]  # (dims, special ids, tie)
    tokenizer: str              # key of TOKENIZER_STYLES
    tiny: dict                  # tiny dims; "vocab": None = tokenizer size
    tiny_tie: bool
    presets: Dict[str, dict]    # real dims (full dicts); first one is the default
    extra_specials: Tuple[str, ...] = ()
    hf_version: str = "4.45.0"  # transformers_version written to the configs


_TINY_COMMON = {"hidden": 64, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 16,
                "vocab": None, "max_pos": 2048}

# Phi-4-mini-instruct's LongRoPE factors (48 = 96 rotary dims / 2).
PHI4_MINI_LONG_FACTOR = [
    1.0, 1.118320672, 1.250641126, 1.398617824, 1.564103225, 1.74916897, 1.956131817, 2.187582649,
    2.446418898, 2.735880826, 3.059592084, 3.421605075, 3.826451687, 4.279200023, 4.785517845,
    5.351743533, 5.984965424, 6.693110555, 7.485043894, 8.370679318, 9.36110372, 10.4687158,
    11.70738129, 13.09260651, 14.64173252, 16.37415215, 18.31155283, 20.47818807, 22.90118105,
    25.61086418, 28.64115884, 32.03, 32.1, 32.13, 32.23, 32.6, 32.61, 32.64, 32.66, 32.7, 32.71,
    32.93, 32.97, 33.28, 33.49, 33.5, 44.16, 47.77]

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
    "qwen3": Family(
        build=build_qwen3, tokenizer="qwen3", tiny_tie=True, hf_version="4.51.0",
        # head_dim 32 != hidden / heads = 16, as in the larger Qwen3 models (q_proj [128, 64])
        tiny=dict(_TINY_COMMON, head_dim=32, intermediate=128, rms_eps=1e-6, rope_theta=1000000.0),
        presets={"qwen3-0.6b": {  # Qwen3-0.6B (16 * 128 = 2048 != hidden 1024)
            "hidden": 1024, "layers": 28, "heads": 16, "kv_heads": 8, "head_dim": 128,
            "intermediate": 3072, "vocab": 151936, "max_pos": 40960, "rms_eps": 1e-6,
            "rope_theta": 1000000.0, "tie": True}},
    ),
    "qwen3_moe": Family(
        build=build_qwen3_moe, tokenizer="qwen3", tiny_tie=True, hf_version="4.51.0",
        # 3 layers: 0 and 2 routed (8 experts, top 2, renormalized), 1 dense; 2 * 48 != 64 (hidden)
        tiny=dict(_TINY_COMMON, layers=3, head_dim=32, intermediate=128, rms_eps=1e-6, rope_theta=1000000.0,
                  experts=8, experts_per_tok=2, moe_intermediate=48, norm_topk_prob=True, mlp_only_layers=[1]),
        presets={"qwen3-30b-a3b-4l": {  # Qwen3-30B-A3B's layer shapes, 4 of its 48 layers
            "hidden": 2048, "layers": 4, "heads": 32, "kv_heads": 4, "head_dim": 128, "intermediate": 6144,
            "vocab": 151936, "max_pos": 40960, "rms_eps": 1e-6, "rope_theta": 1000000.0, "experts": 128,
            "experts_per_tok": 8, "moe_intermediate": 768, "norm_topk_prob": True, "mlp_only_layers": [],
            "tie": False}},
    ),
    "phi3": Family(
        build=build_phi3, tokenizer="phi3", tiny_tie=False, hf_version="4.49.0",
        # partial_rotary_factor 0.5 -> 8 of 16 head dims rotate (4 factors); LongRoPE with
        # original 64 / max 256 (factor 4: attention factor sqrt(1 + ln 4 / ln 64)), so
        # sequences longer than 64 switch to the long factors; both factor lists differ
        # from 1 so a missing or swapped factor shows. sliding_window never binds.
        tiny=dict(_TINY_COMMON, intermediate=96, rms_eps=1e-5, rope_theta=10000.0, max_pos=256,
                  orig_max_pos=64, partial_rotary_factor=0.5, sliding_window=512,
                  short_factor=[1.0, 1.1, 1.25, 1.5], long_factor=[1.0, 2.0, 4.0, 8.0]),
        presets={"phi4-mini": {  # Phi-4-mini-instruct
            "hidden": 3072, "layers": 32, "heads": 24, "kv_heads": 8, "head_dim": 128,
            "intermediate": 8192, "vocab": 200064, "max_pos": 131072, "orig_max_pos": 4096,
            "rms_eps": 1e-5, "rope_theta": 10000.0, "partial_rotary_factor": 0.75,
            "sliding_window": 262144, "short_factor": [1.0] * 48, "long_factor": PHI4_MINI_LONG_FACTOR,
            "tie": True}},
    ),
    "gemma3_text": Family(
        build=build_gemma3_text, tokenizer="gemma", tiny_tie=True, hf_version="4.50.0",
        # 4 layers, pattern 2: layers 0, 2 sliding (window 8, rope 1e4), 1, 3 global (rope 1e6);
        # query_pre_attn_scalar 24 != head_dim 16; final softcap 30 (real 1b: null); MQA like 1b
        tiny=dict(_TINY_COMMON, layers=4, kv_heads=1, intermediate=128, rms_eps=1e-6,
                  rope_theta=1000000.0, rope_local_base_freq=10000.0, rope_scaling=None,
                  sliding_window=8, sliding_window_pattern=2, query_pre_attn_scalar=24,
                  final_logit_softcapping=30.0),
        presets={"gemma3-1b": {  # gemma-3-1b-it
            "hidden": 1152, "layers": 26, "heads": 4, "kv_heads": 1, "head_dim": 256,
            "intermediate": 6912, "vocab": 262144, "max_pos": 32768, "rms_eps": 1e-6,
            "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "rope_scaling": None,
            "sliding_window": 512, "sliding_window_pattern": 6, "query_pre_attn_scalar": 256,
            "final_logit_softcapping": None, "tie": True}},
    ),
    "gemma3n_text": Family(
        build=build_gemma3n_text, tokenizer="gemma", tiny_tie=True, hf_version="4.53.0",
        # 6 layers, full every 3rd (2, 5), sliding window 8 (rope 1e4) beside full (rope 1e6);
        # the last 2 share KV (4 <- 3 sliding, 5 <- 2 full); sparsity on layers 0, 1; 4 streams
        tiny=dict(_TINY_COMMON, layers=6, intermediate=128, rms_eps=1e-6, rope_theta=1000000.0,
                  rope_local_base_freq=10000.0, sliding_window=8, full_every=3, final_logit_softcapping=30.0,
                  ple_dim=16, ple_vocab=None, altup=4, laurel_rank=8, kv_shared=2,
                  sparsity=[0.95, 0.95, 0.0, 0.0, 0.0, 0.0]),
        presets={"gemma3n-e2b": {  # google/gemma-3n-E2B-it text_config
            "hidden": 2048, "layers": 30, "heads": 8, "kv_heads": 2, "head_dim": 256, "intermediate": 8192,
            "vocab": 262400, "ple_vocab": 262144, "max_pos": 32768, "rms_eps": 1e-6, "rope_theta": 1000000.0,
            "rope_local_base_freq": 10000.0, "sliding_window": 512, "full_every": 5,
            "final_logit_softcapping": 30.0, "ple_dim": 256, "altup": 4, "laurel_rank": 64, "kv_shared": 10,
            "sparsity": [0.95] * 10 + [0.0] * 20, "tie": True}},
    ),
}

# -----------------------------------------------------------------------------
# LLaVA (LlavaForConditionalGeneration [llava]): a CLIP or SigLIP vision tower, the
# two-layer projector and a llama / qwen2 text model (--vision, --text). Weights in the
# old on-disk spelling (language_model.model.*, language_model.lm_head.weight,
# vision_tower.vision_model.*, multi_modal_projector.*) or, with --new-names, the
# transformers >= 4.52 spelling (model.language_model.*, lm_head.weight,
# model.vision_tower.vision_model.*, model.multi_modal_projector.*). Values are seeded by
# the old name, so both spellings hold the same numbers.
# -----------------------------------------------------------------------------

# llava-hf/llava-1.5-7b-hf chat_template.json (tests/oracle/templates/llava_1_5.jinja)
LLAVA_CHAT_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] != 'system' %}{{ message['role'].upper() + ': '}}"
    "{% endif %}{# Render all images first #}{% for content in message['content'] | selectattr('type', "
    "'equalto', 'image') %}{{ '<image>\\n' }}{% endfor %}{# Render all text next #}{% if message['role'] != "
    "'assistant' %}{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{{ content['text'] + ' '}}{% endfor %}{% else %}{% for content in message['content'] | selectattr('type', "
    "'equalto', 'text') %}{% generation %}{{ content['text'] + ' '}}{% endgeneration %}{% endfor %}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}")

OPENAI_CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
OPENAI_CLIP_STD = [0.26862954, 0.26130258, 0.27577711]

# Tiny towers: CLIP 42 px / patch 14 -> 3x3 patches + CLS, 3 layers, feature layer -2
# (layer 1's output), strategy default (CLS dropped) -> 9 rows; SigLIP 50 px / patch 16 ->
# 3x3 patches (2 px dropped by the valid conv), 2 layers, feature layer -1, strategy full -> 9 rows.
LLAVA_VISION_TINY = {
    "clip": {"hidden": 32, "intermediate": 64, "layers": 3, "heads": 4, "patch": 14, "image": 42,
             "feature_layer": -2, "strategy": "default"},
    "siglip": {"hidden": 32, "intermediate": 64, "layers": 2, "heads": 4, "patch": 16, "image": 50,
               "feature_layer": -1, "strategy": "full"},
}
LLAVA_PRESETS = {
    # llava-hf/llava-1.5-7b-hf: CLIP ViT-L/14-336 + vicuna-7b (llama) text
    "llava-1.5-clip336": {
        "vision": "clip", "text": "llama",
        "tower": {"hidden": 1024, "intermediate": 4096, "layers": 24, "heads": 16, "patch": 14, "image": 336,
                  "feature_layer": -2, "strategy": "default"},
        "text_dims": {"hidden": 4096, "layers": 32, "heads": 32, "kv_heads": 32, "head_dim": 128,
                      "intermediate": 11008, "vocab": 32064, "max_pos": 4096, "rms_eps": 1e-5,
                      "rope_theta": 10000.0, "rope_scaling": None, "tie": False},
    },
    # the same CLIP ViT-L/14-336 tower and projector shapes in front of the tiny llama text
    # model (about 0.3 B params: tower benchmarks without writing a 7 B text model)
    "llava-1.5-clip336-tower": {
        "vision": "clip", "text": "llama",
        "tower": {"hidden": 1024, "intermediate": 4096, "layers": 24, "heads": 16, "patch": 14, "image": 336,
                  "feature_layer": -2, "strategy": "default"},
        "text_dims": None,
    },
}


def llava_vision_weights(v: dict, arch: str) -> List[WeightSpec]:
    """Vision tower weights (HF CLIPVisionModel / SiglipVisionModel names under vision_tower.vision_model.)."""
    C, I, p, g = v["hidden"], v["intermediate"], v["patch"], v["image"] // v["patch"]
    P = "vision_tower.vision_model."
    w: List[WeightSpec] = []
    if arch == "clip":
        w += [(P + "embeddings.class_embedding", (C,), "normal*2.5"),
              (P + "embeddings.patch_embedding.weight", (C, 3, p, p)),
              (P + "embeddings.position_embedding.weight", (g * g + 1, C)),
              (P + "pre_layrnorm.weight", (C,), "norm"), (P + "pre_layrnorm.bias", (C,), "normal*0.5")]
    else:
        w += [(P + "embeddings.patch_embedding.weight", (C, 3, p, p)),
              (P + "embeddings.patch_embedding.bias", (C,)),
              (P + "embeddings.position_embedding.weight", (g * g, C))]
    for i in range(v["layers"]):
        q = f"{P}encoder.layers.{i}."
        for proj in ("k_proj", "v_proj", "q_proj", "out_proj"):
            w += [(f"{q}self_attn.{proj}.weight", (C, C)), (f"{q}self_attn.{proj}.bias", (C,), "normal*0.5")]
        w += [(f"{q}layer_norm1.weight", (C,), "norm"), (f"{q}layer_norm1.bias", (C,), "normal*0.5"),
              (f"{q}mlp.fc1.weight", (I, C)), (f"{q}mlp.fc1.bias", (I,), "normal*0.5"),
              (f"{q}mlp.fc2.weight", (C, I)), (f"{q}mlp.fc2.bias", (C,), "normal*0.5"),
              (f"{q}layer_norm2.weight", (C,), "norm"), (f"{q}layer_norm2.bias", (C,), "normal*0.5")]
    w += [(P + "post_layernorm.weight", (C,), "norm"), (P + "post_layernorm.bias", (C,), "normal*0.5")]
    return w


def llava_vision_config(v: dict, arch: str) -> dict:
    common = {"hidden_size": v["hidden"], "intermediate_size": v["intermediate"],
              "num_hidden_layers": v["layers"], "num_attention_heads": v["heads"], "num_channels": 3,
              "patch_size": v["patch"], "image_size": v["image"], "attention_dropout": 0.0}
    if arch == "clip":
        return dict(common, model_type="clip_vision_model", hidden_act="quick_gelu", layer_norm_eps=1e-5,
                    projection_dim=768, vocab_size=32000)
    return dict(common, model_type="siglip_vision_model", hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6,
                vision_use_head=False)


def llava_rename(name: str, new: bool) -> str:
    """Old on-disk name -> the spelling written."""
    if not new:
        return name
    for old, nw in (("language_model.model.", "model.language_model."), ("language_model.lm_head.", "lm_head."),
                    ("vision_tower.", "model.vision_tower."), ("multi_modal_projector.", "model.multi_modal_projector.")):
        if name.startswith(old):
            return nw + name[len(old):]
    return name


def build_llava(arch: str, text: str, v: dict, td: dict, tok: BpeTokenizer, tie: bool,
                new_names: bool) -> Tuple[dict, List[WeightSpec], dict, dict]:
    """config.json, weights (name, shape, init, seed name), preprocessor_config, processor_config."""
    fam = FAMILIES[text]
    ids = special_ids(tok)
    text_cfg, text_w = fam.build(td, ids, tie)
    g = v["image"] // v["patch"]
    n_seq = g * g + (1 if arch == "clip" else 0)
    n_rows = n_seq - (1 if v["strategy"] == "default" else 0)
    image_id = tok.specials["<image>"]
    D = td["hidden"]
    specs: List[WeightSpec] = []
    for s in text_w:  # text model: model.* -> language_model.model.*, lm_head -> language_model.lm_head
        old = ("language_model." + s[0]) if s[0].startswith(("model.", "lm_head.")) else s[0]
        specs.append((old, s[1], weight_init(s)))
    specs += [(s[0], s[1], weight_init(s)) for s in llava_vision_weights(v, arch)]
    specs += [("multi_modal_projector.linear_1.weight", (D, v["hidden"])),
              ("multi_modal_projector.linear_1.bias", (D,), "normal*0.5"),
              ("multi_modal_projector.linear_2.weight", (D, D)),
              ("multi_modal_projector.linear_2.bias", (D,), "normal*0.5")]
    specs = [(llava_rename(s[0], new_names), s[1], weight_init(s), s[0]) for s in specs]
    config = {
        "architectures": ["LlavaForConditionalGeneration"],
        "model_type": "llava",
        "ignore_index": -100,
        "image_token_index": image_id,
        "image_seq_length": n_rows,
        "projector_hidden_act": "gelu",
        "multimodal_projector_bias": True,
        "vision_feature_layer": v["feature_layer"],
        "vision_feature_select_strategy": v["strategy"],
        "tie_word_embeddings": tie,
        "text_config": text_cfg,
        "vision_config": llava_vision_config(v, arch),
    }
    S = v["image"]
    if arch == "clip":
        pre = {"crop_size": {"height": S, "width": S}, "do_center_crop": True, "do_convert_rgb": True,
               "do_normalize": True, "do_rescale": True, "do_resize": True, "image_mean": OPENAI_CLIP_MEAN,
               "image_std": OPENAI_CLIP_STD, "image_processor_type": "CLIPImageProcessor",
               "processor_class": "LlavaProcessor", "resample": 3, "rescale_factor": 0.00392156862745098,
               "size": {"shortest_edge": S}}
    else:
        pre = {"do_convert_rgb": None, "do_normalize": True, "do_rescale": True, "do_resize": True,
               "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
               "image_processor_type": "SiglipImageProcessor", "processor_class": "LlavaProcessor",
               "resample": 3, "rescale_factor": 0.00392156862745098, "size": {"height": S, "width": S}}
    proc = {"image_token": "<image>", "num_additional_image_tokens": 1 if arch == "clip" else 0,
            "patch_size": v["patch"], "processor_class": "LlavaProcessor",
            "vision_feature_select_strategy": v["strategy"]}
    # HF LlavaProcessor: (S // patch)^2 + num_additional_image_tokens, minus 1 for "default"
    assert g * g + proc["num_additional_image_tokens"] - (v["strategy"] == "default") == n_rows
    return config, specs, pre, proc


def main_llava(args) -> int:
    t0 = time.time()
    if args.verify:
        raise SystemExit("--verify is not implemented for --family llava")
    if args.dims == "real" or args.preset is not None:
        preset = args.preset or next(iter(LLAVA_PRESETS))
        if preset not in LLAVA_PRESETS:
            raise SystemExit(f"llava has no preset {preset!r} (has: {', '.join(LLAVA_PRESETS)})")
        p = LLAVA_PRESETS[preset]
        arch, text, v, label = p["vision"], p["text"], dict(p["tower"]), preset
        td = dict(p["text_dims"]) if p["text_dims"] else None
        std = STD_REAL
    else:
        arch, text, label, std = args.vision, args.text, "tiny", STD_TINY
        v = dict(LLAVA_VISION_TINY[arch])
        td = None
    fam = FAMILIES[text]
    if args.tokenizer == "llama2":  # LLaVA-1.5's own: <image> 32000 and <pad> 32001 after the vocab
        if text != "llama":
            raise SystemExit("--tokenizer llama2 needs --text llama")
        tok = train_tokenizer("llama2", extra_specials=("<image>", "<pad>"))
    else:
        tok = train_tokenizer(fam.tokenizer, extra_specials=tuple(fam.extra_specials) + ("<image>",))
    if td is None:
        td, _ = resolve_dims(text, fam, "tiny", None, tok)
    td.pop("tie", None)
    tie_flag = bool(args.tie) if args.tie is not None else False
    if td["vocab"] < tok.size:
        raise SystemExit(f"vocab {td['vocab']} is smaller than the tokenizer ({tok.size})")
    config, specs, pre, proc = build_llava(arch, text, v, td, tok, tie_flag, args.new_names)
    config["torch_dtype"] = DTYPES[args.dtype][2]
    config["text_config"]["torch_dtype"] = DTYPES[args.dtype][2]
    config["transformers_version"] = "4.52.0" if args.new_names else "4.45.0"
    os.makedirs(args.out, exist_ok=True)
    ids = special_ids(tok)
    write_json(os.path.join(args.out, "config.json"), config)
    gen = {"bos_token_id": ids["bos"], "do_sample": False, "eos_token_id": ids["gen_eos"],
           "transformers_version": config["transformers_version"]}
    if ids["pad"] is not None:
        gen["pad_token_id"] = ids["pad"]
    write_json(os.path.join(args.out, "generation_config.json"), gen)
    write_json(os.path.join(args.out, "tokenizer.json"), tokenizer_json(tok, args.merges_style), sort_keys=False)
    tc = tokenizer_config_json(tok)
    tc.pop("chat_template", None)  # LLaVA keeps its template in chat_template.json
    write_json(os.path.join(args.out, "tokenizer_config.json"), tc)
    write_json(os.path.join(args.out, "chat_template.json"), {"chat_template": LLAVA_CHAT_TEMPLATE})
    write_json(os.path.join(args.out, "preprocessor_config.json"), pre)
    write_json(os.path.join(args.out, "processor_config.json"), proc)
    files = write_weights(args.out, specs, args.seed, std, args.dtype, args.shards)
    nparams = sum(int(np.prod(s[1], dtype=np.int64)) for s in specs)
    nbytes = sum(os.path.getsize(os.path.join(args.out, f)) for f in files)
    print(f"mktiny: llava ({arch} + {text}) [{label}] dtype={args.dtype} names={'new' if args.new_names else 'old'} "
          f"seed={args.seed} -> {args.out}")
    print(f"  {len(specs)} tensors, {nparams:,} params, {nbytes / 2**20:.1f} MiB; image {v['image']} px, "
          f"patch {v['patch']}, {config['image_seq_length']} rows per image, <image> = {config['image_token_index']}; "
          f"{time.time() - t0:.2f} s")
    return 0


# -----------------------------------------------------------------------------
# Gemma 3 (Gemma3ForConditionalGeneration [gemma3]): a SigLIP tower (post_layernorm on the
# last layer), Gemma3MultiModalProjector (average pool to mm_tokens_per_image rows,
# mm_soft_emb_norm (1 + w), x . mm_input_projection_weight [C, D]) and a gemma3_text model in
# text_config. On-disk names as google/gemma-3-4b-it (language_model.model.*,
# vision_tower.vision_model.*, multi_modal_projector.*). The tokenizer is the gemma style with
# <start_of_image>, <end_of_image> and <image_soft_token>; the chat template writes
# <start_of_image> for an image part and Gemma3Processor expands it.
# -----------------------------------------------------------------------------

# Tiny: 64 px / patch 4 -> 16x16 patches, pooled 4x4 -> 16 rows per image (kernel 4 as the real
# 896 / 14 = 64 -> 16), more rows than the tiny text's sliding window of 8, so the
# bidirectional image block reaches past the window.
GEMMA3_VISION_TINY = {"hidden": 32, "intermediate": 48, "layers": 2, "heads": 4, "patch": 4, "image": 64,
                      "tokens": 16}
GEMMA3_PRESETS = {
    # google/gemma-3-4b-it: SigLIP-so400m 896 px / 14 (27 layers) + Gemma 3 4B text
    "gemma-3-4b": {
        "tower": {"hidden": 1152, "intermediate": 4304, "layers": 27, "heads": 16, "patch": 14, "image": 896,
                  "tokens": 256},
        "text_dims": {"hidden": 2560, "layers": 34, "heads": 8, "kv_heads": 4, "head_dim": 256,
                      "intermediate": 10240, "vocab": 262208, "max_pos": 131072, "rms_eps": 1e-6,
                      "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
                      "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024,
                      "sliding_window_pattern": 6, "query_pre_attn_scalar": 256, "final_logit_softcapping": None},
    },
    # the same tower and projector in front of a 2-layer text model of the 4B's width (tower benchmarks)
    "gemma-3-4b-tower": {
        "tower": {"hidden": 1152, "intermediate": 4304, "layers": 27, "heads": 16, "patch": 14, "image": 896,
                  "tokens": 256},
        "text_dims": {"hidden": 2560, "layers": 2, "heads": 8, "kv_heads": 4, "head_dim": 256,
                      "intermediate": 1024, "vocab": None, "max_pos": 131072, "rms_eps": 1e-6,
                      "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
                      "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024,
                      "sliding_window_pattern": 6, "query_pre_attn_scalar": 256, "final_logit_softcapping": None},
    },
}


def main_gemma3(args) -> int:
    t0 = time.time()
    if args.verify:
        raise SystemExit("--verify is not implemented for --family gemma3")
    fam = FAMILIES["gemma3_text"]
    tok = train_tokenizer(fam.tokenizer, extra_specials=fam.extra_specials)
    if args.dims == "real" or args.preset is not None:
        preset = args.preset or next(iter(GEMMA3_PRESETS))
        if preset not in GEMMA3_PRESETS:
            raise SystemExit(f"gemma3 has no preset {preset!r} (has: {', '.join(GEMMA3_PRESETS)})")
        v, td, label, std = dict(GEMMA3_PRESETS[preset]["tower"]), dict(GEMMA3_PRESETS[preset]["text_dims"]), \
            preset, STD_REAL
        if td["vocab"] is None:
            td["vocab"] = tok.size
    else:
        v, label, std = dict(GEMMA3_VISION_TINY), "tiny", STD_TINY
        td, _ = resolve_dims("gemma3_text", fam, "tiny", None, tok)
    td.pop("tie", None)
    tie = True if args.tie is None else bool(args.tie)
    ids = special_ids(tok)
    text_cfg, text_w = fam.build(td, ids, tie)
    C, D = v["hidden"], td["hidden"]
    specs: List[WeightSpec] = []
    for sp in text_w:  # model.* -> language_model.model.*, lm_head.* -> language_model.lm_head.*
        specs.append(("language_model." + sp[0], sp[1], sp[2] if len(sp) > 2 else weight_init(sp), sp[0]))
    vw = llava_vision_weights(v, "siglip")
    specs += [(s[0], s[1], weight_init(s), s[0]) for s in vw]
    specs += [("multi_modal_projector.mm_soft_emb_norm.weight", (C,), "norm0", None),
              ("multi_modal_projector.mm_input_projection_weight", (C, D), "normal", None)]
    if args.new_names:
        specs = [(llava_rename(s[0], True), s[1], s[2], s[3]) for s in specs]
    specs = [(s[0], s[1], s[2], s[3] or s[0]) for s in specs]
    vcfg = llava_vision_config(v, "siglip")
    config = {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "model_type": "gemma3",
        "boi_token_index": tok.specials["<start_of_image>"],
        "eoi_token_index": tok.specials["<end_of_image>"],
        "image_token_index": tok.specials["<image_soft_token>"],
        "mm_tokens_per_image": v["tokens"],
        "initializer_range": 0.02,
        "eos_token_id": ids["eos"],
        "text_config": text_cfg,
        "vision_config": vcfg,
        "torch_dtype": DTYPES[args.dtype][2],
        "transformers_version": "4.50.0",
    }
    config["text_config"]["torch_dtype"] = DTYPES[args.dtype][2]
    S = v["image"]
    pre = {"do_convert_rgb": None, "do_normalize": True, "do_pan_and_scan": None, "do_rescale": True,
           "do_resize": True, "image_mean": [0.5, 0.5, 0.5], "image_processor_type": "Gemma3ImageProcessor",
           "image_seq_length": v["tokens"], "image_std": [0.5, 0.5, 0.5], "pan_and_scan_max_num_crops": None,
           "pan_and_scan_min_crop_size": None, "pan_and_scan_min_ratio_to_activate": None,
           "processor_class": "Gemma3Processor", "resample": 2, "rescale_factor": 0.00392156862745098,
           "size": {"height": S, "width": S}}
    if args.pan_and_scan:  # pan-and-scan on, crops of at least this many pixels (the others: defaults)
        pre.update({"do_pan_and_scan": True, "pan_and_scan_min_crop_size": args.pan_and_scan,
                    "pan_and_scan_max_num_crops": 4, "pan_and_scan_min_ratio_to_activate": 1.2})
    os.makedirs(args.out, exist_ok=True)
    write_json(os.path.join(args.out, "config.json"), config)
    gen = {"bos_token_id": ids["bos"], "do_sample": False, "eos_token_id": ids["gen_eos"],
           "pad_token_id": ids["pad"], "transformers_version": "4.50.0"}
    write_json(os.path.join(args.out, "generation_config.json"), gen)
    write_json(os.path.join(args.out, "tokenizer.json"), tokenizer_json(tok, args.merges_style), sort_keys=False)
    write_json(os.path.join(args.out, "tokenizer_config.json"), tokenizer_config_json(tok))
    write_json(os.path.join(args.out, "preprocessor_config.json"), pre)
    write_json(os.path.join(args.out, "processor_config.json"),
               {"image_seq_length": v["tokens"], "processor_class": "Gemma3Processor"})
    files = write_weights(args.out, specs, args.seed, std, args.dtype, args.shards)
    nparams = sum(int(np.prod(s[1], dtype=np.int64)) for s in specs)
    nbytes = sum(os.path.getsize(os.path.join(args.out, f)) for f in files)
    print(f"mktiny: gemma3 [{label}] dtype={args.dtype} seed={args.seed} -> {args.out}")
    print(f"  {len(specs)} tensors, {nparams:,} params, {nbytes / 2**20:.1f} MiB; image {S} px, patch {v['patch']}, "
          f"{v['tokens']} rows per image; {time.time() - t0:.2f} s")
    return 0


# -----------------------------------------------------------------------------
# Gemma 3n (Gemma3nForConditionalGeneration [gemma3n]): the gemma3n_text decoder under
# model.language_model.*, the two multimodal embedders (model.embed_vision.*, model.embed_audio.*)
# whose hard embeddings the multimodal ids [text vocab, vocab) take, and the audio tower (the USM
# conformer, model.audio_tower.*: both subsampling convs with their cumulative group norms, two
# conformer blocks with every sub-block) at tiny width but the real 128 mel bins, with the real
# preprocessor_config.json (Gemma3nAudioFeatureExtractor + SiglipImageProcessorFast keys). The
# vision tower (MobileNetV5) is not written: omnic does not run it yet, and HF initializes it at
# random (unused by text and audio prompts). vision_config / audio_config are small but real
# Gemma3nVisionConfig / Gemma3nAudioConfig dicts.
# -----------------------------------------------------------------------------

# the vision tower is mobilenetv5_300m_enc at channel_multiplier 1/16 (every block kind, 7.3 M
# parameters): its fusion gives 2048 channels whatever the multiplier
GEMMA3N_MM_TINY = {"vision_hidden": 2048, "vision_vocab": 8, "audio_hidden": 16, "audio_vocab": 8,
                   "vision_multiplier": 0.0625}

# google/gemma-3n-E2B-it preprocessor_config.json (the audio extractor's and the image processor's keys)
GEMMA3N_PREPROCESSOR = {
    "data_format": "channels_first", "default_to_square": False, "dither": 0.0, "do_convert_rgb": None,
    "do_normalize": False, "do_rescale": True, "do_resize": True,
    "feature_extractor_type": "Gemma3nAudioFeatureExtractor", "feature_size": 128, "fft_length": 1024,
    "fft_overdrive": True, "frame_length": 512, "hop_length": 160, "image_mean": [0.5, 0.5, 0.5],
    "image_processor_type": "SiglipImageProcessorFast", "image_seq_length": 256, "image_std": [0.5, 0.5, 0.5],
    "input_scale_factor": 1.0, "max_frequency": 7600.0, "mel_floor": 1e-05, "min_frequency": 125.0,
    "padding_side": "right", "padding_value": 0.0, "per_bin_mean": None, "per_bin_stddev": None,
    "preemphasis": 0.97, "preemphasis_htk_flavor": True, "processor_class": "Gemma3nProcessor", "resample": 2,
    "rescale_factor": 0.00392156862745098, "return_attention_mask": True, "sampling_rate": 16000,
    "size": {"height": 768, "width": 768}}


# timm's mobilenetv5_300m_enc (mobilenetv5.py arch_def): per stage, block strings er / uir / mqa
# (a = dw_start kernel, k = dw_mid kernel (mqa: its kv down_conv), s stride, e expansion, c channels,
# h heads, d key = value dim, v kv stride)
MNV5_300M_ARCH = [
    ["er_k3_s2_e4_c128"] + ["er_k3_s1_e4_c128"] * 2,
    ["uir_a3_k5_s2_e6_c256", "uir_a5_k0_s1_e4_c256", "uir_a3_k0_s1_e4_c256", "uir_a5_k0_s1_e4_c256",
     "uir_a3_k0_s1_e4_c256"],
    ["uir_a5_k5_s2_e6_c640"] + ["uir_a5_k0_s1_e4_c640"] * 7 + ["uir_a0_k0_s1_e1_c640"] +
    ["mqa_k3_h12_v2_s1_d64_c640", "uir_a0_k0_s1_e2_c640"] * 14,
    ["uir_a5_k5_s2_e6_c1280"] + ["mqa_k3_h16_s1_d96_c1280", "uir_a0_k0_s1_e2_c1280"] * 19,
]


def _make_divisible(v: float, divisor: int = 8, round_limit: float = 0.9) -> int:
    """timm's make_divisible (channels rounded to a multiple of 8, never below 90% of v)."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < round_limit * v else new_v


def gemma3n_vision_specs(mult: float) -> List[WeightSpec]:
    """MobileNetV5Encoder's weights (timm names under model.vision_tower.timm_model.) for
    mobilenetv5_300m_enc at channel_multiplier mult (the stem stays 64 wide when mult < 1, the fusion
    gives 2048 channels), as timm builds them."""
    p = "model.vision_tower.timm_model."
    sp: List[WeightSpec] = [(p + "conv_stem.conv.weight", (64, 3, 3, 3)), (p + "conv_stem.conv.bias", (64,), "normal"),
                            (p + "conv_stem.bn.weight", (64,), "norm")]
    c, ends = 64, []
    for s, stage in enumerate(MNV5_300M_ARCH):
        for b, blk in enumerate(stage):
            kind, *opts = blk.split("_")
            o = {x[0]: x[1:] for x in opts}
            out = _make_divisible(int(o["c"]) * mult) if mult < 1 else int(o["c"])
            q = f"{p}blocks.{s}.{b}."
            if kind == "er":
                mid = _make_divisible(c * float(o["e"]))
                k = int(o["k"])
                sp += [(q + "conv_exp.weight", (mid, c, k, k)), (q + "bn1.weight", (mid,), "norm"),
                       (q + "conv_pwl.weight", (out, mid, 1, 1)), (q + "bn2.weight", (out,), "norm")]
            elif kind == "uir":
                a, k, mid = int(o["a"]), int(o["k"]), _make_divisible(c * float(o["e"]))
                if a:
                    sp += [(q + "dw_start.conv.weight", (c, 1, a, a)), (q + "dw_start.bn.weight", (c,), "norm")]
                sp += [(q + "pw_exp.conv.weight", (mid, c, 1, 1)), (q + "pw_exp.bn.weight", (mid,), "norm")]
                if k:
                    sp += [(q + "dw_mid.conv.weight", (mid, 1, k, k)), (q + "dw_mid.bn.weight", (mid,), "norm")]
                sp += [(q + "pw_proj.conv.weight", (out, mid, 1, 1)), (q + "pw_proj.bn.weight", (out,), "norm"),
                       (q + "layer_scale.gamma", (out,), "norm")]
            else:  # mqa: heads x key_dim queries, one key / value head, optional strided key / value
                h, d, k = int(o["h"]), int(o["d"]), int(o["k"])
                sp += [(q + "norm.weight", (c,), "norm"), (q + "attn.query.proj.weight", (h * d, c, 1, 1))]
                for kv in ("key", "value"):
                    if "v" in o:
                        sp += [(q + f"attn.{kv}.down_conv.weight", (c, 1, k, k)),
                               (q + f"attn.{kv}.norm.weight", (c,), "norm")]
                    sp.append((q + f"attn.{kv}.proj.weight", (d, c, 1, 1)))
                sp += [(q + "attn.output.proj.weight", (c, h * d, 1, 1)), (q + "layer_scale.gamma", (c,), "norm")]
            c = out
        ends.append(c)
    cat = ends[-2] + ends[-1]
    mid = _make_divisible(cat * 2.0)
    sp += [(p + "msfa.ffn.pw_exp.conv.weight", (mid, cat, 1, 1)), (p + "msfa.ffn.pw_exp.bn.weight", (mid,), "norm"),
           (p + "msfa.ffn.pw_proj.conv.weight", (2048, mid, 1, 1)), (p + "msfa.ffn.pw_proj.bn.weight", (2048,), "norm"),
           (p + "msfa.norm.weight", (2048,), "norm")]
    return sp


def gemma3n_audio_specs(ac: dict) -> List[WeightSpec]:
    """Gemma3nAudioEncoder's weights for audio_config ac (names of families-gemma-phi.md B6)."""
    H, C0, C1 = ac["hidden_size"], ac["sscp_conv_channel_size"][0], ac["sscp_conv_channel_size"][1]
    (kh0, kw0), (kh1, kw1) = ac["sscp_conv_kernel_size"]
    f = ac["input_feat_size"]
    for (_, kw), (_, sw) in zip(ac["sscp_conv_kernel_size"], ac["sscp_conv_stride_size"]):
        f = (f + 2 - kw) // sw + 1
    p = "model.audio_tower."
    sp: List[WeightSpec] = [
        (p + "subsample_conv_projection.conv_0.conv.weight", (C0, 1, kh0, kw0)),
        (p + "subsample_conv_projection.conv_0.norm.weight", (C0,), "norm"),
        (p + "subsample_conv_projection.conv_1.conv.weight", (C1, C0, kh1, kw1)),
        (p + "subsample_conv_projection.conv_1.norm.weight", (C1,), "norm"),
        (p + "subsample_conv_projection.input_proj_linear.weight", (H, f * C1))]
    D = H // ac["conf_num_attention_heads"]
    for i in range(ac["conf_num_hidden_layers"]):
        b = f"{p}conformer.{i}."
        for ff in ("ffw_layer_start", "ffw_layer_end"):
            sp += [(b + ff + ".pre_layer_norm.weight", (H,)), (b + ff + ".ffw_layer_1.weight", (4 * H, H)),
                   (b + ff + ".ffw_layer_2.weight", (H, 4 * H)), (b + ff + ".post_layer_norm.weight", (H,))]
        sp += [(b + "attention.pre_attn_norm.weight", (H,)), (b + "attention.attn.per_dim_scale", (D,)),
               (b + "attention.attn.q_proj.weight", (H, H)), (b + "attention.attn.k_proj.weight", (H, H)),
               (b + "attention.attn.v_proj.weight", (H, H)),
               (b + "attention.attn.relative_position_embedding.pos_proj.weight", (H, H)),
               (b + "attention.post.weight", (H, H)), (b + "attention.post_norm.weight", (H,)),
               (b + "lconv1d.pre_layer_norm.weight", (H,)), (b + "lconv1d.linear_start.weight", (2 * H, H)),
               (b + "lconv1d.depthwise_conv1d.weight", (H, 1, ac["conf_conv_kernel_size"])),
               (b + "lconv1d.conv_norm.weight", (H,)), (b + "lconv1d.linear_end.weight", (H, H)),
               (b + "norm.weight", (H,))]
    return sp


def gemma3n_tokenizer() -> Tuple[BpeTokenizer, Tuple[str, ...]]:
    """The tiny gemma3n tokenizer and its multimodal tokens: those are the tokenizer's last ids, as in
    the real one (<end_of_image> <image_soft_token> ... <end_of_audio> <audio_soft_token> ...)."""
    mm = GEMMA3N_MM_TINY
    mm_tokens = ("<end_of_image>", "<image_soft_token>") + \
        tuple(f"<vision_token_{i}>" for i in range(2, mm["vision_vocab"])) + ("<end_of_audio>", "<audio_soft_token>") + \
        tuple(f"<audio_token_{i}>" for i in range(2, mm["audio_vocab"]))
    return train_tokenizer("gemma3n", extra_specials=tuple(FAMILIES["gemma3n_text"].extra_specials) + mm_tokens), mm_tokens


def main_gemma3n(args) -> int:
    t0 = time.time()
    if args.verify or args.dims == "real" or args.preset is not None:
        raise SystemExit("--family gemma3n: tiny dims only, no --verify (use gemma3n_text --preset for real dims)")
    fam = FAMILIES["gemma3n_text"]
    mm = GEMMA3N_MM_TINY
    tok, mm_tokens = gemma3n_tokenizer()
    td, _ = resolve_dims("gemma3n_text", fam, "tiny", None, tok)
    td.pop("tie", None)
    vt = tok.size - len(mm_tokens)  # text ids (and the per-layer table) end here; vision, then audio ids
    td["ple_vocab"] = vt
    td["vocab"] = vt + mm["vision_vocab"] + mm["audio_vocab"]
    ids = special_ids(tok)
    text_cfg, text_w = fam.build(td, ids, True)
    specs: List[WeightSpec] = []
    for sp in text_w:  # model.* -> model.language_model.*
        specs.append(("model.language_model." + sp[0][len("model."):], sp[1], sp[2] if len(sp) > 2 else weight_init(sp),
                      sp[0]))
    H = td["hidden"]
    for key, D, V in (("embed_vision", mm["vision_hidden"], mm["vision_vocab"]),
                      ("embed_audio", mm["audio_hidden"], mm["audio_vocab"])):
        p = f"model.{key}."
        specs += [(p + "embedding.weight", (V, D), "normal*20", None), (p + "hard_embedding_norm.weight", (D,), "norm", None),
                  (p + "soft_embedding_norm.weight", (D,), "norm", None),
                  (p + "embedding_projection.weight", (H, D), "normal", None)]
    specs = [(s[0], s[1], s[2], s[3] or s[0]) for s in specs]
    # --vision-dims real: gemma-3n-E2B-it's MobileNetV5-300M itself (channel multiplier 1, for benchmarks)
    mult = 1.0 if args.vision_dims == "real" else mm["vision_multiplier"]
    vision_cfg = {"architecture": "mobilenetv5_300m_enc", "do_pooling": False, "hidden_size": mm["vision_hidden"],
                  "initializer_range": 0.02, "model_type": "gemma3n_vision", "rms_norm_eps": 1e-6,
                  "vocab_offset": vt, "vocab_size": mm["vision_vocab"]}
    if mult < 1:
        vision_cfg["model_args"] = {"channel_multiplier": mult}
    specs += [(sp[0], sp[1], sp[2] if len(sp) > 2 else weight_init(sp), sp[0]) for sp in gemma3n_vision_specs(mult)]
    audio_cfg = {"conf_attention_chunk_size": 4, "conf_attention_context_left": 5, "conf_attention_context_right": 0,
                 "conf_attention_logit_cap": 50.0, "conf_conv_kernel_size": 3, "conf_num_attention_heads": 2,
                 "conf_num_hidden_layers": 2, "conf_reduction_factor": 4, "conf_residual_weight": 0.5,
                 "gradient_clipping": 1e10, "hidden_size": mm["audio_hidden"], "input_feat_size": 128,
                 "model_type": "gemma3n_audio", "rms_norm_eps": 1e-6, "sscp_conv_channel_size": [8, 4],
                 "sscp_conv_group_norm_eps": 1e-3, "sscp_conv_kernel_size": [[3, 3], [3, 3]],
                 "sscp_conv_stride_size": [[2, 2], [2, 2]], "vocab_offset": vt + mm["vision_vocab"],
                 "vocab_size": mm["audio_vocab"]}
    if args.audio_dims == "real":  # gemma-3n-E2B-it's USM tower behind the tiny text model (encoder benchmarks)
        audio_cfg.update({"conf_attention_chunk_size": 12, "conf_attention_context_left": 13, "conf_conv_kernel_size": 5,
                          "conf_num_attention_heads": 8, "conf_num_hidden_layers": 12, "hidden_size": 1536,
                          "sscp_conv_channel_size": [128, 32]})
        specs = [sp for sp in specs if not sp[0].startswith("model.embed_audio.")]
        D = audio_cfg["hidden_size"]
        p = "model.embed_audio."
        specs += [(p + "embedding.weight", (mm["audio_vocab"], D), "normal*20", p + "embedding.weight"),
                  (p + "hard_embedding_norm.weight", (D,), "norm", p + "hard_embedding_norm.weight"),
                  (p + "soft_embedding_norm.weight", (D,), "norm", p + "soft_embedding_norm.weight"),
                  (p + "embedding_projection.weight", (H, D), "normal", p + "embedding_projection.weight")]
    specs += [(s[0], s[1], s[2] if len(s) > 2 else weight_init(s), s[0]) for s in gemma3n_audio_specs(audio_cfg)]
    text_cfg["torch_dtype"] = DTYPES[args.dtype][2]
    config = {"architectures": ["Gemma3nForConditionalGeneration"], "model_type": "gemma3n",
              "audio_config": audio_cfg, "vision_config": vision_cfg, "text_config": text_cfg,
              "audio_soft_tokens_per_image": 188, "vision_soft_tokens_per_image": 256,
              "boi_token_id": tok.specials["<start_of_image>"], "eoi_token_id": vt, "image_token_id": vt + 1,
              "boa_token_id": tok.specials["<start_of_audio>"], "eoa_token_id": vt + mm["vision_vocab"],
              "audio_token_id": vt + mm["vision_vocab"] + 1, "eos_token_id": ids["eos"], "initializer_range": 0.02,
              "torch_dtype": DTYPES[args.dtype][2], "transformers_version": "4.53.0"}
    os.makedirs(args.out, exist_ok=True)
    write_json(os.path.join(args.out, "config.json"), config)
    gen = {"bos_token_id": ids["bos"], "do_sample": False, "eos_token_id": ids["gen_eos"],
           "pad_token_id": ids["pad"], "transformers_version": "4.53.0"}
    write_json(os.path.join(args.out, "generation_config.json"), gen)
    write_json(os.path.join(args.out, "tokenizer.json"), tokenizer_json(tok, args.merges_style), sort_keys=False)
    write_json(os.path.join(args.out, "tokenizer_config.json"), tokenizer_config_json(tok))
    # tiny: 512x512 images (the fusion pools 32 -> 16 by 2 where 768 pools 48 -> 16 by 3), so the
    # ref backend's double-precision attention over the key pixels stays in seconds per image
    pre = dict(GEMMA3N_PREPROCESSOR)
    if args.vision_dims != "real":
        pre["size"] = {"height": 512, "width": 512}
    write_json(os.path.join(args.out, "preprocessor_config.json"), pre)
    write_json(os.path.join(args.out, "processor_config.json"),
               {"audio_seq_length": 188, "image_seq_length": 256, "processor_class": "Gemma3nProcessor"})
    files = write_weights(args.out, specs, args.seed, STD_TINY, args.dtype, args.shards)
    nparams = sum(int(np.prod(s[1], dtype=np.int64)) for s in specs)
    nbytes = sum(os.path.getsize(os.path.join(args.out, f)) for f in files)
    print(f"mktiny: gemma3n [tiny] dtype={args.dtype} seed={args.seed} -> {args.out}")
    print(f"  {len(specs)} tensors, {nparams:,} params, {nbytes / 2**20:.1f} MiB; text ids [0, {vt}), vision "
          f"[{vt}, {vt + mm['vision_vocab']}), audio up to {td['vocab']}; {time.time() - t0:.2f} s")
    return 0


# -----------------------------------------------------------------------------
# Qwen2-VL / Qwen2.5-VL (Qwen2VLForConditionalGeneration [qwen2_vl],
# Qwen2_5_VLForConditionalGeneration [qwen2_5_vl]): a ViT with 2-D RoPE, the PatchMerger
# and a qwen2 text model with M-RoPE (rope_scaling {type: mrope, mrope_section}); the
# text config is flat at the top level as in the official checkpoints. Weight names are the
# official on-disk ones (visual.*, model.*, lm_head.*; reference notes §5.6, §6.4).
# Tokenizer: the qwen2 style plus Qwen's vision specials in their real relative order
# (<|vision_start|>, <|vision_end|>, <|vision_pad|>, <|image_pad|>, <|video_pad|>); the
# config's token ids are the tokenizer's.
# -----------------------------------------------------------------------------

QWEN2VL_SPECIALS = ("<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>",
                    "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
                    "<|image_pad|>", "<|video_pad|>")

# Qwen/Qwen2-VL-2B-Instruct chat_template (Qwen2.5-VL uses the same one)
QWEN2VL_CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}Picture {{ image_count.value }}: "
    "{% endif %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

# Tiny towers: patch 14, temporal 2, merge 2 (K = 1176), head_dim 8 (2-D RoPE needs a multiple
# of 4). Qwen2.5-VL: window 56 px = 2x2 merged tokens (4x4 patches), full attention in blocks
# 1 and 3, so windows and whole-image blocks alternate.
QWEN2VL_VISION_TINY = {
    "qwen2_vl": {"depth": 3, "width": 32, "heads": 4, "mlp_ratio": 2, "patch": 14, "temporal": 2, "merge": 2},
    "qwen2_5_vl": {"depth": 4, "width": 32, "heads": 4, "intermediate": 48, "patch": 14, "temporal": 2,
                   "merge": 2, "window": 56, "fullatt": [1, 3]},
}
# tiny text: qwen2 tiny dims (hidden 64, head_dim 16) with mrope_section [2, 3, 3] (sum = 8)
QWEN2VL_TEXT_MROPE_TINY = [2, 3, 3]
QWEN2VL_TINY_MAX_PIXELS = 28 * 28 * 64  # at most 256 patches (64 merged tokens) per image

QWEN2VL_PRESETS = {
    # Qwen/Qwen2-VL-2B-Instruct's vision tower and merger (675 M params) in front of a small
    # text model of the 2B's width (1536: the merger output), for tower benchmarks
    "qwen2-vl-2b-tower": {
        "family": "qwen2_vl",
        "tower": {"depth": 32, "width": 1280, "heads": 16, "mlp_ratio": 4, "patch": 14, "temporal": 2, "merge": 2},
        "text_dims": {"hidden": 1536, "layers": 2, "heads": 12, "kv_heads": 2, "head_dim": 128,
                      "intermediate": 1024, "vocab": None, "max_pos": 32768, "rms_eps": 1e-6,
                      "rope_theta": 1000000.0},
        "mrope_section": [16, 24, 24],
    },
    # Qwen/Qwen2-VL-2B-Instruct whole: the tower above and its Qwen2-1.5B-shaped text model
    # (engine benchmarks: bench/serve.py --image with a real-size decoder)
    "qwen2-vl-2b": {
        "family": "qwen2_vl",
        "tower": {"depth": 32, "width": 1280, "heads": 16, "mlp_ratio": 4, "patch": 14, "temporal": 2, "merge": 2},
        "text_dims": {"hidden": 1536, "layers": 28, "heads": 12, "kv_heads": 2, "head_dim": 128,
                      "intermediate": 8960, "vocab": 151936, "max_pos": 32768, "rms_eps": 1e-6,
                      "rope_theta": 1000000.0},
        "mrope_section": [16, 24, 24],
    },
    # Qwen/Qwen2.5-VL-3B-Instruct's tower and merger (out 2048) with a small text model
    "qwen2.5-vl-3b-tower": {
        "family": "qwen2_5_vl",
        "tower": {"depth": 32, "width": 1280, "heads": 16, "intermediate": 3420, "patch": 14, "temporal": 2,
                  "merge": 2, "window": 112, "fullatt": [7, 15, 23, 31]},
        "text_dims": {"hidden": 2048, "layers": 2, "heads": 16, "kv_heads": 2, "head_dim": 128,
                      "intermediate": 1024, "vocab": None, "max_pos": 128000, "rms_eps": 1e-6,
                      "rope_theta": 1000000.0},
        "mrope_section": [16, 24, 24],
    },
}


def qwen2vl_vision_weights(family: str, v: dict, out_hidden: int) -> List[WeightSpec]:
    """visual.* weights in HF module order (notes §5.6 / §6.4)."""
    C, p, T = v["width"], v["patch"], v["temporal"]
    U = C * v["merge"] ** 2
    v2 = family == "qwen2_vl"
    I = int(C * v["mlp_ratio"]) if v2 else v["intermediate"]
    w: List[WeightSpec] = [("visual.patch_embed.proj.weight", (C, 3, T, p, p), "normal*0.25")]
    for i in range(v["depth"]):
        b = f"visual.blocks.{i}."
        w.append((b + "norm1.weight", (C,), "norm"))
        if v2:
            w.append((b + "norm1.bias", (C,), "normal*0.5"))
        w.append((b + "norm2.weight", (C,), "norm"))
        if v2:
            w.append((b + "norm2.bias", (C,), "normal*0.5"))
        w += [(b + "attn.qkv.weight", (3 * C, C)), (b + "attn.qkv.bias", (3 * C,), "normal*0.5"),
              (b + "attn.proj.weight", (C, C)), (b + "attn.proj.bias", (C,), "normal*0.5")]
        if v2:
            w += [(b + "mlp.fc1.weight", (I, C)), (b + "mlp.fc1.bias", (I,), "normal*0.5"),
                  (b + "mlp.fc2.weight", (C, I)), (b + "mlp.fc2.bias", (C,), "normal*0.5")]
        else:
            w += [(b + "mlp.gate_proj.weight", (I, C)), (b + "mlp.gate_proj.bias", (I,), "normal*0.5"),
                  (b + "mlp.up_proj.weight", (I, C)), (b + "mlp.up_proj.bias", (I,), "normal*0.5"),
                  (b + "mlp.down_proj.weight", (C, I)), (b + "mlp.down_proj.bias", (C,), "normal*0.5")]
    w.append(("visual.merger.ln_q.weight", (C,), "norm"))
    if v2:
        w.append(("visual.merger.ln_q.bias", (C,), "normal*0.5"))
    w += [("visual.merger.mlp.0.weight", (U, U)), ("visual.merger.mlp.0.bias", (U,), "normal*0.5"),
          ("visual.merger.mlp.2.weight", (out_hidden, U)), ("visual.merger.mlp.2.bias", (out_hidden,), "normal*0.5")]
    return w


def qwen2vl_vision_config(family: str, v: dict, out_hidden: int) -> dict:
    common = {"depth": v["depth"], "num_heads": v["heads"], "in_chans": 3, "patch_size": v["patch"],
              "spatial_patch_size": v["patch"], "spatial_merge_size": v["merge"],
              "temporal_patch_size": v["temporal"]}
    if family == "qwen2_vl":  # Qwen2-VL-2B: embed_dim = width, hidden_size = merger output
        return dict(common, embed_dim=v["width"], mlp_ratio=v["mlp_ratio"], hidden_size=out_hidden)
    return dict(common, hidden_act="silu", hidden_size=v["width"], intermediate_size=v["intermediate"],
                out_hidden_size=out_hidden, window_size=v["window"], fullatt_block_indexes=list(v["fullatt"]),
                tokens_per_second=2)


def build_qwen2vl(family: str, v: dict, td: dict, mrope: List[int], tok: BpeTokenizer, tie: bool,
                  max_pixels: int) -> Tuple[dict, List[WeightSpec], dict]:
    """config.json, weights, preprocessor_config.json."""
    assert td["heads"] * td["head_dim"] == td["hidden"], "qwen2 text needs hidden == heads * head_dim"
    assert sum(mrope) * 2 == td["head_dim"], f"mrope_section {mrope} must sum to head_dim / 2"
    assert (v["width"] // v["heads"]) % 4 == 0 and v["width"] % v["heads"] == 0, "vision head_dim % 4"
    ids = special_ids(tok)
    text_cfg, text_w = build_qwen2(dict(td, rope_scaling={"type": "mrope", "mrope_section": list(mrope)}), ids, tie)
    sp = tok.specials
    config = dict(text_cfg)
    config.update({
        "architectures": ["Qwen2VLForConditionalGeneration" if family == "qwen2_vl"
                          else "Qwen2_5_VLForConditionalGeneration"],
        "model_type": family,
        "vision_start_token_id": sp["<|vision_start|>"],
        "vision_end_token_id": sp["<|vision_end|>"],
        "vision_token_id": sp["<|vision_pad|>"],
        "image_token_id": sp["<|image_pad|>"],
        "video_token_id": sp["<|video_pad|>"],
        "vision_config": qwen2vl_vision_config(family, v, td["hidden"]),
    })
    specs = [(s[0], s[1], weight_init(s)) for s in text_w]
    specs += [(s[0], s[1], weight_init(s)) for s in qwen2vl_vision_weights(family, v, td["hidden"])]
    factor = v["patch"] * v["merge"]
    pre = {"do_convert_rgb": True, "do_normalize": True, "do_rescale": True, "do_resize": True,
           "image_mean": OPENAI_CLIP_MEAN, "image_std": OPENAI_CLIP_STD,
           "image_processor_type": "Qwen2VLImageProcessor", "processor_class":
           "Qwen2VLProcessor" if family == "qwen2_vl" else "Qwen2_5_VLProcessor",
           "merge_size": v["merge"], "min_pixels": factor * factor * 4, "max_pixels": max_pixels,
           "patch_size": v["patch"], "resample": 3, "rescale_factor": 0.00392156862745098,
           "size": {"longest_edge": max_pixels, "shortest_edge": factor * factor * 4},
           "temporal_patch_size": v["temporal"]}
    return config, specs, pre


# -----------------------------------------------------------------------------
# Qwen3-VL (Qwen3VLForConditionalGeneration [qwen3_vl]): the Qwen3-VL tower (patch 16 Conv3d
# with bias, a learned 4x4 position table interpolated per grid, fc1/fc2 blocks, the merger and
# DeepStack mergers after blocks 0 and 1) and a qwen3 text model in text_config (interleaved
# M-RoPE [6, 5, 5] over head_dim 32, rope_theta 5e6); weights model.visual.*,
# model.language_model.*; preprocessor mean = std = 0.5. qwen3_vl_moe
# (Qwen3VLMoeForConditionalGeneration): the same with qwen3_moe's tiny experts (8, top 2,
# layer 1 dense, moe_intermediate 48 with hidden 64) stored fused as HF stores them.
# -----------------------------------------------------------------------------

QWEN3VL_VISION_TINY = {"depth": 3, "width": 32, "heads": 2, "intermediate": 64, "patch": 16, "temporal": 2,
                       "merge": 2, "n_pos": 16, "deepstack": [0, 1]}
QWEN3VL_MROPE_TINY = [6, 5, 5]
QWEN3VL_PRESETS = {
    # Qwen/Qwen3-VL-2B-Instruct's tower, merger and DeepStack mergers in front of a 2-layer text
    # model of the 2B's width (2048: the merger output; 3 layers, one per DeepStack merger)
    "qwen3-vl-2b-tower": {
        "family": "qwen3_vl",
        "tower": {"depth": 24, "width": 1024, "heads": 16, "intermediate": 4096, "patch": 16, "temporal": 2,
                  "merge": 2, "n_pos": 2304, "deepstack": [5, 11, 17]},
        "text_dims": {"hidden": 2048, "layers": 3, "heads": 16, "kv_heads": 8, "head_dim": 128,
                      "intermediate": 1024, "vocab": None, "max_pos": 262144, "rms_eps": 1e-6,
                      "rope_theta": 5000000.0},
        "mrope_section": [24, 20, 20],
    },
    # Qwen/Qwen3-VL-30B-A3B-Instruct's tower (27 x 1152, DeepStack after 8, 16, 24) and 4 of its 48
    # text layers (128 fused experts of 768, top 8), untied head: MoE decode benchmarks
    "qwen3-vl-30b-a3b-4l": {
        "family": "qwen3_vl_moe",
        "tower": {"depth": 27, "width": 1152, "heads": 16, "intermediate": 4304, "patch": 16, "temporal": 2,
                  "merge": 2, "n_pos": 2304, "deepstack": [8, 16, 24]},
        "text_dims": {"hidden": 2048, "layers": 4, "heads": 32, "kv_heads": 4, "head_dim": 128,
                      "intermediate": 6144, "vocab": 151936, "max_pos": 262144, "rms_eps": 1e-6,
                      "rope_theta": 5000000.0, "experts": 128, "experts_per_tok": 8, "moe_intermediate": 768,
                      "norm_topk_prob": True, "mlp_only_layers": [], "tie": False},
        "mrope_section": [24, 20, 20],
    },
}


def fuse_experts(w: List[WeightSpec], d: dict) -> List[WeightSpec]:
    """Qwen3VLMoeTextExperts storage: each layer's per-expert gate/up/down tensors become
    mlp.experts.gate_up_proj [E, H, 2 Im] (x . W: gate columns first) and down_proj [E, Im, H]."""
    H, E, Im = d["hidden"], d["experts"], d["moe_intermediate"]
    out: List[WeightSpec] = []
    for sp in w:
        m = re.match(r"(model\.layers\.\d+\.mlp\.experts\.)(\d+)\.(gate|up|down)_proj\.weight$", sp[0])
        if not m:
            out.append(sp)
        elif m.group(2) == "0" and m.group(3) == "gate":
            out += [(m.group(1) + "gate_up_proj", (E, H, 2 * Im)), (m.group(1) + "down_proj", (E, Im, H))]
    return out


def main_qwen3vl(args) -> int:
    t0 = time.time()
    moe = args.family == "qwen3_vl_moe"
    if args.verify:
        raise SystemExit(f"--verify is not implemented for --family {args.family}")
    tok = train_tokenizer("qwen2", extra_specials=QWEN2VL_SPECIALS)
    if args.dims == "real" or args.preset is not None:
        names = [k for k, p in QWEN3VL_PRESETS.items() if p["family"] == args.family]
        preset = args.preset or (names[0] if names else None)
        if preset not in names:
            raise SystemExit(f"{args.family} has no preset {preset!r} (has: {', '.join(names) or 'none'})")
        p = QWEN3VL_PRESETS[preset]
        v, td, mrope, label, std = dict(p["tower"]), dict(p["text_dims"]), p["mrope_section"], preset, STD_REAL
        td["vocab"] = td["vocab"] or tok.size
        min_pixels, max_pixels = 65536, 16777216  # the official preprocessor_config
        if args.tie is None and "tie" in td:
            args.tie = td["tie"]
        td.pop("tie", None)
    else:
        v, mrope, label, std = dict(QWEN3VL_VISION_TINY), QWEN3VL_MROPE_TINY, "tiny", STD_TINY
        base = "qwen3_moe" if moe else "qwen3"  # MoE: 8 experts, top 2, layer 1 dense, 2 * 48 != 64
        td, _ = resolve_dims(base, FAMILIES[base], "tiny", None, tok)
        td.pop("tie", None)
        td["layers"] = 3
        td["rope_theta"] = 5000000.0
        factor = v["patch"] * v["merge"]
        min_pixels, max_pixels = factor * factor * 4, factor * factor * 64
    ids = special_ids(tok)
    tie = True if args.tie is None else bool(args.tie)
    text_cfg, text_w = (build_qwen3_moe if moe else build_qwen3)(td, ids, tie)
    if moe:
        text_w = fuse_experts(text_w, td)
    for k in ("architectures", "max_window_layers", "sliding_window", "use_sliding_window", "bos_token_id",
              "eos_token_id", "output_router_logits"):
        text_cfg.pop(k, None)
    text_cfg.update({"model_type": "qwen3_vl_moe_text" if moe else "qwen3_vl_text", "dtype": DTYPES[args.dtype][2],
                     "rope_scaling": {"mrope_interleaved": True, "mrope_section": list(mrope),
                                      "rope_type": "default"}})
    C, p, T, U, D = v["width"], v["patch"], v["temporal"], v["width"] * v["merge"] ** 2, td["hidden"]
    specs = [("model.language_model." + s[0][len("model."):] if s[0].startswith("model.") else s[0], s[1],
              s[2] if len(s) > 2 else weight_init(s), s[0]) for s in text_w]
    w: List[WeightSpec] = [("model.visual.patch_embed.proj.weight", (C, 3, T, p, p), "normal*0.25"),
                           ("model.visual.patch_embed.proj.bias", (C,), "normal*0.5"),
                           ("model.visual.pos_embed.weight", (v["n_pos"], C), "normal*2")]
    for i in range(v["depth"]):
        b = f"model.visual.blocks.{i}."
        w += [(b + "norm1.weight", (C,), "norm"), (b + "norm1.bias", (C,), "normal*0.5"),
              (b + "norm2.weight", (C,), "norm"), (b + "norm2.bias", (C,), "normal*0.5"),
              (b + "attn.qkv.weight", (3 * C, C)), (b + "attn.qkv.bias", (3 * C,), "normal*0.5"),
              (b + "attn.proj.weight", (C, C)), (b + "attn.proj.bias", (C,), "normal*0.5"),
              (b + "mlp.linear_fc1.weight", (v["intermediate"], C)), (b + "mlp.linear_fc1.bias", (v["intermediate"],), "normal*0.5"),
              (b + "mlp.linear_fc2.weight", (C, v["intermediate"])), (b + "mlp.linear_fc2.bias", (C,), "normal*0.5")]
    w += [("model.visual.merger.norm.weight", (C,), "norm"), ("model.visual.merger.norm.bias", (C,), "normal*0.5"),
          ("model.visual.merger.linear_fc1.weight", (U, U)), ("model.visual.merger.linear_fc1.bias", (U,), "normal*0.5"),
          ("model.visual.merger.linear_fc2.weight", (D, U)), ("model.visual.merger.linear_fc2.bias", (D,), "normal*0.5")]
    for k in range(len(v["deepstack"])):
        b = f"model.visual.deepstack_merger_list.{k}."
        w += [(b + "norm.weight", (U,), "norm"), (b + "norm.bias", (U,), "normal*0.5"),
              (b + "linear_fc1.weight", (U, U)), (b + "linear_fc1.bias", (U,), "normal*0.5"),
              (b + "linear_fc2.weight", (D, U)), (b + "linear_fc2.bias", (D,), "normal*0.5")]
    specs += [(s[0], s[1], s[2] if len(s) > 2 else weight_init(s), s[0]) for s in w]
    sp = tok.specials
    config = {"architectures": ["Qwen3VLMoeForConditionalGeneration" if moe else "Qwen3VLForConditionalGeneration"],
              "model_type": args.family,
              "image_token_id": sp["<|image_pad|>"], "video_token_id": sp["<|video_pad|>"],
              "vision_start_token_id": sp["<|vision_start|>"], "vision_end_token_id": sp["<|vision_end|>"],
              "tie_word_embeddings": tie, "text_config": text_cfg, "dtype": DTYPES[args.dtype][2],
              "transformers_version": "4.57.0",
              "vision_config": {"model_type": args.family, "depth": v["depth"], "hidden_size": C,
                                "hidden_act": "gelu_pytorch_tanh", "intermediate_size": v["intermediate"],
                                "num_heads": v["heads"], "in_channels": 3, "patch_size": p,
                                "spatial_merge_size": v["merge"], "temporal_patch_size": T, "out_hidden_size": D,
                                "num_position_embeddings": v["n_pos"], "deepstack_visual_indexes": v["deepstack"],
                                "initializer_range": 0.02}}
    pre = {"do_convert_rgb": True, "do_normalize": True, "do_rescale": True, "do_resize": True,
           "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "image_processor_type": "Qwen2VLImageProcessor",
           "processor_class": "Qwen3VLProcessor", "merge_size": v["merge"], "patch_size": p, "resample": 3,
           "rescale_factor": 0.00392156862745098, "temporal_patch_size": T,
           "size": {"longest_edge": max_pixels, "shortest_edge": min_pixels}}
    os.makedirs(args.out, exist_ok=True)
    write_json(os.path.join(args.out, "config.json"), config)
    gen = {"bos_token_id": ids["bos"], "do_sample": False, "eos_token_id": ids["gen_eos"],
           "pad_token_id": ids["pad"], "transformers_version": "4.57.0"}
    write_json(os.path.join(args.out, "generation_config.json"), gen)
    write_json(os.path.join(args.out, "tokenizer.json"), tokenizer_json(tok, args.merges_style), sort_keys=False)
    tc = tokenizer_config_json(tok)
    tc["chat_template"] = QWEN2VL_CHAT_TEMPLATE
    tc["additional_special_tokens"] = ["<|im_start|>", "<|im_end|>"] + list(QWEN2VL_SPECIALS)
    write_json(os.path.join(args.out, "tokenizer_config.json"), tc)
    write_json(os.path.join(args.out, "chat_template.json"), {"chat_template": QWEN2VL_CHAT_TEMPLATE})
    write_json(os.path.join(args.out, "preprocessor_config.json"), pre)
    files = write_weights(args.out, specs, args.seed, std, args.dtype, args.shards)
    nparams = sum(int(np.prod(s[1], dtype=np.int64)) for s in specs)
    print(f"mktiny: {args.family} [{label}] dtype={args.dtype} seed={args.seed} -> {args.out}")
    print(f"  {len(specs)} tensors, {nparams:,} params; vision depth {v['depth']}, DeepStack after {v['deepstack']}; "
          f"{time.time() - t0:.2f} s")
    return 0


def main_qwen2vl(args) -> int:
    t0 = time.time()
    if args.verify:
        raise SystemExit(f"--verify is not implemented for --family {args.family}")
    if args.dims == "real" or args.preset is not None:
        names = [k for k, p in QWEN2VL_PRESETS.items() if p["family"] == args.family]
        preset = args.preset or names[0]
        if preset not in names:
            raise SystemExit(f"{args.family} has no preset {preset!r} (has: {', '.join(names)})")
        p = QWEN2VL_PRESETS[preset]
        v, td, mrope, label, std = dict(p["tower"]), dict(p["text_dims"]), p["mrope_section"], preset, STD_REAL
        max_pixels = 12845056  # the official preprocessor_config
    else:
        v, td, mrope, label, std = dict(QWEN2VL_VISION_TINY[args.family]), None, QWEN2VL_TEXT_MROPE_TINY, "tiny", STD_TINY
        max_pixels = QWEN2VL_TINY_MAX_PIXELS
    if args.max_pixels is not None:
        max_pixels = args.max_pixels
    tok = train_tokenizer("qwen2", extra_specials=QWEN2VL_SPECIALS)
    if td is None:
        td, _ = resolve_dims("qwen2", FAMILIES["qwen2"], "tiny", None, tok)
    td.pop("tie", None)
    td["vocab"] = td["vocab"] or tok.size
    td.setdefault("rope_scaling", None)
    tie_flag = True if args.tie is None else bool(args.tie)  # Qwen2-VL-2B / 2.5-VL-3B tie
    config, specs, pre = build_qwen2vl(args.family, v, td, mrope, tok, tie_flag, max_pixels)
    if args.new_names:  # transformers >= 4.52 spelling; values still seeded by the old name
        def rename(n: str) -> str:
            if n.startswith("visual."):
                return "model." + n
            return "model.language_model." + n[len("model."):] if n.startswith("model.") else n
        specs = [(rename(s[0]), s[1], weight_init(s), s[0]) for s in specs]
    config["torch_dtype"] = DTYPES[args.dtype][2]
    config["transformers_version"] = "4.52.0" if args.new_names else "4.45.0" if args.family == "qwen2_vl" else "4.49.0"
    os.makedirs(args.out, exist_ok=True)
    ids = special_ids(tok)
    write_json(os.path.join(args.out, "config.json"), config)
    gen = {"bos_token_id": ids["bos"], "do_sample": False, "eos_token_id": ids["gen_eos"],
           "pad_token_id": ids["pad"], "transformers_version": config["transformers_version"]}
    write_json(os.path.join(args.out, "generation_config.json"), gen)
    write_json(os.path.join(args.out, "tokenizer.json"), tokenizer_json(tok, args.merges_style), sort_keys=False)
    tc = tokenizer_config_json(tok)
    tc["chat_template"] = QWEN2VL_CHAT_TEMPLATE
    tc["additional_special_tokens"] = ["<|im_start|>", "<|im_end|>"] + list(QWEN2VL_SPECIALS)
    write_json(os.path.join(args.out, "tokenizer_config.json"), tc)
    write_json(os.path.join(args.out, "chat_template.json"), {"chat_template": QWEN2VL_CHAT_TEMPLATE})
    write_json(os.path.join(args.out, "preprocessor_config.json"), pre)
    files = write_weights(args.out, specs, args.seed, std, args.dtype, args.shards)
    nparams = sum(int(np.prod(s[1], dtype=np.int64)) for s in specs)
    nbytes = sum(os.path.getsize(os.path.join(args.out, f)) for f in files)
    print(f"mktiny: {args.family} [{label}] dtype={args.dtype} tie={tie_flag} names={'new' if args.new_names else 'old'} "
          f"seed={args.seed} -> {args.out}")
    print(f"  {len(specs)} tensors, {nparams:,} params, {nbytes / 2**20:.1f} MiB; vision depth {v['depth']} width "
          f"{v['width']}, patch {v['patch']}, merge {v['merge']}; <|image_pad|> = {config['image_token_id']}; "
          f"{time.time() - t0:.2f} s")
    return 0


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
NORM0_STD = 0.1    # Gemma (1 + w) norm weights = N(0, NORM0_STD)
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


def parse_init(init: str) -> Tuple[str, float]:
    """Split an init string: "normal*K" -> ("normal", K), "norm0+C" -> ("norm0", C), else (init, 1 or 0)."""
    m = re.fullmatch(r"(normal)\*([0-9.]+)|(norm0)\+([0-9.]+)", init)
    if m:
        return (m.group(1), float(m.group(2))) if m.group(1) else (m.group(3), float(m.group(4)))
    return init, (1.0 if init == "normal" else 0.0)


def tensor_chunks(spec: WeightSpec, seed: int, std: float, dtype: str, limit: Optional[int] = None):
    """Yield the tensor's bytes (row-major) in chunks of CHUNK elements.

    Values come from a generator seeded by (seed, crc32(name)), so a tensor does
    not depend on the others or on the order they are written in.
    """
    name, shape = spec[0], spec[1]
    init, k = parse_init(weight_init(spec))
    n = int(np.prod(shape, dtype=np.int64))
    if limit is not None:
        n = min(n, limit)
    seed_name = spec[3] if len(spec) > 3 else name  # llava: the old spelling, whatever is written
    rng = np.random.default_rng([seed, zlib.crc32(seed_name.encode())])
    done = 0
    while done < n:
        m = min(CHUNK, n - done)
        if init == "normal":
            a = rng.standard_normal(m, dtype=np.float32)
            a *= np.float32(std * k)
        elif init == "norm":
            a = rng.standard_normal(m, dtype=np.float32)
            a *= np.float32(NORM_NOISE)
            a += np.float32(1.0)
        elif init == "norm0":
            a = rng.standard_normal(m, dtype=np.float32)
            a *= np.float32(NORM0_STD)
            if k:
                a += np.float32(k)
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


def check_family_config(cfg: dict, expect: Dict[str, WeightSpec]) -> None:
    """Family-specific consistency of config.json with the weights written."""
    def check(cond, msg):
        if not cond:
            raise AssertionError(msg)

    mt, H, nh = cfg["model_type"], cfg["hidden_size"], cfg["num_attention_heads"]
    hd = cfg.get("head_dim") or H // nh
    nkv = cfg["num_key_value_heads"]
    if mt in ("qwen3", "gemma3_text"):
        check(expect["model.layers.0.self_attn.q_norm.weight"][1] == (hd,), "q_norm shape != [head_dim]")
        check(expect["model.layers.0.self_attn.q_proj.weight"][1] == (nh * hd, H), "q_proj shape")
    if mt == "phi3":
        check("head_dim" not in cfg, "phi3 config must not carry head_dim")
        rot = int(hd * cfg.get("partial_rotary_factor", 1.0))
        rs = cfg["rope_scaling"]
        check(rs["type"] == "longrope", "phi3 rope_scaling type")
        check(len(rs["short_factor"]) == len(rs["long_factor"]) == rot // 2, "longrope factor length")
        check(cfg["max_position_embeddings"] > cfg["original_max_position_embeddings"], "longrope never engages")
        check(expect["model.layers.0.self_attn.qkv_proj.weight"][1] == ((nh + 2 * nkv) * hd, H), "qkv_proj shape")
        check(expect["model.layers.0.mlp.gate_up_proj.weight"][1] == (2 * cfg["intermediate_size"], H),
              "gate_up_proj shape")
    if mt == "gemma3_text":
        lt = cfg["layer_types"]
        check(lt == gemma3_layer_types(cfg["num_hidden_layers"], cfg["sliding_window_pattern"]),
              "layer_types disagree with sliding_window_pattern")
        for n in ("pre_feedforward_layernorm", "post_feedforward_layernorm"):
            check(f"model.layers.0.{n}.weight" in expect, f"missing {n}")


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
            init, k = parse_init(weight_init(expect[name]))
            if init == "norm0":
                check(abs(float(v.mean()) - k) < 0.1 and float(np.abs(v - k).max()) < 1.0,
                      f"{name}: (1 + w) norm weights not near {k}")
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
    n_out = 0  # added tokens outside the model vocab get the ids right after it
    for t in tj["added_tokens"]:
        if t["content"] in vocab:
            check(t["id"] == vocab[t["content"]], f"added token {t} id != its vocab id")
        else:
            check(t["id"] == len(vocab) + n_out, f"added token {t} id")
            n_out += 1
        check(t["special"] == tok.is_special(t["content"]), f"added token {t} special flag")
        dec = tc["added_tokens_decoder"][str(t["id"])]
        check(dec["content"] == t["content"] and dec["special"] == t["special"], "added_tokens_decoder mismatch")
    special_ids_all = {i for s, i in tok.specials.items() if tok.is_special(s)}
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        for d in (cfg, gen):
            v = d.get(key)
            for i in (v if isinstance(v, list) else [v]):
                check(i is None or i in special_ids_all, f"{key} {i} is not a special token")
    for s in ("bos_token", "eos_token", "pad_token", "unk_token"):
        check(tc.get(s) is None or tc[s] in tok.specials, f"tokenizer_config {s} not a special token")
    samples = ["Hello, world! The quick brown fox.", "int main(void) { return 0; }\n\n",
               "Où est la gare ? 12345 über", "你好，世界！😀", "<|im_start|>user\nhi<|im_end|>",
               "  two  spaces\tand a tab ", "<start_of_turn>user\nhi<end_of_turn>\n<think>x</think>"]
    for s in samples:
        ids = encode(tok, s, add_special_tokens=False)
        check(all(0 <= i < tok.size for i in ids), "encoded id out of range")
        want = unicodedata.normalize("NFC", s) if tok.nfc else s
        check(decode(tok, ids) == want, f"round trip failed: {s!r}")
        if tok.add_bos:
            check(encode(tok, s) == [tok.specials[tok.add_bos]] + ids, "post-processor BOS missing")
    check_family_config(cfg, expect)


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


# -----------------------------------------------------------------------------
# Phi-4-multimodal, the Hugging Face conversion (Phi4MultimodalForCausalLM [phi4_multimodal]): the
# phi3 decoder under model.* at the top level of config.json, audio_config / vision_config, the
# audio encoder and its speech / vision-speech projections under
# model.embed_tokens_extend.audio_embed.*, and preprocessor_config.json with the
# Phi4MultimodalFeatureExtractor and Phi4MultimodalImageProcessorFast keys, the SigLIP-NaViT tower,
# separators and projection under model.embed_tokens_extend.image_embed.*. <|endoftext10|> /
# <|endoftext11|> are the image / audio placeholders (their ids are the tokenizer's).
# -----------------------------------------------------------------------------

PHI4MM_AUDIO_TINY = {"hidden": 32, "intermediate": 48, "blocks": 2, "heads": 4, "channels": 16, "kernel": 3,
                     "max_distance": 20}
PHI4MM_AUDIO_REAL = {"hidden": 1024, "intermediate": 1536, "blocks": 24, "heads": 16, "channels": 1024,
                     "kernel": 3, "max_distance": 500}
PHI4MM_SPECIALS = ("<|endoftext10|>", "<|endoftext11|>")
# (r, lora_alpha) of speech-lora/ and vision-lora/: different ranks (the stacks pad), scale 2 as published
PHI4MM_LORA = ((8, 16), (4, 8))
PHI4MM_LORA_REAL = ((320, 640), (256, 512))  # Phi-4-multimodal-instruct's speech / vision adapters


def phi4mm_audio_weights(a: dict, text_hidden: int) -> List[WeightSpec]:
    H, I, C, k, F = a["hidden"], a["intermediate"], a["channels"], a["kernel"], 10
    P = "model.embed_tokens_extend.audio_embed."
    E = P + "encoder."
    w: List[WeightSpec] = [(E + "encoder_embedding.global_mean", (80,), "norm0"),
                           (E + "encoder_embedding.global_invstd", (80,), "norm0+0.4"),
                           (E + "embed.conv.0.weight", (C, 1, 3, 3)), (E + "embed.conv.0.bias", (C,), "norm0")]
    for i in (2, 5):
        w += [(E + f"embed.conv.{i}.weight", (C, 1, 3, 3)), (E + f"embed.conv.{i}.bias", (C,), "norm0"),
              (E + f"embed.conv.{i + 1}.weight", (C, C, 1, 1), "normal*0.5"),
              (E + f"embed.conv.{i + 1}.bias", (C,), "norm0")]
    w += [(E + "embed.out.weight", (H, C * F), "normal*0.25"), (E + "embed.out.bias", (H,), "norm0"),
          (E + "relative_attention_bias_layer.bias_values.weight", (2 * a["max_distance"], a["heads"]))]
    for b in range(a["blocks"]):
        L = E + f"encoders.{b}."
        for ff in ("feed_forward_in", "feed_forward_out"):
            w += [(L + f"{ff}.layer_norm.weight", (H,), "norm"), (L + f"{ff}.layer_norm.bias", (H,), "norm0"),
                  (L + f"{ff}.gate_up_proj.weight", (2 * I, H)), (L + f"{ff}.gate_up_proj.bias", (2 * I,), "norm0"),
                  (L + f"{ff}.down_proj.weight", (H, I)), (L + f"{ff}.down_proj.bias", (H,), "norm0")]
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            w += [(L + f"self_attn.{n}.weight", (H, H)), (L + f"self_attn.{n}.bias", (H,), "norm0")]
        w += [(L + "conv.layer_norm.weight", (H,), "norm"), (L + "conv.layer_norm.bias", (H,), "norm0"),
              (L + "conv.glu.ext_pw_conv_1d.weight", (2 * H, H, 1)),
              (L + "conv.glu.ext_pw_conv_1d.bias", (2 * H,), "norm0"),
              (L + "conv.glu.b1", (1, H, 1), "norm0"), (L + "conv.glu.b2", (1, H, 1), "norm0"),
              (L + "conv.dw_sep_conv_1d.dw_conv.weight", (H, 1, k)),
              (L + "conv.dw_sep_conv_1d.dw_conv.bias", (H,), "norm0"),
              (L + "conv.dw_sep_conv_1d.pw_conv.weight", (H, H, 1)),
              (L + "conv.dw_sep_conv_1d.pw_conv.bias", (H,), "norm0"),
              (L + "conv.ext_pw_conv_1d.weight", (H, H, 1)), (L + "conv.ext_pw_conv_1d.bias", (H,), "norm0"),
              (L + "layer_norm_att.weight", (H,), "norm"), (L + "layer_norm_att.bias", (H,), "norm0"),
              (L + "layer_norm.weight", (H,), "norm"), (L + "layer_norm.bias", (H,), "norm0")]
    for mode in ("speech", "vision_speech"):
        w += [(P + f"up_proj_for_{mode}.weight", (text_hidden, H)), (P + f"up_proj_for_{mode}.bias", (text_hidden,), "norm0"),
              (P + f"down_proj_for_{mode}.weight", (text_hidden, text_hidden)),
              (P + f"down_proj_for_{mode}.bias", (text_hidden,), "norm0")]
    return w


PHI4MM_VISION_TINY = {"hidden": 32, "intermediate": 48, "layers": 3, "heads": 2}
PHI4MM_VISION_REAL = {"hidden": 1152, "intermediate": 4304, "layers": 27, "heads": 16}


def phi4mm_vision_weights(v: dict, text_hidden: int) -> List[WeightSpec]:
    """The SigLIP-NaViT tower (crops of 448 px, patch 14: 32 x 32 positions), its unused post-LN and
    pooling head (HF builds them), the separators and the projection (HF names)."""
    C, I, p = v["hidden"], v["intermediate"], 14
    P = "model.embed_tokens_extend.image_embed."
    E = P + "img_processor."
    w: List[WeightSpec] = [(E + "embeddings.patch_embedding.weight", (C, 3, p, p), "normal*0.25"),
                           (E + "embeddings.patch_embedding.bias", (C,), "norm0"),
                           (E + "embeddings.position_embedding.weight", (1024, C))]
    for i in range(v["layers"]):
        L = E + f"encoder.layers.{i}."
        w += [(L + "layer_norm1.weight", (C,), "norm"), (L + "layer_norm1.bias", (C,), "norm0"),
              (L + "layer_norm2.weight", (C,), "norm"), (L + "layer_norm2.bias", (C,), "norm0")]
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            w += [(L + f"self_attn.{n}.weight", (C, C)), (L + f"self_attn.{n}.bias", (C,), "norm0")]
        w += [(L + "mlp.fc1.weight", (I, C)), (L + "mlp.fc1.bias", (I,), "norm0"),
              (L + "mlp.fc2.weight", (C, I)), (L + "mlp.fc2.bias", (C,), "norm0")]
    w += [(E + "post_layernorm.weight", (C,), "norm"), (E + "post_layernorm.bias", (C,), "norm0"),
          (E + "head.probe", (1, 1, C)), (E + "head.attention.in_proj_weight", (3 * C, C)),
          (E + "head.attention.in_proj_bias", (3 * C,), "norm0"), (E + "head.attention.out_proj.weight", (C, C)),
          (E + "head.attention.out_proj.bias", (C,), "norm0"), (E + "head.layernorm.weight", (C,), "norm"),
          (E + "head.layernorm.bias", (C,), "norm0"), (E + "head.mlp.fc1.weight", (I, C)),
          (E + "head.mlp.fc1.bias", (I,), "norm0"), (E + "head.mlp.fc2.weight", (C, I)),
          (E + "head.mlp.fc2.bias", (C,), "norm0"),
          (P + "global_img_feature_extensor", (1, 1, C)), (P + "sub_img_feature_extensor", (1, 1, 1, C)),
          (P + "img_projection_up.weight", (text_hidden, C)), (P + "img_projection_up.bias", (text_hidden,), "norm0"),
          (P + "img_projection_down.weight", (text_hidden, text_hidden)),
          (P + "img_projection_down.bias", (text_hidden,), "norm0")]
    return w


# The original remote-code layout (Phi4MMForCausalLM [phi4mm]) of the same weights: the conversion
# script's STATE_DICT_MAPPING backwards, the decoder's linears as <module>.base_layer.weight with
# their adapters beside them (<module>.lora_{A,B}.{speech,vision}.weight, same values as the
# PEFT folders of the converted layout), the original config.json and preprocessor_config.json.
PHI4MM_ORIGINAL_NAMES = [
    (r"(audio_embed\.encoder\.encoders\.\d+\.feed_forward_(?:in|out))\.gate_up_proj\.", r"\1.net.0.linear."),
    (r"(audio_embed\.encoder\.encoders\.\d+\.feed_forward_(?:in|out))\.down_proj\.", r"\1.net.2."),
    (r"(audio_embed\.encoder\.encoders\.\d+\.self_attn)\.([qkv])_proj\.", r"\1.linear_\2."),
    (r"(audio_embed\.encoder\.encoders\.\d+\.self_attn)\.o_proj\.", r"\1.linear_out."),
    (r"image_embed\.img_projection_up\.", "image_embed.img_projection.0."),
    (r"image_embed\.img_projection_down\.", "image_embed.img_projection.2."),
    (r"image_embed\.global_img_feature_extensor$", "image_embed.glb_GN"),
    (r"image_embed\.sub_img_feature_extensor$", "image_embed.sub_GN"),
    (r"audio_embed\.up_proj_for_speech\.", "audio_embed.audio_projection.speech.0."),
    (r"audio_embed\.down_proj_for_speech\.", "audio_embed.audio_projection.speech.2."),
    (r"audio_embed\.up_proj_for_vision_speech\.", "audio_embed.audio_projection.vision.0."),
    (r"audio_embed\.down_proj_for_vision_speech\.", "audio_embed.audio_projection.vision.2."),
    (r"^(model\.layers\.\d+\.(?:self_attn\.(?:qkv|o)_proj|mlp\.(?:gate_up|down)_proj))\.weight$", r"\1.base_layer.weight"),
]


def phi4mm_original_name(name: str) -> str:
    for pat, rep in PHI4MM_ORIGINAL_NAMES:
        new, n = re.subn(pat, rep, name)
        if n:
            return new
    return name


def phi4mm_original_config(config: dict, a: dict, ranks) -> dict:
    """config.json as Phi-4-multimodal-instruct's remote code has it (families-gemma-phi.md C1)."""
    c = {k: v for k, v in config.items() if k not in ("audio_config", "vision_config", "model_type", "architectures")}
    ac = config["audio_config"]
    c.update({
        "architectures": ["Phi4MMForCausalLM"], "model_type": "phi4mm", "img_processor": None,
        "attention_bias": False, "mlp_bias": False, "lm_head_bias": False, "full_attn_mod": 1, "interpolate_factor": 1,
        "auto_map": {"AutoConfig": "configuration_phi4mm.Phi4MMConfig",
                     "AutoModelForCausalLM": "modeling_phi4mm.Phi4MMForCausalLM"},
        "audio_processor": {"name": "cascades", "config": {
            "activation": "swish", "activation_checkpointing": {"interval": 1, "module": "transformer", "offload": False},
            "attention_dim": ac["hidden_size"], "attention_heads": ac["num_attention_heads"], "batch_norm": False,
            "bias_in_glu": True, "causal": True, "chunk_size": -1, "cnn_layer_norm": True, "conv_activation": "swish",
            "conv_glu_type": "swish", "depthwise_multiplier": 1, "depthwise_seperable_out_channel": ac["hidden_size"],
            "dropout_rate": 0.0, "encoder_embedding_config": {"input_size": 80}, "ext_pw_kernel_size": 1,
            "ext_pw_out_channel": ac["hidden_size"], "input_layer": "nemo_conv", "input_size": 80,
            "kernel_size": ac["kernel_size"], "left_chunk": 18, "linear_units": ac["intermediate_size"],
            "nemo_conv_settings": {"conv_channels": ac["nemo_conv_channels"]}, "num_blocks": ac["num_blocks"],
            "relative_attention_bias_args": {"t5_bias_max_distance": ac["bias_max_distance"], "type": "t5"},
            "time_reduction": 8}},
        "embd_layer": {"embedding_cls": "image_audio",
                       "audio_embd_layer": {"compression_rate": 8, "downsample_rate": 1, "embedding_cls": "audio",
                                            "enable_gradient_checkpointing": True, "projection_cls": "mlp",
                                            "use_conv_downsample": False, "use_qformer": False},
                       "image_embd_layer": {"crop_size": 448, "embedding_cls": "tune_image",
                                            "enable_gradient_checkpointing": True, "hd_transform_order": "sub_glb",
                                            "image_token_compression_cls": "avg_pool_2d", "projection_cls": "mlp",
                                            "use_hd_transform": True, "with_learnable_separator": True}},
        "speech_lora": {"dp": 0.01, "layer": "((layers.*self_attn\\.(qkv|o)_proj)|(layers.*mlp\\.(gate_up|down)_proj))",
                        "lora_alpha": ranks[0][1], "r": ranks[0][0]},
        "vision_lora": {"dp": 0.0, "layer": "layers.*((self_attn\\.(qkv_proj|o_proj))|(mlp\\.(gate_up|down)_proj))",
                        "lora_alpha": ranks[1][1], "r": ranks[1][0]},
    })
    return c


def phi4mm_lora_specs(d: dict, ranks, original=None) -> List[WeightSpec]:
    """Both adapters' lora_A / lora_B of every targeted linear, seeded by their PEFT names: PEFT names
    (base_model.model.model.layers.L.<module>.lora_A.weight), or with original the base checkpoint's
    (model.layers.L.<module>.lora_A.speech.weight)."""
    qd = d["heads"] * d["head_dim"]
    qkv = qd + 2 * d["kv_heads"] * d["head_dim"]
    H, I = d["hidden"], d["intermediate"]
    lw = []
    for sub, (r, _alpha) in zip(("speech-lora", "vision-lora"), ranks):
        for layer in range(d["layers"]):
            for mod, i_, o_ in (("self_attn.qkv_proj", H, qkv), ("self_attn.o_proj", qd, H),
                                ("mlp.gate_up_proj", H, 2 * I), ("mlp.down_proj", I, H)):
                base = f"base_model.model.model.layers.{layer}.{mod}"
                key = sub.split("-")[0]
                for half, shape, init in (("A", (r, i_), "normal"), ("B", (o_, r), "normal*0.5")):
                    name = (f"model.layers.{layer}.{mod}.lora_{half}.{key}.weight" if original else
                            f"{base}.lora_{half}.weight")
                    lw.append((name, shape, init, sub + base + half))
    return lw


def main_phi4mm(args) -> int:
    t0 = time.time()
    if args.verify:
        raise SystemExit("--verify is not implemented for --family phi4mm")
    fam = FAMILIES["phi3"]
    tok = train_tokenizer(fam.tokenizer, extra_specials=tuple(fam.extra_specials) + PHI4MM_SPECIALS)
    real = args.dims == "real" or args.preset is not None
    if real:
        d, _ = resolve_dims("phi3", fam, "real", args.preset or "phi4-mini", tok)
        a, label, std = dict(PHI4MM_AUDIO_REAL), "real", STD_REAL
    else:
        d, _ = resolve_dims("phi3", fam, "tiny", None, tok)
        a, label, std = dict(PHI4MM_AUDIO_TINY), "tiny", STD_TINY
    original = args.layout == "original"
    if original and not real:  # the remote code fixes the tower (SigLIP-so400m) and the media ids
        args.vision_dims, args.real_vocab = "real", True
    if args.real_vocab and not real:  # Phi-4's vocabulary size, the published placeholder ids inside it
        d["vocab"] = 200064
    v = dict(PHI4MM_VISION_REAL if real else PHI4MM_VISION_TINY)
    if args.audio_dims == "real":  # the published conformer behind a tiny text model (encoder benchmarks)
        a, label, std = dict(PHI4MM_AUDIO_REAL), label + "+real-audio", STD_REAL
    if args.vision_dims == "real":  # the published tower behind a tiny text model (encoder benchmarks)
        v, label, std = dict(PHI4MM_VISION_REAL), label + "+real-vision", STD_REAL
    tie = d.pop("tie", True) if args.tie is None else bool(args.tie)
    d.pop("tie", None)
    ids = special_ids(tok)
    text_cfg, text_w = fam.build(d, ids, tie)
    image_id, audio_id = tok.specials["<|endoftext10|>"], tok.specials["<|endoftext11|>"]
    if real or args.real_vocab:  # the published ids (200010 / 200011) sit inside the real vocabulary
        image_id, audio_id = 200010, 200011
    config = {k: v for k, v in text_cfg.items()
              if k not in ("attention_bias", "full_attn_mod", "interpolate_factor", "lm_head_bias", "mlp_bias")}
    if not real:  # an image prompt is 545 rows and more (the tiny phi3's 256 positions hold none)
        config["max_position_embeddings"] = 2048
    config.update({
        "architectures": ["Phi4MultimodalForCausalLM"],
        "model_type": "phi4_multimodal",
        "torch_dtype": DTYPES[args.dtype][2],
        "transformers_version": "4.57.6",
        "audio_config": {
            "model_type": "phi4_multimodal_audio", "hidden_size": a["hidden"], "intermediate_size": a["intermediate"],
            "num_blocks": a["blocks"], "num_attention_heads": a["heads"], "activation": "swish", "chunk_size": -1,
            "left_chunk": 18, "dropout_rate": 0.0, "ext_pw_out_channel": a["hidden"],
            "depthwise_separable_out_channel": a["hidden"], "depthwise_multiplier": 1, "kernel_size": a["kernel"],
            "conv_activation": "swish", "input_size": 80, "conv_glu_type": "swish", "time_reduction": 8,
            "bias_max_distance": a["max_distance"], "bias_symmetric": False, "nemo_activation": "relu",
            "nemo_conv_channels": a["channels"], "downsample_rate": 1, "initializer_range": 0.02,
            "audio_token_id": audio_id, "feature_layer": -2, "nemo_final_size": 10},
        "vision_config": {
            "model_type": "phi4_multimodal_vision", "hidden_size": v["hidden"], "intermediate_size": v["intermediate"],
            "num_hidden_layers": v["layers"], "num_attention_heads": v["heads"], "num_channels": 3,
            "image_size": 448, "patch_size": 14, "hidden_act": "gelu_pytorch_tanh", "layer_norm_eps": 1e-6,
            "attention_dropout": 0.0, "crop_size": 448, "image_token_id": image_id, "feature_layer": -2}})
    specs = [(sp[0], sp[1], sp[2] if len(sp) > 2 else weight_init(sp), sp[0]) for sp in text_w]
    specs += [(s[0], s[1], weight_init(s), s[0]) for s in phi4mm_audio_weights(a, d["hidden"])]
    specs += [(s[0], s[1], weight_init(s), s[0]) for s in phi4mm_vision_weights(v, d["hidden"])]
    pre = {"feature_extractor_type": "Phi4MultimodalFeatureExtractor", "feature_size": 80, "sampling_rate": 16000,
           "padding_value": 0.0, "return_attention_mask": True, "hop_length": 160, "n_fft": 512, "win_length": 400,
           "preemphasis": 0.97, "audio_compression_rate": 8, "audio_downsample_rate": 1, "audio_feat_stride": 1,
           "mel_min_frequency": 0, "mel_max_frequency": 7690, "processor_class": "Phi4MultimodalProcessor",
           # Phi4MultimodalImageProcessorFast's keys in the same file (as Phi4MultimodalProcessor saves them)
           "image_processor_type": "Phi4MultimodalImageProcessorFast", "size": {"height": 448, "width": 448},
           "patch_size": 14, "dynamic_hd": args.dynamic_hd, "image_mean": [0.5, 0.5, 0.5],
           "image_std": [0.5, 0.5, 0.5], "do_resize": True, "do_rescale": True,
           "rescale_factor": 0.00392156862745098, "do_normalize": True, "do_convert_rgb": True, "resample": 3,
           "data_format": "channels_first", "default_to_square": True}
    ranks = PHI4MM_LORA_REAL if real else PHI4MM_LORA
    if original:  # the same values under the original names; the adapters inside the base weights
        config = phi4mm_original_config(config, a, ranks)
        pre = {"auto_map": {"AutoProcessor": "processing_phi4mm.Phi4MMProcessor",
                            "AutoImageProcessor": "processing_phi4mm.Phi4MMImageProcessor",
                            "AutoFeatureExtractor": "processing_phi4mm.Phi4MMAudioFeatureExtractor"},
               "image_processor_type": "Phi4MMImageProcessor", "feature_extractor_type": "Phi4MMAudioFeatureExtractor",
               "processor_class": "Phi4MMProcessor", "audio_compression_rate": 8, "audio_downsample_rate": 1,
               "audio_feat_stride": 1, "dynamic_hd": args.dynamic_hd}
        specs = [(phi4mm_original_name(sp[0]),) + tuple(sp[1:]) for sp in specs]
        if not args.no_adapters:
            specs += phi4mm_lora_specs(d, ranks, original=True)
    os.makedirs(args.out, exist_ok=True)
    write_json(os.path.join(args.out, "config.json"), config)
    gen = {"bos_token_id": ids["bos"], "do_sample": False, "eos_token_id": ids["gen_eos"],
           "pad_token_id": ids["pad"], "transformers_version": "4.57.6"}
    write_json(os.path.join(args.out, "generation_config.json"), gen)
    tj = tokenizer_json(tok, args.merges_style)
    if args.real_vocab and not real:  # every id of the 200064 a token: fillers, the media specials at 200010 / 200011
        vocab = tj["model"]["vocab"]
        for at in tj["added_tokens"]:
            vocab[at["content"]] = at["id"]
        for at in tj["added_tokens"]:
            if at["content"] in PHI4MM_SPECIALS:
                at["id"] = vocab[at["content"]] = image_id if at["content"] == PHI4MM_SPECIALS[0] else audio_id
        taken = set(vocab.values())
        for k in range(d["vocab"]):
            if k not in taken:
                vocab[f"<|fill_{k}|>"] = k
    write_json(os.path.join(args.out, "tokenizer.json"), tj, sort_keys=False)
    write_json(os.path.join(args.out, "tokenizer_config.json"), tokenizer_config_json(tok))
    write_json(os.path.join(args.out, "preprocessor_config.json"), pre)
    files = write_weights(args.out, specs, args.seed, std, args.dtype, args.shards)
    if not args.no_adapters and not original:  # speech-lora/ and vision-lora/ as the HF conversion writes them
        for sub, r, alpha in (("speech-lora", *ranks[0]), ("vision-lora", *ranks[1])):
            ad = os.path.join(args.out, sub)
            os.makedirs(ad, exist_ok=True)
            lw = [sp for sp in phi4mm_lora_specs(d, ranks) if sp[3].startswith(sub)]
            write_weights(ad, lw, args.seed, std, args.dtype, 1)
            os.replace(os.path.join(ad, "model.safetensors"), os.path.join(ad, "adapter_model.safetensors"))
            write_json(os.path.join(ad, "adapter_config.json"), {
                "peft_type": "LORA", "task_type": "CAUSAL_LM", "r": r, "lora_alpha": alpha, "lora_dropout": 0.0,
                "bias": "none", "fan_in_fan_out": False, "inference_mode": True, "use_dora": False,
                "use_rslora": False, "rank_pattern": {}, "alpha_pattern": {}, "modules_to_save": None,
                "layers_to_transform": None,
                "target_modules": ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]})
    nparams = sum(int(np.prod(s[1], dtype=np.int64)) for s in specs)
    nbytes = sum(os.path.getsize(os.path.join(args.out, f)) for f in files)
    print(f"mktiny: phi4mm [{label}] dtype={args.dtype} seed={args.seed} -> {args.out}")
    print(f"  {len(specs)} tensors, {nparams:,} params, {nbytes / 2**20:.1f} MiB; audio conformer {a['blocks']}x"
          f"{a['hidden']}, vision tower {v['layers']}x{v['hidden']}, audio token {audio_id}, image token {image_id}; "
          f"{time.time() - t0:.2f} s")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="Write a tiny random HF-format checkpoint.")
    ap.add_argument("--family", choices=sorted(list(FAMILIES) + ["llava", "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "gemma3",
                                                          "gemma3n", "phi4mm"]),
                    required=True)
    ap.add_argument("--vision", choices=["clip", "siglip"], default="clip", help="llava: vision tower")
    ap.add_argument("--text", choices=["llama", "qwen2"], default="llama", help="llava: text model")
    ap.add_argument("--tokenizer", choices=["llama2"], default=None,
                    help="llava --text llama: LLaVA-1.5's Llama-2 tokenizer (<s> from the post-processor) "
                         "instead of the Llama-3 one")
    ap.add_argument("--new-names", action="store_true",
                    help="llava, qwen2_vl, qwen2_5_vl: transformers >= 4.52 weight names (model.language_model.*, "
                         "model.visual.*, ...)")
    ap.add_argument("--out", required=True, help="output directory (created; old model*.safetensors removed)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--dims", choices=["tiny", "real"], default=None, help="default tiny (real with --preset)")
    ap.add_argument("--preset", default=None,
                    help="real-size dims: " + ", ".join([p for f in FAMILIES.values() for p in f.presets]
                                                        + list(LLAVA_PRESETS) + list(QWEN2VL_PRESETS)
                                                        + list(GEMMA3_PRESETS)))
    tie = ap.add_mutually_exclusive_group()
    tie.add_argument("--tie", dest="tie", action="store_true", default=None, help="tie lm_head to embeddings")
    tie.add_argument("--no-tie", dest="tie", action="store_false", help="write a separate lm_head.weight")
    ap.add_argument("--merges-style", choices=["str", "pairs"], default="str",
                    help='tokenizer.json merges as "a b" strings (default) or [a, b] pairs')
    ap.add_argument("--verify", action="store_true", help="re-read and check everything written")
    ap.add_argument("--pan-and-scan", type=int, default=0, metavar="MIN_CROP",
                    help="gemma3: preprocessor_config.json with do_pan_and_scan true and this "
                         "pan_and_scan_min_crop_size (max 4 crops, ratio 1.2)")
    ap.add_argument("--no-adapters", action="store_true",
                    help="phi4mm: no speech-lora/ and vision-lora/ folders")
    ap.add_argument("--audio-dims", choices=["tiny", "real"], default=None,
                    help="phi4mm: the audio conformer's dims (real: Phi-4-multimodal-instruct's 24 x 1024, for "
                         "omnic bench --audio), independent of --dims; gemma3n: real writes gemma-3n-E2B-it's USM "
                         "tower (12 x 1536)")
    ap.add_argument("--vision-dims", choices=["tiny", "real"], default=None,
                    help="phi4mm: the vision tower's dims (real: Phi-4-multimodal-instruct's SigLIP 27 x 1152, for "
                         "omnic bench --image), independent of --dims; gemma3n: real writes gemma-3n-E2B-it's "
                         "MobileNetV5-300M (else channel multiplier 1/16)")
    ap.add_argument("--layout", choices=["hf", "original"], default="hf",
                    help="phi4mm: hf (the Hugging Face conversion, default) or original (the remote-code "
                         "Phi4MMForCausalLM layout of the same weights: original names and configs, the adapters "
                         "inside the base weights; implies --vision-dims real --real-vocab, which the remote code "
                         "fixes)")
    ap.add_argument("--real-vocab", action="store_true",
                    help="phi4mm: vocab_size 200064 with the published image / audio ids 200010 / 200011")
    ap.add_argument("--dynamic-hd", type=int, default=36,
                    help="phi4mm: preprocessor_config.json dynamic_hd (HD crops per image at most; default 36)")
    ap.add_argument("--max-pixels", type=int, default=None,
                    help="qwen2_vl, qwen2_5_vl: preprocessor_config.json max_pixels (default: tiny %d, real the "
                         "published 12845056)" % QWEN2VL_TINY_MAX_PIXELS)
    args = ap.parse_args(argv)
    if args.max_pixels is not None and (args.family not in ("qwen2_vl", "qwen2_5_vl") or args.max_pixels < 3136):
        raise SystemExit(f"--max-pixels {args.max_pixels}: qwen2_vl / qwen2_5_vl only, at least min_pixels 3136")

    if args.tokenizer and args.family != "llava":
        raise SystemExit("--tokenizer is for --family llava")
    if args.family == "llava":
        return main_llava(args)
    if args.family in ("qwen2_vl", "qwen2_5_vl"):
        return main_qwen2vl(args)
    if args.family == "gemma3":
        return main_gemma3(args)
    if args.family == "gemma3n":
        return main_gemma3n(args)
    if args.family == "phi4mm":
        return main_phi4mm(args)
    if args.family in ("qwen3_vl", "qwen3_vl_moe"):
        return main_qwen3vl(args)
    t0 = time.time()
    fam = FAMILIES[args.family]
    tok = train_tokenizer(fam.tokenizer, extra_specials=fam.extra_specials)
    d, label = resolve_dims(args.family, fam, args.dims, args.preset, tok)
    tie_flag = d.pop("tie") if args.tie is None else args.tie
    d.pop("tie", None)
    ids = special_ids(tok)
    config, specs = fam.build(d, ids, tie_flag)
    config["torch_dtype"] = DTYPES[args.dtype][2]
    config["transformers_version"] = fam.hf_version
    std = STD_TINY if label == "tiny" else STD_REAL
    if not 1 <= args.shards <= len(specs):
        raise SystemExit(f"--shards {args.shards}: must be between 1 and the tensor count {len(specs)}")

    os.makedirs(args.out, exist_ok=True)
    write_json(os.path.join(args.out, "config.json"), config)
    gen = {"bos_token_id": ids["bos"], "do_sample": False, "eos_token_id": ids["gen_eos"],
           "transformers_version": fam.hf_version}
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
