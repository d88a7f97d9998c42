// The GEMMs of one decode step (M = 1 token) on the fused path as the plan runs them (the adapter's policy: its
// K partition per (N, K), so a decoded row keeps a whole forward's bits): the GEMV core (GemmPolicy.gemvRows, one
// dispatch with every split inside) against the tiled core (split-K = the partial GEMM and its reduction) and
// the reference linear; the GEMV's output must be the tiled core's bit for bit (checked here on this adapter's
// compiler, per shape, with M = 1 and 4). GPU time per launch from timestamp queries (bench/gemm.ts
// timeDispatch), summed over its dispatches. With --generate MODEL: 8 greedy tokens after a 128-token prompt on
// the fused path of a seeded model, with and without the GEMV (two engines; the ids must be equal). With
// --caps 0,512,…: every measurement once per cap on the K per split (GemmPolicy.maxKChunk; 0 = the table's
// partition), and with --forward T,…: the fused forward of the --generate model at those T under each cap (the
// cost of the shorter splits to a whole forward).
//   npx tsx bench/decode-gemm.ts [--models pythia-410m,pythia-1.4b] [--generate pythia-1.4b] [--caps 0,512]
//     [--forward 128,512] [--json FILE]

import { writeFileSync } from 'node:fs';
import { Engine } from '../src/engine/engine';
import { acquireGpu } from '../src/gpu/device';
import { nodeGpu } from '../src/gpu/node';
import { PipelineCache } from '../src/gpu/pipelines';
import { uploadBuffer } from '../src/gpu/readback';
import { gemmLaunch, linearBiasOps } from '../src/kernels/fused-linear';
import { tilesName } from '../src/kernels/gemm';
import { gemmPolicyFor } from '../src/kernels/gemm-configs';
import { deviceHarness } from '../src/kernels/harness';
import { linear } from '../src/kernels/linear';
import { nodeShaderSource } from '../src/kernels/shaders-node';
import { log, median, runMain, value } from './cli';
import { SHAPES } from './forward';
import { timeDispatch } from './gemm';

const DIMS: Record<string, { d: number; ff: number }> = {
  'pythia-70m': { d: 512, ff: 2048 },
  'pythia-410m': { d: 1024, ff: 4096 },
  'pythia-1.4b': { d: 2048, ff: 8192 },
};

