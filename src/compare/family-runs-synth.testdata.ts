// Test support: run files of a Llama-family model made in TypeScript, as a PyTorch run records them — every step by
// the op registry's fp64 form (Hugging Face's fp32 rotary angles), its output stored at the run's dtype (F32 or BF16)
// and read back by the next step at that dtype — with one of the family's causes (family-causes.ts candidatesFor)
// planted at one layer's op. Also the reference path's own taps written as a run (a benign run of the GPU path).
import { inputSlot, slotOfLlamaName } from '../model/run-names';
import { type TensorToWrite, writeSafetensors } from '../model/safetensors-write';
import { roundArray } from '../numeric/round';
import type { DType, LlamaConfig, LlamaWeights } from '../numeric/types';
import { LLAMA_FAMILY, layerSteps } from '../ops/families';
import type { OpStep } from '../ops/types';
import { slotWidth } from '../ops/widths';
import { type Candidate, candidatesFor } from './family-causes';
import { computeCheck, type FamilyRunCheck, type GroupContext } from './family-runs-ops';

/** A cause planted at one layer: the candidate (its id, and its parameters where it has several) of one step. */
export interface FamilyPlant {
  layer: number;
  /** The step (slot) whose op the cause is a variant of. */
  slot: string;
  /** Other steps of the layer it is planted in too (a rotary's theta: both q's and k's). */
  also?: readonly string[];
  id: string;
  params?: Record<string, number | string>;
}

export interface FamilySynthOptions {
  dtype?: 'F32' | 'BF16';
  plant?: FamilyPlant;
  /** 'modules': HF module paths (every step a module returns, aliases too); 'hidden': hidden_states.* + logits. */
  names?: 'modules' | 'hidden';
  /** Layers whose module taps are left out (a run that hooked only some layers). */
  skipLayers?: readonly number[];
  label?: string;
  metadata?: Record<string, string>;
}

/** The candidate a plant names, or a line saying it is not one of the step's. */
export function plantedCandidate(cfg: LlamaConfig, plant: FamilyPlant): Candidate {
  const step = layerSteps(LLAMA_FAMILY, cfg).find((s) => s.slot === plant.slot);
  if (!step) throw new Error(`no step '${plant.slot}' in this model`);
  const want = plant.params ?? {};
  const c = candidatesFor({ steps: [step] }, cfg, plant.layer).find(
    (x) => x.id === plant.id && Object.entries(want).every(([k, v]) => x.params[k] === v),
  );
  if (!c) throw new Error(`no cause '${plant.id}' ${JSON.stringify(want)} of step '${plant.slot}'`);
  return c;
}

/** A name of a run made with module paths and its shape for T rows. */
type Named = [string, (T: number) => number[]];

/**
 * Every name a run made with module paths writes, by slot (registry names), in order: each `:in` and `:out` of the
 * family's layer modules (its steps' own, their containers, the layer itself; ops/families.ts) and the final norm's
 * input, where the reader's contract (model/run-names.ts slotOfLlamaName) lands it in a slot — so each slot under its
 * own module's name first, then its aliases. Rows [T, width], or [T, heads, hd] for a step recorded per head.
 */
function moduleNames(cfg: LlamaConfig): Map<string, Named[]> {
  const spec = LLAMA_FAMILY;
  const L = cfg.numLayers;
  const steps = layerSteps(spec, cfg);
  const modules = [
    ...new Set([...steps.flatMap((s) => s.module ?? []), ...Object.keys(spec.containers), '']),
  ];
  const perHead = new Set(steps.filter((s) => s.recordedAs === 'heads').map((s) => s.module));
  const candidates: [string, boolean][] = [];
  for (let i = 0; i < L; i++)
    for (const m of modules)
      for (const io of ['in', 'out'])
        candidates.push([`${spec.layerPrefix}.${i}${m ? `.${m}` : ''}:${io}`, perHead.has(m)]);
  candidates.push([`${spec.finalNorm.module}:in`, false]);
  const out = new Map<string, Named[]>();
  for (const [name, heads] of candidates) {
    const ref = slotOfLlamaName(name, L);
    if (!ref) continue;
    const w = slotWidth(cfg, ref.width);
    const hd = cfg.headDim;
    const shape = heads ? (T: number) => [T, w / hd, hd] : (T: number) => [T, w];
    out.set(ref.slot, [...(out.get(ref.slot) ?? []), [name, shape]]);
  }
  return out;
}

