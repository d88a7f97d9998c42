// The GEMMs of one decode step (M = 1 token) on the fused path as the plan runs them (the adapter's policy:
// its K partition per (N, K), so a decoded row keeps a whole forward's bits; split-K = the partial GEMM and its
// reduction), against other tile shapes (the sums are the same bits whatever the tiles) and the reference
// linear. GPU time per launch from timestamp queries (bench/gemm.ts timeDispatch), summed over its dispatches.
//   npx tsx bench/decode-gemm.ts [--models pythia-410m,pythia-1.4b] [--json FILE]

import { writeFileSync } from 'node:fs';
import { acquireGpu } from '../src/gpu/device';
import { nodeGpu } from '../src/gpu/node';
import { PipelineCache } from '../src/gpu/pipelines';
import { uploadBuffer } from '../src/gpu/readback';
import { linearBiasOps } from '../src/kernels/fused-linear';
import { type GemmTiles, tilesName } from '../src/kernels/gemm';
import { chooseGemm, gemmPolicyFor } from '../src/kernels/gemm-configs';
import { linear } from '../src/kernels/linear';
import { nodeShaderSource } from '../src/kernels/shaders-node';
import { runMain, value } from './cli';
import { timeDispatch } from './gemm';

const DIMS: Record<string, { d: number; ff: number }> = {
  'pythia-70m': { d: 512, ff: 2048 },
  'pythia-410m': { d: 1024, ff: 4096 },
  'pythia-1.4b': { d: 2048, ff: 8192 },
};
const CANDIDATES: GemmTiles[] = [
  { BM: 32, BN: 32, BK: 16, TM: 4, TN: 4, GEMM_BUFS: 1 },
  { BM: 32, BN: 32, BK: 32, TM: 4, TN: 4, GEMM_BUFS: 1 },
  { BM: 32, BN: 64, BK: 16, TM: 4, TN: 4, GEMM_BUFS: 2 },
  { BM: 32, BN: 64, BK: 32, TM: 4, TN: 4, GEMM_BUFS: 1 },
];

async function main() {
  const gpu = await acquireGpu(nodeGpu());
  const device = gpu.device;
  const l = device.limits;
  const policy = gemmPolicyFor(gpu.adapter, {
    maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
    maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
  });
  const pipelines = new PipelineCache(device, nodeShaderSource());
  const rows: Record<string, unknown>[] = [];
  for (const model of (value('--models') ?? 'pythia-410m,pythia-1.4b').split(',')) {
    const { d, ff } = DIMS[model];
    const shapes = [
      ['qkv', 3 * d, d],
      ['dense', d, d],
      ['fc1', ff, d],
      ['fc2', d, ff],
      ['lm_head', 50304, d],
    ] as const;
    for (const [op, N, K] of shapes) {
      const fill = (n: number) =>
        uploadBuffer(
          device,
          new Float32Array(n).map((_, i) => ((i * 7919) % 17) / 17 - 0.5),
          op,
        );
      const x = fill(K);
      const w = fill(N * K);
      const y = device.createBuffer({ size: 4 * N, usage: GPUBufferUsage.STORAGE });
      const dummy = fill(4);
      let ws: GPUBuffer | null = null;
      const workspace = (floats: number) => {
        if (!ws || ws.size < floats * 4)
          ws = device.createBuffer({ size: floats * 4, usage: GPUBufferUsage.STORAGE });
        return ws;
      };
      const time = async (specs: ReturnType<typeof linearBiasOps>) => {
        let s = 0;
        for (const spec of specs) s += (await timeDispatch(device, pipelines, spec, 50)).seconds;
        return s * 1e3;
      };
      const config = chooseGemm(1, N, K, policy);
      const row: Record<string, unknown> = {
        model,
        op,
        N,
        K,
        kChunk: config.kChunk,
        policyTiles: tilesName(config.tiles),
      };
      const buf = { x, w, b: null, y, dummy };
      row.policyMs = await time(linearBiasOps(op, buf, 1, N, K, { policy, workspace }));
      for (const t of CANDIDATES) {
        try {
          row[tilesName(t)] = await time(
            linearBiasOps(op, buf, 1, N, K, { policy, workspace, constants: { ...t } }),
          );
        } catch (e) {
          row[tilesName(t)] = (e as Error).message.slice(0, 60);
        }
      }
      row.referenceMs = await time([linear(op, buf, 1, N, K)]);
      row.weightGBs = (N * K * 4) / ((row.policyMs as number) * 1e-3) / 1e9;
      console.error(JSON.stringify(row));
      rows.push(row);
      for (const b of [x, w, y, dummy, ws as GPUBuffer | null]) b?.destroy();
    }
  }
  const out = { date: new Date().toISOString(), adapter: gpu.adapter, rows };
  const file = value('--json');
  if (file) writeFileSync(file, JSON.stringify(out, null, 2));
  device.destroy();
}

runMain(main);
