// The attention core (`attention`: softmax(q·kᵀ/√hd, causal) · v per query head, within the sliding window where the
// config sets one; HF's scaled-dot-product attention): every form the registry holds of it, from this one file. Its
// grouped-query parameter is the config's KV heads: query head h reads KV head h / (H / KV) (GQA; MQA at one KV head,
// every head its own in GPT-NeoX). The single-op oracles are kernels/cpu/attention.ts (with the causes' variants:
// ScoresVariant, the KV heads among them), the launchers kernels/attention.ts (WGSL reference: scores, causal softmax,
// values). Its double-float launchers are here (dfGqaAttention: shaders/oracle/gqa_scores, gqa_softmax, gqa_values,
// with the query offset q0). GPT-NeoX's reference plan runs its own launchers on the layer's context
// (engine/plan-ops.ts). Its fused kernel, the flash attention (kernels/flash-attention.ts, both families' switch
// `flash_attention`), is registered here for the Llama family.

import type { OverrideConstants } from '../../gpu/pipelines';
import type { DispatchSpec } from '../../gpu/program';
import type { CausesForm, CauseVariant, Fp64Args, Fp64Form } from '../../ops/types';
import { attnScores, attnShapeConstants, attnValues, softmaxCausal } from '../attention';
import {
  attentionScoresF64,
  attentionValuesF64,
  type ScoresVariant,
  softmaxCausalF64,
} from '../cpu/attention';
import { ropeHeadsF64 } from '../cpu/rotary';
import { dispatch1d, dispatchOf, kernelOf } from '../define';
import { flashAttention } from '../flash-attention';
import { type KernelOpts, rowGroups } from '../grid';
import { DF_INCLUDES, DF_MATH_INCLUDES, dfParam } from '../oracle/df-common';
import { type DfForm, dfRows } from '../oracle/df-form';
import { ropeHeads } from '../rope';
import { fp64Llama, fp64One, type OpModule, type WgslForm, wgslOpts } from './forms';
import { dfRopeHeads } from './rotary';

export const dfGqaScoresKernel = kernelOf('oracle/gqa_scores', DF_INCLUDES, {
  q: 'read', // [H, T, hd] df
  k: 'read', // [KV, T, hd] df
  s: 'rw', // [H, T, T] df
});

export const dfGqaSoftmaxKernel = kernelOf('oracle/gqa_softmax', DF_MATH_INCLUDES, {
  s: 'read', // [H, T, T] df
  p: 'rw', // [H, T, T] df
});

export const dfGqaValuesKernel = kernelOf('oracle/gqa_values', DF_INCLUDES, {
  p: 'read', // [H, T, T] df
  v: 'read', // [KV, T, hd] df
  ctx: 'rw', // [T, H·hd] df
});

const WG = 256;
const ROW_WG = 64;

/**
 * The attention core's shape: H query heads over KV key/value heads (GPT-NeoX: KV = H), T keys, the sliding window
 * (null: none), and the first query row q0 (default 0: the query rows are q0..T−1).
 */
export interface GqaShape {
  H: number;
  KV: number;
  T: number;
  hd: number;
  window: number | null;
  q0?: number;
  /** Where q, k and v start in their buffers, in elements (default 0; GPT-NeoX's packed q, k, v: 0, n, 2n). */
  offsets?: { q: number; k: number; v: number };
}

function checkShape(label: string, s: GqaShape): { group: number; window: number; q0: number } {
  if (!(s.KV >= 1) || s.H % s.KV !== 0)
    throw new Error(`${label}: ${s.H} query heads cannot be grouped over ${s.KV} KV heads`);
  if (s.window !== null && !(Number.isInteger(s.window) && s.window >= 1))
    throw new Error(`${label}: sliding window ${s.window} must be a positive integer`);
  const q0 = s.q0 ?? 0;
  if (!Number.isInteger(q0) || q0 < 0 || q0 >= s.T)
    throw new Error(`${label}: query rows from ${q0} are not within the ${s.T} rows`);
  return { group: s.H / s.KV, window: s.window ?? 0, q0 };
}

/**
 * The attention core in df, three dispatches, for the query rows q0..T−1 (R = T − q0) over the keys of all T
 * positions: scores [H, R, T] (0 where a row does not see a key), their softmax over the keys each row sees, the
 * weighted values ctx [R, H·hd] — q [H, T, hd], k and v [KV, T, hd]. A row's values are the same bits whatever q0.
 */
