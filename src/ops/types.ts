// The op registry's types: what an op kind is (its descriptor), one use of it in a family's forward (a step), a
// family (its steps wired by a residual style), and the forms other parts fill for each op kind (docs/ARCHITECTURE.md,
// "The op registry"). Pure data and function types: nothing here computes.

import type { LlamaConfig, ModelConfig } from '../numeric/types';
import type { OpEntry, OpKind } from './kinds';

/** Every op kind the explorer knows, across families: the keys of the descriptors (ops/descriptors.ts OP_KINDS). */
export type { OpKind };

/**
 * The forms an op has, each filled by the part that owns it (ops/slots.ts). `causes`: the GPT-NeoX causes' exact op
 * under a variant (compare/causes/exact-op.ts); `variants`: the Llama family's cause variants of the op (CausesForm).
 */
export const FORM_KINDS = ['fp64', 'wgsl', 'fused', 'df', 'causes', 'variants'] as const;
export type FormKind = (typeof FORM_KINDS)[number];

/** The fused-kernel switches (ops/fused.ts), in the order the page lists them and the plan applies them. */
export const FUSED_KERNEL_IDS = [
  'layernorm',
  'qkv_rotary',
  'flash_attention',
  'gemm',
  'linear_gelu',
  'residual_epilogue',
] as const;
export type FusedKernelId = (typeof FUSED_KERNEL_IDS)[number];

/** A config's true-or-false field (a Llama config's `attentionBias`): what a step's `bias` names. */
export type ConfigFlag = {
  [K in keyof LlamaConfig]-?: LlamaConfig[K] extends boolean ? K : never;
}[keyof LlamaConfig];

/** The width of a slot's rows ([T, width]), or its head layout ([heads, T, hd]). */
export type SlotWidth = 'hidden' | 'qkv' | 'q' | 'kv' | 'ff' | 'vocab' | 'q_heads' | 'kv_heads' | 'qkv_heads';

/** An op kind's descriptor: its entry (ops/kinds.ts: words, linear, weights, whole sequence) and what follows. */
export interface OpDescriptor extends OpEntry {
  kind: OpKind;
  /** The forms it must have: a test fails on one missing (ops/registry.test.ts). */
  needs: readonly FormKind[];
  /** The fused kernels (switch ids) that may replace it, per family: read off ops/fused.ts. */
  fused: Readonly<Record<'gpt_neox' | 'llama', readonly FusedKernelId[]>>;
}

/**
 * The ops a GPT-NeoX run is checked at (docs/RUNS.md): a check's `op` in reports, the double-float oracle's op on
 * recorded inputs and the causes' op kind. Each is one step's `check.op` (or the whole layer's); registry.test.ts
 * holds this list to the steps.
 */
export const CHECK_OPS = [
  'embed',
  'ln1',
  'qkv',
  'attention',
  'dense',
  'ln2',
  'fc1',
  'act',
  'fc2',
  'residual',
  'layer',
  'final_norm',
  'lm_head',
] as const;
export type CheckOp = (typeof CHECK_OPS)[number];

/**
 * The cause library's fused groups (compare/causes/types.ts OpKind): a check over a product and the op after it in
 * one kernel (`mlp_up`: the MLP's up projection with its activation), named by what it starts or ends with.
 */
export type LibraryGroup = 'attn_block' | 'mlp_up' | 'mlp_residual';

/**
 * The GPT-NeoX engine's plan ops (engine/fused-kernels.ts, plan.ts), which are its tap names: one step's `plan` (or its
 * slot). `rotary` writes the taps q, k, v; the attention core runs as scores, probs and ctx.
 */
export type PlanOp =
  | 'ln1'
  | 'qkv'
  | 'rotary'
  | 'scores'
  | 'probs'
  | 'ctx'
  | 'attn_out'
  | 'resid_mid'
  | 'ln2'
  | 'fc1'
  | 'gelu'
  | 'mlp_out'
  | 'out'
  | 'final_norm'
  | 'logits';

