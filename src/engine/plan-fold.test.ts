// Split-K reductions folded into the op after them (plan-fold.ts): attention.dense's into its consumer, the MLP
// down-projection's (with attention.dense's) into the next layer's LayerNorm. The fused forward with the folds and
// without them, every tap bit for bit, on random models whose GEMMs are forced to split (a K partition table, as
// gemm-split.test.ts does) at sizes that are not multiples of the tiles, with every tap buffer poisoned (NaN)
// before each run; a dispatch less per fold; and the cases that must keep the unfolded ops.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeGpu } from '../gpu/node';
import type { GemmPolicy } from '../kernels/gemm-configs';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { type RandomModelSpec, randomModelFiles } from '../model/random-model';
import type { Precision } from '../numeric/precision';
import { mulberry32 } from '../numeric/random';
import { Engine } from './engine';
import { runForward, StagingBuffers } from './forward';
import { ALL_FUSED, type FusedKernelId } from './fused-kernels';
import { buildPlan, type Plan, type PlanOptions } from './plan';
import { FOLD_FILES, foldFor } from './plan-fold';

// d and ff not multiples of any tile or of 4; head_dim 21 (parallel: odd) and 29 (sequential).
const parallel: RandomModelSpec = {
  vocab: 97,
  d: 63,
  layers: 3,
  heads: 3,
  ff: 150,
  rotaryPct: 0.2,
  parallel: true,
};
const sequential: RandomModelSpec = {
  vocab: 89,
  d: 58,
  layers: 3,
  heads: 2,
  ff: 130,
  rotaryPct: 0.5,
  parallel: false,
};

/** A K partition for every fused linear of a spec (qkv, dense, fc1, fc2), or without the MLP down-projection's. */
function splitting(specs: RandomModelSpec[], splitMlpOut: boolean): GemmPolicy {
  const kChunks: Record<string, number> = {};
  for (const s of specs) {
    const hd = s.d / s.heads;
    kChunks[`${3 * s.heads * (hd + (hd % 2))}x${s.d}`] = 32;
    kChunks[`${s.d}x${s.d}`] = 16; // attention.dense: 4 splits, the last short
    kChunks[`${s.ff}x${s.d}`] = 32;
    if (splitMlpOut) kChunks[`${s.d}x${s.ff}`] = 32;
  }
  return { name: 'test: split', table: { measuredOn: 'test', date: '', tiles: {}, kChunks }, splitK: true };
}
const SPLIT_ALL = splitting([parallel, sequential], true);

let engine: Engine;
let staging: StagingBuffers;
beforeAll(async () => {
  // The engine's own policy splits too (its recorded forwards fold); plans built here name theirs.
  engine = await Engine.create(nodeGpu(), nodeShaderSource(), { gemm: SPLIT_ALL });
  staging = new StagingBuffers(engine.ctx.device);
});
afterAll(() => {
  staging?.trim();
  engine?.dispose();
});

function plan(
  tokens: number[],
  o: Omit<PlanOptions, 'maxBindingBytes'> & { maxBindingBytes?: number },
): Plan {
  const { device, pool, model } = engine.gpuParts();
  return buildPlan(device, pool, model, tokens, {
    maxBindingBytes: device.limits.maxStorageBufferBindingSize,
    ...o,
  });
}

/** Runs a plan with every tap buffer poisoned first; every tap read back. */
async function run(p: Plan, T: number) {
  const { device, pipelines, model } = engine.gpuParts();
  for (const op of p.ops)
    for (const w of op.writes)
      for (const part of w.parts ?? [{ buffer: w.buffer }])
        device.queue.writeBuffer(part.buffer, 0, new Float32Array(part.buffer.size / 4).fill(Number.NaN));
  const ctx = { device, pipelines, staging, checkAlive: () => {}, settleLoss: async () => {} };
  return runForward(ctx, p, model.cfg, T, { taps: 'all' }, performance.now());
}

const labels = (p: Plan) => p.ops.map((o) => o.spec.label);

