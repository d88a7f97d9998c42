// Benchmark of the GPU oracle (double-float forward) against the fp32 reference forward on Pythia-shaped
// seeded models, in Node (Dawn). Wall time per forward, submit to done, median of reps, no readback. Also checks
// the oracle on the adapter it runs on: GPU oracle vs CPU fp64 oracle (every tap, DF_FMA on and off) on a small
// model, and on the 70m shape at a short prompt.
// Bundle: npx esbuild src/engine/oracle-gpu-bench.ts --bundle --platform=node --format=esm --outfile=.devpack/oracle-bench.mjs
//   (with SHADERS_DIR pointing at the shaders/ folder when run from elsewhere).
// Measured 2026-11-23, H200 (Dawn on NVIDIA Vulkan 580.159.04), T = 128, DF_FMA = true, medians of 5, df.wgsl
// with df_opq in its transforms (8d52aeb; before it that compiler folded TwoSum's error term to 0 and the oracle
// landed at ~3e-7): oracle forward 22.9 / 54.2 / 136.8 ms for 70m / 160m / 410m against a reference forward
// measured the same way (plan built, recorded, submitted, done) of 13.9 / 18.3 / 49.2 ms (1.6x / 3.0x / 2.8x).
// GPU vs CPU oracle, worst relative L2 over every tap (DF_FMA true / false): 1.2e-14 / 1.2e-14 (tiny, T = 33),
// 2.1e-14 / 2.1e-14 (70m, T = 128; the CPU oracle took 10.4 s there), 3.2e-14 / 3.4e-14 (410m, T = 8).
// Flags: --models pythia-70m,pythia-160m,pythia-410m  --T 128  --reps 5  --check tiny:33,pythia-70m:16 (vs CPU)
import { acquireGpu } from '../gpu/device';
import { nodeGpu } from '../gpu/node';
import { PipelineCache } from '../gpu/pipelines';
import { BufferPool } from '../gpu/pool';
import { Program } from '../gpu/program';
import { oracleForward } from '../kernels/cpu/forward';
import { nodeShaderSource } from '../kernels/shaders-node';
import { parseConfig } from '../model/config';
import { type RandomModelSpec, randomConfigJson } from '../model/random-model';
import { relL2 } from '../numeric/double-float';
import type { LinearWeights, ModelWeights, NeoXConfig, NormWeights } from '../numeric/types';
import { uploadModel } from './gpu-model';
import { readDf } from './oracle-df';
import { GpuOracle } from './oracle-gpu';
import { buildPlan } from './plan';

const SHAPES: Record<string, RandomModelSpec> = {
  tiny: { vocab: 1000, d: 128, layers: 2, heads: 4, ff: 512, rotaryPct: 0.25, parallel: true },
  'pythia-70m': { vocab: 50304, d: 512, layers: 6, heads: 8, ff: 2048, rotaryPct: 0.25, parallel: true },
  'pythia-160m': { vocab: 50304, d: 768, layers: 12, heads: 12, ff: 3072, rotaryPct: 0.25, parallel: true },
  'pythia-410m': { vocab: 50304, d: 1024, layers: 24, heads: 16, ff: 4096, rotaryPct: 0.25, parallel: true },
};

const argv = process.argv.slice(2);
const value = (name: string, dflt: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const log = (s: string) => console.log(s);
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

/** Seeded uniform weights of the right scale (fast enough for 400M parameters): U(±√(3/fan_in)) for matrices. */
function seededWeights(cfg: NeoXConfig, seed: number): ModelWeights {
  let s = seed >>> 0 || 1;
  const fill = (n: number, scale: number, offset = 0) => {
    const a = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      s ^= s << 13;
      s ^= s >>> 17;
      s ^= s << 5;
      a[i] = offset + scale * ((s >>> 0) / 2 ** 32 - 0.5) * 2;
    }
    return a;
  };
  const { hiddenSize: d, intermediateSize: ff, vocabSize: V } = cfg;
  const lin = (n: number, k: number): LinearWeights => ({
    weight: { shape: [n, k], data: fill(n * k, Math.sqrt(3 / k)) },
    bias: { shape: [n], data: fill(n, 0.1) },
  });
  const norm = (): NormWeights => ({
    weight: { shape: [d], data: fill(d, 0.1, 1) },
    bias: { shape: [d], data: fill(d, 0.1) },
  });
  return {
    embedIn: { shape: [V, d], data: fill(V * d, 1.7) },
    layers: Array.from({ length: cfg.numLayers }, () => ({
      inputLayernorm: norm(),
      postAttentionLayernorm: norm(),
      qkv: lin(3 * d, d),
      dense: lin(d, d),
      fc1: lin(ff, d),
      fc2: lin(d, ff),
    })),
    finalLayerNorm: norm(),
    lmHead: { shape: [V, d], data: fill(V * d, Math.sqrt(3 / d)) },
  };
}

