#!/usr/bin/env bash
# One device call's worth of the round's benchmarks (bench/RESULTS.md), writing into $OUT: the runs import and
# analysis with the why phase at a born product (fc1 in bf16) and at a residual add, the decode check's cost, the
# two-path why at 410m, and the cause library on unseen runs (tools/cause_unseen.py, set 2). Bundles first, here:
#   for b in runs decode-check:decode why; do esbuild bench/${b%%:*}.ts ... --outfile=.devpack/${b##*:}.mjs; done
#   esbuild src/cli/main.ts ... --outfile=.devpack/cli.mjs
# then `run` with carry [".devpack", ".gl"]: bash bench/device-round.sh
source bench/device-setup.sh
(cd tools && python3 bench_runs.py /tmp/rf --fault fc1-bf16 > "$OUT/mk-fc1.log" 2>&1) &
(cd tools && python3 bench_runs.py /tmp/rr > "$OUT/mk-res.log" 2>&1) &
(python3 tools/cause_unseen.py make --set 2 --out /tmp/unseen > "$OUT/unseen-make.log" 2>&1) &
wait
(cd .devpack &&
  /tmp/node runs.mjs --dir /tmp/rf --reps 4 --out "$OUT/runs-fc1.json" > "$OUT/runs-fc1.log" 2>&1
  /tmp/node runs.mjs --dir /tmp/rr --reps 4 --out "$OUT/runs-residual.json" > "$OUT/runs-residual.log" 2>&1
  timeout 150 /tmp/node decode.mjs --model pythia-410m --reps 3 --out "$OUT/decode-check.json" > "$OUT/decode-check.log" 2>&1
  timeout 150 /tmp/node why.mjs --reps 3 --out "$OUT/why-paths.json" > "$OUT/why-paths.log" 2>&1)
timeout 200 python3 tools/cause_unseen.py cli --out /tmp/unseen --node /tmp/node --cli .devpack/cli.mjs \
  --results "$OUT/unseen.jsonl" --jobs 8 > "$OUT/unseen-cli.log" 2>&1
ls -la "$OUT"