/** The fp64 forward of the model on the tokens as a run stores it: every slot (registry names) at `dtype`. */
export function synthSlots(
  cfg: LlamaConfig,
  w: LlamaWeights,
  tokens: readonly number[],
  dtype: DType,
  plant?: FamilyPlant,
): Map<string, Float32Array> {
  const ctx: GroupContext = { cfg, weights: w, tokens, angles: 'hf-fp32' };
  const cand = plant ? plantedCandidate(cfg, plant) : null;
  const store = (v: Float64Array) => Float32Array.from(dtype === 'BF16' ? roundArray('bf16', v) : v);
  const slots = new Map<string, Float32Array>();
  const one = (step: OpStep, layer: number | null, inputs: string[], output: string) => {
    const c: FamilyRunCheck = {
      id: output,
      op: 'layer',
      layer,
      module: '',
      what: '',
      inputs,
      output,
      steps: [step],
    };
    const at = plant && layer === plant.layer && [plant.slot, ...(plant.also ?? [])].includes(step.slot);
    // The candidate as the why builds it for this step (its own `applies` knows the why's step objects).
    const planted = cand && at ? { ...cand, applies: () => true } : null;
    slots.set(output, store(computeCheck(c, ctx, (s) => slots.get(s) ?? null, planted)));
  };
  one(LLAMA_FAMILY.embed, null, [], 'embed');
  for (let i = 0; i < cfg.numLayers; i++)
    for (const s of layerSteps(LLAMA_FAMILY, cfg))
      one(
        s,
        i,
        s.inputs.map((n) => (n === 'in' ? inputSlot(i) : `layers.${i}.${n}`)),
        `layers.${i}.${s.slot}`,
      );
  one(LLAMA_FAMILY.finalNorm, null, [inputSlot(cfg.numLayers)], 'final_norm');
  one(LLAMA_FAMILY.lmHead, null, ['final_norm'], 'logits');
  return slots;
}

/** Slots (registry names: the synth's, or the reference path's taps) written as a run file's tensors. */
export function runOfSlots(
  cfg: LlamaConfig,
  slots: ReadonlyMap<string, Float32Array>,
  tokens: readonly number[],
  o: FamilySynthOptions = {},
): Uint8Array {
  const T = tokens.length;
  const dtype = o.dtype ?? 'F32';
  const tensors: TensorToWrite[] = [];
  const put = (name: string, slot: string, shape: number[]) => {
    const data = slots.get(slot);
    if (data) tensors.push({ name, dtype, shape, data });
  };
  const d = cfg.hiddenSize;
  if ((o.names ?? 'modules') === 'hidden') {
    put('hidden_states.0', 'embed', [T, d]);
    for (let i = 0; i + 1 < cfg.numLayers; i++) put(`hidden_states.${i + 1}`, `layers.${i}.out`, [T, d]);
    put(`hidden_states.${cfg.numLayers}`, 'final_norm', [T, d]);
  } else {
    const spec = LLAMA_FAMILY;
    const names = moduleNames(cfg);
    const all = (slot: string) => {
      for (const [name, shape] of names.get(slot) ?? []) put(name, slot, shape(T));
    };
    put(`${spec.embed.module}:out`, 'embed', [T, d]);
    all('embed');
    for (let i = 0; i < cfg.numLayers; i++) {
      if (o.skipLayers?.includes(i)) continue;
      for (const s of layerSteps(spec, cfg)) all(`layers.${i}.${s.slot}`);
    }
    put(`${spec.finalNorm.module}:out`, 'final_norm', [T, d]);
    put(`${spec.lmHead.module}:in`, 'final_norm', [T, d]);
    // A module the contract does not use: skipped and listed.
    tensors.push({ name: 'model.rotary_emb:out', dtype, shape: [T, 2], data: new Float32Array(2 * T) });
  }
  put('logits', 'logits', [T, cfg.vocabSize]);
  const meta: Record<string, string> = { tokens: JSON.stringify(tokens), ...o.metadata };
  if (o.label) meta.label = o.label;
  return writeSafetensors(tensors, meta);
}

