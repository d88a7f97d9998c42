#!/usr/bin/env bash
# Issue 40 item 1 on a lent GPU: bench/comparisons.ts for each tree named as an argument, each bundled with its
# shaders into .dp-perf/<tree>/ (comparisons.mjs, shaders/); .dp-perf also holds the devpack (node.xz, webgpu with
# dawn.node.xz) and the Vulkan/glvnd debs in gl/. Carry .dp-perf. Also the card's copy bandwidth (torch, 1 GiB).
# Results: $OUT/cmp-<tree>.json, log-<tree>.txt, reports.tgz (each tree's report numbers), bw.txt, gpu.txt — at most
# eight files come back, so name at most two trees when reports.tgz is wanted (three: it is left out).
# Making .dp-perf here: ../shared/tools/devpack.sh, mv .devpack .dp-perf (listed in .git/info/exclude), xz its
# dawn.node, the glvnd debs into .dp-perf/gl (tools/README.md), and per tree, from a worktree of it:
#   npx esbuild bench/comparisons.ts --bundle --platform=node --format=esm --target=node20 \
#     --outfile=<main>/.dp-perf/<tree>/comparisons.mjs --external:webgpu; cp -r shaders <main>/.dp-perf/<tree>/
# Here afterwards: npx tsx bench/compare-reports.ts rep-<tree1> rep-<tree2> (from reports.tgz).
set -u
P=${PACK:-.dp-perf}
for f in $P/gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
# Node from $P/node.xz, or (where the pack and the tracked tree together would pass the 64 MiB a call carries) the
# /tmp/node an earlier call on the same warm machine unpacked.
if [ -f $P/node.xz ]; then xz -dc $P/node.xz > /tmp/node && chmod +x /tmp/node; fi
[ -x /tmp/node ] || { echo "no node: carry $P/node.xz" >&2; exit 3; }
d=$P/node_modules/webgpu/dist/linux-x64
[ -f $d/dawn.node ] || xz -dk $d/dawn.node.xz
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/gpu.txt"
timeout 60 python3 - > "$OUT/bw.txt" 2>&1 <<'PY'
import torch
x = torch.empty(2**28, dtype=torch.float32, device='cuda'); y = torch.empty_like(x)
for _ in range(3): y.copy_(x)
torch.cuda.synchronize()
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
s.record()
for _ in range(20): y.copy_(x)
e.record(); torch.cuda.synchronize()
ms = s.elapsed_time(e) / 20
print(f"copy 1 GiB: {ms:.3f} ms, read+write {2 * 2**30 / ms / 1e6:.0f} GB/s")
r = torch.empty(2**28, dtype=torch.float32, device='cuda').uniform_()
for _ in range(3): r.sum()
torch.cuda.synchronize(); s.record()
for _ in range(20): r.sum()
e.record(); torch.cuda.synchronize()
ms = s.elapsed_time(e) / 20
print(f"sum of 1 GiB: {ms:.3f} ms, read {2**30 / ms / 1e6:.0f} GB/s")
PY
for tree in "$@"; do
  SHADERS_DIR=$PWD/$P/$tree/shaders timeout "${TREE_TIMEOUT:-240}" /tmp/node $P/$tree/comparisons.mjs \
    --models "${MODELS:-pythia-410m,pythia-1.4b}" --reps "${REPS:-3}" --out "$OUT/cmp-$tree.json" \
    --report "$OUT/rep-$tree" ${ARGS:-} > "$OUT/log-$tree.txt" 2>&1
  echo "$tree: exit $?" >> "$OUT/gpu.txt"
done
(cd "$OUT" && tar czf reports.tgz rep-* && rm -rf rep-*)
ls -la "$OUT"
