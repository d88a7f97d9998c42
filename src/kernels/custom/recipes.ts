// The isolated test of each custom-kernel slot: fresh seeded random inputs at a few shapes that are
// multiples of no tile, every output poisoned with NaN (plus a poisoned guard tail that must stay NaN: no
// write past the end), the slot's launcher run through the harness, each output checked against the UNFUSED
// fp64 oracles run in sequence with the tolerance rule of tolerances.ts. The same recipe checks the shipped
// kernel (custom.test.ts) and a kernel written in the page (the worker).

import type { DispatchSpec } from '../../gpu/program';
import { mulberry32, randn } from '../../numeric/random';
import { attentionScoresF64, attentionValuesF64, softmaxCausalF64 } from '../cpu/attention';
import { geluF64 } from '../cpu/gelu';
import { layerNormF64 } from '../cpu/layernorm';
import { linearF64 } from '../cpu/linear';
import { add3F64, addF64 } from '../cpu/residual';
import { splitHeadsRotaryF64 } from '../cpu/rotary';
import { flashAttention, flashTiles } from '../flash-attention';
import {
  type GemmOpts,
  type LinearBuffers,
  linearBiasOps,
  linearGeluOps,
  linearResidualOps,
  qkvRotary,
} from '../fused-linear';
import { addLayerNorm, layerNorm2 } from '../fused-norm';
import { type CompareResult, compare, type DeviceHarness } from '../harness';
import { rotaryTables } from '../rotary';
import type { CustomSlotId } from './slots';
import {
  flashTol,
  layerNormTol,
  linearGeluTol,
  linearResidualTol,
  linearTol,
  qkvRotaryTol,
} from './tolerances';

/** f32 after each output that the kernel must leave as NaN. */
export const GUARD = 64;

export interface OutputCheck {
  /** The output binding checked ('y1', 'ctx', …). */
  output: string;
  result: CompareResult;
}

export interface Recipe {
  slot: CustomSlotId;
  /** The unfused oracle chain, in words. */
  oracle: string;
  /** The tolerance rule, in words. */
  tolerance: string;
  /** Shapes (dimension name -> size), none a multiple of a tile. */
  shapes: readonly Record<string, number>[];
  run(h: DeviceHarness, shape: Record<string, number>, seed: number): Promise<OutputCheck[]>;
}

/** An output buffer of n f32 poisoned with NaN, followed by a poisoned guard tail. */
function output(h: DeviceHarness, n: number): GPUBuffer {
  return h.poisoned(n + GUARD);
}

/** Reads an output and checks it; a written guard tail fails the check whatever the values. */
async function checkOutput(
  h: DeviceHarness,
  name: string,
  buf: GPUBuffer,
  n: number,
  ref: ArrayLike<number>,
  tol: (i: number) => number,
  seed: number,
): Promise<OutputCheck> {
  const all = await h.read(buf, n + GUARD);
  const result = compare(name, all.subarray(0, n), ref, tol, seed);
  const written = all.subarray(n).findIndex((v) => !Number.isNaN(v));
  if (written >= 0) {
    const line = `${name}: wrote past its end (element ${n + written} of a [${n}] output)`;
    return {
      output: name,
      result: {
        ...result,
        ok: false,
        maxRatio: Number.POSITIVE_INFINITY,
        report: `${line}\n${result.report}`,
      },
    };
  }
  return { output: name, result };
}

const abs32 = (a: Float32Array) => a.map(Math.abs);

function linearInputs(rng: () => number, M: number, N: number, K: number) {
  const x = randn(rng, M * K); // [M, K]
  const w = randn(rng, N * K, 1 / Math.sqrt(K)); // [N, K]
  const b = randn(rng, N, 0.5); // [N]
  return { x, w, b, z: linearF64(x, M, K, w, b, N), absZ: linearF64(abs32(x), M, K, abs32(w), abs32(b), N) };
}

function normInputs(rng: () => number, T: number, d: number) {
  return {
    x: randn(rng, T * d, 2).map((v) => v + 3), // [T, d], mean 3: a mean that must be subtracted well
    y: randn(rng, T * d), // [T, d]
    w1: randn(rng, d).map((v) => 1 + 0.2 * v),
    b1: randn(rng, d, 0.2),
    w2: randn(rng, d).map((v) => 1 + 0.2 * v),
    b2: randn(rng, d, 0.2),
  };
}

const EPS = 1e-5;
/** The shapes both fused LayerNorm slots are tested at. */
const NORM_SHAPES: readonly Record<string, number>[] = [
  { T: 1, d: 90 },
  { T: 7, d: 300 },
  { T: 33, d: 515 },
];
/** The last shape runs split-K (3 partial sums of K, then the reduction, both built from the slot's file). */
const LINEAR_SHAPES: readonly Record<string, number>[] = [
  { M: 1, N: 300, K: 90 },
  { M: 7, N: 200, K: 90 },
  { M: 33, N: 270, K: 130 },
  { M: 20, N: 130, K: 301, split: 3 },
];

