#!/bin/sh
# Re-records tests/configs/golden-*.json with the Hugging Face oracle (reference/hf-oracle.md):
# the 5.x-style configs (<name>-v5) are written by transformers 5.2.0 from their 4.x originals,
# <name>-saved-4.57 by 4.57.6 (hand-edited variants, README.md, are kept as they are),
# then 4.57.6 resolves the 4.x files and 5.2.0 the 5.x ones. Not run in CI.
set -eu
cd "$(dirname "$0")/../.."
T=tests/configs
HFO_FAKE_TORCH_VERSION=2.4.0 PYTHONPATH=/opt/hfo/site520 /usr/bin/python3 tools/hf_golden/resolve_configs.py \
    --configs $T --suffix=-v5 --resave Llama-3.2-1B gemma-3-1b-it gemma-3-4b-it gemma3-text-linear Phi-4-mini-instruct Qwen2-VL-2B-Instruct llava-1.5-7b-hf
PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/resolve_configs.py \
    --configs $T --suffix=-saved-4.57 --resave Qwen2-VL-2B-Instruct gemma3-text-minimal llava-1.5-7b-hf Phi-4-mini-instruct Llama-3.2-1B
PYTHONPATH=/opt/hfo/site457 /usr/bin/python3 tools/hf_golden/resolve_configs.py \
    --configs $T --skip-suffix=-v5 --out $T/golden-4.57.6.json
HFO_FAKE_TORCH_VERSION=2.4.0 PYTHONPATH=/opt/hfo/site520 /usr/bin/python3 tools/hf_golden/resolve_configs.py \
    --configs $T --only-suffix=-v5 --out $T/golden-5.2.0.json
