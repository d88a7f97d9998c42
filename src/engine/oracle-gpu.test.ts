// The GPU oracle (double-float) against the CPU fp64 oracle, tap by tap: seeded random models of both residual
// styles, both config key styles and odd sizes (T in {1, 24, 129}), fp16-stored weights with the embedding and
// LM head split across buffers, and the embedded model; whole forward and single layers on a given input.
// Every pooled buffer is filled with NaN before the oracle writes it, so an unwritten element fails.
//
// Criterion: relative L2 ≤ 1e-12 per tap. A df op errs by ~2^-47 relative; sums of up to 1024 terms and four
// layers of amplification stay near 1e-14 … 1e-13 (printed below), while one f32 rounding anywhere (6e-8)
// or a wrong op (~1) misses it by orders of magnitude. SwiftShader: DF_FMA = false (its fma is not fused).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireGpu, type GpuContext } from '../gpu/device';
import { nodeGpu } from '../gpu/node';
import { PipelineCache } from '../gpu/pipelines';
import { PoisonPool } from '../gpu/poison-pool.testdata';
import { uploadBuffer } from '../gpu/readback';
import { oracleForward, oracleLayer } from '../kernels/cpu/forward';
import { relL2 } from '../kernels/oracle/testing';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { parseConfigText } from '../model/config';
import { type RandomModelSpec, randomModelFiles } from '../model/random-model';
import { loadWeights } from '../model/weights';
import { fromDfPairs, toDfPairs } from '../numeric/double-float';
import { mulberry32 } from '../numeric/random';
import type { ModelWeights, NeoXConfig } from '../numeric/types';
import { type GpuModel, uploadModel } from './gpu-model';
import { type OracleRun, readDf, uploadDf } from './oracle-df';
import { GpuOracle } from './oracle-gpu';

const TOL = 1e-12;
const BIG = 1 << 30;

let gpu: GpuContext;
let device: GPUDevice;
let pipelines: PipelineCache;
let pool: PoisonPool;
/** Worst relative L2 per tap kind ('layers.*.ln1', …) over every run of the file. */
const worst = new Map<string, number>();

beforeAll(async () => {
  gpu = await acquireGpu(nodeGpu());
  device = gpu.device;
  pipelines = new PipelineCache(device, nodeShaderSource());
  pool = new PoisonPool(device);
});
afterAll(() => {
  const rows = [...worst.entries()].map(([k, v]) => `  ${k.padEnd(20)} ${v.toExponential(2)}`);
  console.log(`GPU oracle vs CPU fp64 oracle, worst relative L2 per tap:\n${rows.join('\n')}`);
  pool?.destroyAll();
  device?.destroy();
});

interface Loaded {
  cfg: NeoXConfig;
  w: ModelWeights;
  gm: GpuModel;
  oracle: GpuOracle;
}

function load(files: { config: string; weights: Uint8Array }, f16: boolean, maxBindingBytes = BIG): Loaded {
  const cfg = parseConfigText(files.config);
  const w = loadWeights(cfg, files.weights);
  const gm = uploadModel(device, cfg, w, maxBindingBytes, f16);
  return {
    cfg,
    w,
    gm,
    oracle: new GpuOracle(device, pipelines, pool, gm, { dfFma: false, maxBindingBytes }),
  };
}

async function submit(record: (enc: GPUCommandEncoder) => OracleRun): Promise<OracleRun> {
  device.pushErrorScope('validation');
  const enc = device.createCommandEncoder();
  const run = record(enc);
  device.queue.submit([enc.finish()]);
  await device.queue.onSubmittedWorkDone();
  const err = await device.popErrorScope();
  if (err) throw new Error(`WebGPU validation error: ${err.message}`);
  return run;
}