async function main() {
  const gpu = await acquireGpu(nodeGpu());
  const device = gpu.device;
  const l = device.limits;
  const limits = {
    maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
    maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
  };
  const caps = (value('--caps') ?? '0').split(',').map(Number);
  const pipelines = new PipelineCache(device, nodeShaderSource());
  const h = deviceHarness(device, pipelines);
  const rows: Record<string, unknown>[] = [];
  const generation: unknown[] = [];
  for (const cap of caps) {
    const maxKChunk = cap || undefined;
    const policy = { ...gemmPolicyFor(gpu.adapter, limits), gemvRows: 4, maxKChunk };
    const tiled = { ...policy, gemvRows: 0 };
    // The adapter's own policy as shipped (with the cap).
    const shipped = { ...gemmPolicyFor(gpu.adapter, limits), maxKChunk };
    for (const model of (value('--models') ?? 'pythia-410m,pythia-1.4b').split(',').filter(Boolean)) {
      const { d, ff } = DIMS[model];
      const shapes = [
        ['qkv', 3 * d, d],
        ['dense', d, d],
        ['fc1', ff, d],
        ['fc2', d, ff],
        ['lm_head', 50304, d],
      ] as const;
      for (const [op, N, K] of shapes) {
        const fill = (n: number, salt: number) =>
          uploadBuffer(
            device,
            new Float32Array(n).map((_, i) => (((i + salt) * 7919) % 17) / 17 - 0.5 + i * 1e-7),
            op,
          );
        const x = fill(4 * K, 3);
        const w = fill(N * K, 0);
        const b = fill(N, 5);
        const y = [0, 1].map(() =>
          device.createBuffer({ size: 16 * N, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC }),
        );
        const dummy = fill(4, 0);
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
        const launch = gemmLaunch(op, 1, N, K, { policy, workspace });
        const row: Record<string, unknown> = {
          model,
          cap,
          op,
          N,
          K,
          kChunk: launch.kChunk,
          tiles: tilesName(launch.tiles),
          gemv: launch.gemv,
        };
        const buf = (i: number) => ({ x, w, b, y: y[i], dummy });
        for (const M of [1, 4]) {
          const t = linearBiasOps(op, buf(0), M, N, K, { policy: tiled, workspace });
          const g = linearBiasOps(op, buf(1), M, N, K, { policy, workspace });
          await h.run(t);
          await h.run(g);
          const a = new Uint32Array((await h.read(y[0], M * N)).buffer);
          const c = new Uint32Array((await h.read(y[1], M * N)).buffer);
          row[`bitsEqualM${M}`] = a.every((u, i) => u === c[i]);
          row[`tiledMsM${M}`] = await time(t);
          row[`gemvMsM${M}`] = await time(g);
        }
        row.referenceMs = await time([linear(op, buf(0), 1, N, K)]);
        row.gemvWeightGBs = (N * K * 4) / ((row.gemvMsM1 as number) * 1e-3) / 1e9;
        row.tiledWeightGBs = (N * K * 4) / ((row.tiledMsM1 as number) * 1e-3) / 1e9;
        log(JSON.stringify(row));
        rows.push(row);
        for (const v of [x, w, b, ...y, dummy, ws as GPUBuffer | null]) v?.destroy();
      }
    }
    generation.push({ cap, ...(await generate(policy, tiled, shipped)) });
  }
  const out = { date: new Date().toISOString(), adapter: gpu.adapter, rows, generation };
  const file = value('--json');
  if (file) writeFileSync(file, JSON.stringify(out, null, 2));
  device.destroy();
}

/** 8 greedy fused tokens after 128 on a seeded model, with the GEMV and without (median ms of 5 after 2). */
async function generate(
  policy: ReturnType<typeof gemmPolicyFor>,
  tiled: typeof policy,
  shipped: typeof policy,
) {
  const model = value('--generate');
  if (!model) return null;
  const out: Record<string, unknown> = { model };
  const shape = SHAPES[model];
  const prompt = Array.from({ length: 128 }, (_, i) => (i * 7919 + 104729) % shape.vocab);
  const ids: number[][] = [];
  for (const [name, gemm] of [
    ['gemv', policy],
    ['tiled', tiled],
    ['shipped', shipped],
  ] as const) {
    const engine = await Engine.create(nodeGpu(), nodeShaderSource(), { gemm });
    await engine.loadSeededModel({ ...shape, maxPos: 4096 }, 4321, model);
    const run = () =>
      engine.generatePaths(prompt, 8, [{ path: 'fused' }], undefined, undefined, { chunk: 8 });
    for (let i = 0; i < 2; i++) await run();
    const ms: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      ids.push((await run())[0]);
      ms.push(performance.now() - t0);
    }
    out[`${name}Ms`] = median(ms);
    out[`${name}AllMs`] = ms;
    log(`${model} 8 fused tokens, ${name} (cap ${gemm.maxKChunk ?? 'none'}): ${median(ms).toFixed(1)} ms`);
    if (name === 'shipped') {
      for (const T of (value('--forward') ?? '').split(',').filter(Boolean).map(Number)) {
        const tokens = Array.from({ length: T }, (_, i) => (i * 7919) % shape.vocab);
        await engine.timeForward(tokens, { path: 'fused' }, 10);
        const f = await engine.timeForward(tokens, { path: 'fused' }, 20);
        out[`forwardT${T}Ms`] = median(f.ms);
        log(`${model} fused forward T=${T} (cap ${gemm.maxKChunk ?? 'none'}): ${median(f.ms).toFixed(2)} ms`);
      }
    }
    engine.dispose();
  }
  out.idsEqual = ids.every((a) => JSON.stringify(a) === JSON.stringify(ids[0]));
  out.ids = ids[0];
  return out;
}

runMain(main);
