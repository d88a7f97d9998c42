#!/usr/bin/env bash
# The whole suite: installs what a fresh Debian machine lacks, then type-check, lint, unit + GPU-in-Node
# tests (Dawn on SwiftShader), and e2e in Chromium (WebGPU on SwiftShader).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1 ' || need+=(libvulkan1)
if [ ${#need[@]} -gt 0 ]; then
  echo "test: installing ${need[*]} (apt)"
  if [ "$(id -u)" -eq 0 ]; then SUDO=; else SUDO=sudo; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq || true
  $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
export VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json
echo "== typecheck"; npx tsc --noEmit -p tsconfig.json
echo "== lint"; npx biome check .
echo "== unit + GPU (vitest)"; npx vitest run
echo "== e2e (playwright, chromium)"; npx playwright test
