// Synthetic ops for the cause tests: an op of a random small shape (sizes that are no multiple of any tile), its
// recorded inputs, and an output recorded the way a kernel computing a variant in fp32 would (the variant's exact
// output with fp32-sized noise, then stored); the floor is a correct kernel's error drawn the same way. A cause's
// plants (catalog/<file>.plant.ts) are `Plant`s; `expectFound` plants one and requires the search to name it.
import { expect } from 'vitest';
import { mulberry32, randn } from '../../numeric/random';
import { roundTo } from '../../numeric/round';
import type { LinearWeights, NeoXConfig, NormWeights } from '../../numeric/types';
import { fullMetrics } from '../metrics';
import { core, evalVariant } from './exact-op';
import { explain, scorer } from './explain';
import type { OpData, OpKind, RecordedTensor, Variant } from './types';

export interface Shape {
  T: number;
  cfg: NeoXConfig;
}

export function randomShape(rng: () => number, big = false): Shape {
  const H = big ? 6 + Math.floor(rng() * 3) : 2 + Math.floor(rng() * 2); // 2..3 (big: 6..8)
  const hd = big ? [30, 34][Math.floor(rng() * 2)] : [6, 10, 12][Math.floor(rng() * 3)];
  const d = H * hd;
  const rotaryNdims = hd - 2 * Math.floor(rng() * 2); // hd or hd - 2: at least 4 rotated dims
  return {
    T: big ? 61 + Math.floor(rng() * 6) : 9 + Math.floor(rng() * 6), // 9..14 (big: 61..66)
    cfg: {
      vocabSize: 37,
      hiddenSize: d,
      numLayers: 3,
      numHeads: H,
      headDim: hd,
      intermediateSize: big ? 8 * d + 3 : 3 * d + 5,
      rotaryNdims,
      rotaryBase: 10000,
      layerNormEps: 1e-5,
      useParallelResidual: true,
      maxPositionEmbeddings: 64,
      attentionBias: true,
      tieWordEmbeddings: false,
    },
  };
}

const tensor = (data: Float32Array, shape: number[]) => ({ data, shape });

/** Inputs, weights and neighbours of an op at layer 1 of the shape. */
function inputsOf(op: OpKind, s: Shape, rng: () => number) {
  const { T, cfg } = s;
  const d = cfg.hiddenSize;
  const ff = cfg.intermediateSize;
  const lin = (N: number, K: number): LinearWeights => ({
    weight: tensor(randn(rng, N * K, 1 / Math.sqrt(K)), [N, K]),
    bias: tensor(randn(rng, N, 0.1), [N]),
  });
  const norm = (): NormWeights => ({
    weight: tensor(
      Float32Array.from(randn(rng, d, 0.1), (x) => 1 + x),
      [d],
    ),
    bias: tensor(randn(rng, d, 0.1), [d]),
  });
  const rows = (w: number) => {
    // Rows of very different sizes and offsets (a LayerNorm's eps matters in the small ones).
    const x = randn(rng, T * w);
    for (let t = 0; t < T; t++) {
      const scale = 0.05 + 3 * rng();
      const shift = rng() - 0.5;
      for (let c = 0; c < w; c++) x[t * w + c] = x[t * w + c] * scale + shift;
    }
    return x;
  };
  switch (op) {
    case 'qkv':
      return { inputs: [rows(d)], slots: ['layers.1.ln1'], weights: { linear: lin(3 * d, d) } };
    case 'dense':
      return { inputs: [rows(d)], slots: ['layers.1.ctx'], weights: { linear: lin(d, d) } };
    case 'fc1':
      return { inputs: [rows(d)], slots: ['layers.1.ln2'], weights: { linear: lin(ff, d) } };
    case 'fc2':
      return { inputs: [rows(ff)], slots: ['layers.1.gelu'], weights: { linear: lin(d, ff) } };
    case 'lm_head':
      return {
        inputs: [rows(d)],
        slots: ['final_norm'],
        weights: { lmHead: randn(rng, cfg.vocabSize * d, 0.2) },
      };
    case 'ln1':
    case 'ln2':
    case 'final_norm':
      return { inputs: [rows(d)], slots: ['layers.0.out'], weights: { norm: norm() } };
    case 'act':
      return { inputs: [randn(rng, T * ff, 1.5)], slots: ['layers.1.fc1'], weights: {} };
    case 'attention':
      return { inputs: [randn(rng, T * 3 * d)], slots: ['layers.1.qkv'], weights: {} };
    case 'residual':
      return {
        inputs: [randn(rng, T * d), randn(rng, T * d, 0.5), randn(rng, T * d, 2)],
        slots: ['layers.1.mlp_out', 'layers.1.attn_out', 'layers.0.out'],
        weights: {},
      };
    case 'embed':
    case 'layer':
      return { inputs: [], slots: [], weights: {} };
    case 'attn_block':
      return { inputs: [rows(d)], slots: ['layers.1.ln1'], weights: { linear: lin(3 * d, d) } };
    case 'mlp_up':
      return { inputs: [rows(d)], slots: ['layers.1.ln2'], weights: { linear: lin(ff, d) } };
    case 'mlp_residual':
      return {
        inputs: [randn(rng, T * ff), randn(rng, T * d, 0.5), randn(rng, T * d, 2)],
        slots: ['layers.1.gelu', 'layers.1.attn_out', 'layers.0.out'],
        weights: { linear: lin(d, ff) },
      };
  }
}

