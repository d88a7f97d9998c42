#!/usr/bin/env bash
# Issue 40 items 2 and 3 in one device call (bench/RESULTS.md, "The why at GPU speed and the runs import"): the
# two-path compare with a teaching fault (bench/why.ts) on the tree before and after, the runs import + analysis of the
# 410m pair (bench/runs.ts; inputs from tools/bench_runs.py, run B's dense_h_to_4h output in bf16) before, after, and
# after without the warm-up, and the CPU left in one op's why (bench/why-op.ts). The tree (37 MB) leaves room for no
# more than the devpack's node, Dawn and loader plus these bundles xz-packed, in a folder of their own (DP below):
#   npx esbuild bench/<b>.ts --bundle --platform=node --format=esm --target=node20 --external:webgpu \
#     --outfile=ws-<b>-new.mjs   (b = why, runs, why-op; ws-why-before.mjs, ws-runs-before.mjs from a worktree of the
#                                 tree before), xz -9 each into $DP with .devpack's node.xz, node_modules and debs
# then `run` with carry ["dist-bench/ws", ".gl"]: bash bench/device-why-speed.sh [after] ("after": the tree after
# alone, its why and its runs with the warm-up)
DP=dist-bench/ws
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export SHADERS_DIR=$PWD/shaders
xz -dc $DP/node.xz > /tmp/node && chmod +x /tmp/node
xz -dk $DP/node_modules/webgpu/dist/linux-x64/dawn.node.xz
for f in $DP/ws-*.mjs.xz; do xz -dk "$f"; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
T0=$(date +%s)
step() { echo "== $1 at +$(( $(date +%s) - T0 )) s"; }
step "make runs"
(cd tools && timeout 150 python3 bench_runs.py /tmp/rf --fault fc1-bf16 > "$OUT/mk.log" 2>&1)
cd $DP
TREES="new before"; [ "$1" = after ] && TREES=new
for t in $TREES; do
  step "why $t"
  timeout 75 /tmp/node ws-why-$t.mjs --model pythia-410m --reps 3 --out "$OUT/why-$t.json" > "$OUT/why-$t.log" 2>&1
done
for t in $TREES; do
  step "runs $t"
  timeout 60 /tmp/node ws-runs-$t.mjs --dir /tmp/rf --reps 3 --out "$OUT/runs-$t.json" > "$OUT/runs-$t.log" 2>&1
done
if [ "$1" != after ]; then
  step "runs new, no warm-up"
  timeout 45 /tmp/node ws-runs-new.mjs --dir /tmp/rf --reps 3 --no-warm --out "$OUT/runs-new-nowarm.json" \
    > "$OUT/runs-new-nowarm.log" 2>&1
  step "why-op"
  timeout 30 /tmp/node ws-why-op-new.mjs --reps 3 > "$OUT/why-op.log" 2>&1
fi
step "done"
cd "$OUT" && tar czf why-speed.tgz gpu.txt mk.log why-* runs-* && rm -f mk.log why-*.json why-*.log runs-*
tar xzf why-speed.tgz -O why-op.log 2>/dev/null | tail -4
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
