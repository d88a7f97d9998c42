// The Llama family's fused kernels against the UNFUSED fp64 oracles run in sequence: residual add + RMSNorm
// (addF64 → rmsNormF64) and the gate/up GEMM with the SwiGLU epilogue (linearF64 twice → swigluF64), on fresh
// random inputs (the seed is printed on failure; KERNEL_SEED=<seed> replays), NaN-poisoned outputs followed by a
// guard band, sizes that are multiples of no tile or workgroup, every GEMM core (tiled, barrier-free for CPU
// adapters, the few-row GEMV, split-K through a NaN-poisoned workspace), and each kernel's teaching fault.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32, randn } from '../numeric/random';
import { linearF64 } from './cpu/linear';
import { addF64 } from './cpu/residual';
import type { GemmOpts } from './fused-linear';
import { CPU_ADAPTER, UNKNOWN_ADAPTER } from './gemm-configs';
import { expectClose, guardedOutputs, roundLabel, SWEEP_ROUNDS } from './guarded.testdata';
import { addRmsNorm, rmsNormF64 } from './ops/rmsnorm';
import { linearSwigluOps, silu, swigluF64 } from './ops/swiglu';
import { compare, createHarness, dotBound, freshSeed, type Harness, U32 } from './testing';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());
const { guarded, readGuarded } = guardedOutputs(() => h, 61, -777.25);

for (let r = 0; r < SWEEP_ROUNDS; r++)
  describe(`fused residual add + RMSNorm vs addF64 → rmsNormF64${roundLabel(r)}`, () => {
    it.each([
      [1, 90, true],
      [24, 300, true],
      [129, 515, true],
      [24, 300, false],
      [129 * 2, 37, true],
    ])('rows=%i d=%i add=%s', async (rows, d, add) => {
      const seed = freshSeed();
      const rng = mulberry32(seed);
      const a = randn(rng, rows * d, 2);
      const b = randn(rng, rows * d, 1).map((v) => v + 0.5);
      const w = randn(rng, d).map((v) => 1 + 0.3 * v);
      const eps = 1e-5;
      const r = add ? guarded(rows * d) : null;
      const y = guarded(rows * d);
      const dummy = h.upload(new Float32Array(4));
      await h.run([
        addRmsNorm(
          'add_rms',
          { a: h.upload(a), b: add ? h.upload(b) : null, w: h.upload(w), r, y, dummy },
          rows,
          d,
          eps,
        ),
      ]);
      const sum = add ? addF64(a, b) : Float64Array.from(a);
      if (r) {
        // The f32 add HF does (residual + hidden): one rounding, so exactly fround(a + b).
        const got = await readGuarded('r', r, rows * d, seed);
        expectClose('r', got, Float64Array.from(sum, Math.fround), 0, seed);
      }
      const ref = rmsNormF64(sum, rows, d, w, eps);
      // r's own rounding (u relative per element, and so at most u on the rms) plus the RMSNorm's (d/2 + 8)·u
      // (derived in llama-reference.test.ts): (d/2 + 10)·u·|ref|.
      expectClose(
        'y',
        await readGuarded('y', y, rows * d, seed),
        ref,
        (i) => (d / 2 + 10) * U32 * Math.abs(ref[i]) + 1e-30,
        seed,
      );
    });

    it('FAULT_EPS_OUTSIDE gives r / (rms + eps): the oracle variant, and visibly not the model', async () => {
      const seed = freshSeed();
      const rng = mulberry32(seed);
      const [rows, d, eps] = [7, 130, 0.05];
      const a = randn(rng, rows * d, 0.3); // rms ≈ 0.3: eps outside the root moves y by ≈ eps / rms / 2 ≈ 8 %
      const w = randn(rng, d).map((v) => 1 + 0.3 * v);
      const y = guarded(rows * d);
      const dummy = h.upload(new Float32Array(4));
      await h.run([
        addRmsNorm('faulty', { a: h.upload(a), b: null, w: h.upload(w), r: null, y, dummy }, rows, d, eps, {
          constants: { FAULT_EPS_OUTSIDE: true },
        }),
      ]);
      const got = await readGuarded('y', y, rows * d, seed);
      const variant = rmsNormF64(a, rows, d, w, eps, { epsOutside: true });
      expectClose(
        'y (eps outside)',
        got,
        variant,
        (i) => (d / 2 + 10) * U32 * Math.abs(variant[i]) + 1e-30,
        seed,
      );
      const model = rmsNormF64(a, rows, d, w, eps);
      const r = compare('y vs the model', got, model, (i) => 0.01 * Math.abs(model[i]) + 1e-30, seed);
      expect(r.bad, 'the fault must move nearly every element by more than 1 %').toBeGreaterThan(
        0.9 * rows * d,
      );
    });

    it('refuses a residual add with b but no r', () => {
      const x = h.upload(new Float32Array(4));
      expect(() => addRmsNorm('x', { a: x, b: x, w: x, r: null, y: x, dummy: x }, 1, 4, 1e-5)).toThrow(
        /both b and r/,
      );
    });
  });

