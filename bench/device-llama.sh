#!/usr/bin/env bash
# One device call (carry .devpack and .gl; bundle first, from the project root:
#   npx esbuild bench/llama.ts --bundle --platform=node --format=esm --target=node20 --outfile=.devpack/llama.mjs \
#     --external:webgpu):
# the PyTorch peer (bench/torch_llama_peer.py: HF eager, SDPA, SDPA + CUDA graph), then the Llama family's fused
# forward (bench/llama.ts) with the flags given here, e.g.
#   bash bench/device-llama.sh --policies before,heuristic,swept --sweep --profile --flash-bq 16,8
# Back in $OUT: gpu.txt, torch-llama.json / .log, llama.json / .log.
source bench/device-setup.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/gpu.txt"
timeout 150 python3 bench/torch_llama_peer.py > "$OUT/torch-llama.json" 2> "$OUT/torch-llama.log"
(cd .devpack && timeout 400 /tmp/node llama.mjs --reps 9 "$@" --out "$OUT/llama.json" > "$OUT/llama.log" 2>&1)
ls -la "$OUT"
