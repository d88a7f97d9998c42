#!/usr/bin/env bash
# One device call (carry .devpack and .gl; bundle first, from the project root:
#   npx esbuild bench/llama-compare.ts --bundle --platform=node --format=esm --target=node20 \
#     --outfile=.devpack/llama-compare.mjs --external:webgpu):
# the Llama family's full two-path compare (bench/llama-compare.ts) on the SmolLM2-135M and Qwen2.5-0.5B shapes at
# T = 128, the flags given here passed on (e.g. --reps 3 --generate 8). Back in $OUT: gpu.txt, llama-compare.json / .log.
source bench/device-setup.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/gpu.txt"
(cd .devpack && timeout 420 /tmp/node --max-old-space-size=16384 llama-compare.mjs "$@" --out "$OUT/llama-compare.json" \
  > "$OUT/llama-compare.log" 2>&1)
tail -20 "$OUT/llama-compare.log"
