#!/usr/bin/env bash
# One device call for the subgroup GEMM core (bench/RESULTS.md, "Subgroup GEMM core (issue 29 item 1)"), writing into
# $OUT: torch.matmul (bench/torch_matmul.py) at 2048³ and every Pythia-70m/160m/410m GEMM shape, then ours
# (bench/gemm-subgroup.ts with the arguments given here), then torch.matmul at 2048³ again. Bundle first:
#   npx esbuild bench/gemm-subgroup.ts --bundle --platform=node --format=esm --target=node20 \
#     --outfile=.devpack/gemm-subgroup.mjs --external:webgpu
# then `run` with carry [".devpack", ".gl"]: bash bench/device-subgroup.sh --fma --top 3
# BUNDLE (default .devpack/gemm-subgroup.mjs), SHADERS (default shaders/) and PEER (default
# bench/torch_matmul.py) name other copies, e.g. ones carried from another worktree.
source bench/device-setup.sh
bundle=$(realpath "${BUNDLE:-.devpack/gemm-subgroup.mjs}")
peer=${PEER:-bench/torch_matmul.py}
export SHADERS_DIR=$(realpath "${SHADERS:-shaders}")
SHAPES="2048x2048x2048 128x1536x512 128x512x512 128x2048x512 128x512x2048 128x50304x512 512x1536x512 512x512x512
512x2048x512 512x512x2048 512x50304x512 128x2304x768 128x768x768 128x3072x768 128x768x3072 128x50304x768 512x2304x768
512x768x768 512x3072x768 512x768x3072 512x50304x768 128x3072x1024 128x1024x1024 128x4096x1024 128x1024x4096
128x50304x1024 512x3072x1024 512x1024x1024 512x4096x1024 512x1024x4096 512x50304x1024"
# shellcheck disable=SC2086
python3 "$peer" "$OUT/torch-before.json" $SHAPES > "$OUT/torch-before.log" 2>&1
(cd .devpack && timeout 170 /tmp/node "$bundle" "$@" --json "$OUT/subgroup.json" > "$OUT/subgroup.log" 2>&1)
python3 "$peer" "$OUT/torch-after.json" 2048x2048x2048 > "$OUT/torch-after.log" 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
tail -5 "$OUT/subgroup.log"
cat "$OUT/torch-after.log"