/** How a family's run checks a step on its own recorded inputs (compare/run-checks.ts): the words reports carry. */
export interface StepCheck {
  /** The check's id (within its layer: `layers.{i}.<id>`). */
  id: string;
  op: CheckOp;
  /** The op in words, for the verdict's sentence. */
  what: string;
  /** The HF module the check names, when not the step's own (the attention core: its container). */
  module?: string;
  /** The slots it reads, when not the step's inputs (the attention core, checked from the QKV output). */
  inputs?: readonly string[];
  /** A slot read in place of the first input where the run holds it (post_attention_layernorm's own recorded input). */
  firstIfHeld?: string;
}

/** One use of an op in a family's layer (or at the top): its output slot, the slots it reads, its weights. */
export interface OpStep {
  /** The output slot: the tap's name and the join key with the engine and runs (`ln1`, `q`, `attn_out`). */
  slot: string;
  op: OpKind;
  /** Slots read, in the op's argument order; `in` is the layer's input. */
  inputs: readonly string[];
  /** The field of the layer's (or the model's) weights it reads, when it reads any. */
  weight?: string;
  /** The HF module (layer-relative, or model-level at the top) whose forward output is this slot. */
  module?: string;
  width: SlotWidth;
  /** Present only where the config has the feature (Qwen3's q/k norms); a step left out passes its input through. */
  only?: ConfigFlag;
  /**
   * The config flag that gives a linear step its bias (`attentionBias`, `oProjBias`, `mlpBias`): a checkpoint holds
   * its `.bias` where the flag is true. A step with one holds LinearWeights (weight and bias, null where the flag is
   * false); a linear without one (the LM head) only ever holds its weight, one Tensor.
   */
  bias?: ConfigFlag;
  /** The engine's plan ops that compute it, when its engine runs the registry's names (GPT-NeoX; default: its slot). */
  plan?: readonly PlanOp[];
  /** Its run check, for a family whose runs are checked op by op on recorded inputs (GPT-NeoX). */
  check?: StepCheck;
  /**
   * The engine's taps its output is written as, in equal parts, where it is not one tap (GPT-NeoX's rotary: the
   * packed output is the taps q, k, v, each [H, T, hd]).
   */
  taps?: readonly string[];
  /**
   * The GPT-NeoX cause library's op it maps onto, for a family whose runs and why are read against that library
   * (the Llama family; a test fails on a Llama step without one): a check's `op`, whose words the page reads.
   */
  library?: CheckOp;
  /**
   * The library's fused group it is checked as where it is checked together with the steps that compute its inputs
   * (the SwiGLU product on the gate/up GEMM: the activation on its up projection, `mlp_up`).
   */
  libraryFused?: LibraryGroup;
  /**
   * The library op whose anatomy reads its output, where not `library`: q, k and v are the library's `qkv` for their
   * words and causes, but GPT-NeoX's QKV output is packed per head and theirs is not (read as a layer's rows).
   */
  anatomy?: CheckOp;
  /** The words of its column in a runs analysis' check grid ('q norm', 'o_proj'; a test fails on a Llama step without). */
  words?: string;
  /** Its column's words where it ends a group of steps checked together ('rotary + attention'). */
  groupWords?: string;
  /**
   * The HF module it is computed inside where no module of its own records it (the rotary and the attention core in
   * `self_attn`, the SwiGLU product in `mlp`): its check's module. A step with neither lives in the layer itself.
   */
  container?: string;
  /** How its module's `:in` and `:out` are recorded where not as rows [T, width]: `heads`, [T, heads, hd]. */
  recordedAs?: 'heads';
}

/** How a family's layer wires its residual stream (for words; the steps' inputs are the wiring). */
export type ResidualStyle = 'neox-parallel' | 'neox-sequential' | 'pre-norm-sequential';

export interface FamilySpec {
  family: 'gpt_neox' | 'llama';
  residual: ResidualStyle;
  /** The HF module path of layer i's prefix, e.g. `model.layers` (then `.{i}.`). */
  layerPrefix: string;
  /** embed, then (after the layers) the final norm and the LM head. */
  embed: OpStep;
  layer: readonly OpStep[];
  finalNorm: OpStep;
  lmHead: OpStep;
  /** Layer modules that wrap several steps (`self_attn`, `mlp`): their `:in` and `:out` slots (null: none). */
  containers: Readonly<Record<string, readonly [string | null, string | null]>>;
  /**
   * The layer's steps with weights (their slots) in the order HF registers their modules, which is a checkpoint's
   * and a state_dict's order, where it differs from the steps' (Qwen3 registers q/k norms after o_proj).
   */
  moduleOrder?: readonly string[];
  /** Model-level module names (`:in`/`:out` of a run) that are top slots: name -> slot. */
  topNames: Readonly<Record<string, string>>;
  /** The words of the whole layer's run check (op `layer`), for a family whose runs are checked op by op. */
  wholeLayer?: string;
}

