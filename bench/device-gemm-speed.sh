#!/usr/bin/env bash
# One device call for the GEMM against cuBLAS and the Llama fused forward against HF SDPA + CUDA graph (carry
# .devpack and .gl; bundle first, from the project root:
#   npx esbuild bench/llama.ts --bundle --platform=node --format=esm --target=node20 --outfile=.devpack/llama.mjs \
#     --external:webgpu):
# torch.matmul at every GEMM shape of the two Llama shapes and 2048³ (bench/torch_matmul.py), the HF peer
# (bench/torch_llama_peer.py), then bench/llama.ts with the forward per op (--profile) and the flags given here, e.g.
#   bash bench/device-gemm-speed.sh --gemm --floor                  (the first call: the policy's GEMM at the same
#                                                                    shapes, the dispatch floor)
#   bash bench/device-gemm-speed.sh --gemm --sweep --cold --sweep-s 100 --policies nofold,policy,swept
# torch.matmul 2048³ runs again at the end. MATMUL=cube times torch.matmul at 2048³ alone.
# Back in $OUT: gpu.txt, matmul-{before,after}.json, torch-llama.json / .log, llama.json / .log.
# Node from .devpack/node-stripped.xz where .devpack/node.xz was not carried (the binary stripped, xz -9e: 2 MB less,
# for when the tree leaves no room under the 64 MiB transfer).
[ -f .devpack/node.xz ] || [ ! -f .devpack/node-stripped.xz ] || ln -s node-stripped.xz .devpack/node.xz
source bench/device-setup.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader > "$OUT/gpu.txt"
SHAPES=""
for T in 128 512; do
  # SmolLM2-135M: q/k/v, o, gate/up, down, LM head; then Qwen2.5-0.5B's.
  SHAPES="$SHAPES ${T}x960x576 ${T}x576x576 ${T}x3072x576 ${T}x576x1536 ${T}x49152x576"
  SHAPES="$SHAPES ${T}x1152x896 ${T}x896x896 ${T}x9728x896 ${T}x896x4864 ${T}x151936x896"
done
[ "${MATMUL:-all}" = all ] || SHAPES=""  # MATMUL=cube: 2048³ alone
timeout 120 python3 bench/torch_matmul.py "$OUT/matmul-before.json" $SHAPES 2048x2048x2048 > "$OUT/matmul.log" 2>&1
timeout 150 python3 bench/torch_llama_peer.py > "$OUT/torch-llama.json" 2> "$OUT/torch-llama.log"
(cd .devpack && timeout 330 /tmp/node llama.mjs --reps 9 --profile "$@" --out "$OUT/llama.json" > "$OUT/llama.log" 2>&1)
timeout 60 python3 bench/torch_matmul.py "$OUT/matmul-after.json" 2048x2048x2048 >> "$OUT/matmul.log" 2>&1
ls -la "$OUT"