/** K per split-K piece must be a multiple of the core's K tile (BK ≤ 16 in every configuration). */
const SPLIT_GRAIN = 16;

/** Unsplit, or split-K into about `split` pieces of K (whole K tiles) with a NaN-poisoned workspace. */
function gemmOpts(h: DeviceHarness, K: number, split: number | undefined): GemmOpts {
  if (!split) return {};
  const kChunk = SPLIT_GRAIN * Math.ceil(K / split / SPLIT_GRAIN);
  return { workspace: (floats) => h.poisoned(floats), kChunk };
}

/**
 * The isolated test of a plain linear slot (bias, bias + GELU): seeded inputs, the slot's ops (split-K when the shape
 * says so), the output `y` against `expect`'s reference and tolerance.
 */
function linearRun(
  ops: (label: string, b: LinearBuffers, M: number, N: number, K: number, o: GemmOpts) => DispatchSpec[],
  label: string,
  expect: (c: ReturnType<typeof linearInputs>, K: number) => [Float64Array, (i: number) => number],
): Recipe['run'] {
  return async (h, { M, N, K, split }, seed) => {
    const c = linearInputs(mulberry32(seed), M, N, K);
    const y = output(h, M * N);
    const dummy = h.upload(new Float32Array(4));
    const bufs = { x: h.upload(c.x), w: h.upload(c.w), b: h.upload(c.b), y, dummy };
    await h.run(ops(label, bufs, M, N, K, gemmOpts(h, K, split)));
    const [ref, tol] = expect(c, K);
    return [await checkOutput(h, 'y', y, M * N, ref, tol, seed)];
  };
}

