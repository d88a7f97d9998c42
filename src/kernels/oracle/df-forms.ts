// The double-float form of every op kind of the registry (src/ops/), filled into its `df` slots: the launches that
// compute one step in df (an f32 pair per value, ~2^-48 per op) from its input df buffers into its output df
// buffer, with its f32 weights. The GPU oracle of a family (src/engine/llama-oracle-gpu.ts) iterates the family's
// steps with these, as the fp64 forward (kernels/cpu/op-forward.ts) iterates the fp64 forms. One table typed on
// OpKind: an op kind without its df form does not compile. Where the families lay a slot out differently the form
// follows the config, as the fp64 forms do: GPT-NeoX's rotary packs q, k, v into one [3, H, T, hd] buffer and its
// attention reads them there; the Llama family's rotary is per projection and its attention reads GQA heads.
// GPT-NeoX's own oracle layer (engine/oracle-layer.ts) still records its ops with their launchers directly.
import type { OverrideConstants } from '../../gpu/pipelines';
import type { DispatchSpec } from '../../gpu/program';
import type { LlamaConfig, ModelConfig } from '../../numeric/types';
import { fillSlots } from '../../ops/slots';
import type { OpKind, OpStep, SlotWidth } from '../../ops/types';
import { dfEmbedding } from './embedding';
import { dfGelu } from './gelu';
import { dfLayerNorm } from './layernorm';
import { dfLinear } from './linear';
import { dfGqaAttention, dfRmsNorm, dfRopeHeads, dfRotaryPacked, dfSwiglu } from './llama';
import { dfResidual } from './residual';

/** What a df form is given: the config, the rows, the layer, its df inputs and output, and its weights. */
export interface DfArgs {
  cfg: ModelConfig;
  T: number;
  /** The layer index (-1 at the top). */
  layer: number;
  step: OpStep;
  label: string;
  /** The df buffers of the slots the step reads, in its order. */
  inputs: readonly GPUBuffer[];
  /** The step's df output, [T, width] (or [heads, T, hd]; GPT-NeoX's rotary [3, H, T, hd]). */
  out: GPUBuffer;
  /** The step's weights on the GPU, f32 (null: none). */
  weight: GPUBuffer | null;
  bias: GPUBuffer | null;
  /** Token ids [T] u32 (the embedding). */
  ids: GPUBuffer;
  /** cos/sin [T, rotary/2] df of the fp64 angles (ropeTablesF64 of the family's inv_freq, split into pairs). */
  rope: { cos: GPUBuffer; sin: GPUBuffer };
  /** A df scratch buffer of at least n elements (by name; may be shared across layers). */
  scratch: (name: string, n: number) => GPUBuffer;
  dummy: GPUBuffer;
  /** DF_FMA (from the adapter's self-test), and W_F16 with it for the kernels that read weights. */
  df: OverrideConstants;
  dfW: OverrideConstants;
}

export type DfForm = (a: DfArgs) => DispatchSpec[];

function need(b: GPUBuffer | null, a: DfArgs): GPUBuffer {
  if (!b) throw new Error(`${a.label}: '${a.step.op}' reads a weight the model has none of`);
  return b;
}

function llama(a: DfArgs): LlamaConfig {
  if (a.cfg.family !== 'llama')
    throw new Error(
      `${a.label}: the df '${a.step.op}' form takes the Llama family's layout; GPT-NeoX's packed q/k/v is recorded by engine/oracle-layer.ts`,
    );
  return a.cfg;
}

/** Values per row of a slot of `width` (heads layouts: heads · hd). */
export function dfSlotWidth(cfg: ModelConfig, width: SlotWidth): number {
  const d = cfg.hiddenSize;
  const q = cfg.numHeads * cfg.headDim;
  const kv = cfg.family === 'llama' ? cfg.numKvHeads * cfg.headDim : q;
  const per: Record<SlotWidth, number> = {
    hidden: d,
    qkv: 3 * d,
    q,
    kv,
    ff: cfg.intermediateSize,
    vocab: cfg.vocabSize,
    q_heads: q,
    kv_heads: kv,
    qkv_heads: 3 * d,
  };
  return per[width];
}

/** x [T, K] · W^T (+ b) with W [N, K]: N the output slot's width, K the input's (`inWidth`). */
function linearForm(inWidth: SlotWidth): DfForm {
  return (a) => [
    dfLinear(
      a.label,
      { x: a.inputs[0], w: need(a.weight, a), b: a.bias, y: a.out, dummy: a.dummy },
      a.T,
      dfSlotWidth(a.cfg, a.step.width),
      dfSlotWidth(a.cfg, inWidth),
      { constants: a.dfW },
    ),
  ];
}

/** RMSNorm (Llama) or LayerNorm (GPT-NeoX: its weights have a bias) over the hidden size. */
const norm: DfForm = (a) => {
  const d = a.cfg.hiddenSize;
  const b = { x: a.inputs[0], weight: need(a.weight, a) };
  if (a.cfg.family === 'llama')
    return [dfRmsNorm(a.label, { ...b, y: a.out }, a.T, d, a.cfg.rmsNormEps, { constants: a.df })];
  return [
    dfLayerNorm(a.label, { ...b, bias: need(a.bias, a), y: a.out }, a.T, d, a.cfg.layerNormEps, {
      constants: a.df,
    }),
  ];
};

