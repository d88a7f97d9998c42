// Fused LayerNorms vs the UNFUSED fp64 oracles run in sequence (addF64 → layerNormF64), fresh random inputs,
// NaN-poisoned outputs, d not a multiple of the workgroup (90, 300, 515), T in {1, 24, 129}.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicMetrics } from '../compare/metrics';
import { roundStorage, storageUnitRoundoff } from '../numeric/precision';
import { mulberry32, randn } from '../numeric/random';
import { layerNormF64 } from './cpu/layernorm';
import { addF64 } from './cpu/residual';
import { layerNormTol } from './custom/tolerances';
import { addLayerNorm, FUSED_NORM_MAX_D, fusedNormMaxD, layerNorm2 } from './fused-norm';
import { precisionConstants } from './precision';
import { compare, createHarness, freshSeed, type Harness } from './testing';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());

/** LayerNorm error bound at eps 1e-5 (derived at layerNormTol). */
function lnTol(x: ArrayLike<number>, T: number, d: number, w: ArrayLike<number>, ref: ArrayLike<number>) {
  return layerNormTol(x, T, d, w, ref, 1e-5);
}

function inputs(seed: number, T: number, d: number) {
  const rng = mulberry32(seed);
  return {
    x: randn(rng, T * d, 2).map((v) => v + 3),
    y: randn(rng, T * d),
    w1: randn(rng, d).map((v) => 1 + 0.2 * v),
    b1: randn(rng, d, 0.2),
    w2: randn(rng, d).map((v) => 1 + 0.2 * v),
    b2: randn(rng, d, 0.2),
  };
}

