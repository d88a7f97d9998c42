#!/usr/bin/env bash
# One device call: the Llama family's full two-path compare (bench/llama-compare.ts) for each tree named as an
# argument before `--`, one process each, in turn on the same card; the flags after `--` passed on (e.g. --models
# qwen2.5-0.5b --reps 3 --generate 8 --profile 1). Each tree is bundled with its shaders into .dp-lc/<tree>/
# (llama-compare.mjs, shaders/), from a worktree of it:
#   npx esbuild bench/llama-compare.ts --bundle --minify --platform=node --format=esm --target=node20 \
#     --outfile=<main>/.dp-lc/<tree>/llama-compare.mjs --external:webgpu; cp -r shaders <main>/.dp-lc/<tree>/
# A tree without shaders/ takes .dp-lc/shaders (from .dp-lc/shaders.tar.xz, the trees' shaders where they are the
# same); a bundle may come as llama-compare.mjs.xz. Carry .gl, .dp-lc and, of .devpack, node-stripped.xz (or node.xz), node_modules and debs (tools/README.md).
# Back in $OUT: gpu.txt, lc-<tree>.json / .log.
set -u
trees=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do trees+=("$1"); shift; done
[ $# -gt 0 ] && shift
for f in .gl/*.deb .devpack/debs/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
node=.devpack/node.xz; [ -f $node ] || node=.devpack/node-stripped.xz
xz -dc $node > /tmp/node && chmod +x /tmp/node
d=.devpack/node_modules/webgpu/dist/linux-x64
[ -f $d/dawn.node ] || xz -dk $d/dawn.node.xz
[ -e .dp-lc/node_modules ] || ln -s "$PWD/.devpack/node_modules" .dp-lc/node_modules
# Packed to keep the call's transfer under 64 MiB: the bundles as .mjs.xz, the shaders as shaders.tar.xz.
for f in .dp-lc/*/llama-compare.mjs.xz; do [ -f "${f%.xz}" ] || xz -dk "$f"; done
[ -f .dp-lc/shaders.tar.xz ] && [ ! -d .dp-lc/shaders ] && tar xJf .dp-lc/shaders.tar.xz -C .dp-lc
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/gpu.txt"
for t in "${trees[@]}"; do
  s=.dp-lc/$t/shaders; [ -d $s ] || s=.dp-lc/shaders
  SHADERS_DIR=$PWD/$s timeout 400 /tmp/node --max-old-space-size=16384 .dp-lc/$t/llama-compare.mjs \
    "$@" --out "$OUT/lc-$t.json" > "$OUT/lc-$t.log" 2>&1
  echo "== $t (rc $?)"; grep -v '^ ' "$OUT/lc-$t.log" | tail -12 | cut -c1-1500
done