/** Inputs of one gate/up GEMM: x [M, K], Wg/Wu [F, K] concatenated as W [2F, K], biases [F] each (or none). */
function swigluCase(seed: number, M: number, F: number, K: number, bias: boolean) {
  const rng = mulberry32(seed);
  const x = randn(rng, M * K);
  const wg = randn(rng, F * K, 1.5 / Math.sqrt(K));
  const wu = randn(rng, F * K, 1 / Math.sqrt(K));
  const bg = bias ? randn(rng, F, 0.3) : null;
  const bu = bias ? randn(rng, F, 0.3) : null;
  const w = new Float32Array(2 * F * K);
  w.set(wg);
  w.set(wu, F * K);
  const b = bias ? new Float32Array(2 * F) : null;
  if (b && bg && bu) {
    b.set(bg);
    b.set(bu, F);
  }
  const G = linearF64(x, M, K, wg, bg, F);
  const U = linearF64(x, M, K, wu, bu, F);
  const ax = x.map(Math.abs);
  const absG = linearF64(ax, M, K, wg.map(Math.abs), bg?.map(Math.abs) ?? null, F);
  const absU = linearF64(ax, M, K, wu.map(Math.abs), bu?.map(Math.abs) ?? null, F);
  return { x, w, b, G, U, absG, absU };
}

/**
 * The GEMM sums g and u carry |εg| <= Eg = γ_{K+2}·Σ|x w| (+|b|) and |εu| <= Eu in some order (any core, any split:
 * each split's partial is one more term). silu's slope is at most 1.1, so |silu(g)·u − silu(G)·U| <=
 * 1.1·Eg·(|U| + Eu) + |silu(G)|·Eu; silu itself and the product add (8 + 2|g|)·u relative (llama-reference.test.ts).
 */
function swigluTol(c: ReturnType<typeof swigluCase>, K: number, splits = 1): (i: number) => number {
  return (i) => {
    const Eg = dotBound(K + 2 + splits, c.absG[i]);
    const Eu = dotBound(K + 2 + splits, c.absU[i]);
    const sG = Math.abs(silu(c.G[i]));
    return (
      1.1 * Eg * (Math.abs(c.U[i]) + Eu) +
      sG * Eu +
      (8 + 2 * (Math.abs(c.G[i]) + Eg)) * U32 * sG * Math.abs(c.U[i]) +
      1e-30
    );
  };
}

for (let r = 0; r < SWEEP_ROUNDS; r++)
  describe(`fused gate/up GEMM + SwiGLU vs linearF64 ×2 → swigluF64${roundLabel(r)}`, () => {
    const workspace = (floats: number) => h.poisoned(floats);
    const cores: Array<[string, GemmOpts, number]> = [
      ['tiled', { policy: UNKNOWN_ADAPTER }, 1],
      ['barrier-free (CPU adapters)', { policy: CPU_ADAPTER }, 1],
      ['split-K, 64 per split', { policy: UNKNOWN_ADAPTER, workspace, kChunk: 64 }, 4],
      ['GEMV (few rows)', { policy: { ...UNKNOWN_ADAPTER, gemvRows: 4 } }, 1],
    ];
    // [M, F, K]: F odd and not a multiple of any tile; the GEMV case with M <= 4.
    const shapes: Array<[number, number, number, boolean]> = [
      [1, 173, 90, true],
      [24, 150, 200, false],
      [129, 77, 90, true],
      [3, 300, 131, false],
    ];
    it.each(cores.flatMap(([name, opts, splits]) => shapes.map((s) => [name, ...s, opts, splits] as const)))(
      '%s: M=%i F=%i K=%i bias=%s',
      async (_name, M, F, K, bias, opts, splits) => {
        const seed = freshSeed();
        const c = swigluCase(seed, M, F, K, bias);
        const y = guarded(M * F);
        const dummy = h.upload(new Float32Array(4));
        await h.run(
          linearSwigluOps(
            'swiglu',
            { x: h.upload(c.x), w: h.upload(c.w), b: c.b ? h.upload(c.b) : null, y, dummy },
            M,
            F,
            K,
            opts,
          ),
        );
        const ref = swigluF64(c.G, c.U);
        expectClose(
          'swiglu',
          await readGuarded('y', y, M * F, seed),
          ref,
          swigluTol(c, K, Math.max(splits, Math.ceil(K / 64))),
          seed,
        );
      },
    );

    it('FAULT_SWAP_GATE_UP gives silu(up) · gate: the swapped oracle, and visibly not the model', async () => {
      const seed = freshSeed();
      const [M, F, K] = [9, 70, 45];
      const c = swigluCase(seed, M, F, K, true);
      const y = guarded(M * F);
      const dummy = h.upload(new Float32Array(4));
      await h.run(
        linearSwigluOps(
          'swapped',
          { x: h.upload(c.x), w: h.upload(c.w), b: h.upload(c.b as Float32Array), y, dummy },
          M,
          F,
          K,
          {
            constants: { FAULT_SWAP_GATE_UP: true },
          },
        ),
      );
      const got = await readGuarded('y', y, M * F, seed);
      const swapped = swigluF64(c.U, c.G);
      const sc = { ...c, G: c.U, U: c.G, absG: c.absU, absU: c.absG };
      expectClose('swiglu (swapped)', got, swapped, swigluTol(sc, K), seed);
      const model = swigluF64(c.G, c.U);
      const r = compare('swapped vs the model', got, model, swigluTol(c, K), seed);
      expect(r.bad, 'the swap must be seen on most elements').toBeGreaterThan(0.5 * M * F);
    });
  });