describe('fused LayerNorm kernels vs unfused fp64 oracles', () => {
  it.each([
    [1, 90],
    [24, 300],
    [129, 515],
  ])('dual LayerNorm T=%i d=%i', async (T, d) => {
    const seed = freshSeed();
    const v = inputs(seed, T, d);
    const y1 = h.poisoned(T * d);
    const y2 = h.poisoned(T * d);
    const x = h.upload(v.x);
    await h.run([
      layerNorm2(
        'ln',
        { x, w1: h.upload(v.w1), b1: h.upload(v.b1), y1, dummy: h.upload(new Float32Array(4)) },
        { w2: h.upload(v.w2), b2: h.upload(v.b2), y2 },
        T,
        d,
        1e-5,
      ),
    ]);
    const ref1 = layerNormF64(v.x, T, d, v.w1, v.b1, 1e-5);
    const ref2 = layerNormF64(v.x, T, d, v.w2, v.b2, 1e-5);
    for (const [what, got, ref, w] of [
      ['ln1', y1, ref1, v.w1],
      ['ln2', y2, ref2, v.w2],
    ] as const) {
      const r = compare(what, await h.read(got, T * d), ref, lnTol(v.x, T, d, w, ref), seed);
      expect(r.ok, r.report).toBe(true);
    }
  });

  it('rows wider than 16 KiB of workgroup memory (Pythia-6.9b, d 4096) where the device offers more', async () => {
    const bytes = h.ctx.device.limits.maxComputeWorkgroupStorageSize;
    const d = 4103; // past the 3840 of 16 KiB, not a multiple of the workgroup
    expect(() => layerNorm2('ln', {} as never, null, 2, d, 1e-5)).toThrow(
      `supports d <= ${FUSED_NORM_MAX_D}`,
    );
    // An adapter with 16 KiB refuses it before anything runs; this one (SwiftShader: 32 KiB) takes it.
    expect(fusedNormMaxD(bytes)).toBeGreaterThanOrEqual(d);
    const seed = freshSeed();
    const T = 3;
    const v = inputs(seed, T, d);
    const y1 = h.poisoned(T * d);
    const r = h.poisoned(T * d);
    const y = h.poisoned(T * d);
    await h.run([
      layerNorm2(
        'ln',
        {
          x: h.upload(v.x),
          w1: h.upload(v.w1),
          b1: h.upload(v.b1),
          y1,
          dummy: h.upload(new Float32Array(4)),
        },
        null,
        T,
        d,
        1e-5,
        { maxWorkgroupBytes: bytes },
      ),
      addLayerNorm(
        'add_ln',
        { a: h.upload(v.x), b: h.upload(v.y), w: h.upload(v.w1), bias: h.upload(v.b1), r, y },
        T,
        d,
        1e-5,
        { maxWorkgroupBytes: bytes },
      ),
    ]);
    const ref1 = layerNormF64(v.x, T, d, v.w1, v.b1, 1e-5);
    const c1 = compare('ln1', await h.read(y1, T * d), ref1, lnTol(v.x, T, d, v.w1, ref1), seed);
    expect(c1.ok, c1.report).toBe(true);
    const sum = addF64(v.y, v.x);
    const ref2 = layerNormF64(sum, T, d, v.w1, v.b1, 1e-5);
    const c2 = compare('add_ln', await h.read(y, T * d), ref2, lnTol(sum, T, d, v.w1, ref2), seed);
    expect(c2.ok, c2.report).toBe(true);
  });

  it('single LayerNorm (DUAL off) writes only y1', async () => {
    const seed = freshSeed();
    const [T, d] = [24, 90];
    const v = inputs(seed, T, d);
    const y1 = h.poisoned(T * d);
    await h.run([
      layerNorm2(
        'ln',
        {
          x: h.upload(v.x),
          w1: h.upload(v.w1),
          b1: h.upload(v.b1),
          y1,
          dummy: h.upload(new Float32Array(4)),
        },
        null,
        T,
        d,
        1e-5,
      ),
    ]);
    const ref = layerNormF64(v.x, T, d, v.w1, v.b1, 1e-5);
    const r = compare('ln', await h.read(y1, T * d), ref, lnTol(v.x, T, d, v.w1, ref), seed);
    expect(r.ok, r.report).toBe(true);
  });

  it.each([
    [1, 90],
    [24, 300],
    [129, 515],
  ])('residual add + LayerNorm T=%i d=%i', async (T, d) => {
    const seed = freshSeed();
    const v = inputs(seed, T, d);
    const r = h.poisoned(T * d);
    const y = h.poisoned(T * d);
    await h.run([
      addLayerNorm(
        'addln',
        { a: h.upload(v.x), b: h.upload(v.y), w: h.upload(v.w1), bias: h.upload(v.b1), r, y },
        T,
        d,
        1e-5,
      ),
    ]);
    // The residual is the same single f32 rounding as HF's `attn_output + hidden_states`: exact.
    const rRef = Float64Array.from(v.x, (a, i) => Math.fround(v.y[i] + a));
    const rc = compare('resid', await h.read(r, T * d), rRef, 0, seed);
    expect(rc.ok, rc.report).toBe(true);
    const sum = addF64(v.x, v.y);
    const ref = layerNormF64(sum, T, d, v.w1, v.b1, 1e-5);
    // The f32 residual rounding (≤ u·|x + y|) adds to the LayerNorm bound.
    const yc = compare('ln', await h.read(y, T * d), ref, lnTol(sum, T, d, v.w1, ref), seed);
    expect(yc.ok, yc.report).toBe(true);
  });

  it('fp16 and bf16 storage: outputs equal the oracle rounded to the storage precision within one ulp', async () => {
    const seed = freshSeed();
    const [T, d] = [24, 300];
    const v = inputs(seed, T, d);
    for (const p of ['fp16', 'bf16'] as const) {
      const y1 = h.poisoned(T * d);
      await h.run([
        layerNorm2(
          'ln',
          {
            x: h.upload(v.x),
            w1: h.upload(v.w1),
            b1: h.upload(v.b1),
            y1,
            dummy: h.upload(new Float32Array(4)),
          },
          null,
          T,
          d,
          1e-5,
          {
            constants: precisionConstants(p),
          },
        ),
      ]);
      const got = await h.read(y1, T * d);
      const ref = layerNormF64(v.x, T, d, v.w1, v.b1, 1e-5);
      for (let i = 0; i < got.length; i++)
        expect(roundStorage(p, got[i]), `${p} ${i} not representable`).toBe(got[i]);
      const r = compare(p, got, ref, (i) => 2 * storageUnitRoundoff(p) * Math.abs(ref[i]) + 1e-6, seed);
      expect(r.ok, r.report).toBe(true);
    }
  });

  it('fault switches: wrong epsilon is visible, reordered sums stay at fp32 noise', async () => {
    const seed = freshSeed();
    const [T, d] = [24, 515];
    const v = inputs(seed, T, d);
    const ref = layerNormF64(v.x, T, d, v.w1, v.b1, 1e-5);
    const run = async (constants: Record<string, number | boolean>) => {
      const y1 = h.poisoned(T * d);
      await h.run([
        layerNorm2(
          'ln',
          {
            x: h.upload(v.x),
            w1: h.upload(v.w1),
            b1: h.upload(v.b1),
            y1,
            dummy: h.upload(new Float32Array(4)),
          },
          null,
          T,
          d,
          1e-5,
          { constants },
        ),
      ]);
      return h.read(y1, T * d);
    };
    const clean = basicMetrics(await run({}), ref).relL2;
    const eps = basicMetrics(await run({ FAULT_EPS_SCALE: 1e4 }), ref).relL2;
    const reordered = await run({ FAULT_REORDER: true });
    expect(eps, `seed ${seed}`).toBeGreaterThan(1e-3);
    expect(basicMetrics(reordered, ref).relL2, `seed ${seed}`).toBeLessThan(1e-6);
    expect(clean, `seed ${seed}`).toBeLessThan(1e-6);
  });
});