export function dfGqaAttention(
  label: string,
  b: { q: GPUBuffer; k: GPUBuffer; v: GPUBuffer; scores: GPUBuffer; probs: GPUBuffer; ctx: GPUBuffer },
  s: GqaShape,
  opts: KernelOpts = {},
): DispatchSpec[] {
  const { group, window, q0 } = checkShape(label, s);
  const { H, T, hd } = s;
  const R = T - q0;
  const off = s.offsets ?? { q: 0, k: 0, v: 0 };
  const c = { WG, ...opts.constants };
  return [
    dispatch1d(`${label}/scores`, dfGqaScoresKernel, WG, H * R * T, opts, { q: b.q, k: b.k, s: b.scores }, [
      H,
      T,
      hd,
      group,
      window,
      off.q,
      off.k,
      q0,
      ...dfParam(1 / Math.sqrt(hd)),
      R,
      0,
    ]),
    dispatchOf(
      `${label}/probs`,
      dfGqaSoftmaxKernel,
      { ...c, WG: ROW_WG },
      { s: b.scores, p: b.probs },
      [T, H * R, window, q0, ...dfParam(1), R, 0],
      rowGroups(H * R),
    ),
    dispatch1d(label, dfGqaValuesKernel, WG, R * H * hd, opts, { p: b.probs, v: b.v, ctx: b.ctx }, [
      H,
      T,
      hd,
      group,
      window,
      off.v,
      q0,
      R,
    ]),
  ];
}

/** Copy of scores [H, T, T] with the masked (-Infinity) entries above the diagonal written as 0 (the engine's tap). */
function finiteScores(scores: Float64Array, H: number, T: number): Float64Array {
  const out = new Float64Array(scores);
  for (let r = 0; r < H * T; r++) {
    const i = r % T;
    for (let j = i + 1; j < T; j++) out[r * T + j] = 0;
  }
  return out;
}

// GPT-NeoX: q, k, v packed in the rotary's one buffer [3, H, T, hd], every head its own KV head. Llama: q [H, T, hd]
// and k [KV, T, hd] rotated, v [T, KV·hd] as projected (split into heads here), the KV heads and the layer's window
// under a cause's variant. The scores and probabilities rounded to the mode's storage, recorded as taps where asked.
const fp64: Fp64Form = (a) => {
  const T = a.T;
  if (a.cfg.family !== 'llama') {
    const { numHeads: H, headDim: hd } = a.cfg;
    const packed = fp64One(a);
    const n = H * T * hd;
    const [q, k, v] = [packed.subarray(0, n), packed.subarray(n, 2 * n), packed.subarray(2 * n)];
    const sv = (a.variant ?? {}) as ScoresVariant;
    const scores = a.round(attentionScoresF64(q, k, H, T, hd, sv));
    const probs = a.round(softmaxCausalF64(scores, H, T, sv));
    if (a.tap) {
      a.tap('scores', finiteScores(scores, H, T));
      a.tap('probs', probs);
    }
    return attentionValuesF64(probs, v, H, T, hd, sv);
  }
  const { H, hd, q, k, v, variant } = attentionParts(a);
  const scores = a.round(attentionScoresF64(q, k, H, T, hd, variant));
  const probs = a.round(softmaxCausalF64(scores, H, T, variant));
  if (a.tap) {
    a.tap('scores', finiteScores(scores, H, T));
    a.tap('probs', probs);
  }
  return attentionValuesF64(probs, v, H, T, hd, variant); // [T, H·hd]
};

// inputs: q [H, T, hd] and k [KV, T, hd] rotated (or the cache's k), v [T, KV·hd] as projected (split here,
// unrotated, into the cache's v when there is one).
const wgsl: WgslForm = (a) => {
  const { numHeads: H, numKvHeads: KV, headDim: hd } = a.cfg;
  const T = a.T;
  const at = a.kv?.at;
  const Tk = (at?.p0 ?? 0) + T; // keys the rows see
  const shape = attnShapeConstants(a.label, {
    H,
    kvHeads: KV,
    window: a.cfg.slidingWindow[a.layer] ?? null,
  });
  const plain: OverrideConstants = a.cpu ? { PLAIN: true } : {};
  const v = a.kv?.v ?? a.scratch('v_heads', KV * T * hd);
  const s = a.scratch('scores', H * T * Tk);
  const p = a.scratch('probs', H * T * Tk);
  const [q, k, vRows] = a.inputs;
  return [
    ropeHeads(`${a.label}/v`, { x: vRows, ...a.rope, out: v }, T, KV, hd, 0, wgslOpts(a), undefined, at),
    attnScores(`${a.label}/scores`, { q, k, s }, H, T, hd, wgslOpts(a, { ...shape.scores, ...plain }), at),
    softmaxCausal(`${a.label}/probs`, { s, p }, H, T, wgslOpts(a, { ...shape.softmax, ...plain }), at),
    attnValues(a.label, { p, v, ctx: a.out }, H, T, hd, wgslOpts(a, { ...shape.values, ...plain }), at),
  ];
};

