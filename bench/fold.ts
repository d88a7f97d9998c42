// `npx tsx bench/fold.ts`: the fused forward with its split-K reductions folded into the op after them
// (src/engine/plan-fold.ts) against the same plan unfolded, per seeded Pythia-shaped model and T: dispatches,
// submit-to-done wall time (recorded plan, no readback; median of --reps, the two variants alternated in
// rounds so drift hits both), the GPU time per op kind (timestamp queries), and every tap of the two compared bit
// for bit on this adapter.
// Flags: --models pythia-70m,… --T 128,512 --reps 30 --rounds 2 --out FILE.

import { writeFileSync } from 'node:fs';
import { Engine } from '../src/engine/engine';
import { runForward, StagingBuffers } from '../src/engine/forward';
import { ALL_FUSED } from '../src/engine/fused-kernels';
import { buildPlan, type Plan } from '../src/engine/plan';
import { timePlan } from '../src/engine/time-forward';
import { summarizeTimings } from '../src/engine/timing';
import { nodeGpu } from '../src/gpu/node';
import { nodeShaderSource } from '../src/kernels/shaders-node';
import { log, median, value } from './cli';
import { SHAPES } from './forward';

const models = (value('--models') ?? 'pythia-70m,pythia-160m,pythia-410m').split(',');
const Ts = (value('--T') ?? '128,512').split(',').map(Number);
const reps = Number(value('--reps') ?? 30);
const rounds = Number(value('--rounds') ?? 2);

const engine = await Engine.create(nodeGpu(), nodeShaderSource());
const { device } = engine.ctx;
const staging = new StagingBuffers(device);
const adapter = engine.ctx.adapter;
const rows: Record<string, unknown>[] = [];
log(
  `adapter: ${adapter.vendor} ${adapter.architecture} ${adapter.description}; GEMM policy: ${engine.gemmPolicy.name}`,
);

// --kchunks '{"NxK": chunk, …}': other K partitions over the policy's table (to measure a partition in place).
const kchunks = value('--kchunks');
const base = engine.gemmPolicy;
const policy =
  kchunks && base.table
    ? { ...base, table: { ...base.table, kChunks: { ...base.table.kChunks, ...JSON.parse(kchunks) } } }
    : base;

for (const model of models) {
  const spec = SHAPES[model];
  await engine.loadSeededModel({ ...spec, maxPos: 4096 }, 1234, model);
  const parts = engine.gpuParts();
  const ctx = {
    device,
    pipelines: parts.pipelines,
    staging,
    checkAlive: () => {},
    settleLoss: async () => {},
  };
  for (const T of Ts) {
    const tokens = Array.from({ length: T }, (_, i) => (i * 7919) % spec.vocab);
    const plan = (fold: boolean): Plan =>
      buildPlan(device, parts.pool, parts.model, tokens, {
        fused: ALL_FUSED,
        precision: 'fp32',
        maxBindingBytes: engine.maxBindingBytes,
        gemm: policy,
        fold: fold ? { custom: null } : undefined,
      });
    // Bit for bit: every tap of the folded forward against the unfolded one.
    const a = await runForward(ctx, plan(false), parts.model.cfg, T, { taps: 'all' }, 0);
    const folded = await runForward(ctx, plan(true), parts.model.cfg, T, { taps: 'all' }, 0);
    let differ = 0;
    const differing: string[] = [];
    for (const [name, x] of a.taps) {
      const y = folded.taps.get(name);
      const xb = new Uint32Array(x.buffer, x.byteOffset, x.length);
      const yb = y ? new Uint32Array(y.buffer, y.byteOffset, y.length) : null;
      if (!yb || yb.length !== xb.length || xb.some((v, i) => v !== yb[i])) {
        differ++;
        differing.push(name);
      }
    }
    const ms: Record<'off' | 'on', number[]> = { off: [], on: [] };
    const dispatches: Record<'off' | 'on', number> = { off: 0, on: 0 };
    for (const v of ['off', 'on'] as const) await timePlan(ctx, plan(v === 'on'), 10); // warm-up
    for (let r = 0; r < rounds; r++) {
      for (const v of ['off', 'on'] as const) {
        const t = await timePlan(ctx, plan(v === 'on'), reps);
        ms[v].push(...t.ms);
        dispatches[v] = t.dispatches;
      }
    }
    // Where the GPU time goes (timestamp queries, one pass per dispatch), summed per op kind: a folded
    // reduction counts as the op it runs in.
    const gpu = async (fold: boolean) => {
      const r = await runForward(ctx, plan(fold), parts.model.cfg, T, { timing: true }, 0);
      const s = summarizeTimings(r.timings!, spec.layers);
      const ms = (ns: number) => Math.round(ns / 1e3) / 1e3;
      return {
        totalMs: ms(s.totalNs),
        byKind: Object.fromEntries(Object.entries(s.perKind).map(([k, v]) => [k, ms(v)])),
      };
    };
    const row = {
      model,
      T,
      gpuOff: await gpu(false),
      gpuOn: await gpu(true),
      dispatchesOff: dispatches.off,
      dispatchesOn: dispatches.on,
      medianMsOff: median(ms.off),
      medianMsOn: median(ms.on),
      minMsOff: Math.min(...ms.off),
      minMsOn: Math.min(...ms.on),
      taps: a.taps.size,
      tapsDiffering: differ,
      differing,
    };
    log(
      `${model} T=${T}: unfolded ${row.medianMsOff.toFixed(3)} ms (${row.dispatchesOff} dispatches), folded ${row.medianMsOn.toFixed(3)} ms (${row.dispatchesOn}); taps differing ${differ} of ${row.taps}`,
    );
    rows.push(row);
  }
  engine.unloadModel();
}
const out = value('--out');
const result = {
  date: new Date().toISOString(),
  adapter: { vendor: adapter.vendor, architecture: adapter.architecture, description: adapter.description },
  policy: engine.gemmPolicy.name,
  kchunks: kchunks ?? null,
  maxStorageBuffersPerShaderStage: device.limits.maxStorageBuffersPerShaderStage,
  reps,
  rounds,
  rows,
};
if (out) writeFileSync(out, JSON.stringify(result, null, 2));
else console.log(JSON.stringify(result, null, 2));
staging.trim();
engine.dispose();
