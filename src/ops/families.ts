// Each family as its ordered list of op steps (docs/FAMILIES.md): the layer's steps in HF's order of computation,
// their inputs (the residual wiring), their weights and their HF module names; the embedding, the final norm and
// the LM head around them. The fp64 forward (kernels/cpu/op-forward.ts) and the names of runs (model/run-names.ts)
// iterate these lists. Past 400 lines for a reason: two thirds of it is the two families' step lists, data read
// together; the queries over them below are short and read those lists alone.

import type { ModelConfig } from '../numeric/types';
import type { CheckOp, FamilySpec, LibraryGroup, OpStep, PlanOp } from './types';

const s = (
  slot: string,
  op: OpStep['op'],
  inputs: readonly string[],
  width: OpStep['width'],
  more: Partial<OpStep> = {},
): OpStep => ({ slot, op, inputs, width, ...more });

/** A name table without Object's own properties: a run's tensor named `constructor` is no model-level name. */
const names = (t: Record<string, string>): Readonly<Record<string, string>> =>
  Object.assign(Object.create(null) as Record<string, string>, t);

/** A Llama step's library op (OpStep.library) and the words of its column in a runs analysis. */
const library = (op: CheckOp, words: string): Partial<OpStep> => ({ library: op, words });

/**
 * The q, k and v steps (projections, norms, rotary) are the library's QKV for words and causes; the anatomy reads
 * their rows as a layer's (GPT-NeoX's QKV output is packed per head, theirs is not).
 */
const QKV: Partial<OpStep> = { library: 'qkv', anatomy: 'layer' };

/** Llama, Qwen2, Qwen3, Mistral: pre-norm, sequential residual, SwiGLU MLP, GQA with RoPE per head. */
export const LLAMA_FAMILY: FamilySpec = {
  family: 'llama',
  residual: 'pre-norm-sequential',
  layerPrefix: 'model.layers',
  embed: s('embed', 'embedding', [], 'hidden', {
    weight: 'embedTokens',
    module: 'model.embed_tokens',
    library: 'embed',
  }),
  layer: [
    s('ln1', 'rmsnorm', ['in'], 'hidden', {
      weight: 'inputLayernorm',
      module: 'input_layernorm',
      ...library('ln1', 'ln1'),
    }),
    s('q', 'q_proj', ['ln1'], 'q', {
      weight: 'q',
      module: 'self_attn.q_proj',
      bias: 'attentionBias',
      ...QKV,
      words: 'q',
    }),
    s('k', 'k_proj', ['ln1'], 'kv', {
      weight: 'k',
      module: 'self_attn.k_proj',
      bias: 'attentionBias',
      ...QKV,
      words: 'k',
    }),
    s('v', 'v_proj', ['ln1'], 'kv', {
      weight: 'v',
      module: 'self_attn.v_proj',
      bias: 'attentionBias',
      ...QKV,
      words: 'v',
    }),
    // HF's q/k norms run on the heads' view: their modules' inputs and outputs are [T, heads, hd].
    s('q_norm', 'qk_norm', ['q'], 'q', {
      weight: 'qNorm',
      module: 'self_attn.q_norm',
      only: 'qkNorm',
      recordedAs: 'heads',
      ...QKV,
      words: 'q norm',
    }),
    s('k_norm', 'qk_norm', ['k'], 'kv', {
      weight: 'kNorm',
      module: 'self_attn.k_norm',
      only: 'qkNorm',
      recordedAs: 'heads',
      ...QKV,
      words: 'k norm',
    }),
    s('q_rot', 'rotary', ['q_norm'], 'q_heads', { container: 'self_attn', ...QKV, words: 'q_rot' }),
    s('k_rot', 'rotary', ['k_norm'], 'kv_heads', { container: 'self_attn', ...QKV, words: 'k_rot' }),
    s('ctx', 'attention', ['q_rot', 'k_rot', 'v'], 'q', {
      container: 'self_attn',
      ...library('attention', 'attention core'),
      groupWords: 'rotary + attention',
    }),
    s('attn_out', 'out_proj', ['ctx'], 'hidden', {
      weight: 'o',
      module: 'self_attn.o_proj',
      bias: 'oProjBias',
      ...library('dense', 'o_proj'),
    }),
    // HF: `hidden_states = residual + hidden_states` (the mid-residual is post_attention_layernorm's input).
    s('ln2_in', 'residual', ['in', 'attn_out'], 'hidden', library('residual', 'add (attn)')),
    s('ln2', 'rmsnorm', ['ln2_in'], 'hidden', {
      weight: 'postAttentionLayernorm',
      module: 'post_attention_layernorm',
      ...library('ln2', 'ln2'),
    }),
    s('gate', 'gate_up', ['ln2'], 'ff', {
      weight: 'gate',
      module: 'mlp.gate_proj',
      bias: 'mlpBias',
      ...library('fc1', 'gate'),
    }),
    s('up', 'gate_up', ['ln2'], 'ff', {
      weight: 'up',
      module: 'mlp.up_proj',
      bias: 'mlpBias',
      ...library('fc1', 'up'),
    }),
    // With the gate/up GEMM in its group it is the library's activation on its up projection (GPT-NeoX's fused MLP).
    s('swiglu', 'swiglu', ['gate', 'up'], 'ff', {
      container: 'mlp',
      ...library('act', 'SwiGLU'),
      libraryFused: 'mlp_up',
    }),
    s('mlp_out', 'mlp_down', ['swiglu'], 'hidden', {
      weight: 'down',
      module: 'mlp.down_proj',
      bias: 'mlpBias',
      ...library('fc2', 'down'),
    }),
    s('out', 'residual', ['ln2_in', 'mlp_out'], 'hidden', {
      module: '',
      ...library('residual', 'add (mlp)'),
    }),
  ],
  finalNorm: s('final_norm', 'final_norm', [], 'hidden', {
    weight: 'norm',
    module: 'model.norm',
    library: 'final_norm',
  }),
  // A checkpoint's order: HF's attention registers q, k, v, o_proj before Qwen3's q/k norms.
  moduleOrder: ['ln1', 'q', 'k', 'v', 'attn_out', 'q_norm', 'k_norm', 'ln2', 'gate', 'up', 'mlp_out'],
  // mlp.act_fn's output is silu(gate) alone, which no step keeps (the swiglu step is its product with up).
  containers: { self_attn: ['ln1', 'attn_out'], mlp: ['ln2', 'mlp_out'], 'mlp.act_fn': ['gate', null] },
  lmHead: s('logits', 'lm_head', ['final_norm'], 'vocab', {
    weight: 'lmHead',
    module: 'lm_head',
    library: 'lm_head',
  }),
  topNames: names({
    'model.embed_tokens:out': 'embed',
    'model.norm:out': 'final_norm',
    'model:out': 'final_norm',
    'lm_head:in': 'final_norm',
    'lm_head:out': 'logits',
    ':out': 'logits',
    logits: 'logits',
  }),
};

