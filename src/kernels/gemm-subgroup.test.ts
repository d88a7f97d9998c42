// The subgroup GEMM core (shaders/common/gemm_subgroup.wgsl: GemmPolicy.subgroup) against the tiled core, bit for
// bit: its contract is the tiled core's sums (k ascending within a split, the split's padding to BK) and the same
// split-K reduction and epilogue. Every epilogue (bias, no bias, GELU, both residual styles, QKV + rotary), whole
// and split-K, f32 (every run), and one a run of fp16 accumulation with bf16 storage, packed-f16 weights and the
// misaligned-tile teaching fault (the core is off by default), M, N and K multiples of no tile (K both a multiple of BK and not), and the lane layouts of this
// device's subgroup size (row phases 1 … SG, 4 or 8 rows and columns per lane, 1 to 4 subgroups per workgroup
// along each side). Fresh random inputs per run (the seed is printed on failure; KERNEL_SEED=<seed> replays,
// KERNEL_RUNS=<n> runs n fresh seeds per test); outputs poisoned with NaN and followed by a NaN guard band that
// must stay intact. Then the device self-check (gemm-subgroup-check.ts): it passes for the device's layout and
// rejects one built for another subgroup size, whose sums the core turns into NaN.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packF16 } from '../engine/gpu-model';
import type { DispatchSpec } from '../gpu/program';
import { mulberry32, randn } from '../numeric/random';
import { type GemmOpts, qkvRotaryOps } from './fused-linear';
import { GEMM_CPU, GEMM_SMALL } from './gemm';
import { type GemmPolicy, UNKNOWN_ADAPTER } from './gemm-configs';
import { epilogueCase, type GemmMode, gemmModes } from './gemm-modes.testdata';
import { type SubgroupTiles, subgroupTilesFor, subgroupTilesName } from './gemm-subgroup';
import { checkSubgroupGemm, withSubgroupCheck } from './gemm-subgroup-check';
import { rotaryTables } from './rotary';
import { createHarness, freshSeed, type Harness } from './testing';

let h: Harness;
let size = 0;
beforeAll(async () => {
  h = await createHarness();
  size = h.ctx.subgroupSize ?? 0;
});
afterAll(() => h?.destroy());

/** The seeds of one test: one fresh seed, or KERNEL_RUNS of them. */
function seeds(): number[] {
  return Array.from({ length: Number(process.env.KERNEL_RUNS ?? 1) }, () => freshSeed());
}

const TILED = UNKNOWN_ADAPTER;
const GUARD = 67;
/** Per test: the time to compile its pipelines on SwiftShader, and KERNEL_RUNS seeds. */
const TIMEOUT = 900_000;

/** The layouts tried for a subgroup size: the default (subgroupTilesFor) and others, one a seed. */
function layouts(sg: number): SubgroupTiles[] {
  const base = subgroupTilesFor(sg);
  if (!base) return [];
  return [
    base,
    { SG: sg, PM: 1, TM: 4, TN: 8, WM: 1, WN: 3 },
    { SG: sg, PM: sg, TM: 8, TN: 4, WM: 3, WN: 1 },
    { SG: sg, PM: Math.max(1, sg / 2), TM: 4, TN: 4, WM: 2, WN: 4 },
  ];
}

const MODES: GemmMode[] = gemmModes({ f32: GEMM_CPU, acc: GEMM_SMALL, f16w: GEMM_CPU, fault: GEMM_SMALL });

// (M, N, K): multiples of no layout's block; K odd (the tiled core pads it), K a multiple of 16 but past one step.
// Each whole, and split in chunks of 32 (the last one short where K is not a multiple).
const SHAPES: [number, number, number][] = [
  [37, 45, 83],
  [5, 70, 48],
  [19, 29, 101],
];
const SPLITS = [undefined, 32] as const;

const bits = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);
const NAN_BITS = bits(new Float32Array([Number.NaN]))[0];

/** Runs `make` under the tiled core and the subgroup core; every output's bits must agree (and be finite). */
async function sameBits(
  seed: number,
  what: string,
  sizes: number[],
  sub: GemmPolicy,
  make: (outs: GPUBuffer[], opts: GemmOpts) => DispatchSpec[],
  opts: GemmOpts,
) {
  const tiled = sizes.map((n) => h.poisoned(n + GUARD));
  const mine = sizes.map((n) => h.poisoned(n + GUARD));
  const tiledSpecs = make(tiled, { ...opts, policy: TILED });
  const mineSpecs = make(mine, { ...opts, policy: sub });
  const cores = mineSpecs.filter((s) => !s.kernel.name.endsWith('.reduce'));
  expect(
    cores.every((s) => s.kernel.name.includes('.subgroup')),
    what,
  ).toBe(true);
  await h.run([...tiledSpecs, ...mineSpecs]);
  for (const [i, n] of sizes.entries()) {
    const a = bits(await h.read(tiled[i], n + GUARD));
    const b = bits(await h.read(mine[i], n + GUARD));
    const bad = a.subarray(0, n).findIndex((u) => (u & 0x7f800000) === 0x7f800000);
    expect(bad, `seed ${seed}: ${what} output ${i}: the tiled core left a non-finite at ${bad}`).toBe(-1);
    const j = b.findIndex((u, k) => u !== a[k]);
    expect(j, `seed ${seed}: ${what} output ${i}: the subgroup core differs at ${j} of ${n}`).toBe(-1);
    const g = b.subarray(n).findIndex((u) => u !== NAN_BITS);
    expect(g, `seed ${seed}: ${what} output ${i}: the subgroup core wrote past the end, at ${n + g}`).toBe(
      -1,
    );
  }
}

