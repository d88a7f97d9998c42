// The types of the Llama family's causes (family-causes.ts), apart so that the library's causes on the family's ops
// (family-causes-library.ts) and the candidates that use them need not import each other.

import type { NumFormat } from '../numeric/round';
import type { CauseVariant, Fp64Form, OpStep } from '../ops/types';

/** The steps of one check: a recorded slot and the steps that compute it from recorded slots. */
export interface CheckSteps {
  steps: readonly OpStep[];
}

/**
 * One way an op of the group could have been written: an op's cause variant (ops/types.ts CauseVariant: its id,
 * words, parameters and the cfg, variant or form it changes; the op modules declare them) with the steps it applies
 * to, or one of the causes of any op (its output in half) or of the cause library.
 */
export interface Candidate extends Omit<CauseVariant, 'tune'> {
  /** The steps it changes. */
  applies: (s: OpStep) => boolean;
  /** The step's output rounded to a narrower format (its input too with `input`). */
  half?: { format: NumFormat; input: boolean };
  /**
   * Where the form rounds to half a quantity the run summed in fp32 in an order unknown: the form with those sums at
   * the low and the high end of what any order gives. An output element the three do not agree on is scored by the
   * run's value held to their range (the order floor; family-causes-rows.ts).
   */
  orderSpread?: [Fp64Form, Fp64Form];
  /**
   * A parameter the data can pin between the grid's values: the candidate at any positive value of it. The rows
   * scorer (family-causes-rows.ts) searches it around the grid's best and keeps what it finds where that explains
   * the error clearly better.
   */
  tune?: { key: string; value: number; make: (value: number) => Candidate };
}

/** What the caller knows of the run beyond the group. */
export interface CandidateOptions {
  /** In a run of a generation: its first decode row (the decode's causes are tried from there). */
  decodeFrom?: number;
  /** The rows (tokens) of the run: the work of a candidate computed in emulated fp32 steps is bounded by it. */
  rows?: number;
}
