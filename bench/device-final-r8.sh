#!/usr/bin/env bash
# Issue 39's rows on the final tree, on one warm machine:
#   bash bench/device-final-r8.sh unseen   # the held-out unseen sets of both families (bench/device-unseen.sh on the
#                                          # pack PACK, default .dp-unseen: node.xz, webgpu, debs, the CLI bundled from
#                                          # this tree as cli.mjs.xz)
#   bash bench/device-final-r8.sh llama    # HF SDPA + CUDA graph against the fused forward of the SmolLM2-135M and
#                                          # Qwen2.5-0.5B shapes at T 128 and 512 (same call), then the full compare of
#                                          # the 0.5B shape; pack PACK (default .dpf) with the bundles as .mjs.xz:
#   for b in llama:llama llama-compare:llama-compare; do npx esbuild bench/${b%%:*}.ts --bundle --minify \
#     --platform=node --format=esm --target=node20 --outfile=.dpf/${b##*:}.mjs --external:webgpu && xz -9f .dpf/${b##*:}.mjs; done
# Carry .gl too (without it Dawn found no adapter on the H100 of 2026-11-27 21:24). The tree (39 MB), node.xz (22 MB),
# dawn.node.xz (5 MB) and .gl come near the 64 MiB a call carries: on 2026-11-27 the unseen call carried node.xz, the
# CLI and the debs (.dpc) with dawn.node left on the warm machine by an earlier call (the pack's node_modules linked
# to it), and the llama call the two bundles alone (.dpl), /tmp/node being there from the call before.
# Results: $OUT/neox-unseen.jsonl, llama-unseen.jsonl, logs.tgz, reports.tgz (unseen); r-llama.tgz (llama).
set -u
P=${PACK:-.dpf}
if [ "${1:-llama}" = unseen ]; then PACK=${PACK:-.dp-unseen} exec bash bench/device-unseen.sh; fi
for f in .gl/*.deb $P/debs/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json SHADERS_DIR=$PWD/shaders
[ -s /tmp/node ] || { xz -dc $P/node.xz > /tmp/node && chmod +x /tmp/node; }
d=$P/node_modules/webgpu/dist/linux-x64
[ -f $d/dawn.node ] || xz -dk $d/dawn.node.xz
for f in $P/*.mjs.xz; do [ -f "${f%.xz}" ] || xz -dk "$f"; done
W=/tmp/final-llama
mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader > $W/gpu.txt
stamp() { echo "$(date -u +%H:%M:%S) $*" | tee -a $W/phases.txt; }
N="/tmp/node --max-old-space-size=24576"
stamp torch-llama
timeout 120 python3 bench/torch_llama_peer.py > $W/torch-llama.json 2> $W/torch-llama.log
stamp forward
(cd $P && timeout 180 $N llama.mjs --models smollm2-135m,qwen2.5-0.5b --T 128,512 --policies policy \
  --reps 9 --rounds 2 --out $W/forward.json > $W/forward.log 2>&1)
stamp llama-compare
(cd $P && timeout 120 $N llama-compare.mjs --models qwen2.5-0.5b --reps 3 --generate 8 \
  --out $W/llama-compare.json > $W/llama-compare.log 2>&1)
stamp done
grep -h "graph" $W/torch-llama.log | head -8
grep -hE "T=" $W/forward.log | cut -c1-170 | head -12
tail -n 8 $W/llama-compare.log | cut -c1-200
tar czf $OUT/r-llama.tgz -C $W .
