#!/usr/bin/env bash
# Issue 40 items 2 and 3 in one device call (bench/RESULTS.md, "The why of a two-path fault and the runs import"): the
# two-path compare with a teaching fault (bench/why.ts) and the runs import + analysis of the 410m pair (bench/runs.ts;
# inputs from tools/bench_runs.py, run B's dense_h_to_4h output in bf16), each for the tree before and the tree after,
# in the same call. Each tree travels as its bundles and its own shaders (a tree's WGSL, not the checkout's), in a
# folder of their own (DP below), with the devpack's node, Dawn and loader:
#   git worktree add /tmp/wt-<t> <commit>; (cd /tmp/wt-<t> && npx esbuild bench/<b>.ts --bundle --platform=node \
#     --format=esm --target=node20 --external:webgpu --outfile=ws-<b>-<t>.mjs)   (b = why, runs; t = new, before)
#   xz -9 each into $DP, with shaders-<t>.tar.xz (the tree's shaders/), .devpack's node.xz (or node-stripped.xz),
#   node_modules/webgpu and debs
# then `run` with carry ["dist-bench/why-runs", ".gl"]: bash bench/device-why-speed.sh [after] ("after": the tree after
# alone)
DP=dist-bench/why-runs
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
xz -dc $DP/node.xz > /tmp/node && chmod +x /tmp/node
xz -dkf $DP/node_modules/webgpu/dist/linux-x64/dawn.node.xz
for f in $DP/ws-*.mjs.xz; do xz -dkf "$f"; done
for f in $DP/shaders-*.tar.xz; do t=${f##*/shaders-}; t=${t%.tar.xz}; rm -rf /tmp/sh-$t; mkdir -p /tmp/sh-$t && tar xJf "$f" -C /tmp/sh-$t; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
T0=$(date +%s)
step() { echo "== $1 at +$(( $(date +%s) - T0 )) s"; }
step "make runs"
# (made first, alone: a PyTorch process beside the benches took the CPU and the GPU from them)
[ -f /tmp/rf/b.safetensors ] || (cd tools && timeout 150 python3 bench_runs.py /tmp/rf --fault fc1-bf16 > "$OUT/mk.log" 2>&1)
touch "$OUT/mk.log"
cd $DP
TREES="new before"; [ "$1" = after ] && TREES=new
for t in $TREES; do
  step "why $t"
  SHADERS_DIR=/tmp/sh-$t/shaders timeout 70 /tmp/node ws-why-$t.mjs --model pythia-410m --reps 5 \
    --out "$OUT/why-$t.json" > "$OUT/why-$t.log" 2>&1
done
for t in $TREES; do
  step "runs $t"
  SHADERS_DIR=/tmp/sh-$t/shaders timeout 60 /tmp/node ws-runs-$t.mjs --dir /tmp/rf --reps 4 \
    --out "$OUT/runs-$t.json" > "$OUT/runs-$t.log" 2>&1
done
step "done"
cd "$OUT" && tar czf why-speed.tgz gpu.txt mk.log why-* runs-* && rm -f mk.log why-*.json why-*.log runs-*
python3 - why-speed.tgz <<'PY'
import json, sys, tarfile
t = tarfile.open(sys.argv[1])
for m in sorted(t.getnames()):
    if not m.endswith('.json'): continue
    d = json.load(t.extractfile(m))
    if 'warmup' in d and d['warmup']: print(m, 'warm-up', round(d['warmup']['ms']))
    for r in d['rows']:
        p = {k: round(v) for k, v in (r.get('phases') or {}).items() if k.startswith('why') or k in ('start', 'sources', 'oracle', 'comparisons')}
        print(m, r.get('fault'), r['rep'], round(r.get('ms', r.get('totalMs', 0))), round(r.get('importMs', 0)), p)
PY
