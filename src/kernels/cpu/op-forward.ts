// The fp64 forward of any family, read off the op registry (src/ops/): the family's steps in order, each computed
// by its op's fp64 form (op-fp64.ts) from the slots it reads. Same dump contract as the GPT-NeoX oracle
// (forward.ts): embeddings [T, d], layers[i] = residual after layer i, finalNorm [T, d], logits [T, V]; taps
// `embed`, `layers.{i}.{slot}` for every step's slot, `final_norm`, `logits`.

import type { HiddenDump, ModelConfig } from '../../numeric/types';
import { familyOf, layerSteps } from '../../ops/families';
import { formOf } from '../../ops/slots';
import type { FamilySpec, Fp64Args, OpStep } from '../../ops/types';
import './op-fp64';

export interface OpForwardOptions {
  /** Rotary angles: 'exact' (default) or HF's fp32 ones (rotary-angles.ts). */
  angles?: Fp64Args['angles'];
  /** Applied to every step's output: the storage rounding of a precision mode (absent: exact fp64). */
  round?: (v: Float64Array) => Float64Array;
  /** A cause's variant of the steps it names (`layers.{i}.{slot}` or a top slot), passed to their fp64 forms. */
  variants?: ReadonlyMap<string, Readonly<Record<string, unknown>>>;
  /**
   * Taps under the engine's plan names (GPT-NeoX's taps, the join key with its GPU plans; docs/REPORT.md) instead
   * of the steps' slots: a step's output under its last plan op (`resid_mid` for the slot `ln2_in`), split into its
   * `taps` where it has them (q, k, v), and the intermediates its form records (the attention core's scores, probs).
   */
  planNames?: boolean;
}

/** Weights of any family: model-level fields by the steps' `weight` names, and `layers`. */
export interface FamilyWeights {
  layers: readonly object[];
}

function field(obj: object, name: string | undefined, slot: string): unknown {
  if (name === undefined) return null;
  const v = (obj as Record<string, unknown>)[name];
  if (v === undefined || v === null) throw new Error(`${slot}: the weights have no '${name}'`);
  return v;
}

function run(
  cfg: ModelConfig,
  step: OpStep,
  layer: number,
  inputs: Float64Array[],
  weights: unknown,
  tokens: readonly number[],
  opts: OpForwardOptions,
  tap?: (name: string, v: Float64Array) => void,
): Float64Array {
  const out = formOf(
    'fp64',
    step.op,
  )({
    cfg,
    T: tokens.length,
    layer,
    step,
    inputs,
    weights,
    tokens,
    angles: opts.angles ?? 'exact',
    round: opts.round ?? ((v) => v),
    variant: opts.variants?.get(layer < 0 ? step.slot : `layers.${layer}.${step.slot}`),
    ...(tap && opts.planNames ? { tap } : {}),
  });
  return opts.round ? opts.round(out) : out;
}

/** A step's output tapped under its slot, or under the engine's plan names (OpForwardOptions.planNames). */
function tapStep(
  step: OpStep,
  out: Float64Array,
  tap: (name: string, v: Float64Array) => void,
  plan: boolean,
) {
  if (!plan) return tap(step.slot, out);
  if (!step.taps) return tap(step.plan?.at(-1) ?? step.slot, out);
  const n = out.length / step.taps.length;
  step.taps.forEach((name, j) => {
    tap(name, out.slice(j * n, (j + 1) * n));
  });
}

/**
 * One layer of the config's family on the residual stream x [T, d]: every step in order, each tapped as
 * `layers.{i}.{slot}`. Returns the layer's output (the slot `out`).
 */
export function opLayer(
  cfg: ModelConfig,
  layerWeights: object,
  x: Float64Array,
  tokens: readonly number[],
  i: number,
  taps?: Map<string, Float64Array>,
  opts: OpForwardOptions = {},
  spec: FamilySpec = familyOf(cfg),
): Float64Array {
  const env = new Map<string, Float64Array>([['in', x]]);
  for (const step of layerSteps(spec, cfg)) {
    const inputs = step.inputs.map((name) => {
      const v = env.get(name);
      if (v === undefined) throw new Error(`layer ${i} ${step.slot}: reads '${name}' before it is computed`);
      return v;
    });
    const p = `layers.${i}.`;
    const tap = taps && ((name: string, v: Float64Array) => taps.set(p + name, v));
    const out = run(cfg, step, i, inputs, field(layerWeights, step.weight, step.slot), tokens, opts, tap);
    env.set(step.slot, out);
    if (tap) tapStep(step, out, tap, opts.planNames ?? false);
  }
  const out = env.get('out');
  if (out === undefined) throw new Error(`layer ${i}: the family's steps compute no 'out'`);
  return out;
}

/** The whole forward of `cfg`'s family on `tokens` (positions 0..T-1), every op in fp64 on the fp32 weights. */
export function opForward(
  cfg: ModelConfig,
  w: FamilyWeights,
  tokens: readonly number[],
  taps?: Map<string, Float64Array>,
  opts: OpForwardOptions = {},
): HiddenDump<Float64Array> {
  const T = tokens.length;
  if (T === 0) throw new Error('opForward: empty token list');
  if (w.layers.length !== cfg.numLayers) {
    throw new Error(`opForward: ${w.layers.length} layer weights for numLayers ${cfg.numLayers}`);
  }
  const spec = familyOf(cfg);
  const embeddings = run(cfg, spec.embed, -1, [], field(w, spec.embed.weight, 'embed'), tokens, opts);
  taps?.set('embed', embeddings);
  const layers: Float64Array[] = [];
  let x = embeddings;
  for (let i = 0; i < cfg.numLayers; i++) {
    x = opLayer(cfg, w.layers[i], x, tokens, i, taps, opts, spec);
    layers.push(x);
  }
  const finalNorm = run(
    cfg,
    spec.finalNorm,
    -1,
    [x],
    field(w, spec.finalNorm.weight, 'final_norm'),
    tokens,
    opts,
  );
  const logits = run(cfg, spec.lmHead, -1, [finalNorm], field(w, spec.lmHead.weight, 'logits'), tokens, opts);
  taps?.set('final_norm', finalNorm);
  taps?.set('logits', logits);
  return { T, d: cfg.hiddenSize, V: cfg.vocabSize, embeddings, layers, finalNorm, logits };
}
