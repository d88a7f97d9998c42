// The split-K reduction folded into the residual add + RMSNorm (kernels/ops/rmsnorm.ts addRmsNormFold, shaders/fused/add_rmsnorm_fold.wgsl)
// on fresh random inputs (the seed is printed on failure; KERNEL_SEED=<seed> replays, KERNEL_SWEEP=n draws n): the
// partial GEMM through a NaN-poisoned workspace, NaN-poisoned outputs followed by a guard band, sizes that are
// multiples of no tile, workgroup or split. Two checks per case: the fold gives the unfolded pair's bits (the
// reduction linearBiasOps runs, then addRmsNorm) in every output, with each precision mode's constants and with the
// norm's teaching faults; and its outputs against the fp64 oracle run unfused (linearF64 → addF64 → rmsNormF64).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { OverrideConstants } from '../gpu/pipelines';
import { mulberry32, randn } from '../numeric/random';
import { linearF64 } from './cpu/linear';
import { addF64 } from './cpu/residual';
import { linearBiasOps } from './fused-linear';
import { linearBiasPartial } from './fused-linear-fold';
import { UNKNOWN_ADAPTER } from './gemm-configs';
import { expectClose, guardedOutputs, roundLabel, SWEEP_ROUNDS } from './guarded.testdata';
import { addRmsNorm, addRmsNormFold, rmsNormF64 } from './ops/rmsnorm';
import { createHarness, dotBound, freshSeed, type Harness, U32 } from './testing';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());
const { guarded, readGuarded } = guardedOutputs(() => h, 37, -555.5);

const bits = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

/** The three outputs (b, r, y) of the fold and of the unfolded pair, same inputs; `consts` on every kernel. */
async function both(
  seed: number,
  rows: number,
  d: number,
  K: number,
  kChunk: number,
  bias: boolean,
  consts: OverrideConstants,
  normFault: OverrideConstants,
) {
  const rng = mulberry32(seed);
  const x = randn(rng, rows * K);
  const W = randn(rng, d * K, 1 / Math.sqrt(K));
  const bb = bias ? randn(rng, d, 0.3) : null;
  const a = randn(rng, rows * d, 2);
  const w = randn(rng, d).map((v) => 1 + 0.3 * v);
  const eps = 1e-5;
  const [xb, Wb, bbb, ab, wb] = [
    h.upload(x),
    h.upload(W),
    bb ? h.upload(bb) : null,
    h.upload(a),
    h.upload(w),
  ];
  const dummy = h.upload(new Float32Array(4));
  const opts = { policy: UNKNOWN_ADAPTER, kChunk, constants: consts };
  const norm = { constants: { ...consts, ...normFault } };
  const out = () => ({ b: guarded(rows * d), r: guarded(rows * d), y: guarded(rows * d) });
  // folded: the partial GEMM into a poisoned workspace region at a 256-byte aligned offset, then the fold.
  const f = out();
  const ws = h.poisoned(64 + Math.ceil(K / kChunk) * rows * d);
  const got = linearBiasPartial(
    'o',
    { x: xb, w: Wb, b: bbb, y: f.b, dummy },
    rows,
    d,
    K,
    () => ({ buffer: ws, offset: 64 }),
    opts,
  );
  expect(got, 'a split launch').not.toBeNull();
  if (!got) throw new Error('unreachable');
  await h.run([
    got.spec,
    addRmsNormFold('ln', { a: ab, part: got.partials, w: wb, ...f, dummy }, rows, d, eps, norm),
  ]);
  // unfolded: the partial GEMM and its reduction, then the residual add + RMSNorm.
  const u = out();
  const workspace = (floats: number) => h.poisoned(floats);
  const pair = linearBiasOps('o', { x: xb, w: Wb, b: bbb, y: u.b, dummy }, rows, d, K, {
    ...opts,
    workspace,
  });
  expect(pair.length, 'a partial GEMM and its reduction').toBe(2);
  await h.run([
    ...pair,
    addRmsNorm('ln', { a: ab, b: u.b, w: wb, r: u.r, y: u.y, dummy }, rows, d, eps, norm),
  ]);
  const read = async (o: ReturnType<typeof out>, what: string) => ({
    b: await readGuarded(`${what} b`, o.b, rows * d, seed),
    r: await readGuarded(`${what} r`, o.r, rows * d, seed),
    y: await readGuarded(`${what} y`, o.y, rows * d, seed),
  });
  return { x, W, bb, a, w, eps, fold: await read(f, 'fold'), pair: await read(u, 'pair') };
}

// [rows, d, K, K per split]: none a multiple of a tile (32/64), of the norm's 256 threads, or of its split.
const CASES: Array<[number, number, number, number, boolean]> = [
  [1, 90, 200, 64, true],
  [24, 300, 131, 64, false],
  [129, 77, 515, 128, true],
  [37, 515, 96, 32, false],
];

