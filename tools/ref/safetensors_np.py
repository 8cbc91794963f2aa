#!/usr/bin/python3
"""Minimal safetensors reader for the numpy references (numpy + standard library only).

A checkpoint directory holds either `model.safetensors` or shards named by
`model.safetensors.index.json` ({"weight_map": {tensor name: file name}}).
Tensors are memory-mapped and converted on request, so a reference that reads
one layer at a time never holds the whole model in memory.

    ckpt = Checkpoint("/tmp/tiny-llama")
    w = ckpt.get("model.layers.0.self_attn.q_proj.weight")     # float32 ndarray
    ckpt.names(); ckpt.info(name) -> (st_dtype, shape)

Conversion to float32 is exact for every supported dtype:
  F32 -> as is;  F16 -> numpy float16 widened;  BF16 -> the 16 bits shifted into
  the top half of a float32 (uint16 << 16);  F64 is narrowed (rounded) to float32,
  so use get(name, np.float64) to keep it exact.
"""

import json
import os
import struct
from typing import Dict, List, Tuple

import numpy as np

ITEMSIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2}


def read_header(path: str) -> Tuple[Dict[str, dict], int]:
    """Parse one .safetensors file's header.

    Returns ({tensor name: {"dtype", "shape", "data_offsets"}}, data start offset).
    `__metadata__` is dropped. Raises ValueError on a malformed header or on a
    tensor whose byte range does not fit the file or its shape.
    """
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise ValueError(f"{path}: too short for a safetensors header")
        (n,) = struct.unpack("<Q", head)
        if 8 + n > size:
            raise ValueError(f"{path}: header length {n} exceeds the file size {size}")
        header = json.loads(f.read(n).decode("utf-8"))
    header.pop("__metadata__", None)
    start = 8 + n
    for name, info in header.items():
        b, e = info["data_offsets"]
        count = int(np.prod(info["shape"], dtype=np.int64))
        item = ITEMSIZE.get(info["dtype"])
        if item is not None and e - b != count * item:
            raise ValueError(f"{path}: {name}: data_offsets {b},{e} do not match shape {info['shape']}")
        if not 0 <= b <= e <= size - start:
            raise ValueError(f"{path}: {name}: data_offsets {b},{e} outside the file")
    return header, start


def decode(raw: np.ndarray, st_dtype: str, shape, dtype=np.float32) -> np.ndarray:
    """Bytes (uint8 view) of one tensor -> ndarray of `dtype` with `shape` (a fresh copy)."""
    if st_dtype == "F32":
        a = np.frombuffer(raw, "<f4")
    elif st_dtype == "F64":
        a = np.frombuffer(raw, "<f8")
    elif st_dtype == "F16":
        a = np.frombuffer(raw, "<f2")
    elif st_dtype == "BF16":
        a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        raise ValueError(f"unsupported safetensors dtype {st_dtype}")
    return a.astype(dtype).reshape(shape)


class Checkpoint:
    """All tensors of a checkpoint directory (single file or sharded), read lazily."""

    def __init__(self, model_dir: str):
        self.dir = model_dir
        index = os.path.join(model_dir, "model.safetensors.index.json")
        single = os.path.join(model_dir, "model.safetensors")
        if os.path.exists(index):
            with open(index, encoding="utf-8") as f:
                files = sorted(set(json.load(f)["weight_map"].values()))
        elif os.path.exists(single):
            files = ["model.safetensors"]
        else:
            raise FileNotFoundError(f"{model_dir}: no model.safetensors or model.safetensors.index.json")
        self._where: Dict[str, Tuple[str, int, dict]] = {}
        for fn in files:
            path = os.path.join(model_dir, fn)
            header, start = read_header(path)
            for name, info in header.items():
                if name in self._where:
                    raise ValueError(f"{name} appears in {self._where[name][0]} and {path}")
                self._where[name] = (path, start, info)

    def names(self) -> List[str]:
        return sorted(self._where)

    def __contains__(self, name: str) -> bool:
        return name in self._where

    def info(self, name: str) -> Tuple[str, Tuple[int, ...]]:
        """(safetensors dtype string, shape) of a tensor."""
        _, _, info = self._where[name]
        return info["dtype"], tuple(info["shape"])

    def get(self, name: str, dtype=np.float32) -> np.ndarray:
        """Tensor `name` converted to `dtype` (float32 by default). KeyError if absent."""
        if name not in self._where:
            raise KeyError(f"{self.dir}: tensor {name} not found")
        path, start, info = self._where[name]
        b, e = info["data_offsets"]
        if e == b:
            return np.zeros(info["shape"], dtype)
        raw = np.memmap(path, dtype=np.uint8, mode="r", offset=start + b, shape=(e - b,))
        return decode(raw, info["dtype"], info["shape"], dtype)


def load_all(model_dir: str, dtype=np.float32) -> Dict[str, np.ndarray]:
    """Every tensor of the checkpoint as `dtype` (small models only)."""
    ck = Checkpoint(model_dir)
    return {n: ck.get(n, dtype) for n in ck.names()}


if __name__ == "__main__":
    import sys
    ck = Checkpoint(sys.argv[1])
    for n in ck.names():
        st, shape = ck.info(n)
        print(f"{n:60s} {st:5s} {list(shape)}")