export const DF_FORMS: Readonly<Record<OpKind, DfForm>> = {
  embedding: (a) => [
    dfEmbedding(
      a.label,
      { ids: a.ids, table: need(a.weight, a), out: a.out },
      a.T,
      a.cfg.hiddenSize,
      { row0: 0, rows: a.cfg.vocabSize },
      { constants: a.dfW },
    ),
  ],
  layernorm: norm,
  rmsnorm: norm,
  qkv: linearForm('hidden'),
  q_proj: linearForm('hidden'),
  k_proj: linearForm('hidden'),
  v_proj: linearForm('hidden'),
  // Qwen3: each head's hd values normalised alone (rows = T · heads).
  qk_norm: (a) => {
    const cfg = llama(a);
    const heads = a.step.width === 'q' ? cfg.numHeads : cfg.numKvHeads;
    return [
      dfRmsNorm(
        a.label,
        { x: a.inputs[0], weight: need(a.weight, a), y: a.out },
        a.T * heads,
        cfg.headDim,
        cfg.rmsNormEps,
        { constants: a.df },
      ),
    ];
  },
  // Llama: q or k [T, heads·hd] -> [heads, T, hd], rotate-half over the first rotaryDim dims of each head.
  // GPT-NeoX: the fused QKV [T, H, 3, hd] -> q, k, v packed [3, H, T, hd], q and k rotated on rotary_ndims.
  rotary: (a) => {
    const cfg = a.cfg;
    const df = { constants: a.df };
    if (cfg.family !== 'llama') {
      const b = { qkv: a.inputs[0], ...a.rope, out: a.out };
      return [dfRotaryPacked(a.label, b, a.T, cfg.numHeads, cfg.headDim, cfg.rotaryNdims, df)];
    }
    const heads = a.step.width === 'q_heads' ? cfg.numHeads : cfg.numKvHeads;
    const b = { x: a.inputs[0], ...a.rope, out: a.out };
    return [dfRopeHeads(a.label, b, a.T, heads, cfg.headDim, cfg.rotaryDim, df)];
  },
  // Llama: q [H, T, hd] and k [KV, T, hd] rotated, v [T, KV·hd] as projected (split into heads here). GPT-NeoX: q, k,
  // v packed in the rotary's one buffer, every head its own KV head, no window.
  attention: (a) => {
    const cfg = a.cfg;
    const { numHeads: H, headDim: hd } = cfg;
    const T = a.T;
    const scores = a.scratch('scores', H * T * T);
    const probs = a.scratch('probs', H * T * T);
    const df = { constants: a.df };
    if (cfg.family !== 'llama') {
      const [qkv] = a.inputs;
      const n = H * T * hd;
      const shape = { H, KV: H, T, hd, window: null, offsets: { q: 0, k: n, v: 2 * n } };
      return dfGqaAttention(a.label, { q: qkv, k: qkv, v: qkv, scores, probs, ctx: a.out }, shape, df);
    }
    const KV = cfg.numKvHeads;
    const [q, k, vRows] = a.inputs;
    const v = a.scratch('v_heads', KV * T * hd);
    const shape = { H, KV, T, hd, window: cfg.slidingWindow[a.layer] ?? null };
    return [
      dfRopeHeads(`${a.label}/v`, { x: vRows, ...a.rope, out: v }, T, KV, hd, 0, df),
      ...dfGqaAttention(a.label, { q, k, v, scores, probs, ctx: a.out }, shape, df),
    ];
  },
  out_proj: linearForm('q'),
  // Inputs summed left to right (HF's operand order): (a + b) + c.
  residual: (a) => {
    if (a.inputs.length < 2 || a.inputs.length > 3)
      throw new Error(`${a.label}: a residual add of ${a.inputs.length} terms (2 or 3 are read)`);
    const [x, y, z] = a.inputs;
    const n = a.T * a.cfg.hiddenSize;
    return [
      dfResidual(a.label, { a: x, b: y, c: z ?? null, out: a.out, dummy: a.dummy }, n, { constants: a.df }),
    ];
  },
  gate_up: linearForm('hidden'),
  swiglu: (a) => [
    dfSwiglu(a.label, { gate: a.inputs[0], up: a.inputs[1], y: a.out }, a.T * a.cfg.intermediateSize, {
      constants: a.df,
    }),
  ],
  mlp_up: linearForm('hidden'),
  gelu: (a) => [
    dfGelu(a.label, { x: a.inputs[0], y: a.out }, a.T * a.cfg.intermediateSize, { constants: a.df }),
  ],
  mlp_down: linearForm('ff'),
  final_norm: norm,
  lm_head: linearForm('hidden'),
};

fillSlots('df', DF_FORMS);
