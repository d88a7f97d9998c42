#!/usr/bin/env bash
# Unseen runs on a lent GPU, both families in one call: GPT-NeoX's (tools/cause_unseen.py, set 2) and the Llama
# family's (tools/llama_unseen.py) made with PyTorch on the card, then `cli compare-runs` on every run (8 jobs a set,
# both sets at once). Results in $OUT: neox-unseen.jsonl, llama-unseen.jsonl (a line a run: the fault, its effect,
# the CLI's line and finding, and for the Llama set its verdict class), gpu.txt, logs.tgz (the makers' and CLIs'
# logs, both manifests), reports.tgz (every report JSON) — five files of the eight that come back.
# The pack (.dp-unseen, listed in .git/info/exclude; carry it): node.xz (a stripped node 20), webgpu's index.js,
# package.json and dist/linux-x64/dawn.node.xz, debs/libvulkan1, and the CLI bundled from this tree:
#   npx esbuild src/cli/main.ts --bundle --platform=node --format=esm --target=node20 \
#     --outfile=.dp-unseen/cli.mjs --external:webgpu
#   xz -9 .dp-unseen/cli.mjs          # cli.mjs.xz: the tracked tree (~36.5 MiB), the pack (~26 MiB) and .gl stay
#                                     # under the 64 MiB a call carries
# Then: run(carry=[".dp-unseen", ".gl"], command="bash bench/device-unseen.sh"). On an H200 (gVisor) Dawn finds no
# adapter without .gl's glvnd debs; the H100 found one without them.
set -u
P=${PACK:-.dp-unseen}
for f in .gl/*.deb "$P"/debs/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export SHADERS_DIR=$PWD/shaders PYTHONUNBUFFERED=1
[ -s /tmp/node ] || { xz -dc "$P/node.xz" > /tmp/node && chmod +x /tmp/node; }
[ -f "$P/cli.mjs.xz" ] && xz -dc "$P/cli.mjs.xz" > "$P/cli.mjs"
d=$P/node_modules/webgpu/dist/linux-x64
[ -f "$d/dawn.node" ] || xz -dk "$d/dawn.node.xz"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u +%FT%TZ; nproc; } > "$OUT/gpu.txt"
mkdir -p /tmp/logs
t0=$(date +%s)
python3 tools/cause_unseen.py make --set 2 --out /tmp/unseen > /tmp/logs/neox-make.log 2>&1 &
python3 tools/llama_unseen.py make --out /tmp/lunseen > /tmp/logs/llama-make.log 2>&1 &
wait
echo "made: $(($(date +%s) - t0)) s" >> "$OUT/gpu.txt"
timeout 240 python3 tools/cause_unseen.py cli --out /tmp/unseen --node /tmp/node --cli "$P/cli.mjs" \
  --results "$OUT/neox-unseen.jsonl" --jobs 8 > /tmp/logs/neox-cli.log 2>&1 &
timeout 240 python3 tools/llama_unseen.py cli --out /tmp/lunseen --node /tmp/node --cli "$P/cli.mjs" \
  --results "$OUT/llama-unseen.jsonl" --jobs 8 > /tmp/logs/llama-cli.log 2>&1 &
wait
echo "analysed: $(($(date +%s) - t0)) s" >> "$OUT/gpu.txt"
cp /tmp/unseen/manifest.json /tmp/logs/neox-manifest.json
cp /tmp/lunseen/manifest.json /tmp/logs/llama-manifest.json
tar czf "$OUT/logs.tgz" -C /tmp logs
tar czf "$OUT/reports.tgz" -C /tmp unseen/reports lunseen/reports
ls -la "$OUT"
cat "$OUT/gpu.txt"
tail -n 5 /tmp/logs/neox-make.log /tmp/logs/llama-make.log
grep -c . "$OUT"/*.jsonl
OUT="$OUT" python3 - <<'PY'
import collections, json, os
rs = [json.loads(x) for x in open(os.environ["OUT"] + "/llama-unseen.jsonl")]
print(collections.Counter(r.get("verdict") for r in rs))
for r in rs:
    if r.get("verdict") not in ("found", "benign-agrees"):
        f = r.get("finding") or {}
        print(r["run"], r.get("verdict"), f.get("check"), [(n["id"], n["params"]) for n in f.get("named") or []],
              r.get("error") or r.get("finding_error") or "")
PY
