// What an op module is (one file per op kind: its forms for the registry, src/ops/), what a WGSL reference form is
// given, and the forms several op kinds share (a linear, a one-input op). The per-op modules of this folder and the
// tables of the ops not yet moved (kernels/cpu/op-fp64.ts, engine/llama-wgsl-forms.ts, kernels/oracle/df-forms.ts)
// are written against these, so neither imports the other (docs/ARCHITECTURE.md, "The op registry").

import type { OverrideConstants } from '../../gpu/pipelines';
import type { DispatchSpec } from '../../gpu/program';
import type { LinearWeights, LlamaConfig } from '../../numeric/types';
import type { CausesForm, Fp64Args, Fp64Form, OpKind } from '../../ops/types';
import { linearF64 } from '../cpu/linear';
import { linear } from '../linear';
import { type DfForm, dfNeed, type FormArgs } from '../oracle/df-form';
import type { KvPositions } from '../positions';

/** What a WGSL form is given: the config, the rows, the layer, its input and output buffers and its weights. */
export interface WgslArgs extends FormArgs {
  cfg: LlamaConfig;
  T: number;
  out: GPUBuffer;
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

/** The Llama family's reference form of one step: its launches from the input buffers into the output. */
export type WgslForm = (a: WgslArgs) => DispatchSpec[];

/**
 * One op kind's forms, from one file: the CPU fp64 form, the WGSL reference form (the Llama family's step; GPT-NeoX's
 * plan runs its own launchers, engine/plan-ops.ts), the double-float form, the fused kernels that may replace it
 * (their launchers by the kernel's name in the registry, ops/fused.ts), and its causes (the Llama family's why: the
 * ways the op is miswritten, each a cfg change, a variant its fp64 form takes, or a form of its own). A form left out
 * is one the op has not got: registry.test.ts fails on a descriptor that needs it.
 */
export interface OpModule {
  kind: OpKind;
  fp64?: Fp64Form;
  wgsl?: WgslForm;
  df?: DfForm;
  fused?: Readonly<Record<string, unknown>>;
  causes?: CausesForm;
}

/** The step's weight, refused where the model has none (the same refusal as a df form's). */
export const wgslNeed: (b: GPUBuffer | null, a: WgslArgs) => GPUBuffer = dfNeed;

/** The form's pipeline constants (a precision mode's), with `more` on top. */
export const wgslOpts = (a: WgslArgs, more: OverrideConstants = {}) => ({
  constants: { ...a.constants, ...more },
});

/** x [T, K] · W^T + b with W [N, K]: N from the output slot's width, K from the input's. */
export function wgslLinearForm(K: (cfg: LlamaConfig) => number, N: (cfg: LlamaConfig) => number): WgslForm {
  return (a) => [
    linear(
      a.label,
      { x: a.inputs[0], w: wgslNeed(a.weight, a), b: a.bias, y: a.out, dummy: a.dummy },
      a.T,
      N(a.cfg),
      K(a.cfg),
      wgslOpts(a),
      a.cpu,
    ),
  ];
}

/** The step's one input (an op that reads one slot). */
export function fp64One(a: Fp64Args): Float64Array {
  if (a.inputs.length !== 1)
    throw new Error(`${a.step.slot}: '${a.step.op}' reads one input, got ${a.inputs.length}`);
  return a.inputs[0];
}

/** x [T, K] · W^T + b for the step's LinearWeights (W [N, K]). */
export const fp64Linear: Fp64Form = (a) => {
  const w = a.weights as LinearWeights;
  const [N, K] = w.weight.shape;
  const x = fp64One(a);
  if (x.length !== a.T * K)
    throw new Error(`${a.step.slot}: input has ${x.length} values, [${a.T}, ${K}] needs ${a.T * K}`);
  return linearF64(x, a.T, K, w.weight.data, w.bias ? w.bias.data : null, N);
};

/** The config of a step only the Llama family has. */
export function fp64Llama(a: Fp64Args): LlamaConfig {
  if (a.cfg.family !== 'llama')
    throw new Error(`${a.step.slot}: '${a.step.op}' here needs a Llama-family config`);
  return a.cfg;
}
