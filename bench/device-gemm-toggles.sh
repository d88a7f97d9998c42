#!/usr/bin/env bash
# One device call: what Dawn's code generation costs the GEMM core, why the fused forward's wall time moves between
# calls, and the forward against its peers, all on one machine. Carry .gl and, of .devpack, node-stripped.xz (or
# node.xz), node_modules, debs, gemm-bench.mjs and gemm-llama.mjs; bundle first, from the project root:
#   npx esbuild bench/gemm-main.ts --bundle --platform=node --format=esm --target=node20 \
#     --outfile=.devpack/gemm-bench.mjs --external:webgpu
#   npx esbuild bench/llama.ts --bundle --platform=node --format=esm --target=node20 \
#     --outfile=.devpack/gemm-llama.mjs --external:webgpu
# In order: nvidia-smi sampling the SM clock, power, P-state and the clock-event reasons every 100 ms for the whole
# call (smi.csv, smi-reasons.csv); torch.matmul at 2048³ and the Qwen2.5-0.5B T = 512 shapes; the GEMM core under
# each set of Dawn toggles in TOGGLE_SETS (gemm-bench.mjs: the policy's launch, then the 128×64 and 128×128 tiles, in
# the grid's order and, for the first and the last set, with GEMM_GROUP_M 8); the HF peers (torch_llama_peer.py,
# torch_peer.py --no-matmul); then bench/llama.ts twice, the engine's toggles and then the set FORWARD_TOGGLES (default:
# the one of TOGGLE_SETS, disable_robustness excepted, with the fastest 2048³), each with the flags given here.
# Everything lands in $OUT/r.tgz (8 files come back at most); the summary lines on stdout.
[ -f .devpack/node.xz ] || [ ! -f .devpack/node-stripped.xz ] || ln -s node-stripped.xz .devpack/node.xz
source bench/device-setup.sh
W=/tmp/gemm-out
mkdir -p $W /tmp/wcache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader > $W/gpu.txt
nvidia-smi -q -d PERFORMANCE,CLOCK,POWER > $W/smi-q-before.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,pstate \
  --format=csv,noheader -lms 100 > $W/smi.csv 2>&1 &
SMI1=$!
nvidia-smi --query-gpu=timestamp,clocks_event_reasons.active --format=csv,noheader -lms 100 > $W/smi-reasons.csv 2>&1 &
SMI2=$!
stamp() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" | tee -a $W/phases.txt; }
stamp matmul
timeout 60 python3 bench/torch_matmul.py $W/matmul.json 2048x2048x2048 512x9728x896 512x896x4864 512x151936x896 \
  128x9728x896 > $W/matmul.log 2>&1
SETS=${TOGGLE_SETS:-"none|disable-dawn-features=use_vulkan_memory_model|enable-dawn-features=enable_integer_range_analysis_in_robustness|enable-dawn-features=disable_workgroup_init|enable-dawn-features=disable_polyfills_on_integer_div_and_mod|disable-dawn-features=use_vulkan_memory_model enable-dawn-features=enable_integer_range_analysis_in_robustness,disable_workgroup_init,disable_polyfills_on_integer_div_and_mod|enable-dawn-features=disable_robustness"}
IFS='|' read -ra SET <<< "$SETS"
n=${#SET[@]}
for i in "${!SET[@]}"; do
  t=${SET[$i]}
  groups=1
  [ "$i" = 0 ] || [ "$i" = $((n - 2)) ] && groups=1,8
  tog=(); [ "$t" = none ] || tog=(--toggles "$t")
  stamp "gemm $i: $t"
  (cd .devpack && timeout 90 /tmp/node gemm-bench.mjs "${tog[@]}" --shapes 512x9728x896,512x151936x896 --tune \
    --match '^128x(64|128)x(8|16) 8x(4|8) buf1$' --groups $groups --json $W/gemm-$i.json > $W/gemm-$i.log 2>&1)
  grep -E "^2048³ .*(fused|8x4 buf1 )" $W/gemm-$i.log | head -3 | sed "s/^/set $i: /"
done
# The fastest set at 2048³ (the policy's launch), disable_robustness excepted: what the forward runs second.
BEST=$(python3 - "$W" "$SETS" <<'EOF'
import json, sys
w, sets = sys.argv[1], sys.argv[2].split('|')
best = None
for i, t in enumerate(sets):
    if 'disable_robustness' in t or t == 'none':
        continue
    try:
        rows = json.load(open(f'{w}/gemm-{i}.json'))['rows']
    except Exception:
        continue
    ms = min(r['ms'] for r in rows if r['M'] == 2048 and r['kernel'] != 'reference' and not r.get('skipped'))
    if best is None or ms < best[0]:
        best = (ms, t)
print(best[1] if best else 'disable-dawn-features=use_vulkan_memory_model')
EOF
)
FT=${FORWARD_TOGGLES:-$BEST}
stamp "forward toggles: $FT"
stamp torch-llama
timeout 150 python3 bench/torch_llama_peer.py > $W/torch-llama.json 2> $W/torch-llama.log
stamp torch-pythia
timeout 150 python3 bench/torch_peer.py --no-matmul > $W/torch-pythia.json 2> $W/torch-pythia.log
stamp "llama default"
(cd .devpack && timeout 200 /tmp/node gemm-llama.mjs --weights-cache /tmp/wcache "$@" --out $W/llama-default.json \
  > $W/llama-default.log 2>&1)
stamp "llama $FT"
(cd .devpack && timeout 200 /tmp/node gemm-llama.mjs --weights-cache /tmp/wcache --toggles "$FT" "$@" \
  --out $W/llama-toggled.json > $W/llama-toggled.log 2>&1)
stamp done
kill $SMI1 $SMI2
nvidia-smi -q -d PERFORMANCE,CLOCK,POWER > $W/smi-q-after.txt 2>&1
grep -hE "T=|fused r" $W/llama-default.log $W/llama-toggled.log | cut -c1-200
grep -h "graph" $W/torch-llama.log $W/torch-pythia.log
tar czf $OUT/r.tgz -C $W .
ls -la $OUT
