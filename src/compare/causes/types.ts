// The causes of an error (DESIGN.md, "Why, not only where"): each candidate cause is a variant of the op — rounded
// to a narrower type, an operand dropped or doubled, a constant off, an index shifted, a layout swapped, another
// function, dropout — re-run exactly from the run's own recorded inputs and scored by the residual between its output
// and the recorded output, against the op's floor. These are the types every cause file and the search share.

import type { ScoresVariant } from '../../kernels/cpu/attention';
import type { LayerNormVariant } from '../../kernels/cpu/layernorm';
import type { RotaryVariant } from '../../kernels/cpu/rotary';
import type { RotaryAngles } from '../../kernels/cpu/rotary-angles';
import type { Precision } from '../../numeric/precision';
import type { NumFormat } from '../../numeric/round';
import type { LinearWeights, NeoXConfig, NormWeights } from '../../numeric/types';
import { OPS } from '../../ops/descriptors';
import { neoxStepOfCheck } from '../../ops/families';
import { type CauseFamily, CHECK_OPS, type CheckOp, type OpStep } from '../../ops/types';
import type { Metric } from '../../run/runspec';
import type { FullMetrics } from '../metrics';

/**
 * The ops a cause can be searched at: the run checks' ops (the registry's check ops, src/ops/types.ts; the whole
 * layer has no single variant) and the fused groups, checked whole where a fused path writes no tap between their ops
 * (compare/why-paths.ts).
 */
export type OpKind = CheckOp | 'attn_block' | 'mlp_up' | 'mlp_residual';

/** The fused groups, each by the check op of the product it starts or ends with (whose weights it reads). */
export const GROUP_PRODUCT: Readonly<Record<Exclude<OpKind, CheckOp>, CheckOp>> = {
  attn_block: 'qkv',
  mlp_up: 'fc1',
  mlp_residual: 'fc2',
};

/** The registry step (GPT-NeoX's) whose weights and op kind an op reads: a fused group's, its product's. */
export function stepOfOp(op: OpKind): OpStep | null {
  return neoxStepOfCheck(
    op in GROUP_PRODUCT ? GROUP_PRODUCT[op as keyof typeof GROUP_PRODUCT] : (op as CheckOp),
  );
}

/** The check ops whose step is of these registry op kinds, in forward order. */
const checksOf = (kinds: readonly string[]): CheckOp[] =>
  CHECK_OPS.filter((c) => {
    const step = neoxStepOfCheck(c);
    return step !== null && kinds.includes(step.op);
  });

/** The products: the check ops whose op kind is a matrix product against a weight (ops/descriptors.ts `linear`). */
export const LINEAR_OPS: readonly OpKind[] = CHECK_OPS.filter((c) => {
  const step = neoxStepOfCheck(c);
  return step !== null && OPS[step.op].linear;
});
/** Ops that hold a product (a linear alone, or a fused group that starts or ends with one). */
export const PRODUCT_OPS: readonly OpKind[] = [...LINEAR_OPS, 'attn_block', 'mlp_up', 'mlp_residual'];
export const ATTENTION_OPS: readonly OpKind[] = [...checksOf(['attention']), 'attn_block'];
export const ACT_OPS: readonly OpKind[] = [...checksOf(['gelu']), 'mlp_up'];
export const RESIDUAL_OPS: readonly OpKind[] = [...checksOf(['residual']), 'mlp_residual'];
export const NORM_OPS: readonly OpKind[] = checksOf(['layernorm', 'final_norm']);
export const ALL_OPS: readonly OpKind[] = [...CHECK_OPS, 'attn_block', 'mlp_up', 'mlp_residual'];

export type ActFn = 'gelu' | 'gelu-tanh' | 'gelu-sigmoid' | 'relu' | 'silu';

/**
 * One way the op could have been written, as parameters of the exact op (exact-op.ts reads them; an absent field is
 * the model's own form). Core fields change the computation; output fields transform the exact output afterwards.
 */