async function main() {
  const gpu = await acquireGpu(nodeGpu());
  const { device } = gpu;
  log(`adapter: ${gpu.adapter.vendor} ${gpu.adapter.architecture} ${gpu.adapter.description}`);
  const pipelines = new PipelineCache(device, nodeShaderSource());
  const pool = new BufferPool(device);
  const maxBindingBytes = device.limits.maxStorageBufferBindingSize;
  const T0 = Number(value('--T', '128'));
  const reps = Number(value('--reps', '5'));
  const timeIt = async (record: (enc: GPUCommandEncoder) => () => void) => {
    const ms: number[] = [];
    for (let r = 0; r < reps + 2; r++) {
      const t0 = performance.now();
      const enc = device.createCommandEncoder();
      const done = record(enc);
      device.queue.submit([enc.finish()]);
      await device.queue.onSubmittedWorkDone();
      if (r >= 2) ms.push(performance.now() - t0);
      done();
    }
    return ms;
  };

  const check = async (name: string, T: number) => {
    const cfg = parseConfig(randomConfigJson({ ...SHAPES[name], maxPos: 4096 }));
    const w = seededWeights(cfg, 7);
    const gm = uploadModel(device, cfg, w, maxBindingBytes);
    const tokens = Array.from({ length: T }, (_, i) => (i * 7919 + 3) % cfg.vocabSize);
    const t0 = performance.now();
    const ref = new Map<string, Float64Array>();
    oracleForward(cfg, w, tokens, ref);
    log(`${name} T=${T}: CPU fp64 oracle ${(performance.now() - t0).toFixed(0)} ms`);
    for (const dfFma of [true, false]) {
      const oracle = new GpuOracle(device, pipelines, pool, gm, { dfFma, maxBindingBytes });
      const enc = device.createCommandEncoder();
      const run = oracle.forward(enc, tokens, 'all');
      device.queue.submit([enc.finish()]);
      let worst = 0;
      let worstTap = '';
      for (const [tap, want] of ref) {
        const e = relL2(await readDf(device, run.taps.get(tap)!, T), want);
        if (argv.includes('--taps')) log(`  ${tap}: ${e.toExponential(2)}`);
        if (!(e <= worst)) {
          worst = Number.isNaN(e) ? Number.POSITIVE_INFINITY : e;
          worstTap = tap;
        }
      }
      run.release();
      log(
        `${name} T=${T} DF_FMA=${dfFma}: worst relative L2 over ${ref.size} taps ${worst.toExponential(2)} (${worstTap})`,
      );
    }
    gm.destroy();
  };
  for (const spec of value('--check', '').split(',').filter(Boolean)) {
    const [name, T] = spec.split(':');
    await check(name, Number(T ?? 16));
  }

  for (const name of value('--models', 'pythia-70m,pythia-160m,pythia-410m').split(',')) {
    const cfg = parseConfig(randomConfigJson({ ...SHAPES[name], maxPos: 4096 }));
    const tb = performance.now();
    const w = seededWeights(cfg, 1234);
    const gm = uploadModel(device, cfg, w, maxBindingBytes);
    log(`${name}: weights made and uploaded in ${(performance.now() - tb).toFixed(0)} ms`);
    const tokens = Array.from({ length: T0 }, (_, i) => (i * 7919) % cfg.vocabSize);
    const reference = await timeIt((enc) => {
      const plan = buildPlan(device, pool, gm, tokens, {
        fused: new Set(),
        precision: 'fp32',
        maxBindingBytes,
      });
      const program = new Program(device, pipelines);
      for (const op of plan.ops) program.add(op.spec);
      program.encode(enc);
      return () => {
        program.dispose();
        plan.release();
      };
    });
    const oracle = new GpuOracle(device, pipelines, pool, gm, { dfFma: true, maxBindingBytes });
    const launches = { dump: 0, all: 0 };
    const rowOf = async (taps: 'dump' | 'all') =>
      timeIt((enc) => {
        const run = oracle.forward(enc, tokens, taps);
        launches[taps] = run.dispatches;
        return () => run.release();
      });
    const dump = await rowOf('dump');
    const all = await rowOf('all');
    const ref = median(reference);
    log(
      `${name} T=${T0}: reference forward ${ref.toFixed(2)} ms; GPU oracle (dump taps) ${median(dump).toFixed(2)} ms ` +
        `(${(median(dump) / ref).toFixed(1)}x), every tap ${median(all).toFixed(2)} ms ` +
        `(${(median(all) / ref).toFixed(1)}x); medians of ${reps}; ${launches.dump} and ${launches.all} dispatches`,
    );
    gm.destroy();
    pool.trim();
  }
  device.destroy();
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