describe('the subgroup core gives the tiled core’s bits', () => {
  it('runs on this device (subgroups of a fixed size, a layout for it)', () => {
    expect(h.ctx.features.subgroups).toBe(true);
    expect(subgroupTilesFor(size)).not.toBeNull();
  });

  // f32 on every shape with the default layout; of the other three modes one a seed, on one shape, with one layout
  // (all of them over runs: this core is off by default, and CI's time goes to the cores that ship).
  // The f32 case whole and split-K apart: a test each compiles its own pipelines (on a busy 2-core machine the two
  // together took minutes).
  it.each([
    ['f32, every shape, whole', true, [undefined]],
    ['f32, every shape, split-K', true, SPLITS.filter((k) => k !== undefined)],
    ['fp16 accumulation + bf16 storage, packed f16 weights or FAULT_TILE_OFFSET (one a seed)', false, SPLITS],
  ] as const)(
    'linear epilogues, %s',
    async (_name, all, splits) => {
      for (const seed of seeds()) {
        const all4 = layouts(size);
        const mode = all ? MODES[0] : MODES[1 + (seed % 3)];
        const layout = all ? all4[0] : all4[seed % all4.length];
        const shapes = all ? SHAPES : [SHAPES[seed % SHAPES.length]];
        await linearEpilogues(seed, mode, layout, shapes, all, splits);
      }
    },
    TIMEOUT,
  );

  async function linearEpilogues(
    seed: number,
    mode: GemmMode,
    layout: SubgroupTiles,
    shapes: [number, number, number][],
    all: boolean,
    splits: readonly (number | undefined)[],
  ) {
    const rng = mulberry32(seed);
    const sub = { ...TILED, subgroup: layout };
    for (const [M, N, K] of shapes) {
      for (const kChunk of splits) {
        const c = epilogueCase(h, rng, mode, [M, N, K], kChunk, all, packF16);
        const what = `${mode.name} ${M}×${N}×${K} BK ${mode.tiles.BK}, ${subgroupTilesName(layout)}, ${kChunk ? `K per split ${kChunk}` : 'whole'}`;
        await sameBits(seed, what, c.sizes, sub, c.ops, c.opts);
      }
    }
  }

  // (T, H, hd, r, K per split): an odd head dim (a padding column per segment), a partial rotary; whole and split.
  it.each([
    [7, 3, 15, 6, undefined],
    [13, 2, 40, 10, 32],
  ] as const)(
    'QKV + rotary T=%i H=%i hd=%i r=%i, K per split %s',
    async (T, H, hd, r, kChunk) => {
      for (const seed of seeds()) await qkv(seed, T, H, hd, r, kChunk);
    },
    TIMEOUT,
  );

  async function qkv(seed: number, T: number, H: number, hd: number, r: number, kChunk?: number) {
    const rng = mulberry32(seed);
    const d = H * hd;
    const { cos, sin } = rotaryTables(T, r, 10000);
    const all4 = layouts(size);
    const layout = all4[seed % all4.length];
    const mode = MODES[seed % 2];
    const wf = randn(rng, 3 * d * d, 1 / Math.sqrt(d));
    const io = {
      x: h.upload(randn(rng, T * d)),
      w: h.upload(wf),
      b: h.upload(randn(rng, 3 * d, 0.1)),
      cos: h.upload(cos),
      sin: h.upload(sin),
      dummy: h.upload(new Float32Array(4)),
    };
    const opts: GemmOpts = {
      constants: { ...mode.tiles, ...mode.constants },
      ...(kChunk !== undefined ? { kChunk, workspace: (n: number) => h.poisoned(n) } : {}),
    };
    const n = H * T * hd;
    await sameBits(
      seed,
      `qkv ${mode.name}, ${subgroupTilesName(layout)}`,
      [n, n, n],
      { ...TILED, subgroup: layout },
      ([q, k, v], o) => qkvRotaryOps('qkv', { ...io, q, k, v }, T, H, hd, r, o),
      opts,
    );
  }
});

describe('the device self-check', () => {
  it(
    'passes for the layout of this device’s subgroup size, and the policy then runs the subgroup core',
    async () => {
      const layout = subgroupTilesFor(size)!;
      const check = await checkSubgroupGemm(h.device, h.pipelines, layout);
      expect(check, check.reason).toMatchObject({ ok: true });
      const policy = withSubgroupCheck({ ...TILED, subgroup: layout }, check);
      expect(policy.subgroup).toEqual(layout);
    },
    TIMEOUT,
  );

  it(
    'rejects a layout built for another subgroup size (its sums are NaN), and the policy keeps the tiled core',
    async () => {
      const other = subgroupTilesFor(size === 8 ? 16 : 8)!;
      const check = await checkSubgroupGemm(h.device, h.pipelines, other);
      expect(check.ok).toBe(false);
      expect(check.reason).toMatch(/differ/);
      const policy = withSubgroupCheck({ ...TILED, subgroup: other }, check);
      expect(policy.subgroup).toBeUndefined();
    },
    TIMEOUT,
  );
});