/** A run file of `tokens` on the model, as the options say (a cause planted where `plant` says). */
export function synthFamilyRun(
  cfg: LlamaConfig,
  w: LlamaWeights,
  tokens: readonly number[],
  o: FamilySynthOptions = {},
): Uint8Array {
  const dtype = o.dtype ?? 'F32';
  return runOfSlots(cfg, synthSlots(cfg, w, tokens, dtype, o.plant), tokens, o);
}

/**
 * The causes a test may plant at a layer of a model, each with the check it is born at (`layers.{i}.<group>`):
 * those that act on the model (the KV mapping and the scaling where the family offers them for it, the window where a
 * row sees past it; the rotary's where a row sees another position), with parameters far from the model's
 * (the eps farthest in its grid, 1e6 × the config’s; theta / 100).
 */
export function plantsFor(cfg: LlamaConfig, layer: number, T: number): [FamilyPlant, string][] {
  const steps = layerSteps(LLAMA_FAMILY, cfg);
  const opOf = new Map(steps.map((s) => [s.slot, s.op]));
  // Planted in the step and in the other steps of its op in the check's group (a rotary's: both q's and k's).
  const at = (
    slot: string,
    id: string,
    check: string,
    params?: FamilyPlant['params'],
  ): [FamilyPlant, string] => [
    {
      layer,
      slot,
      id,
      params,
      also: check.split('+').filter((s) => s !== slot && opOf.get(s) === opOf.get(slot)),
    },
    `layers.${layer}.${check}`,
  ];
  const attention = 'q_rot+k_rot+ctx';
  // A cause the family offers for this model's step only where it acts (the scaling, the KV mapping).
  const offers = (slot: string, id: string) =>
    candidatesFor({ steps: steps.filter((s) => s.slot === slot) }, cfg, layer).filter((c) => c.id === id);
  const offered = (slot: string, id: string) => offers(slot, id).length > 0;
  // The last of a cause's grid: the parameter farthest from the model's (an eps 1e6 × the config's).
  const farthest = (slot: string, id: string) => offers(slot, id).at(-1)?.params;
  const out: [FamilyPlant, string][] = [
    at('ln1', 'rms-eps-outside', 'ln1', farthest('ln1', 'rms-eps-outside')),
    at('ln2', 'rms-mean-subtracted', 'ln2'),
    at('ln1', 'rms-no-weight', 'ln1'),
    at('swiglu', 'swiglu-swapped', 'swiglu'),
    at('swiglu', 'swiglu-gelu', 'swiglu'),
    at('swiglu', 'swiglu-relu', 'swiglu'),
    at('mlp_out', 'output-bf16', 'mlp_out', { format: 'bf16' }),
    at('attn_out', 'output-fp16', 'attn_out', { format: 'fp16' }),
  ];
  // A rotary moves nothing at position 0: its causes need rows at other positions that see each other.
  const window = cfg.slidingWindow[layer];
  if (T >= 3 && window !== 1) {
    out.push(
      at('q_rot', 'rotary-gptj', attention),
      at('q_rot', 'rotary-theta', attention, { theta: cfg.ropeTheta * 0.01 }),
    );
    if (offered('q_rot', 'rotary-scaling-skipped'))
      out.push(at('q_rot', 'rotary-scaling-skipped', attention));
  }
  if (offered('ctx', 'kv-interleaved')) out.push(at('ctx', 'kv-interleaved', attention));
  // A window ignored changes the rows past it only.
  if (window !== null && T > window) out.push(at('ctx', 'window-ignored', attention));
  return out;
}
