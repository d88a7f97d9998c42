#!/usr/bin/env bash
# The run of record for issue 29's targets, in two device calls on one warm machine (carry .devpack and .gl):
#   bash bench/device-record.sh peers   — HF forward (eager, SDPA, SDPA + CUDA graph) and generate, torch.matmul,
#                                         then bench.mjs (GEMM 2048³ and the forwards of 70m/160m/410m at T 128, 512)
#   bash bench/device-record.sh perf    — perf.mjs on this tree and perf-old.mjs on the tree before the round
#                                         (its shaders in .devpack/shaders-old), interleaved: generation of 70m,
#                                         410m and 1.4b, the full compare at 410m and 2.8b
# Bundles first, here: npm run bench:bundle && cp dist-bench/bench.mjs .devpack/; esbuild bench/perf.ts →
# .devpack/perf.mjs; the same from a worktree of the older commit → .devpack/perf-old.mjs, its shaders/ copied.
source bench/device-setup.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
case "$1" in
  peers)
    timeout 240 python3 bench/torch_peer.py --generate --no-matmul pythia-70m pythia-160m pythia-410m \
      > "$OUT/torch.json" 2> "$OUT/torch.log"
    (cd .devpack && timeout 300 /tmp/node bench.mjs --models pythia-70m,pythia-160m,pythia-410m --compare-shapes none \
      --out "$OUT/bench.json" > "$OUT/bench.log" 2>&1)
    ;;
  perf)
    (cd .devpack &&
      for v in new old new; do
        if [ $v = old ]; then b=perf-old.mjs; s=$PWD/shaders-old; else b=perf.mjs; s=$SHADERS_DIR; fi
        SHADERS_DIR=$s timeout 170 /tmp/node $b --models pythia-70m,pythia-410m,pythia-1.4b \
          --compare pythia-410m,pythia-2.8b --reps 5 --out "$OUT/perf-$v-$SECONDS.json" > "$OUT/perf-$v-$SECONDS.log" 2>&1
      done)
    ;;
esac
ls -la "$OUT"