export const RECIPES: readonly Recipe[] = [
  {
    slot: 'layernorm2',
    oracle: 'layerNormF64 twice (ln1 with w1, b1; ln2 with w2, b2)',
    tolerance: 'LayerNorm bound: (d + 2)u·mean|x|/σ + (d + 10)u|x̂|, times |w|, + 4u|ref|',
    shapes: NORM_SHAPES,
    async run(h, { T, d }, seed) {
      const v = normInputs(mulberry32(seed), T, d);
      const y1 = output(h, T * d);
      const y2 = output(h, T * d);
      const dummy = h.upload(new Float32Array(4));
      await h.run([
        layerNorm2(
          'ln',
          { x: h.upload(v.x), w1: h.upload(v.w1), b1: h.upload(v.b1), y1, dummy },
          { w2: h.upload(v.w2), b2: h.upload(v.b2), y2 },
          T,
          d,
          EPS,
        ),
      ]);
      const ref1 = layerNormF64(v.x, T, d, v.w1, v.b1, EPS);
      const ref2 = layerNormF64(v.x, T, d, v.w2, v.b2, EPS);
      return [
        await checkOutput(h, 'y1', y1, T * d, ref1, layerNormTol(v.x, T, d, v.w1, ref1, EPS), seed),
        await checkOutput(h, 'y2', y2, T * d, ref2, layerNormTol(v.x, T, d, v.w2, ref2, EPS), seed),
      ];
    },
  },
  {
    slot: 'add_layernorm',
    oracle: 'addF64 (b + a, exact in one f32 rounding) then layerNormF64',
    tolerance: 'r: one f32 rounding of the sum (exact); y: the LayerNorm bound on r',
    shapes: NORM_SHAPES,
    async run(h, { T, d }, seed) {
      const v = normInputs(mulberry32(seed), T, d);
      const r = output(h, T * d);
      const y = output(h, T * d);
      await h.run([
        addLayerNorm(
          'addln',
          { a: h.upload(v.x), b: h.upload(v.y), w: h.upload(v.w1), bias: h.upload(v.b1), r, y },
          T,
          d,
          EPS,
        ),
      ]);
      // HF's `attn_output + hidden_states` is one f32 rounding: the residual must be exactly that.
      const rRef = Float64Array.from(v.x, (a, i) => Math.fround(v.y[i] + a));
      const sum = addF64(v.x, v.y);
      const ref = layerNormF64(sum, T, d, v.w1, v.b1, EPS);
      return [
        await checkOutput(h, 'r', r, T * d, rRef, () => 0, seed),
        await checkOutput(h, 'y', y, T * d, ref, layerNormTol(sum, T, d, v.w1, ref, EPS), seed),
      ];
    },
  },
  {
    slot: 'qkv_rotary',
    oracle: 'linearF64 (x·Wᵀ + b) then splitHeadsRotaryF64 (head split, rotate-half rotary)',
    tolerance: 'γ_{d+2}·Σ|xw| per projection; rotated pairs add both partners’ bounds + 4u',
    shapes: [
      { T: 1, H: 2, hd: 10, r: 4 },
      { T: 7, H: 3, hd: 30, r: 8 },
      { T: 33, H: 2, hd: 32, r: 8 },
      { T: 11, H: 1, hd: 256, r: 64 }, // the widest head (Pythia-1b)
    ],
    async run(h, { T, H, hd, r }, seed) {
      const d = H * hd;
      const c = linearInputs(mulberry32(seed), T, 3 * d, d);
      const { cos, sin } = rotaryTables(T, r, 10000);
      const ref = splitHeadsRotaryF64(c.z, T, H, hd, r, 10000);
      const a = splitHeadsRotaryF64(c.absZ, T, H, hd, 0, 10000);
      const n = H * T * hd;
      const [q, k, vb] = [output(h, n), output(h, n), output(h, n)];
      const bufs = {
        x: h.upload(c.x),
        w: h.upload(c.w),
        b: h.upload(c.b),
        cos: h.upload(cos),
        sin: h.upload(sin),
      };
      await h.run([
        qkvRotary('qkv', { ...bufs, q, k, v: vb, dummy: h.upload(new Float32Array(4)) }, T, H, hd, r),
      ]);
      const tq = qkvRotaryTol(a.q, d, hd, r, true);
      const tk = qkvRotaryTol(a.k, d, hd, r, true);
      const tv = qkvRotaryTol(a.v, d, hd, r, false);
      return [
        await checkOutput(h, 'q', q, n, ref.q, (i) => tq[i], seed),
        await checkOutput(h, 'k', k, n, ref.k, (i) => tk[i], seed),
        await checkOutput(h, 'v', vb, n, ref.v, (i) => tv[i], seed),
      ];
    },
  },
  {
    slot: 'flash_attention',
    oracle: 'attentionScoresF64 → softmaxCausalF64 → attentionValuesF64',
    tolerance: '[4γ_{hd+2}·max|q·k| + 2(4 + 2·score range)u + 2γ_{T+T/8+3BK/8+2}]·Σ_j p_ij|v_je|',
    shapes: [
      { H: 2, T: 1, hd: 16 },
      { H: 3, T: 7, hd: 30 },
      { H: 2, T: 45, hd: 32 },
      { H: 1, T: 37, hd: 256 }, // the widest head (Pythia-1b): two passes over the output dims
    ],
    async run(h, { H, T, hd }, seed) {
      const rng = mulberry32(seed);
      const [q, k, v] = [randn(rng, H * T * hd), randn(rng, H * T * hd), randn(rng, H * T * hd)]; // [H, T, hd]
      const n = T * H * hd;
      const ctx = output(h, n);
      await h.run([
        flashAttention('attn', { q: h.upload(q), k: h.upload(k), v: h.upload(v), ctx }, H, T, hd),
      ]);
      const s = attentionScoresF64(q, k, H, T, hd);
      const p = softmaxCausalF64(s, H, T);
      const ref = attentionValuesF64(p, v, H, T, hd);
      const pAbsV = attentionValuesF64(p, Float64Array.from(v, Math.abs), H, T, hd);
      const tol = flashTol(q, k, s, pAbsV, H, T, hd, flashTiles(hd).BK);
      return [await checkOutput(h, 'ctx', ctx, n, ref, tol, seed)];
    },
  },
  {
    slot: 'linear_bias',
    oracle: 'linearF64 (x·Wᵀ + b)',
    tolerance: 'γ_{K+2}·(Σ|x w| + |b|)',
    shapes: LINEAR_SHAPES,
    run: linearRun(linearBiasOps, 'lin', (c, K) => [c.z, linearTol(K, c.absZ)]),
  },
  {
    slot: 'linear_gelu',
    oracle: 'linearF64 then geluF64 (exact, erf form)',
    tolerance: '1.13·γ_{K+2}·(Σ|x w| + |b|) + (4e-7 + (16 + z²)u)|z|',
    shapes: LINEAR_SHAPES,
    run: linearRun(linearGeluOps, 'up', (c, K) => [geluF64(c.z), linearGeluTol(K, c.z, c.absZ)]),
  },
  {
    slot: 'linear_residual',
    oracle: 'linearF64 then add3F64 (HF order: mlp + attn + hidden_states)',
    tolerance: 'γ_{K+3}·(Σ|x w| + |b| + |r1| + |r2|)',
    shapes: LINEAR_SHAPES,
    async run(h, { M, N, K, split }, seed) {
      const rng = mulberry32(seed);
      const c = linearInputs(rng, M, N, K);
      const r1 = randn(rng, M * N); // hidden_states [M, N]
      const r2 = randn(rng, M * N); // attn_output [M, N]
      const y = output(h, M * N);
      const dummy = h.upload(new Float32Array(4));
      const bufs = {
        x: h.upload(c.x),
        w: h.upload(c.w),
        b: h.upload(c.b),
        r1: h.upload(r1),
        r2: h.upload(r2),
      };
      await h.run(linearResidualOps('out', { ...bufs, y, dummy }, M, N, K, gemmOpts(h, K, split)));
      const ref = add3F64(r1, r2, c.z);
      return [await checkOutput(h, 'y', y, M * N, ref, linearResidualTol(K, c.absZ, r1, r2), seed)];
    },
  },
];

export function recipeFor(slot: CustomSlotId): Recipe {
  const r = RECIPES.find((x) => x.slot === slot);
  if (!r) throw new Error(`no isolated test for slot '${slot}'`);
  return r;
}