for (let r = 0; r < SWEEP_ROUNDS; r++)
  describe(`split-K reduction folded into the residual add + RMSNorm${roundLabel(r)}`, () => {
    it.each(CASES)(
      "rows=%i d=%i K=%i per split %i bias=%s: the pair's bits; the fp64 oracle",
      async (rows, d, K, kChunk, bias) => {
        const seed = freshSeed();
        const c = await both(seed, rows, d, K, kChunk, bias, {}, {});
        for (const k of ['b', 'r', 'y'] as const)
          expect(bits(c.fold[k]).equals(bits(c.pair[k])), `${k} bit for bit (seed ${seed})`).toBe(true);
        // The oracle: b = x·Wᵀ + bias, r = a + b, y = RMSNorm(r).
        const B = linearF64(c.x, rows, K, c.W, c.bb, d);
        const absB = linearF64(c.x.map(Math.abs), rows, K, c.W.map(Math.abs), c.bb?.map(Math.abs) ?? null, d);
        const S = Math.ceil(K / kChunk);
        // b: a dot product of K terms summed in some order, plus S partials and the bias: γ_{K+S+1}·Σ|x w| (+|bias|),
        // and st()'s rounding: u·|B|.
        const Eb = (i: number) => dotBound(K + S + 1, absB[i]) + U32 * Math.abs(B[i]);
        expectClose('b', c.fold.b, B, (i) => Eb(i) + 1e-30, seed);
        const R = addF64(c.a, B);
        // r = fl(a + b): b's error plus one rounding.
        const Er = (i: number) => Eb(i) + U32 * (Math.abs(R[i]) + Eb(i));
        expectClose('r', c.fold.r, R, (i) => Er(i) + 1e-30, seed);
        // y = r·w / rms(r): r's error moves each element by Er and the row's rms by at most rms(Er) (the RMS is a
        // norm: |rms(r') − rms(r)| <= rms(r' − r)); the RMSNorm's own arithmetic (d/2 + 10)·u relative
        // (fused-llama.test.ts).
        const Y = rmsNormF64(R, rows, d, c.w, c.eps);
        const rowRms: number[] = [];
        const rowErr: number[] = [];
        for (let m = 0; m < rows; m++) {
          let ss = 0;
          let se = 0;
          for (let j = 0; j < d; j++) {
            ss += R[m * d + j] ** 2;
            se += Er(m * d + j) ** 2;
          }
          rowRms.push(Math.sqrt(ss / d + c.eps));
          rowErr.push(Math.sqrt(se / d));
        }
        const Ey = (i: number) => {
          const m = Math.floor(i / d);
          const rel = rowErr[m] / rowRms[m];
          return (
            (Math.abs(c.w[i % d]) * Er(i)) / rowRms[m] / (1 - rel) +
            Math.abs(Y[i]) * (rel / (1 - rel) + (d / 2 + 10) * U32)
          );
        };
        expectClose('y', c.fold.y, Y, (i) => Ey(i) + 1e-30, seed);
      },
    );

    it.each([
      ['bf16 storage', { STORAGE_PREC: 2 }, {}],
      ['fp16 accumulation', { STORAGE_PREC: 1, ACC_F16: true }, {}],
      ['FAULT_EPS_OUTSIDE', {}, { FAULT_EPS_OUTSIDE: true }],
      ['FAULT_REORDER and FAULT_EPS_SCALE', {}, { FAULT_REORDER: true, FAULT_EPS_SCALE: 1000 }],
    ] as const)("%s: the pair's bits", async (_name, consts, fault) => {
      const seed = freshSeed();
      const c = await both(seed, 19, 203, 150, 64, true, consts, fault);
      for (const k of ['b', 'r', 'y'] as const)
        expect(bits(c.fold[k]).equals(bits(c.pair[k])), `${k} bit for bit (seed ${seed})`).toBe(true);
      expect(c.fold.y.every(Number.isFinite), `finite (seed ${seed})`).toBe(true);
      // The constants reached the fold: its y is not the fp32 fold's without them (same seed, same inputs). bf16 and
      // fp16 round every stored value; eps × 1000 is 1e-2 against rows of rms ≈ 2, ~1e-3 relative on every y.
      const plain = await both(seed, 19, 203, 150, 64, true, {}, {});
      expect(bits(c.fold.y).equals(bits(plain.fold.y)), `y moved by the constants (seed ${seed})`).toBe(
        false,
      );
    });

    it('declares every override of add_rmsnorm.wgsl but ADD: a fault planted in the norm reaches the fold too', () => {
      const overrides = (file: string) =>
        [...readFileSync(join('shaders/fused', file), 'utf8').matchAll(/^override (\w+)/gm)]
          .map((m) => m[1])
          .sort();
      const norm = overrides('add_rmsnorm.wgsl').filter((n) => n !== 'ADD');
      expect(norm.length, 'the norm has overrides').toBeGreaterThan(2);
      expect(overrides('add_rmsnorm_fold.wgsl')).toEqual(norm);
    });

    it('refuses a hidden size past the workgroup memory', () => {
      const x = h.upload(new Float32Array(4));
      const part = { part: x, offset: 0, K: 8, kChunk: 4, bias: null };
      expect(() =>
        addRmsNormFold('x', { a: x, part, w: x, b: x, r: x, y: x, dummy: x }, 1, 100000, 1e-5, {
          maxWorkgroupBytes: 16384,
        }),
      ).toThrow(/supports d <=/);
    });
  });
