#!/usr/bin/env bash
# The last call of a round: HF generate (1.4b, 410m) and perf.mjs on this tree, twice, on one machine (carry
# .devpack and .gl; bundle perf.mjs first): generation of 410m and 1.4b, the full compare at 410m.
source bench/device-setup.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
timeout 200 python3 bench/torch_peer.py --generate-only --generate-models=pythia-410m,pythia-1.4b \
  > "$OUT/torch-generate.json" 2> "$OUT/torch-generate.log"
(cd .devpack && for i in 1 2; do
  timeout 150 /tmp/node perf.mjs --models pythia-410m,pythia-1.4b --compare pythia-410m --reps 5 \
    --out "$OUT/perf-$i.json" > "$OUT/perf-$i.log" 2>&1
done)
ls -la "$OUT"
