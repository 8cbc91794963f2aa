#!/bin/bash
# bench/peer.md section 6: llama.cpp (AVX2 build) beside omnic capped to AVX2, one sitting, alternated
# per thread count and dtype; omnic's tg rows carry the read-bandwidth probe run between its decode
# steps (--bw), and bench_ops' probe follows at the end. Nothing here runs in `make test`.
#   LLAMA_BIN=/tmp/nlc/llama.cpp/build-avx2/bin MODEL=/tmp/q15 GGUF=/tmp/q15 bench/peer_avx2.sh
# (GGUF: the prefix of the -f16 / -q4_0 / -q8_0 .gguf files of section 1)
set -u
B=${LLAMA_BIN:-/tmp/nlc/llama.cpp/build-avx2/bin}
O=${OMNIC:-build/release/omnic}
MODEL=${MODEL:-/tmp/q15}
GGUF=${GGUF:-/tmp/q15}
for t in ${THREADS:-2 1}; do
    for q in q4_0 q8_0 f16; do
        g=$GGUF-$q.gguf
        echo "=== t=$t $q llama-bench"
        "$B/llama-bench" -m "$g" -p 512 -n 128 -t "$t" -r 2 2>/dev/null | grep -E "pp512|tg128"
        echo "=== t=$t $q llama-batched-bench (S_TG: the 4-sequence decode total)"
        "$B/llama-batched-bench" -m "$g" -c 4096 -b 512 -ub 512 -npp 64 -ntg 128 -npl 4 -t "$t" 2>/dev/null |
            grep -E "^\|"
        qa=()
        [ "$q" != f16 ] && qa=(--quant "$q")
        echo "=== t=$t $q omnic (f16 row: the bf16 checkpoint)"
        OMNIC_CPU_ISA=avx2 "$O" bench -m "$MODEL" "${qa[@]}" -p 512 -n 128 --batch 1,4 -t "$t" -r 2 --bw 2>&1 |
            grep -E "pp512|tg128"
    done
done
echo "=== read-bandwidth probe (bench_ops -s mv)"
OMNIC_CPU_ISA=avx2 "$(dirname "$O")/bench_ops" -s mv 2>&1 | grep -E "^\| (bf16|q8_0x16|q4_0x16) "