export interface Variant {
  // linear: y = x W^T + bias
  inputFormat?: NumFormat;
  weightFormat?: NumFormat;
  /** The bias times this (0: dropped, 2: doubled). */
  bias?: number;
  /** The bias rounded to this format (autocast casts it with the weights). */
  biasFormat?: NumFormat;
  /** W read as its transpose (square weights). */
  transposed?: boolean;
  /** Each input row read s elements further along (zeros past its end). */
  inputShift?: number;
  /** Another recorded tensor used as the input (a stale or aliased buffer). */
  input?: ArrayLike<number>;
  /**
   * A narrower accumulator: the running sums rounded to fp16 after every step, in order along K — in chunks of
   * `chunk` (a split-K partition: each chunk from zero, the partials then added in order, each step rounded), the
   * step s + a·b fused (one rounding) or not; `half`: the fused step rounded to fp16 once from its exact value (a
   * half-precision FMA), not through f32 first (an emulation on f32 arithmetic).
   */
  acc?: { chunk: number; fused: boolean; half?: boolean };
  // LayerNorm
  eps?: number;
  norm?: LayerNormVariant;
  // the activation
  act?: ActFn;
  // the attention core
  scores?: ScoresVariant;
  rotary?: RotaryVariant;
  rotaryBase?: number;
  rotaryNdims?: number;
  /** Softmax probabilities rounded to this format before the value product. */
  probsFormat?: NumFormat;
  /**
   * Online softmax over key blocks of `block` that never rescales what it summed before a new maximum; with
   * `threads` > 1, each row's blocks dealt round-robin to that many partial states (block g, g + threads, …),
   * merged in order at the end (the partial scaled to the new maximum, the running state not).
   */
  noRescale?: { block: number; threads: number };
  // residual adds: the sum of coefs[j] × term j (1, 1[, 1] for the model)
  coefs?: number[];
  /** Term `term` read from another recorded tensor. */
  replace?: { term: number; data: ArrayLike<number> };
  /** Term `term` rounded to a narrower format before the sum (a term kept in half). */
  termFormat?: { term: number; format: NumFormat };
  /** Every partial sum rounded to this format (the additions themselves in half), in HF's order. */
  sumFormat?: NumFormat;
  // output transforms (applied to the exact output)
  outFormat?: NumFormat;
  /** out[t] = exact[t - shift] for t >= from (rows before `from` untouched; zeros where t - shift < 0). */
  rowShift?: { shift: number; from: number };
  /** The flattened output shifted by this many elements (zeros where it reads outside). */
  elemShift?: number;
  /** Every row is this row of the exact output. */
  broadcastRow?: number;
  /** Dropout: the elements where `dropped` is 1 are zero, the rest scaled by 1 / (1 - p). */
  dropout?: { p: number; dropped: Uint8Array };
  /** Output head h holds the exact output's head perm[h] (the attention core's [T, H·hd]). */
  headPerm?: number[];
  // where the variant applies
  /**
   * The variant on rows [from, to) only, the exact op on the others: a fault that lives in some rows (a decode step
   * on, a tile on, one position). In the attention core q, k and v of those rows are computed the variant's way and
   * the keys of the rows before are the exact ones (the cache the prefill wrote), as a decode kernel reads them.
   */
  rows?: { from: number; to: number };
  // the attention core's KV cache and rotary
  /** The keys (after rotary) and values rounded to this format before the scores: a cache stored narrower. */
  kvFormat?: NumFormat;
  /** Keys and values of every position read from another recorded QKV projection (another layer's cache). */
  kvFrom?: ArrayLike<number>;
  /**
   * Key positions the query rows do not see: all but the last `window` (and the first `sink`: an attention sink
   * kept by an eviction policy), or the listed positions (a cache entry lost or never written).
   */
  keysDropped?: { window?: number; sink?: number; positions?: number[] };
  /** Key row j read from row j − shift from row `from` on (the first or last row past the ends): a slot or page off. */
  keysMoved?: { shift: number; from: number };
  /** The keys and values of these positions read as zeros: a cache write lost. */
  keysZeroed?: number[];
  /** q, k (after rotary) and v rounded to this format: an attention kernel on half inputs. */
  qkvFormat?: NumFormat;
  /** The scaled scores q·k rounded to this format before the softmax. */
  scoresFormat?: NumFormat;
  /** Rotary left off one operand: q or k kept unrotated. */
  rotaryOff?: 'q' | 'k';
}

