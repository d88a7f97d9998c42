// The reference WGSL form of each op kind of the Llama family: the launches that compute one step of the registry
// (ops/families.ts) from its input buffers into its output buffer, with its weights; used by the reference forward
// (llama-reference.ts), which iterates the steps. With a KV cache (decoding) the rotary writes keys into it and the
// attention writes values into it and reads both.

import type { OverrideConstants } from '../gpu/pipelines';
import type { DispatchSpec } from '../gpu/program';
import { attnScores, attnShapeConstants, attnValues, softmaxCausal } from '../kernels/attention';
import { embedding } from '../kernels/embedding';
import { linear } from '../kernels/linear';
import type { KvPositions } from '../kernels/positions';
import { residualAdd } from '../kernels/residual';
import { rmsNorm } from '../kernels/rmsnorm';
import { ropeHeads } from '../kernels/rope';
import { swiglu } from '../kernels/swiglu';
import type { LlamaConfig } from '../numeric/types';
import type { OpKind, OpStep, SlotWidth } from '../ops/types';

/** What a WGSL form is given: the config, the rows, the layer, its input and output buffers and its weights. */
export interface WgslArgs {
  cfg: LlamaConfig;
  T: number;
  layer: number;
  step: OpStep;
  label: string;
  inputs: readonly GPUBuffer[];
  out: GPUBuffer;
  /** The step's weights on the GPU: `weight` and `bias` (null: none). */
  weight: GPUBuffer | null;
  bias: GPUBuffer | null;
  ids: GPUBuffer;
  rope: { cos: GPUBuffer; sin: GPUBuffer };
  /** A scratch buffer of at least `floats` f32 (per slot name; reused across layers). */
  scratch: (name: string, floats: number) => GPUBuffer;
  dummy: GPUBuffer;
  cpu: boolean;
  constants: OverrideConstants;
  /** KV-cache decoding: the rows are positions at.p0.., keys and values live in this layer's cache. */
  kv: LayerCache | null;
}

/** One layer's KV cache: k and v [KV, at.rows, hd]; the dispatch's rows sit at positions at.p0... */
export interface LayerCache {
  at: KvPositions;
  k: GPUBuffer;
  v: GPUBuffer;
}

export type WgslForm = (a: WgslArgs) => DispatchSpec[];

function need(b: GPUBuffer | null, a: WgslArgs): GPUBuffer {
  if (!b) throw new Error(`${a.label}: '${a.step.op}' reads a weight the model has none of`);
  return b;
}

const opts = (a: WgslArgs, more: OverrideConstants = {}) => ({ constants: { ...a.constants, ...more } });

/** x [T, K] · W^T + b with W [N, K]: N from the output slot's width, K from the input's. */
function linearForm(K: (cfg: LlamaConfig) => number, N: (cfg: LlamaConfig) => number): WgslForm {
  return (a) => [
    linear(
      a.label,
      { x: a.inputs[0], w: need(a.weight, a), b: a.bias, y: a.out, dummy: a.dummy },
      a.T,
      N(a.cfg),
      K(a.cfg),
      opts(a),
      a.cpu,
    ),
  ];
}

const d = (c: LlamaConfig) => c.hiddenSize;
const qWidth = (c: LlamaConfig) => c.numHeads * c.headDim;
const kvWidth = (c: LlamaConfig) => c.numKvHeads * c.headDim;

const rms: WgslForm = (a) => [
  rmsNorm(
    a.label,
    { x: a.inputs[0], weight: need(a.weight, a), y: a.out },
    a.T,
    a.cfg.hiddenSize,
    a.cfg.rmsNormEps,
    opts(a),
  ),
];

/** The Llama family's op kinds, each as its reference kernels (GPT-NeoX's plan is engine/plan.ts). */
export const WGSL_FORMS: Partial<Record<OpKind, WgslForm>> = {
  embedding: (a) => [
    embedding(
      a.label,
      { ids: a.ids, table: need(a.weight, a), out: a.out },
      a.T,
      a.cfg.hiddenSize,
      { row0: 0, rows: a.cfg.vocabSize },
      opts(a),
    ),
  ],
  rmsnorm: rms,
  final_norm: rms,
  q_proj: linearForm(d, qWidth),
  k_proj: linearForm(d, kvWidth),
  v_proj: linearForm(d, kvWidth),
  // Qwen3: each head's hd values normalised alone (rows = T · heads).
  qk_norm: (a) => {
    const heads = a.step.width === 'q' ? a.cfg.numHeads : a.cfg.numKvHeads;
    const { headDim: hd, rmsNormEps: eps } = a.cfg;
    return [
      rmsNorm(
        a.label,
        { x: a.inputs[0], weight: need(a.weight, a), y: a.out },
        a.T * heads,
        hd,
        eps,
        opts(a),
      ),
    ];
  },
  // q at its rows [H, T, hd]; k [KV, T, hd], or into the cache at its positions (a.out is then the cache's k).
  rotary: (a) => {
    const query = a.step.width === 'q_heads';
    const heads = query ? a.cfg.numHeads : a.cfg.numKvHeads;
    const b = { x: a.inputs[0], ...a.rope, out: a.out };
    const { headDim: hd, rotaryDim: r } = a.cfg;
    return [ropeHeads(a.label, b, a.T, heads, hd, r, opts(a), undefined, a.kv?.at, query)];
  },
  // inputs: q [H, T, hd] and k [KV, T, hd] rotated (or the cache's k), v [T, KV·hd] as projected (split here,
  // unrotated, into the cache's v when there is one).
  attention: (a) => {
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
      ropeHeads(`${a.label}/v`, { x: vRows, ...a.rope, out: v }, T, KV, hd, 0, opts(a), undefined, at),
      attnScores(`${a.label}/scores`, { q, k, s }, H, T, hd, opts(a, { ...shape.scores, ...plain }), at),
      softmaxCausal(`${a.label}/probs`, { s, p }, H, T, opts(a, { ...shape.softmax, ...plain }), at),
      attnValues(a.label, { p, v, ctx: a.out }, H, T, hd, opts(a, { ...shape.values, ...plain }), at),
    ];
  },
  out_proj: linearForm(qWidth, d),
  // HF `residual + hidden_states`: the kernel's b + a is the same f32 sum (an add commutes bit for bit).
  residual: (a) => {
    if (a.inputs.length !== 2) throw new Error(`${a.label}: the Llama residual adds two terms`);
    const [x, y] = a.inputs;
    return [residualAdd(a.label, { a: x, b: y, c: null, out: a.out }, a.T * a.cfg.hiddenSize, opts(a))];
  },
  gate_up: linearForm(d, (c) => c.intermediateSize),
  swiglu: (a) => [
    swiglu(a.label, { gate: a.inputs[0], up: a.inputs[1], y: a.out }, a.T * a.cfg.intermediateSize, opts(a)),
  ],
  mlp_down: linearForm((c) => c.intermediateSize, d),
  lm_head: linearForm(d, (c) => c.vocabSize),
};

/** Floats of a slot of `width` at T rows. */
export function slotFloats(cfg: LlamaConfig, width: SlotWidth, T: number): number {
  const per: Partial<Record<SlotWidth, number>> = {
    hidden: cfg.hiddenSize,
    q: qWidth(cfg),
    kv: kvWidth(cfg),
    q_heads: qWidth(cfg),
    kv_heads: kvWidth(cfg),
    ff: cfg.intermediateSize,
    vocab: cfg.vocabSize,
  };
  const n = per[width];
  if (n === undefined) throw new Error(`Llama reference: no slot width '${width}' in the Llama family`);
  return T * n;
}
