#!/usr/bin/env python3
"""Runs llama.cpp's convert_hf_to_gguf.py (from the current directory, a llama.cpp checkout)
on Debian 12's torch 1.13, which lacks dtypes the converter names at import (float8_*, uint16+):
they are aliased to types of the same width first. Only for bench/peer.md's side-by-side runs
(the random-weight towers mktiny writes hold none of those dtypes).

  cd llama.cpp && python3 /path/to/omnic/tools/llama_convert.py MODEL_DIR --mmproj --outtype f16 \\
      --outfile tower.gguf
"""
import os
import runpy
import sys
import types

import torch

for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"):
    if not hasattr(torch, name):
        setattr(torch, name, torch.uint8)
for name in ("uint16", "uint32", "uint64"):
    if not hasattr(torch, name):
        setattr(torch, name, torch.int32)
try:
    import transformers  # noqa: F401  (the HF oracle's, when it is on PYTHONPATH)
except ImportError:
    # Without transformers the converter reads config.json itself (its own fallback when
    # AutoConfig fails): enough for the mmproj of a tower (no tokenizer is converted).
    stub = types.ModuleType("transformers")

    class _Missing:
        @staticmethod
        def from_pretrained(*args, **kwargs):
            raise OSError("transformers is not installed (tools/llama_convert.py stub)")

    stub.AutoConfig = stub.AutoTokenizer = _Missing
    sys.modules["transformers"] = stub
sys.path.insert(0, os.getcwd())  # the converter's own modules sit beside it
sys.argv = ["convert_hf_to_gguf.py"] + sys.argv[1:]
runpy.run_path("convert_hf_to_gguf.py", run_name="__main__")
