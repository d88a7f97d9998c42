#!/usr/bin/env bash
# The runs import + analysis fed as the files are read (streamRuns) against the files read whole first (`--whole`,
# the analysis after, as before streaming), from the page cache and cold (`--evict`), interleaved in one device call
# on the same inputs (bench/RESULTS.md,
# "The analysis as the first layers arrive"). Bundle first, here:
#   npx esbuild bench/runs.ts --bundle --platform=node --format=esm --target=node20 --outfile=.devpack/runs.mjs \
#     --external:webgpu
# then `run` with carry [".devpack", ".gl"]: bash bench/device-stream.sh
source bench/device-setup.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
(cd tools && python3 bench_runs.py /tmp/rf --fault fc1-bf16 > "$OUT/mk-fc1.log" 2>&1) &
(cd tools && python3 bench_runs.py /tmp/rr > "$OUT/mk-res.log" 2>&1) &
wait
(cd .devpack &&
  for round in 1 2; do
    for d in rr rf; do
      for mode in stream whole; do
        for cache in warm cold; do
          flag=""; [ $mode = whole ] && flag=--whole; [ $cache = cold ] && flag="$flag --evict"
          timeout 120 /tmp/node runs.mjs --dir /tmp/$d --reps 3 $flag --out "$OUT/runs-$d-$mode-$cache-$round.json" \
            > "$OUT/runs-$d-$mode-$cache-$round.log" 2>&1
        done
      done
    done
  done)
# Few files come back from a call: one archive, and a summary in the output.
(cd "$OUT" && tar czf stream.tgz gpu.txt mk-*.log runs-* && rm -f mk-*.log runs-*)
python3 - "$OUT/stream.tgz" <<'PY'
import json, sys, tarfile
t = tarfile.open(sys.argv[1])
for m in sorted(t.getnames()):
    if not m.endswith('.json'): continue
    for r in json.load(t.extractfile(m))['rows']:
        p = {k: round(v) for k, v in r['phases'].items() if k != 'why' and not k.startswith('why.')}
        print(m, r['rep'], round(r['importMs']), round(r['analysisMs']), round(r['totalMs']), round(r['phases'].get('why', 0)), p)
PY