/** A correct fp32 kernel's version of `v`: each value off by about two fp32 roundings of the row's size. */
function asKernel(v: Float64Array, rng: () => number): Float32Array {
  let ss = 0;
  for (const x of v) ss += x * x;
  const sigma = 2 * 2 ** -24 * Math.sqrt(ss / Math.max(1, v.length));
  const noise = randn(rng, v.length, sigma);
  return Float32Array.from(v, (x, i) => (x === 0 ? 0 : x + noise[i]));
}

export interface Planted {
  data: OpData;
  /** The neighbours, by slot (a wrong-tensor plant reads one of them). */
  others: RecordedTensor[];
}

/**
 * An op of a random shape whose recorded output is `plant(data)`'s variant computed by an fp32 kernel (then rounded
 * to the variant's output format). `plant` may read the op's data (to pick a neighbour tensor, say).
 */
export function plantOp(
  seed: number,
  op: OpKind,
  plant: (d: OpData) => Variant,
  k = 10,
  big = false,
): OpData {
  const rng = mulberry32(seed);
  const shape = randomShape(rng, big);
  const { T, cfg } = shape;
  const tokens = Array.from({ length: T }, (_, t) => (t * 7 + seed) % cfg.vocabSize);
  const { inputs, slots, weights } = inputsOf(op, shape, rng);
  const width = {
    qkv: 3 * cfg.hiddenSize,
    fc1: cfg.intermediateSize,
    act: cfg.intermediateSize,
    mlp_up: cfg.intermediateSize,
    lm_head: cfg.vocabSize,
  }[op as string];
  const n = T * (width ?? cfg.hiddenSize);
  const others: RecordedTensor[] = ['layers.1.ln1', 'layers.1.ln2', 'layers.1.attn_out', 'layers.0.out'].map(
    (slot) => ({ slot, name: `gpt_neox.${slot}`, data: randn(rng, T * cfg.hiddenSize) }),
  );
  const d: OpData = {
    op,
    layer: op === 'lm_head' || op === 'final_norm' ? null : 1,
    cfg,
    tokens,
    inputs,
    inputSlots: slots,
    recorded: new Float32Array(n),
    exact: new Float64Array(n),
    weights,
    angles: 'exact',
    others,
    floor: fullMetrics([0], [1], 'fp32'),
    metric: 'relL2',
    k,
    precision: 'fp32',
    scale: 0,
  };
  d.exact = op === 'embed' || op === 'layer' ? Float64Array.from(randn(rng, n)) : core(d, {}, null);
  d.floor = fullMetrics(asKernel(d.exact, rng), d.exact, 'fp32');
  const v = plant(d);
  const out = asKernel(evalVariant(d, v, null), rng);
  // (an output format rounds the rows the variant applies to)
  const w = n / T;
  const rounds = (i: number) => !v.rows || (i >= v.rows.from * w && i < v.rows.to * w);
  d.recorded = v.outFormat
    ? Float32Array.from(out, (x, i) => (rounds(i) ? roundTo(v.outFormat!, x) : x))
    : out;
  return d;
}

/** A cause planted in an op: the op, the variant (which may read the op's data), and what the search must find. */
export interface Plant {
  cause: string;
  op: OpKind;
  variant: (d: OpData) => Variant;
  /** What the search must find (each param equal, or within 10 % for numbers marked approx). */
  params?: Record<string, number | string>;
  approx?: string[];
  /** A plant on some rows: the first row the search must find it on (params.rowsFrom). */
  rowsFrom?: (d: OpData) => number;
}

/**
 * Plants `p` in an op of a random shape drawn from `seed` and requires the search to name `p.cause` first, with its
 * parameters, and to say it in the verdict's words. Every failure message carries the seed the op was drawn from.
 */
export function expectFound(p: Plant, seed: number): void {
  // A draw where the planted variant happens to equal the exact op (an online softmax whose maximum never grows
  // after the first block) has nothing to find: the next draw is taken (the fault must show; that is the premise).
  let d = plantOp(seed, p.op, p.variant);
  for (let redraw = 1; redraw < 20 && !(scorer(d, null)({}) > 10 * d.k); redraw++)
    d = plantOp((seed += 1_000_003), p.op, p.variant);
  const v = explain(d);
  const msg = `seed ${seed}: ${v.words}; error ${v.error.toPrecision(3)}×; tested ${v.tested
    .slice(0, 4)
    .map((t) => `${t.id} ${t.residual.toPrecision(3)}`)
    .join(', ')}`;
  expect(v.error, msg).toBeGreaterThan(d.k);
  const found = v.named.find((c) => c.id === p.cause);
  expect(found, msg).toBeDefined();
  expect(v.named[0].id, msg).toBe(p.cause);
  const rowsFrom = p.rowsFrom?.(d);
  for (const [key, want] of Object.entries({
    ...p.params,
    ...(rowsFrom === undefined ? {} : { rowsFrom }),
  })) {
    const got = found!.params[key];
    if (p.approx?.includes(key))
      expect(Math.abs(Number(got) / Number(want) - 1), `${msg}: ${key}`).toBeLessThan(0.1);
    else expect(got, `${msg}: ${key}`).toBe(want);
  }
  expect(v.words, msg).toContain(v.named[0].words);
}
