#!/usr/bin/env bash
# One device call: the Llama family's full two-path compare (bench/llama-compare.ts) on the SmolLM2-135M and
# Qwen2.5-0.5B shapes at T = 128, the flags given here passed on (e.g. --models qwen2.5-0.5b --reps 2 --generate 8).
# PACK (default .devpack) holds node.xz, node_modules/webgpu, debs/ and the bundle; carry it and .gl. Bundle first:
#   npx esbuild bench/llama-compare.ts --bundle --minify --platform=node --format=esm --target=node20 \
#     --outfile=$PACK/llama-compare.mjs --external:webgpu
# Back in $OUT: gpu.txt, llama-compare.json / .log.
PACK=${PACK:-.devpack}
for f in .gl/*.deb "$PACK"/debs/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export SHADERS_DIR=$PWD/shaders
xz -dc "$PACK/node.xz" > /tmp/node && chmod +x /tmp/node
d=$PACK/node_modules/webgpu/dist/linux-x64
[ -f $d/dawn.node ] || xz -dk $d/dawn.node.xz
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/gpu.txt"
(cd "$PACK" && timeout 420 /tmp/node --max-old-space-size=16384 llama-compare.mjs "$@" --out "$OUT/llama-compare.json" \
  > "$OUT/llama-compare.log" 2>&1)
tail -20 "$OUT/llama-compare.log"
