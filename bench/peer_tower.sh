#!/bin/bash
# bench/peer.md sections 7-8: the Qwen2-VL-2B tower in omnic (capped to AVX2) against
# llama-mtmd-cli (AVX2 build), alternated per image and round; prints the encode seconds of each.
# Nothing here runs in `make test`.
#   LLAMA_BIN=/tmp/nlc/llama.cpp/build-avx2/bin MODEL=/tmp/q2vt MMPROJ=/tmp/q2vt-mmproj.gguf \
#   TEXT_GGUF=/tmp/q15-f16.gguf IMAGES="/tmp/i448.png /tmp/i1036.png" ROUNDS=2 bench/peer_tower.sh
# (MODEL: mktiny's qwen2-vl-2b-tower preset; MMPROJ: the same tower through tools/llama_convert.py;
# TEXT_GGUF: any text GGUF 1536 wide, section 1's Qwen2-1.5B; OMNIC_BASE: a second omnic binary to
# alternate with, for before / after figures.)
set -u
B=${LLAMA_BIN:-/tmp/nlc/llama.cpp/build-avx2/bin}
O=${OMNIC:-build/release/omnic}
MODEL=${MODEL:-/tmp/q2vt}
MMPROJ=${MMPROJ:-/tmp/q2vt-mmproj.gguf}
TEXT_GGUF=${TEXT_GGUF:-/tmp/q15-f16.gguf}
T=${THREADS:-2}
omnic_s() { # encode ms (the bench table's fifth column) -> seconds
    OMNIC_CPU_ISA=${OMNIC_CPU_ISA:-avx2} "$1" bench -m "$MODEL" --image "$2" -t "$T" -r 1 2>&1 |
        awk -F'|' '/ patches/ {split($5, a, "/"); printf "%.2f", a[1] / 1000}'
}
mtmd_s() {
    "$B/llama-mtmd-cli" -m "$TEXT_GGUF" --mmproj "$MMPROJ" --image "$1" -p hi -n 1 -t "$T" --no-warmup \
        --chat-template chatml 2>&1 | awk '/encoding done in/ {printf "%.2f", $(NF-1) / 1000}'
}
for img in ${IMAGES:-/tmp/i448.png /tmp/i1036.png}; do
    for r in $(seq "${ROUNDS:-2}"); do
        [ -n "${OMNIC_BASE:-}" ] && echo "$img round $r omnic-base $(omnic_s "$OMNIC_BASE" "$img") s"
        echo "$img round $r omnic $(omnic_s "$O" "$img") s"
        echo "$img round $r mtmd $(mtmd_s "$img") s"
    done
done