// Llama: q [H, T, hd] and k [KV, T, hd] rotated, v [T, KV·hd] as projected (split into heads here). GPT-NeoX: q, k,
// v packed in the rotary's one buffer, every head its own KV head, no window. The query rows from..T−1 (R): scores
// and probs [H, R, T], the output [R, H·hd].
const df: DfForm = (a) => {
  const cfg = a.cfg;
  const { numHeads: H, headDim: hd } = cfg;
  const T = a.T;
  const q0 = a.from ?? 0;
  const scores = a.scratch('scores', H * dfRows(a) * T);
  const probs = a.scratch('probs', H * dfRows(a) * T);
  const opts = { constants: a.df };
  if (cfg.family !== 'llama') {
    const [qkv] = a.inputs;
    const n = H * T * hd;
    const shape = { H, KV: H, T, hd, q0, window: null, offsets: { q: 0, k: n, v: 2 * n } };
    return dfGqaAttention(a.label, { q: qkv, k: qkv, v: qkv, scores, probs, ctx: a.out }, shape, opts);
  }
  const KV = cfg.numKvHeads;
  const [q, k, vRows] = a.inputs;
  const v = a.scratch('v_heads', KV * T * hd);
  const shape = { H, KV, T, hd, q0, window: cfg.slidingWindow[a.layer] ?? null };
  return [
    dfRopeHeads(`${a.label}/v`, { x: vRows, ...a.rope, out: v }, T, KV, hd, 0, opts),
    ...dfGqaAttention(a.label, { q, k, v, scores, probs, ctx: a.out }, shape, opts),
  ];
};

/** Its fused kernel's launcher under the switch id (the flash attention, GQA and the sliding window in one pass). */
/** The Llama attention step's q [H, T, hd], k [KV, T, hd] and v [KV, T, hd] (v from its rows), and its mask. */
export function attentionParts(a: Fp64Args) {
  const cfg = fp64Llama(a);
  const { numHeads: H, numKvHeads: KV, headDim: hd } = cfg;
  const [q, k, vRows] = a.inputs;
  const v = ropeHeadsF64(vRows, a.T, KV, hd, new Float64Array(0)); // [KV, T, hd]: the head split alone
  const variant: ScoresVariant = {
    kvHeads: KV,
    window: cfg.slidingWindow[a.layer] ?? null,
    ...(a.variant as ScoresVariant | undefined),
  };
  return { H, hd, q, k, v, variant };
}

export const ATTENTION_FUSED = { flash_attention: { flash: flashAttention } } as const;

export const ATTENTION: OpModule = { kind: 'attention', fp64, wgsl, df, fused: ATTENTION_FUSED, causes };

// Its causes (the why's variants of the attention core): the KV heads mapped to the wrong query heads (where there are
// several and fewer than the query heads), the layer's sliding window ignored or off by one (where it has one).
function causes({ cfg, layer }: Parameters<CausesForm>[0]): CauseVariant[] {
  const out: CauseVariant[] = [];
  const { numHeads: H, numKvHeads: KV } = cfg;
  if (KV > 1 && KV < H)
    out.push({
      id: 'kv-interleaved',
      family: 'layout',
      words: `KV heads mapped to the wrong query heads: query head h reads KV head h mod ${KV} (repeat_interleave's order), not h / ${H / KV}`,
      params: {},
      variant: { kvMap: Array.from({ length: H }, (_, h) => h % KV) },
    });
  const w = cfg.slidingWindow[layer] ?? null;
  const windows: (number | null)[] = w === null ? [] : [null, ...(w > 1 ? [w - 1] : []), w + 1];
  for (const win of windows)
    out.push({
      id: win === null ? 'window-ignored' : 'window-off',
      family: 'layout',
      words:
        win === null
          ? `the sliding window (${w}) is ignored: every earlier key seen`
          : `the sliding window is ${win}, not ${w}`,
      params: win === null ? {} : { window: win },
      cfg: { slidingWindow: cfg.slidingWindow.map((x, j) => (j === layer ? win : x)) },
    });
  return out;
}