/** Every tap of `run` against the CPU taps: same names, rel L2 ≤ TOL, all finite. */
async function compareTaps(what: string, run: OracleRun, ref: Map<string, Float64Array>, T: number) {
  expect([...run.taps.keys()].sort(), what).toEqual([...ref.keys()].sort());
  for (const [name, want] of ref) {
    const t = run.taps.get(name)!;
    expect(t.n, `${what} ${name} size`).toBe(want.length);
    const got = await readDf(device, t, T);
    const e = relL2(got, want);
    const kind = name.replace(/^layers\.\d+\./, 'layers.*.');
    worst.set(kind, Math.max(worst.get(kind) ?? 0, Number.isNaN(e) ? Number.POSITIVE_INFINITY : e));
    expect(e, `${what} ${name}: relative L2 ${e} (NaN = a non-finite value)`).toBeLessThanOrEqual(TOL);
  }
}

const models: [string, RandomModelSpec][] = [
  [
    'parallel, classic keys',
    { vocab: 300, d: 90, layers: 2, heads: 3, ff: 200, rotaryPct: 0.2, parallel: true },
  ],
  [
    'sequential, rope_parameters keys',
    {
      vocab: 257,
      d: 48,
      layers: 2,
      heads: 4,
      ff: 70,
      rotaryPct: 0.5,
      rotaryBase: 500,
      eps: 1e-6,
      parallel: false,
      keys: 'rope_parameters',
    },
  ],
];