/**
 * GPT-NeoX's layer; `parallel` (use_parallel_residual) decides the residual wiring. Its steps also carry the names
 * the engine's plan (`plan`) and the run checks (`check`) give them: reports, permalinks and runs links keep these
 * words and ids (docs/REPORT.md, docs/RUNS.md).
 */
function neoxFamily(parallel: boolean): FamilySpec {
  const attn: OpStep[] = [
    s('ln1', 'layernorm', ['in'], 'hidden', {
      weight: 'inputLayernorm',
      module: 'input_layernorm',
      check: { id: 'ln1', op: 'ln1', what: 'input_layernorm' },
    }),
    s('qkv', 'qkv', ['ln1'], 'qkv', {
      weight: 'qkv',
      module: 'attention.query_key_value',
      check: { id: 'qkv', op: 'qkv', what: 'the QKV projection' },
    }),
    s('qkv_rot', 'rotary', ['qkv'], 'qkv_heads', { plan: ['rotary'], taps: ['q', 'k', 'v'] }),
    // HF exposes no module for the core: it is checked from the QKV output to attention.dense's input.
    s('ctx', 'attention', ['qkv_rot'], 'hidden', {
      plan: ['scores', 'probs', 'ctx'],
      check: {
        id: 'attention',
        op: 'attention',
        what: 'the attention core (rotary, scores, softmax, values)',
        module: 'attention',
        inputs: ['qkv'],
      },
    }),
    s('attn_out', 'out_proj', ['ctx'], 'hidden', {
      weight: 'dense',
      module: 'attention.dense',
      check: { id: 'dense', op: 'dense', what: 'the attention output projection' },
    }),
  ];
  const ln2 = (from: string) =>
    s('ln2', 'layernorm', [from], 'hidden', {
      weight: 'postAttentionLayernorm',
      module: 'post_attention_layernorm',
      check: {
        id: 'ln2',
        op: 'ln2',
        what: 'post_attention_layernorm',
        ...(from === 'in' ? { firstIfHeld: 'ln2_in' } : {}),
      },
    });
  const mlp: OpStep[] = [
    s('fc1', 'mlp_up', ['ln2'], 'ff', {
      weight: 'fc1',
      module: 'mlp.dense_h_to_4h',
      check: { id: 'fc1', op: 'fc1', what: 'mlp.dense_h_to_4h' },
    }),
    s('gelu', 'gelu', ['fc1'], 'ff', {
      module: 'mlp.act',
      check: { id: 'act', op: 'act', what: 'the GELU (mlp.act)' },
    }),
    s('mlp_out', 'mlp_down', ['gelu'], 'hidden', {
      weight: 'fc2',
      module: 'mlp.dense_4h_to_h',
      check: { id: 'fc2', op: 'fc2', what: 'mlp.dense_4h_to_h' },
    }),
  ];
  // HF: parallel `mlp_output + attn_output + hidden_states`; sequential `attn_output = attn + x`, then `mlp + that`.
  const layer = parallel
    ? [
        ...attn,
        ln2('in'),
        ...mlp,
        s('out', 'residual', ['mlp_out', 'attn_out', 'in'], 'hidden', {
          module: '',
          check: {
            id: 'residual',
            op: 'residual',
            what: "the residual add (MLP output + attention output + the layer's input)",
          },
        }),
      ]
    : [
        ...attn,
        s('ln2_in', 'residual', ['attn_out', 'in'], 'hidden', {
          plan: ['resid_mid'],
          check: {
            id: 'residual_attn',
            op: 'residual',
            what: "the attention residual add (attention output + the layer's input)",
            module: '',
          },
        }),
        ln2('ln2_in'),
        ...mlp,
        s('out', 'residual', ['mlp_out', 'ln2_in'], 'hidden', {
          module: '',
          check: {
            id: 'residual_mlp',
            op: 'residual',
            what: 'the MLP residual add (MLP output + the attention residual)',
          },
        }),
      ];
  return {
    family: 'gpt_neox',
    residual: parallel ? 'neox-parallel' : 'neox-sequential',
    layerPrefix: 'gpt_neox.layers',
    embed: s('embed', 'embedding', [], 'hidden', {
      weight: 'embedIn',
      module: 'gpt_neox.embed_in',
      check: { id: 'embed', op: 'embed', what: 'the embedding' },
    }),
    layer,
    finalNorm: s('final_norm', 'final_norm', [], 'hidden', {
      weight: 'finalLayerNorm',
      module: 'gpt_neox.final_layer_norm',
      check: { id: 'final_norm', op: 'final_norm', what: 'final_layer_norm' },
    }),
    lmHead: s('logits', 'lm_head', ['final_norm'], 'vocab', {
      weight: 'lmHead',
      module: 'lm_head',
      check: { id: 'lm_head', op: 'lm_head', what: 'the LM head' },
    }),
    containers: {
      attention: ['ln1', 'attn_out'],
      mlp: ['ln2', 'mlp_out'],
      post_attention_dropout: ['attn_out', 'attn_out'],
      post_mlp_dropout: ['mlp_out', 'mlp_out'],
    },
    topNames: names({
      'gpt_neox.embed_in:out': 'embed',
      'gpt_neox.emb_dropout:in': 'embed',
      'gpt_neox.emb_dropout:out': 'embed',
      'gpt_neox.final_layer_norm:out': 'final_norm',
      'gpt_neox:out': 'final_norm',
      'embed_out:in': 'final_norm',
      'lm_head:in': 'final_norm',
      'embed_out:out': 'logits',
      'lm_head:out': 'logits',
      ':out': 'logits',
      logits: 'logits',
    }),
    wholeLayer: 'the whole layer',
  };
}

