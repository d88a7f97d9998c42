// The few-row GEMM core (shaders/common/gemm_gemv.wgsl: decode steps on GPUs, GemmPolicy.gemvRows) against the
// tiled core, bit for bit: its contract is the tiled core's sums (k ascending within a split, the split's
// padding to BK) and, when split, the split-K reduction's (partials from +0 in split order through acc()), then
// the same epilogue. Every epilogue (bias, no bias, GELU, both residual styles, QKV + rotary), 1 to 4 rows,
// whole and split-K (one to nine splits, the last one short), f32, fp16 accumulation with bf16 storage,
// packed-f16 weights and the misaligned-tile teaching fault, N and K odd and multiples of no tile, and each
// column count per workgroup (8 … 64). Fresh random inputs per run (the seed is printed on failure;
// KERNEL_SEED=<seed> replays, KERNEL_RUNS=<n> runs n fresh seeds per test); outputs poisoned with NaN and followed by a NaN guard band that must stay intact.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packF16 } from '../engine/gpu-model';
import type { DispatchSpec } from '../gpu/program';
import { mulberry32, randn } from '../numeric/random';
import { gemvFor, gemvShape } from './fused-gemv';
import { type GemmOpts, qkvRotaryOps } from './fused-linear';
import { GEMM_CPU, GEMM_DECODE, GEMM_SMALL } from './gemm';
import { gemmPolicyFor, UNKNOWN_ADAPTER } from './gemm-configs';
import { epilogueCase, type GemmMode, gemmModes } from './gemm-modes.testdata';
import { rotaryTables } from './rotary';
import { createHarness, freshSeed, type Harness } from './testing';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());

/** The seeds of one test: one fresh seed, or KERNEL_RUNS of them (pipelines compile once, so many are cheap). */
function seeds(): number[] {
  return Array.from({ length: Number(process.env.KERNEL_RUNS ?? 1) }, () => freshSeed());
}

const TILED = UNKNOWN_ADAPTER;
const GEMV = { ...UNKNOWN_ADAPTER, gemvRows: 4 };
const GUARD = 67;

const MODES: GemmMode[] = gemmModes({ f32: GEMM_DECODE, acc: GEMM_SMALL, f16w: GEMM_CPU, fault: GEMM_CPU });

// (M, N, K): one row and 2 to 4 rows; K below one BK step, K odd; N past one workgroup's 8 columns. Each whole,
// and split in chunks of 64 (K 515 and 531: nine splits, the last 3 and 19 deep; K 13: one). (SwiftShader takes
// seconds to compile a pipeline: the shapes share theirs.)
const SHAPES: [number, number, number][] = [
  [1, 67, 515],
  [4, 45, 13],
  [3, 90, 531],
];
const SPLITS = [undefined, 64] as const;
// N wide enough for 16, 32 and 64 columns per workgroup (whole, f32, bias and residual epilogues).
const WIDE: [number, number, number][] = [
  [2, 4300, 41],
  [1, 8500, 24],
  [4, 17003, 37],
];
/** Per test: the time to compile its pipelines on SwiftShader, and KERNEL_RUNS seeds. */
const TIMEOUT = 900_000;

const bits = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);
const NAN_BITS = bits(new Float32Array([Number.NaN]))[0];

/** Runs `make` under the tiled core and the GEMV; every output's bits must agree (and be finite). */
async function sameBits(
  seed: number,
  what: string,
  sizes: number[],
  make: (outs: GPUBuffer[], opts: GemmOpts) => DispatchSpec[],
  opts: GemmOpts,
  partial = false, // outputs past the first are partly written by both (cache rows): no finiteness check
) {
  const tiled = sizes.map((n) => h.poisoned(n + GUARD));
  const gemv = sizes.map((n) => h.poisoned(n + GUARD));
  const tiledSpecs = make(tiled, { ...opts, policy: TILED });
  const gemvSpecs = make(gemv, { ...opts, policy: GEMV });
  expect(
    gemvSpecs.every((s) => s.kernel.name.endsWith('.gemv')),
    what,
  ).toBe(true);
  expect(
    tiledSpecs.some((s) => s.kernel.name.endsWith('.gemv')),
    what,
  ).toBe(false);
  await h.run([...tiledSpecs, ...gemvSpecs]);
  for (const [i, n] of sizes.entries()) {
    const a = bits(await h.read(tiled[i], n + GUARD));
    const b = bits(await h.read(gemv[i], n + GUARD));
    const bad = a.subarray(0, i > 0 && partial ? 0 : n).findIndex((u) => (u & 0x7f800000) === 0x7f800000);
    expect(bad, `seed ${seed}: ${what} output ${i}: the tiled core left a non-finite at ${bad}`).toBe(-1);
    const j = b.findIndex((u, k) => u !== a[k]);
    expect(j, `seed ${seed}: ${what} output ${i}: the GEMV differs at ${j} of ${n}`).toBe(-1);
    const g = b.subarray(n).findIndex((u) => u !== NAN_BITS);
    expect(g, `seed ${seed}: ${what} output ${i}: the GEMV wrote past the end, at ${n + g}`).toBe(-1);
  }
}

