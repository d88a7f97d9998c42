#!/usr/bin/env bash
# The round's run of record (issue 40's table and issue 39's speed rows), in one or two device calls on one card:
#   bash bench/device-final-r7.sh peers    # torch.matmul 2048³, HF SDPA + CUDA graph (Llama and Pythia shapes),
#                                          # the WGSL GEMM at 2048³, the fused forwards (bench/llama.ts --pythia)
#   bash bench/device-final-r7.sh extra    # the runs import (bench/runs.ts, a 410m pair made by tools/bench_runs.py,
#                                          # four reps) and the full compare of the 12b shape (the issue asks it of an H200)
#   bash bench/device-final-r7.sh compare  # the full compare of every Pythia shape to 6.9b (bench/comparisons.ts),
#                                          # the Qwen2.5-0.5B compare (bench/llama-compare.ts), the two-path why at 410m
# Carry .gl and .dpf: node.xz (the stripped Node), node_modules (webgpu with dawn.node.xz), debs, and the bundles as
# .mjs.xz (minified, from the project root):
#   for b in gemm-main:gemm-bench llama:llama comparisons:comparisons llama-compare:llama-compare why:why runs:runs; do
#     npx esbuild bench/${b%%:*}.ts --bundle --minify --platform=node --format=esm --target=node20 \
#       --outfile=.dpf/${b##*:}.mjs --external:webgpu && xz -9f .dpf/${b##*:}.mjs; done
# The tree and the carry together must stay under the call's 64 MiB. Everything lands in $OUT/r-<part>.tgz; the
# summary lines on stdout.
set -u
part=${1:-peers}
for f in .gl/*.deb .dpf/debs/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export SHADERS_DIR=$PWD/shaders
[ -x /tmp/node ] || { xz -dc .dpf/node.xz > /tmp/node && chmod +x /tmp/node; }
d=.dpf/node_modules/webgpu/dist/linux-x64
[ -f $d/dawn.node ] || xz -dk $d/dawn.node.xz
for f in .dpf/*.mjs.xz; do [ -f "${f%.xz}" ] || xz -dk "$f"; done
W=/tmp/final-$part
mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader > $W/gpu.txt
cat $W/gpu.txt
stamp() { echo "$(date -u +%H:%M:%S) $*" | tee -a $W/phases.txt; }
N="/tmp/node --max-old-space-size=24576"
if [ "$part" = peers ]; then
  stamp matmul
  timeout 60 python3 bench/torch_matmul.py $W/matmul.json 2048x2048x2048 > $W/matmul.log 2>&1
  stamp gemm
  (cd .dpf && timeout 60 $N gemm-bench.mjs --json $W/gemm.json > $W/gemm.log 2>&1)
  stamp torch-llama
  timeout 120 python3 bench/torch_llama_peer.py > $W/torch-llama.json 2> $W/torch-llama.log
  stamp torch-pythia
  timeout 120 python3 bench/torch_peer.py --no-matmul > $W/torch-pythia.json 2> $W/torch-pythia.log
  stamp forward
  (cd .dpf && timeout 240 $N llama.mjs --models smollm2-135m,qwen2.5-0.5b --T 128,512 --policies policy \
    --pythia pythia-70m,pythia-160m,pythia-410m --reps 9 --rounds 2 --out $W/forward.json > $W/forward.log 2>&1)
  stamp done
  cat $W/matmul.log; grep -iE "tflop|2048" $W/gemm.log | head -5
  grep -h "graph" $W/torch-llama.log $W/torch-pythia.log | head -20
  grep -hE "T=" $W/forward.log | cut -c1-170 | head -30
elif [ "$part" = extra ]; then
  stamp make-runs
  (cd tools && timeout 150 python3 bench_runs.py /tmp/rf --fault fc1-bf16 > $W/mk.log 2>&1)
  stamp runs
  (cd .dpf && timeout 90 $N runs.mjs --dir /tmp/rf --reps 4 --out $W/runs.json > $W/runs.log 2>&1)
  stamp comparisons-12b
  (cd .dpf && timeout 240 $N comparisons.mjs --models pythia-12b --reps 2 --out $W/comparisons-12b.json \
    > $W/comparisons-12b.log 2>&1)
  stamp done
  tail -n 8 $W/runs.log | cut -c1-220; grep -E "compare:|Error" $W/comparisons-12b.log | cut -c1-200
else
  stamp comparisons
  (cd .dpf && timeout 330 $N comparisons.mjs --models pythia-410m,pythia-1b,pythia-1.4b,pythia-2.8b,pythia-6.9b \
    --reps 3 --out $W/comparisons.json > $W/comparisons.log 2>&1)
  stamp llama-compare
  (cd .dpf && timeout 120 $N llama-compare.mjs --models qwen2.5-0.5b --reps 3 --generate 8 \
    --out $W/llama-compare.json > $W/llama-compare.log 2>&1)
  stamp why
  (cd .dpf && timeout 100 $N why.mjs --reps 3 --out $W/why.json > $W/why.log 2>&1)
  stamp done
  tail -n 25 $W/comparisons.log | cut -c1-200; tail -n 8 $W/llama-compare.log | cut -c1-200; tail -n 6 $W/why.log
fi
tar czf $OUT/r-$part.tgz -C $W .
ls -la $OUT
