// GpuOracle.opOn over a row range (the rows from..T−1, a decode check's rows) against the same op over every row:
// the range's output equals the whole op's rows from..T−1 bit for bit (hi and lo of every df pair), for every op a
// run's checks re-run — row-wise ops given every row or only the range's, attention for the query rows from..T−1
// over the keys and values of all T rows, the whole layer, the embedding, the LM head split into column pieces.
// Random inputs at sizes off the kernels' tiles (d 90, ff 200, 3 heads; T and `from` drawn per seed); every pooled
// buffer is filled with NaN before the oracle writes it, so an unwritten element fails. Set ROWS_SEEDS to draw more
// cases per run (KERNEL_SEED replays one).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireGpu, type GpuContext } from '../gpu/device';
import { nodeGpu } from '../gpu/node';
import { PipelineCache } from '../gpu/pipelines';
import { PoisonPool } from '../gpu/poison-pool.testdata';
import { readBuffer, uploadBuffer } from '../gpu/readback';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { parseConfigText } from '../model/config';
import { type RandomModelSpec, randomModelFiles } from '../model/random-model';
import { loadWeights } from '../model/weights';
import { mulberry32, randn } from '../numeric/random';
import { uploadModel } from './gpu-model';
import { DF_BYTES, type DfBuffer, type OracleRun } from './oracle-df';
import { GpuOracle, type OracleOp } from './oracle-gpu';

let gpu: GpuContext;
let device: GPUDevice;
let pipelines: PipelineCache;
let pool: PoisonPool;

beforeAll(async () => {
  gpu = await acquireGpu(nodeGpu());
  device = gpu.device;
  pipelines = new PipelineCache(device, nodeShaderSource());
  pool = new PoisonPool(device);
});
afterAll(() => {
  pool?.destroyAll();
  device?.destroy();
});

/** A df tensor of `rows` rows as its raw f32 words ([rows, 2·width]; column pieces put back side by side). */
async function rawRows(t: DfBuffer, rows: number): Promise<Uint32Array> {
  const width = t.n / rows;
  if (!t.parts) return new Uint32Array((await readBuffer(device, t.buffer, t.n * DF_BYTES)).buffer);
  const out = new Uint32Array(2 * t.n);
  for (const p of t.parts) {
    const piece = new Uint32Array((await readBuffer(device, p.buffer, rows * p.cols * DF_BYTES)).buffer);
    for (let r = 0; r < rows; r++)
      out.set(piece.subarray(2 * r * p.cols, 2 * (r + 1) * p.cols), 2 * (r * width + p.col0));
  }
  return out;
}

const models: [string, RandomModelSpec, number, number][] = [
  // name, spec, the largest T, the binding cap
  [
    'parallel, d 90, 3 heads',
    { vocab: 300, d: 90, layers: 2, heads: 3, ff: 200, rotaryPct: 0.2, parallel: true },
    70,
    1 << 30,
  ],
  // The LM head and the embedding split across buffers (64 KiB bindings), fp16 weights; sequential residual.
  [
    'sequential, fp16, split LM head',
    { vocab: 1100, d: 32, layers: 1, heads: 2, ff: 72, rotaryPct: 1, parallel: false, dtype: 'F16' },
    60,
    64 * 1024,
  ],
];