describe('GPU oracle (double-float) vs CPU fp64 oracle', () => {
  // A test per model and T (each a fresh seed): T = 129 alone is most of the work, which three T in one test made
  // a minute's on a busy 2-core machine.
  it.each(models.flatMap(([name, spec]) => [1, 24, 129].map((T) => [name, T, spec] as const)))(
    '%s: every tap, T = %i',
    async (name, T, spec) => {
      const seed = freshSeed();
      const m = load(randomModelFiles(spec, seed), false);
      const rng = mulberry32(seed ^ 0x2545f491);
      try {
        const tokens = Array.from({ length: T }, () => Math.floor(rng() * spec.vocab));
        const ref = new Map<string, Float64Array>();
        oracleForward(m.cfg, m.w, tokens, ref);
        const run = await submit((enc) => m.oracle.forward(enc, tokens, 'all'));
        await compareTaps(`${name} (seed ${seed}) T=${T}`, run, ref, T);
        run.release();
      } finally {
        m.gm.destroy();
      }
      expect(pool.stats().bytesInUse).toBe(0);
    },
  );

  it('fp16 weights, embedding and LM head split across buffers; dump taps equal the full run', async () => {
    const seed = freshSeed();
    // V·d·2 = 1100·32·2 = 70 kB over a 64 KiB cap: two row chunks (1024 + 76 rows); the [T, rows] df logits
    // split again (T = 24: 256-row pieces, 5 parts).
    const spec: RandomModelSpec = {
      vocab: 1100,
      d: 32,
      layers: 2,
      heads: 2,
      ff: 72,
      rotaryPct: 1,
      parallel: true,
      dtype: 'F16',
    };
    const cap = 64 * 1024;
    const m = load(randomModelFiles(spec, seed), true, cap);
    try {
      expect(m.gm.lmHead.length).toBe(2);
      for (const T of [1, 24]) {
        const tokens = Array.from({ length: T }, (_, t) => (t * 389 + seed) % spec.vocab);
        const ref = new Map<string, Float64Array>();
        oracleForward(m.cfg, m.w, tokens, ref);
        const all = await submit((enc) => m.oracle.forward(enc, tokens, 'all'));
        expect(all.taps.get('logits')?.parts?.length, `T=${T}`).toBe(T === 1 ? 2 : 5);
        await compareTaps(`fp16 split (seed ${seed}) T=${T}`, all, ref, T);
        const dump = await submit((enc) => m.oracle.forward(enc, tokens, 'dump'));
        const names = ['embed', 'layers.0.out', 'layers.1.out', 'final_norm', 'logits'];
        expect([...dump.taps.keys()].sort()).toEqual(names.sort());
        for (const n of names) {
          const a = await readDf(device, all.taps.get(n)!);
          expect(Array.from(await readDf(device, dump.taps.get(n)!)), n).toEqual(Array.from(a));
        }
        all.release();
        dump.release();
      }
      // The scores of 129 tokens and 2 heads need 266 kB: refused before anything is recorded.
      const enc = device.createCommandEncoder();
      expect(() => m.oracle.forward(enc, new Array(129).fill(1), 'all')).toThrow(
        /more than one storage binding/,
      );
      expect(() => m.oracle.forward(enc, [1, spec.vocab], 'dump')).toThrow(/token 1100 at position 1/);
    } finally {
      m.gm.destroy();
    }
    expect(pool.stats().bytesInUse).toBe(0);
  });

  it('single layers on a given input (f32 or df) equal oracleLayer on the same input', async () => {
    const seed = freshSeed();
    for (const [name, spec] of models) {
      const m = load(randomModelFiles(spec, seed), false);
      try {
        const T = 24;
        const rng = mulberry32(seed);
        const tokens = Array.from({ length: T }, () => Math.floor(rng() * spec.vocab));
        const dump = oracleForward(m.cfg, m.w, tokens);
        const inputs = [dump.embeddings, ...dump.layers];
        const made: GPUBuffer[] = [];
        const refs: Map<string, Float64Array>[] = [];
        // Layer i on the CPU oracle's input to it: as f32 (promoted exactly) for layer 0, as df for layer 1;
        // both recorded into one encoder.
        const f32In = Float32Array.from(inputs[0]);
        const pairs = toDfPairs(inputs[1]);
        const dfIn = fromDfPairs(pairs); // the df value the GPU gets, exactly
        made.push(uploadBuffer(device, f32In, 'f32 input'), uploadDf(device, inputs[1]));
        let runs: OracleRun[] = [];
        await submit((enc) => {
          runs = [
            m.oracle.layer(enc, 0, { f32: made[0] }, T, 'all'),
            m.oracle.layer(enc, 1, { df: made[1] }, T, 'all'),
          ];
          return runs[0];
        });
        for (const [i, x] of [f32In, dfIn].entries()) {
          const ref = new Map<string, Float64Array>();
          oracleLayer(m.cfg, m.w.layers[i], x, T, i, ref);
          refs.push(ref);
          await compareTaps(`${name} layer ${i} (seed ${seed})`, runs[i], ref, T);
        }
        for (const r of runs) r.release();
        for (const b of made) b.destroy();
        const enc = device.createCommandEncoder();
        expect(() => m.oracle.layer(enc, 2, { df: made[1] }, T, 'dump')).toThrow(/index 2 is outside/);
      } finally {
        m.gm.destroy();
      }
    }
    expect(pool.stats().bytesInUse).toBe(0);
  });

  // T = 13 (was 27): like 27, one partial row tile of the df linear kernel (BM = 32); half the work, which took a
  // minute on a busy 2-core machine. More rows and tiles: the random models' T = 24 and 129 above.
  it('the embedded model (fp16 checkpoint, fp16 weights on the GPU), T = 13, every tap', async () => {
    const dir = 'public/models/neox-kjv-bytes';
    const m = load(
      {
        config: readFileSync(`${dir}/config.json`, 'utf8'),
        weights: new Uint8Array(readFileSync(`${dir}/model.safetensors`)),
      },
      true,
    );
    try {
      const tokens = Array.from(new TextEncoder().encode('In the beginning God created'));
      expect(tokens.length).toBe(28);
      const T = 13;
      const ids = tokens.slice(0, T);
      const ref = new Map<string, Float64Array>();
      oracleForward(m.cfg, m.w, ids, ref);
      const run = await submit((enc) => m.oracle.forward(enc, ids, 'all'));
      await compareTaps(`embedded T=${T}`, run, ref, T);
      run.release();
    } finally {
      m.gm.destroy();
    }
  });
});
