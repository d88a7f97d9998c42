#!/usr/bin/env bash
# One call at a round's end (carry .devpack and .gl; bundle first, from the project root:
#   for b in llama perf decode-check; do npx esbuild bench/$b.ts --bundle --platform=node --format=esm \
#     --target=node20 --outfile=.devpack/$b.mjs --external:webgpu; done):
# the Llama family's fused forward against HF SDPA + CUDA graph (bench/llama.ts, bench/torch_llama_peer.py), the
# decode check's cost at 410m (bench/decode-check.ts) and the full compare at 410m (bench/perf.ts).
source bench/device-setup.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
timeout 150 python3 bench/torch_llama_peer.py > "$OUT/torch-llama.json" 2> "$OUT/torch-llama.log"
(cd .devpack && timeout 150 /tmp/node llama.mjs --reps 9 --out "$OUT/llama.json" > "$OUT/llama.log" 2>&1
 timeout 100 /tmp/node decode-check.mjs --model pythia-410m --reps 3 --out "$OUT/decode-check.json" > "$OUT/decode-check.log" 2>&1
 timeout 100 /tmp/node perf.mjs --models pythia-410m --compare pythia-410m --reps 5 --out "$OUT/perf.json" > "$OUT/perf.log" 2>&1)
ls -la "$OUT"