/** Per layer of a 3-layer plan: whether attention.dense's and the MLP's reductions are folded (the reduction
 * labelled with the op is gone while its partial GEMM stays). */
function folds(p: Plan) {
  const l = labels(p);
  const gone = (op: string) =>
    [0, 1, 2].map((i) => !l.includes(`layers.${i}.${op}`) && l.includes(`layers.${i}.${op}/splitk`));
  return { dense: gone('attn_out'), out: gone('residual_epilogue') };
}
const bits = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);

describe('split-K reductions folded into the next op', () => {
  // fp16 accumulation exercises acc() in the folded sums: on the two folded kernels, once each.
  it.each([
    ['parallel, MLP down-projection split', parallel, true, ['fp32', 'fp16acc']],
    ['parallel, MLP down-projection whole (folded into the GEMM epilogue)', parallel, false, ['fp32']],
    ['sequential (folded into add + LayerNorm)', sequential, true, ['fp16acc']],
  ] as const)(
    '%s: every tap bit-identical to the unfolded plan, one or two dispatches less per layer',
    async (_n, spec, splitOut, precisions) => {
      const seed = freshSeed();
      await engine.loadModel(randomModelFiles(spec, seed));
      const rng = mulberry32(seed ^ 0x5bd1e995);
      const gemm = splitting([spec], splitOut);
      for (const precision of precisions as readonly Precision[]) {
        const T = 1 + Math.floor(rng() * 37);
        const tokens = Array.from({ length: T }, () => Math.floor(rng() * spec.vocab));
        const base = { fused: ALL_FUSED, precision, gemm };
        const off = plan(tokens, base);
        const on = plan(tokens, { ...base, fold: { custom: null } });
        const where = `seed ${seed} ${precision} T=${T}`;
        // attention.dense's reduction in every layer; the MLP's, when split, in every layer but the last.
        const mlpFolds = splitOut ? spec.layers - 1 : 0;
        expect(on.ops.length, where).toBe(off.ops.length - spec.layers - mlpFolds);
        expect(folds(on), where).toEqual({
          dense: Array(spec.layers).fill(true),
          out: Array.from({ length: spec.layers }, (_, i) => i < mlpFolds),
        });
        expect(folds(off)).toEqual({
          dense: Array(spec.layers).fill(false),
          out: Array(spec.layers).fill(false),
        });
        const a = await run(off, T);
        const b = await run(on, T);
        expect([...b.taps.keys()].sort(), where).toEqual([...a.taps.keys()].sort());
        for (const [name, x] of a.taps) {
          const y = b.taps.get(name)!;
          expect(x.every(Number.isFinite), `${name} ${where}`).toBe(true);
          expect(bits(y), `${name} ${where}`).toEqual(bits(x));
        }
      }
    },
  );

  it('keeps the unfolded ops where a fold cannot hold: hooks, custom kernels, bisection, ranges, no split', async () => {
    const seed = freshSeed();
    await engine.loadModel(randomModelFiles(parallel, seed));
    const tokens = [5, 3, 8, 1, 9, 2, 7];
    const folded = (o: Partial<PlanOptions>) => {
      const p = plan(tokens, {
        fused: ALL_FUSED,
        precision: 'fp32',
        gemm: SPLIT_ALL,
        fold: { custom: null },
        ...o,
      });
      const f = folds(p);
      p.release();
      return f;
    };
    const T = true;
    const F = false;
    const fault = (kernel: FusedKernelId, layer: number) => ({
      hooks: {
        constants: (k: string, l: number | null): Record<string, boolean> =>
          k === kernel && l === layer ? { FAULT_REORDER: true } : {},
      },
    });
    const all = { dense: [T, T, T], out: [T, T, F] };
    const none = { dense: [F, F, F], out: [F, F, F] };
    expect(folded({})).toEqual(all);
    expect(folded({ fold: undefined })).toEqual(none);
    // A hook on a kernel of a pair in one layer keeps that pair alone unfolded.
    expect(folded(fault('gemm', 1))).toEqual({ dense: [T, F, T], out: [T, T, F] });
    expect(folded(fault('residual_epilogue', 1))).toEqual({ dense: [T, F, T], out: [T, F, F] });
    expect(folded(fault('layernorm', 1))).toEqual({ dense: [T, T, T], out: [F, T, F] });
    expect(folded({ hooks: { aliasResidual: (l) => l === 1 } })).toEqual({
      dense: [T, F, T],
      out: [T, F, F],
    });
    expect(folded({ hooks: { staleContext: (l) => l === 0 } })).toEqual({ dense: [F, T, T], out: [F, T, F] });
    for (const file of FOLD_FILES) expect(folded({ fold: { custom: file } }), file).toEqual(none);
    expect(folded({ fold: { custom: 'fused/flash_attention.wgsl' } })).toEqual(all);
    // Bisection: a kernel of a pair switched off.
    const without = (k: FusedKernelId) => ({ fused: new Set([...ALL_FUSED].filter((x) => x !== k)) });
    expect(folded(without('gemm'))).toEqual({ dense: [F, F, F], out: [T, T, F] });
    expect(folded(without('residual_epilogue'))).toEqual(none);
    expect(folded(without('layernorm'))).toEqual({ dense: [T, T, T], out: [F, F, F] });
    // A layer range folds the MLP's reduction only into a LayerNorm it holds.
    const input = new Float32Array(tokens.length * parallel.d);
    expect(folded({ layers: { from: 0, to: 2, input } })).toEqual({ dense: [T, T, F], out: [T, F, F] });
    // Both folds' partials must fit one binding (7 tokens: 1792 + 2205 floats = 15988 bytes; every other buffer
    // of the plan fits 12 KiB, the largest being the qkv split's workspace, 11088 bytes).
    expect(folded({ maxBindingBytes: 12 * 1024 })).toEqual(none);
    // Nothing split: nothing to fold.
    expect(folded({ gemm: { ...SPLIT_ALL, splitK: false } })).toEqual(none);
  });

  it('the engine folds its recorded forwards (not with a custom kernel in a slot involved): the same taps, bit for bit', async () => {
    const seed = freshSeed();
    await engine.loadModel(randomModelFiles(parallel, seed));
    const tokens = [4, 8, 15, 16, 23, 42, 11, 3, 77];
    const whole = await engine.forward(tokens, { path: 'fused', taps: 'all', timing: true });
    const timed = whole.timings!.map((t) => t.label);
    expect(timed).not.toContain('layers.1.attn_out');
    expect(timed).toContain('layers.1.attn_out/splitk');
    expect(timed).not.toContain('layers.0.residual_epilogue'); // folded into layers.1.layernorm
    expect(timed).toContain('layers.2.residual_epilogue'); // the last layer's feeds final_norm
    const last = await engine.forward(tokens, {
      path: 'fused',
      taps: 'all',
      layers: { from: 1, to: 2, input: whole.dump.layers[0] },
    });
    expect(last.taps.has('layers.1.attn_out')).toBe(true);
    for (const [name, x] of last.taps)
      expect(bits(whole.taps.get(name)!), `${name} seed ${seed}`).toEqual(bits(x));
    // A custom kernel in a slot a fold bypasses (here the shipped text itself): the engine keeps the unfolded ops.
    const file = 'fused/linear_residual.wgsl';
    expect(foldFor(`${file}#0123abcd`)).toEqual({ custom: file });
    expect(foldFor('')).toEqual({ custom: null });
    engine.setCustomKernel({ file, source: engine.shaderSource(file) });
    try {
      const custom = await engine.forward(tokens, { path: 'fused', taps: 'all', timing: true });
      const labels = custom.timings!.map((t) => t.label);
      expect(labels).toContain('layers.1.attn_out');
      expect(labels).toContain('layers.0.residual_epilogue');
      for (const [name, x] of whole.taps)
        expect(bits(custom.taps.get(name)!), `${name} seed ${seed}`).toEqual(bits(x));
    } finally {
      engine.setCustomKernel(null);
    }
  });
});
