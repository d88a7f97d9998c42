#!/usr/bin/env bash
# One device call: the K cap of the GEMM policy (GemmPolicy.maxKChunk) against the table's partition — a 1.4b
# decode step's GEMMs, 8 greedy fused tokens, the fused forward at T = 128 and 512, and the full compare at 410m
# and 2.8b — with HF generate (SDPA) as the peer in the same call. Bundles first, here:
#   for b in decode-gemm compare-speed; do npx esbuild bench/$b.ts --bundle --platform=node --format=esm \
#     --target=node20 --outfile=.devpack/$b.mjs --external:webgpu; done
# then `run` with carry [".devpack", ".gl"]: bash bench/device-decode.sh [caps] (default 0,1024,512,256)
source bench/device-setup.sh
CAPS=${1:-0,1024,512,256}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
timeout 120 python3 bench/torch_peer.py --generate-only --generate-models=pythia-1.4b > "$OUT/torch-generate.json" 2> "$OUT/torch-generate.log"
(cd .devpack &&
  timeout 240 /tmp/node decode-gemm.mjs --models pythia-1.4b --generate pythia-1.4b --caps "$CAPS" --forward 128,512 \
    --json "$OUT/decode-gemm-caps.json" > "$OUT/decode-gemm-caps.log" 2>&1
  for cap in 0 512; do
    timeout 100 /tmp/node compare-speed.mjs --models pythia-410m,pythia-2.8b --reps 3 --max-k-chunk $cap \
      --out "$OUT/compare-cap$cap.json" > "$OUT/compare-cap$cap.log" 2>&1
  done)
ls -la "$OUT"