export const NEOX_PARALLEL = neoxFamily(true);
export const NEOX_SEQUENTIAL = neoxFamily(false);

/** The family spec of a config. */
export function familyOf(cfg: ModelConfig): FamilySpec {
  if (cfg.family === 'llama') return LLAMA_FAMILY;
  return cfg.useParallelResidual ? NEOX_PARALLEL : NEOX_SEQUENTIAL;
}

/** Whether the config has a step's optional feature. */
function present(step: OpStep, cfg: ModelConfig): boolean {
  return step.only === undefined || (cfg.family === 'llama' && cfg[step.only]);
}

/**
 * The layer steps a config runs: optional steps it lacks left out, and a slot read from a left-out step read from
 * that step's own input instead (a left-out op is the identity: without q/k norms the rotary reads q and k).
 */
export function layerSteps(spec: FamilySpec, cfg: ModelConfig): OpStep[] {
  const alias = new Map<string, string>();
  const out: OpStep[] = [];
  for (const step of spec.layer) {
    const inputs = step.inputs.map((i) => alias.get(i) ?? i);
    if (!present(step, cfg)) {
      alias.set(step.slot, inputs[0]);
      continue;
    }
    out.push({ ...step, inputs });
  }
  return out;
}

/** Where an op kind is used: each family's slots and HF modules for it (words for reports, the why, a dump's names). */
export function usesOf(op: OpStep['op']): { family: string; slot: string; module: string | null }[] {
  const out: { family: string; slot: string; module: string | null }[] = [];
  for (const spec of [LLAMA_FAMILY, NEOX_PARALLEL, NEOX_SEQUENTIAL]) {
    const name = spec.family === 'llama' ? 'llama' : spec.residual;
    const top = [spec.embed, spec.finalNorm, spec.lmHead];
    for (const step of [...top, ...spec.layer]) {
      if (step.op !== op) continue;
      const layerLevel = !top.includes(step);
      const module =
        step.module === undefined
          ? null
          : layerLevel
            ? `${spec.layerPrefix}.{i}${step.module ? `.${step.module}` : ''}`
            : step.module;
      out.push({ family: name, slot: layerLevel ? `layers.{i}.${step.slot}` : step.slot, module });
    }
  }
  return out;
}

