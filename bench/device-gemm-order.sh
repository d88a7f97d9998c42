#!/usr/bin/env bash
# One device call, the run of record for the GEMM's workgroup order (GemmPolicy.groupM) and the forward's chunked
# submits: the peers (torch.matmul, HF SDPA + CUDA graph for the Llama and the Pythia shapes), the GEMM at 2048³ and at
# Qwen2.5-0.5B's gate/up and LM head in both orders (gemm-bench.mjs), then bench/llama.ts with the flags given here.
# Carry .gl and, of .devpack, node-stripped.xz (or node.xz), node_modules, debs, gemm-bench.mjs and gemm-llama.mjs
# (bundled as bench/device-gemm-toggles.sh says). nvidia-smi samples the clocks every 100 ms throughout (smi.csv).
# Everything lands in $OUT/r.tgz; the summary lines on stdout.
[ -f .devpack/node.xz ] || [ ! -f .devpack/node-stripped.xz ] || ln -s node-stripped.xz .devpack/node.xz
source bench/device-setup.sh
W=/tmp/gemm-out
mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader > $W/gpu.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,pstate \
  --format=csv,noheader -lms 100 > $W/smi.csv 2>&1 &
SMI=$!
stamp() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" | tee -a $W/phases.txt; }
stamp matmul
timeout 40 python3 bench/torch_matmul.py $W/matmul.json 2048x2048x2048 512x9728x896 512x151936x896 > $W/matmul.log 2>&1
stamp gemm
(cd .devpack && timeout 60 /tmp/node gemm-bench.mjs --shapes 512x9728x896,512x151936x896 --tune \
  --match '^128x64x(8|16) 8x4 buf(1|2)$' --groups 1,8 --json $W/gemm.json > $W/gemm.log 2>&1)
grep -E "fused|8x4 buf" $W/gemm.log | grep -v reference | cut -c1-90
stamp torch-llama
timeout 100 python3 bench/torch_llama_peer.py > $W/torch-llama.json 2> $W/torch-llama.log
stamp torch-pythia
timeout 100 python3 bench/torch_peer.py --no-matmul > $W/torch-pythia.json 2> $W/torch-pythia.log
stamp llama
(cd .devpack && timeout 260 /tmp/node gemm-llama.mjs "$@" --out $W/llama.json > $W/llama.log 2>&1)
stamp done
kill $SMI
grep -hE "T=|chosen|sweep:" $W/llama.log | cut -c1-170
grep -h "graph" $W/torch-llama.log $W/torch-pythia.log
cat $W/matmul.log
tar czf $OUT/r.tgz -C $W .
ls -la $OUT