describe('GpuOracle.opOn over a row range, and forwardFrom', () => {
  it.each(models)(
    '%s: every op, rows from..T−1 equal the whole op’s, bit for bit',
    async (name, spec, maxT, cap) => {
      const seed = freshSeed();
      const cases = Number(process.env.ROWS_SEEDS ?? 3);
      const files = randomModelFiles(spec, seed);
      const cfg = parseConfigText(files.config);
      const gm = uploadModel(device, cfg, loadWeights(cfg, files.weights), cap, spec.dtype === 'F16');
      const oracle = new GpuOracle(device, pipelines, pool, gm, { dfFma: false, maxBindingBytes: cap });
      const d = cfg.hiddenSize;
      const ff = cfg.intermediateSize;
      const made: GPUBuffer[] = [];
      try {
        for (let n = 0; n < cases; n++) {
          const rng = mulberry32(seed + n * 7919);
          const T = 2 + Math.floor(rng() * (maxT - 1));
          const from = 1 + Math.floor(rng() * (T - 1));
          const R = T - from;
          const layer = Math.floor(rng() * cfg.numLayers);
          const ctx = `${name}, seed ${seed} case ${n}: T = ${T}, from ${from}, layer ${layer}`;
          const tokens = Array.from({ length: T }, () => Math.floor(rng() * spec.vocab));
          const data = (width: number) => randn(rng, T * width);
          const up = (x: Float32Array, label: string) => {
            const b = uploadBuffer(device, x, label);
            made.push(b);
            return { buffer: b, n: x.length };
          };
          const ops: [OracleOp, number | null, number[]][] = [
            ['embed', null, []],
            ['ln1', layer, [d]],
            ['qkv', layer, [d]],
            ['attention', layer, [3 * d]],
            ['dense', layer, [d]],
            ['ln2', layer, [d]],
            ['fc1', layer, [d]],
            ['act', layer, [ff]],
            ['fc2', layer, [ff]],
            ['residual', layer, cfg.useParallelResidual ? [d, d, d] : [d, d]],
            ['layer', layer, [d]],
            ['final_norm', null, [d]],
            ['lm_head', null, [d]],
          ];
          for (const [op, l, widths] of ops) {
            const xs = widths.map((w) => ({ w, x: data(w) }));
            const whole = xs.map(({ x }, j) => up(x, `${op}.in${j}`));
            const rows = xs.map(({ w, x }, j) => up(x.slice(from * w), `${op}.rows${j}`));
            const rowWise = op !== 'attention' && op !== 'layer';
            const runs: OracleRun[] = [];
            device.pushErrorScope('validation');
            const enc = device.createCommandEncoder();
            const call = (inputs: { buffer: GPUBuffer; n: number }[], r0: number) =>
              oracle.opOn(enc, { op, layer: l, inputs, label: op }, tokens, r0);
            runs.push(call(whole, 0), call(whole, from));
            if (rowWise) runs.push(call(rows, from));
            device.queue.submit([enc.finish()]);
            await device.queue.onSubmittedWorkDone();
            const err = await device.popErrorScope();
            expect(err, `${ctx}: ${op}: ${err?.message}`).toBeNull();
            const [all, ...ranged] = runs.map((r) => r.taps.get('out')!);
            expect(all.n % T, `${ctx}: ${op}`).toBe(0);
            const want = (await rawRows(all, T)).subarray((2 * all.n * from) / T);
            for (const [k, got] of ranged.entries()) {
              expect(got.n, `${ctx}: ${op} size`).toBe((all.n / T) * R);
              if (all.parts) expect(got.parts?.map((p) => p.cols)).toEqual(all.parts.map((p) => p.cols));
              const words = await rawRows(got, R);
              const at = words.findIndex((w, i) => w !== want[i]);
              const how = k === 0 ? 'every row given' : 'only the range given';
              expect(at, `${ctx}: ${op} (${how}) differs at word ${at} of ${want.length}`).toBe(-1);
            }
            for (const r of runs) r.release();
          }
        }
      } finally {
        for (const b of made) b.destroy();
        gm.destroy();
      }
      expect(pool.stats().bytesInUse).toBe(0);
    },
    600_000, // SwiftShader: df kernels of up to 70 rows, every op three times per case
  );

  it.each(models)(
    '%s: forwardFrom (each layer’s earlier QKV rows from a forward over the prefix) equals the whole forward’s rows',
    async (name, spec, maxT, cap) => {
      const seed = freshSeed();
      const files = randomModelFiles(spec, seed);
      const cfg = parseConfigText(files.config);
      const gm = uploadModel(device, cfg, loadWeights(cfg, files.weights), cap, spec.dtype === 'F16');
      const oracle = new GpuOracle(device, pipelines, pool, gm, { dfFma: false, maxBindingBytes: cap });
      try {
        const rng = mulberry32(seed ^ 0x2545f491);
        const T = 2 + Math.floor(rng() * (maxT - 1));
        const from = 1 + Math.floor(rng() * (T - 1));
        const R = T - from;
        const ctx = `${name}, seed ${seed}: T = ${T}, from ${from}`;
        const tokens = Array.from({ length: T }, () => Math.floor(rng() * spec.vocab));
        device.pushErrorScope('validation');
        const enc = device.createCommandEncoder();
        const whole = oracle.forward(enc, tokens, 'dump');
        const prompt = oracle.forward(enc, tokens.slice(0, from), 'all');
        const rows = oracle.forwardFrom(enc, tokens, from, (i) => prompt.taps.get(`layers.${i}.qkv`)!);
        device.queue.submit([enc.finish()]);
        await device.queue.onSubmittedWorkDone();
        const err = await device.popErrorScope();
        expect(err, `${ctx}: ${err?.message}`).toBeNull();
        const names = ['embed', ...Array.from({ length: cfg.numLayers }, (_, i) => `layers.${i}.out`)];
        for (const tap of [...names, 'final_norm', 'logits']) {
          const all = whole.taps.get(tap)!;
          const got = rows.taps.get(tap)!;
          expect(got.n, `${ctx}: ${tap} size`).toBe((all.n / T) * R);
          const want = (await rawRows(all, T)).subarray((2 * all.n * from) / T);
          const words = await rawRows(got, R);
          const at = words.findIndex((w, i) => w !== want[i]);
          expect(at, `${ctx}: ${tap} differs at word ${at} of ${want.length}`).toBe(-1);
        }
        for (const r of [whole, prompt, rows]) r.release();
        const enc2 = device.createCommandEncoder();
        const short = { buffer: prompt.taps.get('embed')!.buffer, n: 1 };
        expect(() => oracle.forwardFrom(enc2, tokens, from, () => short)).toThrow(/prefix holds 1 values/);
        expect(() => oracle.forwardFrom(enc2, tokens, T, () => short)).toThrow(/rows from/);
      } finally {
        gm.destroy();
      }
      expect(pool.stats().bytesInUse).toBe(0);
    },
    300_000,
  );

  it('refuses a range outside the rows, and a range-only input to attention', () => {
    const seed = freshSeed();
    const spec = models[0][1];
    const files = randomModelFiles(spec, seed);
    const cfg = parseConfigText(files.config);
    const gm = uploadModel(device, cfg, loadWeights(cfg, files.weights), 1 << 30, false);
    const oracle = new GpuOracle(device, pipelines, pool, gm, { dfFma: false, maxBindingBytes: 1 << 30 });
    const T = 5;
    const x = uploadBuffer(device, new Float32Array(2 * 3 * cfg.hiddenSize), 'x');
    try {
      const enc = device.createCommandEncoder();
      const tokens = new Array(T).fill(1);
      const at = (op: OracleOp, from: number) => () =>
        oracle.opOn(
          enc,
          { op, layer: 0, inputs: [{ buffer: x, n: 2 * 3 * cfg.hiddenSize }], label: op },
          tokens,
          from,
        );
      expect(at('ln1', T)).toThrow(/rows from 5 are not within the 5 rows/);
      expect(at('ln1', -1)).toThrow(/rows from -1/);
      // Two rows of qkv are the range 3..4, not the keys of all five positions attention needs.
      expect(at('attention', 3)).toThrow(/input 0 holds 540 floats, not 5 rows of 270/);
    } finally {
      x.destroy();
      gm.destroy();
    }
    expect(pool.stats().bytesInUse).toBe(0);
  });
});