/**
 * The cause library's op a group of a family's steps is checked as (OpStep.library): its last step's, or, where that
 * step is checked together with the steps that compute its inputs, the library's fused group it makes with them.
 */
export function libraryOpOf(steps: readonly OpStep[]): CheckOp | LibraryGroup {
  const last = steps[steps.length - 1];
  if (steps.length > 1 && last.libraryFused) return last.libraryFused;
  if (!last.library) throw new Error(`step '${last.slot}' has no library op`);
  return last.library;
}

/** The library op whose anatomy reads a group's output: its last step's (OpStep.anatomy), else the group's op. */
export function anatomyOpOf<Op extends string>(steps: readonly OpStep[], op: Op): Op | CheckOp {
  return steps[steps.length - 1]?.anatomy ?? op;
}

/** The engine's plan ops of a family's layer, in order (a step's `plan`, or its slot): GPT-NeoX's tap names. */
export function planOpsOf(spec: FamilySpec): PlanOp[] {
  return spec.layer.flatMap((step) => step.plan ?? [step.slot as PlanOp]);
}

/**
 * The step a GPT-NeoX check op is at (the sequential layer's, which has every step; `layer` has none): its op kind,
 * weights and module. The parallel layer's steps differ from it only in the residual wiring.
 */
export function neoxStepOfCheck(op: CheckOp): OpStep | null {
  const spec = NEOX_SEQUENTIAL;
  return [spec.embed, ...spec.layer, spec.finalNorm, spec.lmHead].find((s) => s.check?.op === op) ?? null;
}

/**
 * The steps a run check re-runs, in order (`id` the check's id within its layer, or at the top): its own step and
 * the steps before it that no check covers and that it reads (the rotary inside the attention core); for the whole
 * layer (`layer`), every step of the config's layer. Empty for an id the family has no check of.
 */
export function checkSteps(spec: FamilySpec, cfg: ModelConfig, layer: number | null, id: string): OpStep[] {
  if (layer === null) return [spec.embed, spec.finalNorm, spec.lmHead].filter((s) => s.check?.id === id);
  const steps = layerSteps(spec, cfg);
  if (id === 'layer') return steps;
  const at = steps.findIndex((s) => s.check?.id === id);
  if (at < 0) return [];
  const out = [steps[at]];
  for (let j = at - 1; j >= 0; j--) {
    const s = steps[j];
    if (!s.check && out[0].inputs.includes(s.slot)) out.unshift(s);
  }
  return out;
}

/** A GPT-NeoX step's engine tap: its last plan op, or its slot (`resid_mid` for `ln2_in`). */
const neoxTapOf = (step: OpStep): string => step.plan?.at(-1) ?? step.slot;

/** The run-file slot of each GPT-NeoX layer tap a run has a slot for (the rotary's q, k, v are no run's). */
const NEOX_SLOT_OF_TAP: ReadonlyMap<string, string> = new Map(
  NEOX_SEQUENTIAL.layer.filter((step) => !step.taps).map((step) => [neoxTapOf(step), step.slot]),
);

const NEOX_TOP_TAPS = new Set(
  [NEOX_SEQUENTIAL.embed, NEOX_SEQUENTIAL.finalNorm, NEOX_SEQUENTIAL.lmHead].map(neoxTapOf),
);

/**
 * A GPT-NeoX engine tap under its run-file slot (`layers.{i}.resid_mid` is the run's `layers.{i}.ln2_in`); a name
 * that is its own slot, or no run's, comes back as it is. The one place the engine's names meet the runs'.
 */
export function neoxSlotOfTap(name: string): string {
  const m = /^(layers\.\d+\.)(.+)$/.exec(name);
  return m ? m[1] + (NEOX_SLOT_OF_TAP.get(m[2]) ?? m[2]) : name;
}

/** Whether a GPT-NeoX engine tap is one a run file has a slot for (its decode is recorded as a run). */
export function neoxTapHasSlot(name: string): boolean {
  const m = /^layers\.\d+\.(.+)$/.exec(name);
  return m ? NEOX_SLOT_OF_TAP.has(m[1]) : NEOX_TOP_TAPS.has(name);
}