describe('the GEMV core gives the tiled core’s bits', () => {
  it('picks workgroups of 8 to 64 columns within 16 KiB, for up to 16 splits', () => {
    expect([67, 4300, 8500, 17003, 50304].map((N) => gemvShape(N, 1)?.NC)).toEqual([8, 16, 32, 64, 64]);
    for (const splits of [1, 2, 5, 9, 16]) expect(gemvShape(2048, splits), `${splits}`).not.toBeNull();
  });

  it('runs where the policy says: at most gemvRows rows (a decode step), never on CPU adapters', () => {
    const hopper = gemmPolicyFor({
      vendor: 'nvidia',
      architecture: 'hopper',
      device: 'h100',
      description: '',
    });
    // Hopper's policy leaves it off (the tiled core under its K cap is as fast: gemm-configs.ts); turned on, it
    // takes launches of up to gemvRows rows.
    expect(gemvFor(1, 50304, 1, hopper)).toBeNull();
    const on = { ...hopper, gemvRows: 4 };
    expect(gemvFor(1, 50304, 1, on)).not.toBeNull();
    expect(gemvFor(4, 50304, 1, on)).not.toBeNull();
    expect(gemvFor(5, 50304, 1, on)).toBeNull();
    expect(gemvFor(1, 8192, 3, on)).not.toBeNull();
    expect(gemvFor(1, 8192, 1, GEMV)).not.toBeNull();
    expect(gemvFor(1, 50304, 1, UNKNOWN_ADAPTER)).toBeNull();
    const cpu = gemmPolicyFor({ vendor: 'google', architecture: 'swiftshader', device: '', description: '' });
    expect(gemvFor(1, 50304, 1, cpu)).toBeNull();
  });

  // Every epilogue in f32, on every shape; whole and split-K apart (a test each: the shapes share their pipelines,
  // whole and split do not, and compiling both in one test took minutes on a busy 2-core machine).
  it.each(SPLITS.map((k) => [k ? `K per split ${k}` : 'whole', k] as const))(
    'linear epilogues, f32, %s',
    async (_name, kChunk) => {
      for (const seed of seeds()) await linearEpilogues(seed, MODES[0], SHAPES, [kChunk], true);
    },
    TIMEOUT,
  );

  // The precision modes with bias (and without) and the parallel residual, on one shape a seed (each seed draws
  // another: all of them over runs; SwiftShader compiles a pipeline per shape and epilogue, the suite's largest cost).
  it.each(MODES.slice(1).map((m) => [m.name, m] as const))(
    'linear epilogues, %s',
    async (_name, mode) => {
      for (const seed of seeds())
        await linearEpilogues(seed, mode, [SHAPES[seed % SHAPES.length]], SPLITS, false);
    },
    TIMEOUT,
  );

  it(
    'linear epilogues, 16 to 64 columns per workgroup',
    async () => {
      // one width a seed (16, 32 or 64 columns per workgroup; all of them over runs)
      for (const seed of seeds())
        await linearEpilogues(seed, MODES[0], [WIDE[seed % WIDE.length]], [undefined], false);
    },
    TIMEOUT,
  );

  async function linearEpilogues(
    seed: number,
    mode: GemmMode,
    shapes: [number, number, number][],
    splits: readonly (number | undefined)[],
    all: boolean,
  ) {
    const rng = mulberry32(seed);
    for (const [M, N, K] of shapes) {
      for (const kChunk of splits) {
        const c = epilogueCase(h, rng, mode, [M, N, K], kChunk, all, packF16);
        const what = `${M}×${N}×${K} BK ${mode.tiles.BK}, ${kChunk ? `K per split ${kChunk}` : 'whole'}`;
        await sameBits(seed, what, c.sizes, c.ops, c.opts);
      }
    }
  }

  // (T, H, hd, r, K per split, p0): an odd head dim (a padding column per segment), a wide head; whole and
  // split; decode rows at a position past the prompt. Whole: every precision mode; split: f32 and fp16
  // accumulation. A test per case and mode (each compiles its own pipelines).
  const QKV_CASES = [
    [1, 3, 15, 6, undefined, 0],
    [3, 2, 40, 10, 32, 5],
    [1, 4, 24, 24, 32, 9],
  ] as const;
  it.each(
    QKV_CASES.flatMap((c) =>
      (c[4] === undefined ? MODES : MODES.slice(0, 2)).map((m) => [...c, m.name, m] as const),
    ),
  )(
    'QKV + rotary T=%i H=%i hd=%i r=%i, K per split %s, p0 %i, %s',
    async (T, H, hd, r, kChunk, p0, _name, mode) => {
      for (const seed of seeds()) await qkv(seed, mode, T, H, hd, r, kChunk, p0);
    },
    TIMEOUT,
  );

  async function qkv(
    seed: number,
    mode: GemmMode,
    T: number,
    H: number,
    hd: number,
    r: number,
    kChunk?: number,
    p0 = 0,
  ) {
    const rng = mulberry32(seed);
    const d = H * hd;
    const rows = p0 + T;
    const { cos, sin } = rotaryTables(rows, r, 10000);
    const wf = randn(rng, 3 * d * d, 1 / Math.sqrt(d));
    const io = {
      x: h.upload(randn(rng, T * d)),
      w: h.upload(mode.f16w ? packF16(wf) : wf),
      b: h.upload(randn(rng, 3 * d, 0.1)),
      cos: h.upload(cos),
      sin: h.upload(sin),
      dummy: h.upload(new Float32Array(4)),
    };
    const opts: GemmOpts = {
      constants: { ...mode.tiles, ...mode.constants },
      ...(kChunk !== undefined ? { kChunk, workspace: (n: number) => h.poisoned(n) } : {}),
    };
    const nq = H * T * hd;
    const nkv = H * rows * hd;
    await sameBits(
      seed,
      `qkv ${mode.name}`,
      [nq, nkv, nkv],
      ([q, k, v], o) => qkvRotaryOps('qkv', { ...io, q, k, v }, T, H, hd, r, o, { p0, rows }),
      opts,
      p0 > 0, // k and v: the cache rows before p0 are neither kernel's (checked through the bits only)
    );
  }
});
