#!/usr/bin/python3
"""Writes the seed corpora for fuzz_safetensors and fuzz_config (small valid and invalid files).
Run from anywhere: python3 tests/fuzz/make_corpus.py"""
import json, os, struct

HERE = os.path.dirname(os.path.abspath(__file__))


def st(header, data=b"", pad=True, hlen=None):
    h = header if isinstance(header, bytes) else json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h) if hlen is None else hlen) + h + data


def t(dtype, shape, b, e):
    return {"dtype": dtype, "shape": shape, "data_offsets": [b, e]}


ST = {
    "valid_single": st({"w": t("F32", [2, 2], 0, 16)}, bytes(range(16))),
    "valid_dtypes": st({"__metadata__": {"format": "pt"}, "a": t("F16", [2], 0, 4), "b": t("BF16", [1, 2], 4, 8),
                        "c": t("I32", [1], 8, 12), "d": t("I64", [1], 12, 20), "e": t("U8", [3], 20, 23),
                        "f": t("BOOL", [1], 23, 24)}, bytes(24)),
    "valid_zero_scalar": st({"z": t("F32", [0, 3], 0, 0), "s": t("F32", [], 0, 4)}, b"\0\0\x80?"),
    "valid_empty": st({}),
    "bad_overlap": st({"a": t("F32", [4], 0, 16), "b": t("F32", [4], 8, 24)}, bytes(24)),
    "bad_nbytes": st({"a": t("F32", [2, 3], 0, 20)}, bytes(20)),
    "bad_dtype": st({"a": t("F64", [2], 0, 16), "b": t("Q9", [1], 16, 17)}, bytes(17)),
    "bad_overflow": st({"a": t("F32", [4294967296, 4294967296, 16], 0, 16)}, bytes(16)),
    "bad_truncated": st({"a": t("F32", [4], 0, 16)}, bytes(8)),
    "bad_hlen": st({"a": t("U8", [1], 0, 1)}, b"x", hlen=1000),
    "bad_dup": st(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', b"xy"),
    "bad_json": st(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]', b"x"),
    "bad_short": b"\x05\0\0",
    "bad_metadata": st({"__metadata__": {"k": 1}}),
}

CFG = {
    "llama": {"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "num_hidden_layers": 32,
              "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
              "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
              "rope_scaling": {"factor": 8.0, "rope_type": "llama3"}, "tie_word_embeddings": False,
              "model_type": "llama", "bos_token_id": 128000, "torch_dtype": "bfloat16"},
    "vlm": {"architectures": ["Qwen2VLForConditionalGeneration"], "model_type": "qwen2_vl",
            "text_config": {"hidden_size": 1536, "num_hidden_layers": 28, "vocab_size": 151936,
                            "rms_norm_eps": 1e-06, "rope_scaling": None, "head_dim": 128.0},
            "vision_config": {"depth": 32, "embed_dim": 1280}, "image_token_id": 151655},
    "wrong_types": {"hidden_size": "4096", "rms_norm_eps": True, "model_type": 3, "architectures": {},
                    "rope_scaling": [1], "tie_word_embeddings": 1, "num_hidden_layers": 1.5},
}
RAW_CFG = {
    "bad_trailing_comma": b'{"hidden_size": 64,}',
    "bad_array": b"[1, 2, 3]",
    "dup_keys": b'{"hidden_size": 1, "hidden_size": 2}',
    "big_numbers": b'{"hidden_size": 99999999999999999999, "rms_norm_eps": 1e999}',
    "deep": b'{"a":' + b"[" * 64 + b"]" * 64 + b"}",
    "unicode": '{"model_type": "ll\\u00e4ma\\ud83d\\ude00", "x": "\\u0000"}'.encode(),
}


def write(sub, name, data):
    d = os.path.join(HERE, "corpus", sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


for k, v in ST.items():
    write("safetensors", k, v)
for k, v in CFG.items():
    write("config", k + ".json", json.dumps(v, indent=1).encode())
for k, v in RAW_CFG.items():
    write("config", k + ".json", v)
# the published checkpoints' configs of the config-resolution test
CONFIGS = os.path.join(HERE, "..", "configs")
for name in sorted(os.listdir(CONFIGS)):
    path = os.path.join(CONFIGS, name, "config.json")
    if os.path.isfile(path):
        with open(path, "rb") as f:
            write("config", "published_" + name + ".json", f.read())
