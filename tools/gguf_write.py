#!/usr/bin/python3
"""Write a Hugging Face text checkpoint (Qwen2 / Llama architectures, as tools/mktiny.py makes
them) as a GGUF file for llama.cpp, so both engines can be benchmarked on the same random
weights (bench/peer.md). Numpy only; weights go out as F16 (or F32 with --f32): quantize with
llama.cpp's own llama-quantize, so the quantized layouts are llama.cpp's.

  /usr/bin/python3 tools/gguf_write.py --model /tmp/q15 --out /tmp/q15-f16.gguf

The tokenizer is a stand-in: llama-bench feeds random token ids and never tokenizes text, so the
vocabulary is the checkpoint's tokenizer.json tokens padded with unique placeholders to
vocab_size, with no merges. Do not use the file for text generation."""
import argparse
import json
import os
import struct
import sys

import numpy as np

GGUF_MAGIC, GGUF_VERSION, ALIGN = b"GGUF", 3, 32
T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR = 4, 5, 6, 7, 8, 9
GGML_F32, GGML_F16 = 0, 1


def read_safetensors(model_dir):
    """{name: np.ndarray f32} over every model*.safetensors file in model_dir."""
    out = {}
    for fn in sorted(os.listdir(model_dir)):
        if not (fn.startswith("model") and fn.endswith(".safetensors")):
            continue
        with open(os.path.join(model_dir, fn), "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
            base = 8 + n
            for name, info in header.items():
                if name == "__metadata__":
                    continue
                a, b = info["data_offsets"]
                f.seek(base + a)
                raw = np.frombuffer(f.read(b - a), dtype=np.uint8)
                dt = info["dtype"]
                if dt == "BF16":
                    x = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
                elif dt == "F16":
                    x = raw.view(np.float16).astype(np.float32)
                elif dt == "F32":
                    x = raw.view(np.float32)
                else:
                    sys.exit(f"{fn}: {name}: dtype {dt} is not written (BF16, F16, F32 only)")
                out[name] = x.reshape(info["shape"])
    if not out:
        sys.exit(f"{model_dir}: no model*.safetensors")
    return out


class Writer:
    def __init__(self):
        self.kv, self.tensors = [], []

    @staticmethod
    def _str(s):
        b = s.encode()
        return struct.pack("<Q", len(b)) + b

    def add(self, key, vtype, value):
        if vtype == T_STR:
            body = self._str(value)
        elif vtype == T_U32:
            body = struct.pack("<I", value)
        elif vtype == T_I32:
            body = struct.pack("<i", value)
        elif vtype == T_F32:
            body = struct.pack("<f", value)
        elif vtype == T_BOOL:
            body = struct.pack("<?", value)
        else:
            raise ValueError(vtype)
        self.kv.append(self._str(key) + struct.pack("<I", vtype) + body)

    def add_array(self, key, etype, values):
        if etype == T_STR:
            body = b"".join(self._str(v) for v in values)
        elif etype == T_I32:
            body = np.asarray(values, dtype="<i4").tobytes()
        else:
            raise ValueError(etype)
        self.kv.append(self._str(key) + struct.pack("<IIQ", T_ARR, etype, len(values)) + body)

    def tensor(self, name, x, f32):
        x = np.ascontiguousarray(x, dtype=np.float32 if f32 or x.ndim == 1 else np.float16)
        self.tensors.append((name, x))

    def write(self, path):
        infos, offset = [], 0
        for name, x in self.tensors:
            dims = list(reversed(x.shape))  # GGUF: ne0 is the innermost dimension
            infos.append(self._str(name) + struct.pack("<I", len(dims)) +
                         b"".join(struct.pack("<Q", d) for d in dims) +
                         struct.pack("<IQ", GGML_F32 if x.dtype == np.float32 else GGML_F16, offset))
            offset += (x.nbytes + ALIGN - 1) // ALIGN * ALIGN
        with open(path, "wb") as f:
            f.write(GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(self.tensors), len(self.kv)))
            for b in self.kv + infos:
                f.write(b)
            f.write(b"\0" * ((-f.tell()) % ALIGN))
            for _, x in self.tensors:
                f.write(x.tobytes())
                f.write(b"\0" * ((-x.nbytes) % ALIGN))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="checkpoint directory (config.json, model*.safetensors)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--f32", action="store_true", help="F32 weights instead of F16")
    args = ap.parse_args()
    cfg = json.load(open(os.path.join(args.model, "config.json")))
    mt = cfg.get("model_type")
    if mt not in ("qwen2", "llama"):
        sys.exit(f"model_type {mt!r}: only qwen2 and llama are written")
    if cfg.get("rope_scaling"):
        sys.exit("rope_scaling is not written")
    w = read_safetensors(args.model)
    L, H, V = cfg["num_hidden_layers"], cfg["hidden_size"], cfg["vocab_size"]
    nh, nkv = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    g = Writer()
    g.add("general.architecture", T_STR, mt)
    g.add("general.name", T_STR, os.path.basename(os.path.normpath(args.model)))
    g.add("general.file_type", T_U32, 0 if args.f32 else 1)
    g.add(f"{mt}.context_length", T_U32, cfg.get("max_position_embeddings", 4096))
    g.add(f"{mt}.embedding_length", T_U32, H)
    g.add(f"{mt}.block_count", T_U32, L)
    g.add(f"{mt}.feed_forward_length", T_U32, cfg["intermediate_size"])
    g.add(f"{mt}.attention.head_count", T_U32, nh)
    g.add(f"{mt}.attention.head_count_kv", T_U32, nkv)
    g.add(f"{mt}.rope.freq_base", T_F32, float(cfg.get("rope_theta", 10000.0)))
    g.add(f"{mt}.attention.layer_norm_rms_epsilon", T_F32, float(cfg.get("rms_norm_eps", 1e-6)))
    if mt == "llama":
        g.add("llama.rope.dimension_count", T_U32, cfg.get("head_dim", H // nh))
    tok = json.load(open(os.path.join(args.model, "tokenizer.json")))
    vocab = ["<unused>"] * V
    for t, i in tok["model"]["vocab"].items():
        if i < V:
            vocab[i] = t
    for a in tok.get("added_tokens", []):
        if a["id"] < V:
            vocab[a["id"]] = a["content"]
    seen = set()
    for i, t in enumerate(vocab):  # unique strings: placeholders for the padding rows
        if t in seen:
            vocab[i] = f"<omnic_pad_{i}>"
        seen.add(vocab[i])
    g.add("tokenizer.ggml.model", T_STR, "gpt2")
    g.add("tokenizer.ggml.pre", T_STR, "default")
    g.add_array("tokenizer.ggml.tokens", T_STR, vocab)
    g.add_array("tokenizer.ggml.token_type", T_I32, [1] * V)
    g.add_array("tokenizer.ggml.merges", T_STR, [])
    g.add("tokenizer.ggml.bos_token_id", T_U32, int(cfg.get("bos_token_id") or 0))
    eos = cfg.get("eos_token_id") or 0
    g.add("tokenizer.ggml.eos_token_id", T_U32, int(eos[0] if isinstance(eos, list) else eos))
    g.add("general.alignment", T_U32, ALIGN)

    def take(name):
        if name not in w:
            sys.exit(f"{args.model}: missing {name}")
        return w.pop(name)

    g.tensor("token_embd.weight", take("model.embed_tokens.weight"), args.f32)
    names = {"input_layernorm.weight": "attn_norm.weight", "self_attn.q_proj.weight": "attn_q.weight",
             "self_attn.k_proj.weight": "attn_k.weight", "self_attn.v_proj.weight": "attn_v.weight",
             "self_attn.q_proj.bias": "attn_q.bias", "self_attn.k_proj.bias": "attn_k.bias",
             "self_attn.v_proj.bias": "attn_v.bias", "self_attn.o_proj.weight": "attn_output.weight",
             "post_attention_layernorm.weight": "ffn_norm.weight", "mlp.gate_proj.weight": "ffn_gate.weight",
             "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight"}
    for i in range(L):
        for hf, gg in names.items():
            key = f"model.layers.{i}.{hf}"
            if key in w:
                g.tensor(f"blk.{i}.{gg}", take(key), args.f32)
    g.tensor("output_norm.weight", take("model.norm.weight"), args.f32)
    if "lm_head.weight" in w:
        g.tensor("output.weight", take("lm_head.weight"), args.f32)
    if w:
        sys.exit(f"{args.model}: tensors not written: {', '.join(sorted(w)[:5])}")
    g.write(args.out)
    print(f"gguf_write: {args.out}: {mt}, {L} layers, {len(g.tensors)} tensors, vocab {V}, "
          f"{'f32' if args.f32 else 'f16'}")


if __name__ == "__main__":
    main()