/** The weights an op reads (only the ones it has). */
export interface OpWeights {
  linear?: LinearWeights;
  /** The LM head's [V, d] matrix (no bias). */
  lmHead?: Float32Array;
  norm?: NormWeights;
}

export interface RecordedTensor {
  slot: string;
  name: string;
  data: Float32Array;
}

/** Everything known about one op of one run: its recorded tensors, its exact output, its floor. */
export interface OpData {
  op: OpKind;
  layer: number | null;
  cfg: NeoXConfig;
  tokens: number[];
  /** The recorded inputs in the check's order (run-checks.ts), each [T, width], and their slots. */
  inputs: Float32Array[];
  inputSlots: string[];
  /** The recorded output [T, width]. */
  recorded: Float32Array;
  /** The exact op on the recorded inputs [T, width]. */
  exact: Float64Array;
  weights: OpWeights;
  angles: RotaryAngles;
  /** Other recorded tensors near the op (the wrong-tensor causes try them): slot, the run's name, data. */
  others: RecordedTensor[];
  /** How the error is judged: the op's floor (the fp32 reference kernel's local error), metric, k, storage. */
  floor: FullMetrics;
  metric: Metric;
  k: number;
  precision: Precision;
  /** The baseline's magnitude, for maxAbs / meanAbs floors. */
  scale: number;
  /** A run of a generation: the prompt's length (row prefill + s − 1 is decode step s), for the words. */
  prefill?: number;
}

/** How a cause changes a computation (the registry's, ops/types.ts: the op modules' causes name it too). */
export type { CauseFamily } from '../../ops/types';

export type ParamValue = number | string;

/** One variant to score, with the parameters it stands for. */
export interface Candidate {
  params: Record<string, ParamValue>;
  variant: Variant;
}

/** What a cause's search may ask: the residual ratio of a variant (for parameters found by search). */
export interface SearchContext {
  data: OpData;
  residual(v: Variant): number;
  /**
   * The rows the error lives in, when the search scores the cause there only (its variants then apply on these
   * rows, the exact op elsewhere: `residual` adds them itself); absent on the search over every row.
   */
  rows?: { from: number; to: number };
}

/** A candidate explanation: a small descriptor, one per cause (src/compare/causes/catalog/). */
export interface Cause {
  id: string;
  family: CauseFamily;
  ops: readonly OpKind[];
  /** The variants to score; parameters estimated from the data (or searched) give one or a few. */
  candidates(s: SearchContext): Candidate[];
  /** The cause in words, with what was found. */
  words(params: Record<string, ParamValue>, data: OpData): string;
  /** The share of the screening budget each candidate gets (default 1): for a costly emulation. */
  screenShare?: number;
  /**
   * 'whole' for a cause whose variants already say from which row they act (a row shift, rotary positions that jump):
   * it is not scored again on the rows the error lives in. Default: scored both ways.
   */
  rows?: 'both' | 'whole';
}

/** One cause tested: its best candidate and how much of the error it leaves. */
export interface TestedCause {
  id: string;
  family: CauseFamily;
  words: string;
  params: Record<string, ParamValue>;
  /** The residual (recorded vs the variant) over the op's floor, in the report's metric. */
  residual: number;
}

/** The answer to "what would explain it" at one op. */
export interface CauseVerdict {
  /** The causes named: those that bring the error within k × floor and are not clearly beaten (best first). */
  named: TestedCause[];
  /** The best cause not named, when there is one. */
  runnerUp: TestedCause | null;
  /** The op's own error over its floor on the same elements (before any variant). */
  error: number;
  /** The answer in words: the named causes, or that no known cause explains it. */
  words: string;
  /** Every cause tested, best first. */
  tested: TestedCause[];
  /** Output columns every candidate was screened on and the near causes scored on, when not all (a large op). */
  sampled: { screened: number; scored: number; of: number } | null;
  ms: number;
}