/** What an fp64 form is given: the config, the rows, the layer, its inputs (fp64) and its weights. */
export interface Fp64Args {
  cfg: ModelConfig;
  T: number;
  /** The layer index (-1 at the top). */
  layer: number;
  step: OpStep;
  inputs: readonly Float64Array[];
  /** The step's weights (a Tensor, NormWeights or LinearWeights as the op kind reads them), or null. */
  weights: unknown;
  /** Tokens (the embedding reads them). */
  tokens: readonly number[];
  /** Rotary angles as the model writes them ('exact') or as HF computes them in fp32 ('hf-fp32'). */
  angles: 'exact' | 'hf-fp32';
  /**
   * A precision mode's storage rounding, for the intermediates an op stores between its own kernels (the attention
   * core's scores and probabilities); the forward applies it to every step's output itself. Identity: exact.
   */
  round: (v: Float64Array) => Float64Array;
  /**
   * A cause's variant of the op, as the op's single-op oracle takes it (kernels/cpu: RmsNormVariant,
   * LayerNormVariant, RotaryVariant, ScoresVariant): the way it is miswritten, as parameters. Absent: the model.
   */
  variant?: Readonly<Record<string, unknown>>;
  /**
   * Records an intermediate the op computes on its way, under the engine's plan name for it (the attention core's
   * `scores`, with the masked entries written as 0, and `probs`). Given only where the forward keeps the engine's
   * tap names (kernels/cpu/op-forward.ts `planNames`).
   */
  tap?: (name: string, v: Float64Array) => void;
}

/** An op's CPU fp64 form: its output, row-major, in the step's width. */
export type Fp64Form = (a: Fp64Args) => Float64Array;

/** How a cause changes a computation, by what it does (docs/CAUSES.md, "Cause families"). */
export type CauseFamily = 'narrower' | 'operands' | 'constants' | 'layout' | 'function' | 'randomness';

/**
 * One way an op could have been written (a cause of the why, docs/CAUSES.md): its id, family, words and parameters,
 * and what it changes — the config the op reads (`cfg`), a variant its fp64 form takes (`variant`, Fp64Args.variant),
 * or a form of its own (`form`), or both of the first two. It applies to the steps of its op kind.
 */
export interface CauseVariant {
  id: string;
  family: CauseFamily;
  words: string;
  params: Record<string, number | string>;
  cfg?: Partial<LlamaConfig>;
  variant?: Record<string, unknown>;
  /**
   * A form of its own for the steps it changes, in place of the registry's fp64 form (given the step's Fp64Args,
   * the cause's cfg and variant in them): what a variant cannot say — roundings inside the op, a running sum in
   * half, a key out of sight from some row on. An evaluator of causes must call it where it is set.
   */
  form?: Fp64Form;
  /**
   * A parameter the data can pin between the grid's values: the cause at any positive value of it. The rows scorer
   * (compare/family-causes-rows.ts) searches it around the grid's best and keeps what it finds where that explains
   * the error clearly better.
   */
  tune?: { key: string; value: number; make: (value: number) => CauseVariant };
}

/** What an op's causes are given: the config, the layer, the group's steps of the op's kind, what the run says. */
export interface CauseArgs {
  cfg: LlamaConfig;
  /** The layer of the group (-1 for a step outside the layers). */
  layer: number;
  /** The steps of the op's kind in the group (at least one). */
  steps: readonly OpStep[];
  /** In a run of a generation: its first decode row. */
  decodeFrom?: number;
  /** The rows (tokens) of the run. */
  rows?: number;
}

/** An op kind's cause variants for a group (the Llama family's why, compare/family-causes.ts). */
export type CausesForm = (a: CauseArgs) => CauseVariant[];

/** The type each form kind's slot holds. Only fp64 and variants are typed here; the other parts type theirs. */
export interface FormTypes {
  fp64: Fp64Form;
  wgsl: unknown;
  fused: unknown;
  df: unknown;
  causes: unknown;
  variants: CausesForm;
}
