// The op kinds the explorer knows, across families: this table's keys are OpKind, and a new op kind is one entry
// here (its descriptor is assembled from it in ops/descriptors.ts, its forms come from its module, kernels/ops/).
// Nothing imported: every other part of the registry reads the kinds from here.

/** An op kind's own words and what it reads (the rest of its descriptor: ops/descriptors.ts). */
export interface OpEntry {
  /** Words for reports and the why ("the RMSNorm", "the q projection"). */
  title: string;
  /** A matrix product against a weight (the oracle's products, an accumulation order, a K). */
  linear: boolean;
  /** The weight roles it reads (`weight`, `bias`), in the layer's weights. */
  weights: readonly ('weight' | 'bias')[];
  /**
   * Its output row t depends on t's position or on other rows (the rotary, the attention core): computed over
   * every row of the sequence even where only some rows are asked for.
   */
  wholeSequence: boolean;
  /**
   * Its forms hold the scores and probabilities [heads, T, T] besides its output (the attention core): what a GPU
   * re-run of it keeps in memory and its widest binding.
   */
  scores?: true;
}

const op = (title: string, linear: boolean, weights: OpEntry['weights'], wholeSequence = false): OpEntry => ({
  title,
  linear,
  weights,
  wholeSequence,
});

/** The op kinds, each with its words and what it reads, in the order of a forward. */
export const OP_ENTRIES = {
  embedding: op('the token embedding', false, ['weight']),
  layernorm: op('the LayerNorm', false, ['weight', 'bias']),
  rmsnorm: op('the RMSNorm', false, ['weight']),
  qkv: op('the fused QKV projection', true, ['weight', 'bias']),
  q_proj: op('the q projection', true, ['weight', 'bias']),
  k_proj: op('the k projection', true, ['weight', 'bias']),
  v_proj: op('the v projection', true, ['weight', 'bias']),
  qk_norm: op('the per-head q/k RMSNorm', false, ['weight']),
  rotary: op('the rotary embedding', false, [], true),
  attention: { ...op('the attention core', false, [], true), scores: true },
  out_proj: op('the attention output projection', true, ['weight', 'bias']),
  residual: op('the residual add', false, []),
  gate_up: op('the gate/up projection', true, ['weight', 'bias']),
  swiglu: op('the SwiGLU product', false, []),
  mlp_up: op('the MLP up projection', true, ['weight', 'bias']),
  gelu: op('the GELU', false, []),
  mlp_down: op('the MLP down projection', true, ['weight', 'bias']),
  final_norm: op('the final norm', false, ['weight', 'bias']),
  lm_head: op('the LM head', true, ['weight']),
} as const satisfies Record<string, OpEntry>;

/** Every op kind the explorer knows, across families. */
export type OpKind = keyof typeof OP_ENTRIES;
export const OP_KINDS = Object.keys(OP_ENTRIES) as readonly OpKind[];
