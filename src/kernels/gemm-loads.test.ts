// The GEMM core's two global-load files (common/gemm_load_scalar.wgsl, common/gemm_load_vec4.wgsl) stage the
// same values, so every output has the same bits whichever the launcher takes: checked bitwise on fresh
// random inputs (KERNEL_SEED=<seed> replays), NaN-poisoned outputs and workspace, sizes that are multiples of
// no tile, tile configurations where the vec4 loads of an operand fill every thread, several per thread, or
// fewer vec4s than threads; unsplit and split-K, f32 and packed-f16 W, and the qkv_rotary row permutation.
// The vec4 result is also checked against the fp64 oracle (linearTol), so two equally wrong paths fail too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packF16 } from '../engine/gpu-model';
import { mulberry32, randn } from '../model/random';
import { linearF64 } from './cpu/linear';
import { linearTol } from './custom/tolerances';
import { type GemmOpts, linearBiasOps, qkvRotary, vec4LoadsProblem } from './fused-linear';
import { GEMM_CPU, GEMM_SMALL, type GemmTiles, tilesName } from './gemm';
import { rotaryTables } from './rotary';
import { compare, createHarness, freshSeed, type Harness } from './testing';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());

/** 32, 128 and 256 threads; W of the last is 128 vec4s per K step for 256 threads (half of them load none). */
const TILES: GemmTiles[] = [GEMM_CPU, GEMM_SMALL, { BM: 128, BN: 64, BK: 8, TM: 8, TN: 4, GEMM_BUFS: 1 }];

const bits = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);

function expectSameBits(what: string, got: Float32Array, want: Float32Array, seed: number) {
  const bad = got.findIndex((v, i) => bits(got)[i] !== bits(want)[i] || !Number.isFinite(v));
  expect(bad, `${what} (seed ${seed}): element ${bad}: vec4 ${got[bad]} vs scalar ${want[bad]}`).toBe(-1);
}

describe('vec4 global loads of the GEMM core', () => {
  it('give the bits of the scalar loads: tiles, split-K, f16 W (and agree with the fp64 oracle)', async () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const dummy = h.upload(new Float32Array(4));
    const run = async (
      M: number,
      N: number,
      K: number,
      x: GPUBuffer,
      w: GPUBuffer,
      b: GPUBuffer,
      opts: GemmOpts,
    ) => {
      const y = h.poisoned(M * N);
      const specs = linearBiasOps('lin', { x, w, b, y, dummy }, M, N, K, opts);
      const vec4 = specs.some((s) => s.kernel.name.endsWith('.vec4'));
      expect(vec4, `${opts.loads} loads: kernels ${specs.map((s) => s.kernel.name)}`).toBe(
        opts.loads === 'vec4',
      );
      await h.run(specs);
      return h.read(y, M * N);
    };
    // f32 W, K % 4 == 0 but not a multiple of any BK; f16 W needs K % 8 == 0.
    for (const [K, f16] of [
      [44, false],
      [56, true],
    ] as const) {
      const [M, N] = [37, 75];
      const x = randn(rng, M * K);
      let w = randn(rng, N * K, 1 / Math.sqrt(K));
      if (f16) w = w.map((v) => Math.fround(Math.round(v * 1024) / 1024)); // exact in f16
      const bias = randn(rng, N, 0.5);
      const z = linearF64(x, M, K, w, bias, N);
      const absZ = linearF64(x.map(Math.abs), M, K, w.map(Math.abs), bias.map(Math.abs), N);
      const [xb, wb, bb] = [h.upload(x), h.upload(f16 ? packF16(w) : w), h.upload(bias)];
      const workspace = (floats: number) => h.poisoned(floats);
      // Every tile configuration unsplit, one split-K; one configuration for f16 W (pipelines are slow to make
      // on SwiftShader).
      const runs = f16
        ? [{ t: GEMM_CPU, kChunk: K }]
        : [...TILES.map((t) => ({ t, kChunk: K })), { t: GEMM_SMALL, kChunk: 16 }];
      for (const { t, kChunk } of runs) {
        const base: GemmOpts = { constants: { ...t, W_F16: f16 }, workspace, kChunk };
        const what = `${tilesName(t)} K ${K} per split ${kChunk}${f16 ? ' f16 W' : ''}`;
        const scalar = await run(M, N, K, xb, wb, bb, { ...base, loads: 'scalar' });
        const vec4 = await run(M, N, K, xb, wb, bb, { ...base, loads: 'vec4' });
        expectSameBits(what, vec4, scalar, seed);
        const r = compare(what, vec4, z, linearTol(K, absZ), seed);
        expect(r.ok, r.report).toBe(true);
      }
    }
  });

  it('give the bits of the scalar loads through the qkv_rotary row permutation', async () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const [T, H, hd, r] = [19, 4, 9, 6]; // d = 36; odd hd: a padding column per segment (GEMM_NONE rows)
    const d = H * hd;
    const x = h.upload(randn(rng, T * d));
    const w = h.upload(randn(rng, 3 * d * d, 1 / Math.sqrt(d)));
    const b = h.upload(randn(rng, 3 * d, 0.5));
    const { cos, sin } = rotaryTables(T, r, 10000);
    const tables = { cos: h.upload(cos), sin: h.upload(sin) };
    const dummy = h.upload(new Float32Array(4));
    const n = H * T * hd;
    const out: Record<string, Float32Array[]> = { q: [], k: [], v: [] };
    for (const loads of ['scalar', 'vec4'] as const) {
      const [q, k, v] = [h.poisoned(n), h.poisoned(n), h.poisoned(n)];
      const spec = qkvRotary('qkv', { x, w, b, ...tables, q, k, v, dummy }, T, H, hd, r, {
        constants: { ...GEMM_SMALL },
        loads,
      });
      expect(spec.kernel.name.endsWith('.vec4')).toBe(loads === 'vec4');
      await h.run([spec]);
      for (const [name, buf] of Object.entries({ q, k, v })) out[name].push(await h.read(buf, n));
    }
    for (const name of ['q', 'k', 'v']) expectSameBits(`qkv ${name}`, out[name][1], out[name][0], seed);
  });

  it('are taken on request where they can serve, and refused with the reason elsewhere', () => {
    const w = { buffer: {} as GPUBuffer, offset: 256 };
    expect(vec4LoadsProblem(44, {}, w)).toBeNull();
    expect(vec4LoadsProblem(44, { W_F16: 1 }, w)).toMatch(/multiple of 8/);
    expect(vec4LoadsProblem(56, { W_F16: 1 }, w)).toBeNull();
    expect(vec4LoadsProblem(45, {}, w)).toMatch(/K = 45/);
    expect(vec4LoadsProblem(44, { FAULT_TILE_OFFSET: 1 }, w)).toMatch(/FAULT_TILE_OFFSET/);
    expect(vec4LoadsProblem(44, {}, { ...w, offset: 8 })).toMatch(/offset 8/);
    const buf = {
      x: {} as GPUBuffer,
      w: {} as GPUBuffer,
      b: null,
      y: {} as GPUBuffer,
      dummy: {} as GPUBuffer,
    };
    const kernel = (K: number, opts: GemmOpts = {}) => linearBiasOps('l', buf, 5, 9, K, opts)[0].kernel.name;
    expect(kernel(44)).toBe('fused/linear_bias');
    expect(kernel(44, { loads: 'auto' })).toBe('fused/linear_bias.vec4');
    expect(kernel(45, { loads: 'auto' })).toBe('fused/linear_bias');
    expect(() => kernel(45, { loads: 'vec4' })).toThrow(/vec4 loads asked for, but K = 45/);
  });
});
