// The names of a run file (docs/RUNS.md): Hugging Face module paths + `:in` / `:out` (what forward pre-/post-hooks
// on GPTNeoXForCausalLM.named_modules() give), `hidden_states.{i}`, `logits`, and TransformerLens cache names,
// each mapped onto one slot of the forward. A slot is the join key with the oracle and the engine's taps: `embed`,
// `layers.{i}.{ln1|qkv|ctx|attn_out|ln2_in|ln2|fc1|gelu|mlp_out|out}`, `final_norm`, `logits`. A layer's input is
// the previous layer's `out` (or `embed`), so `gpt_neox.layers.3:in` is the slot `layers.2.out`.
import { LLAMA_FAMILY, NEOX_SEQUENTIAL } from '../ops/families';
import type { FamilySpec, SlotWidth } from '../ops/types';

/** What a slot holds: its width per token (shape [T, width]). */
export type SlotKind = 'hidden' | 'qkv' | 'ff' | 'vocab';

// GPT-NeoX's names are read off the registry's sequential layer (src/ops/families.ts), which has every slot a run of
// either residual style holds: the parallel layer's post_attention_layernorm input is the slot `ln2_in` too.
const NEOX = NEOX_SEQUENTIAL;

/** The per-layer slots in forward order (the rotary's output, inside the attention core, is no run's). */
export const LAYER_SLOTS: readonly string[] = NEOX.layer.filter((s) => s.op !== 'rotary').map((s) => s.slot);

/** Where a name of a run file lands: its slot and layer (null for embed, final_norm, logits). */
export interface SlotRef {
  slot: string;
  layer: number | null;
  kind: SlotKind;
  /** TransformerLens' hook_z is [T, H, hd]; everything else is [T, width]. */
  heads?: boolean;
}

/** TransformerLens' cache names of a block (another naming scheme: aliases of the registry's slots). */
const TL_LAYER: Record<string, string> = {
  hook_resid_pre: 'in',
  hook_resid_mid: 'ln2_in',
  hook_resid_post: 'out',
  hook_attn_out: 'attn_out',
  hook_mlp_out: 'mlp_out',
  'ln1.hook_normalized': 'ln1',
  'ln2.hook_normalized': 'ln2',
  'mlp.hook_pre': 'fc1',
  'mlp.hook_post': 'gelu',
  'attn.hook_z': 'ctx',
};

const TOP: Record<string, string> = {
  ...NEOX.topNames,
  hook_embed: 'embed',
  'ln_final.hook_normalized': 'final_norm',
};

const WIDTH = new Map(NEOX.layer.map((s) => [s.slot, s.width]));

export function slotKind(slot: string): SlotKind {
  if (slot === 'logits') return 'vocab';
  const w = WIDTH.get(slot.slice(slot.lastIndexOf('.') + 1));
  return w === 'qkv' ? 'qkv' : w === 'ff' ? 'ff' : 'hidden';
}

/** The slot a layer's input is: the previous layer's output, or the embeddings. */
export function inputSlot(layer: number): string {
  return layer === 0 ? 'embed' : `layers.${layer - 1}.out`;
}

function layerRef(layer: number, s: string, heads = false): SlotRef {
  const slot = s === 'in' ? inputSlot(layer) : `layers.${layer}.${s}`;
  return { slot, layer: s === 'in' ? (layer === 0 ? null : layer - 1) : layer, kind: slotKind(slot), heads };
}

/**
 * The slot a run file's tensor name lands in, or null for names the contract does not use (other modules such as
 * the rotary embedding, dropouts inside attention): those are skipped and listed. `layers` is the model's count:
 * a layer index past it is reported by the caller (a run of another model), so it is returned as it is.
 */
export function slotOfName(name: string, numLayers: number): SlotRef | null {
  // Own names only: a tensor named like an Object property (`constructor`) is no name of the contract.
  const top = Object.hasOwn(TOP, name) ? TOP[name] : undefined;
  if (top !== undefined) return { slot: top, layer: null, kind: slotKind(top) };
  if (name === `${NEOX.finalNorm.module}:in`) return layerRef(numLayers, 'in');
  let m = /^hidden_states\.(\d+)$/.exec(name);
  if (m) {
    const i = Number(m[1]);
    if (i === numLayers) return { slot: 'final_norm', layer: null, kind: 'hidden' };
    return layerRef(i, 'in');
  }
  m = NEOX_MODULE_NAME.exec(name);
  if (m) {
    const s = neoxModules().get(m[2] ?? '')?.[m[3] === 'in' ? 0 : 1];
    return s === undefined || s === null ? null : layerRef(Number(m[1]), s);
  }
  m = /^blocks\.(\d+)\.([a-z0-9_.]+)$/.exec(name);
  if (m) {
    const s = Object.hasOwn(TL_LAYER, m[2]) ? TL_LAYER[m[2]] : undefined;
    return s === undefined ? null : layerRef(Number(m[1]), s, m[2] === 'attn.hook_z');
  }
  return null;
}

/** The layer index a name mentions (for "a run of another model" messages), or null. */
export function layerIndexIn(name: string): number | null {
  const m = new RegExp(`^(?:${PREFIX}|blocks|hidden_states)\\.(\\d+)`).exec(name);
  return m ? Number(m[1]) : null;
}

const PREFIX = NEOX.layerPrefix.replace(/\./g, '\\.');
const NEOX_MODULE_NAME = new RegExp(`^${PREFIX}\\.(\\d+)(?:\\.([a-z0-9_.]+))?:(in|out)$`);
/** The `:in` / `:out` slots of GPT-NeoX's layer modules: its steps' modules and the wrapping ones (layerModules). */
let neoxModuleSlots: Map<string, readonly [string | null, string | null]> | undefined;
const neoxModules = () => (neoxModuleSlots ??= layerModules(NEOX));

// The Llama family's names (docs/FAMILIES.md), read off the op registry's steps (src/ops/families.ts): each step's
// HF module `model.layers.{i}.<module>` gives its slot at `:out` and its first input's at `:in`; the wrapping modules
// (`self_attn`, `mlp`) and the model-level names come from the family's spec. `hidden_states.{L}` is the final norm's
// output, as for GPT-NeoX. Slots are `layers.{i}.{slot}` with the registry's slot names (`q`, `k_norm`, `gate`, …).

/** Where a name of a Llama-family run file lands: its slot, its layer (null at the top) and its row width. */
export interface FamilySlotRef {
  slot: string;
  layer: number | null;
  width: SlotWidth;
}

function familyLayerRef(spec: FamilySpec, layer: number, s: string): FamilySlotRef {
  if (s === 'in') return { slot: inputSlot(layer), layer: layer === 0 ? null : layer - 1, width: 'hidden' };
  const step = spec.layer.find((x) => x.slot === s);
  return { slot: `layers.${layer}.${s}`, layer, width: step?.width ?? 'hidden' };
}

/** `:in` / `:out` slot of each layer module of a family: the steps' modules and the wrapping ones. */
function layerModules(spec: FamilySpec): Map<string, readonly [string | null, string | null]> {
  const m = new Map<string, readonly [string | null, string | null]>();
  for (const step of spec.layer)
    if (step.module !== undefined) m.set(step.module, [step.inputs[0] ?? null, step.slot]);
  for (const [name, io] of Object.entries(spec.containers)) m.set(name, io);
  m.set('', ['in', 'out']); // the layer itself: its input and output
  return m;
}

const MODULES = new Map<FamilySpec, Map<string, readonly [string | null, string | null]>>();

/**
 * The slot a run file's tensor name lands in for a family of the registry, or null for names the contract does not
 * use (the rotary embedding module, the Llama family's `mlp.act_fn:out`): those are skipped and listed by the caller.
 * A layer index past `numLayers` is returned as it is (a run of another model, reported by the caller).
 */
export function slotOfFamilyName(spec: FamilySpec, name: string, numLayers: number): FamilySlotRef | null {
  const top = spec.topNames[name];
  if (top !== undefined) return { slot: top, layer: null, width: top === 'logits' ? 'vocab' : 'hidden' };
  if (name === `${spec.finalNorm.module}:in`) return familyLayerRef(spec, numLayers, 'in');
  let m = /^hidden_states\.(\d+)$/.exec(name);
  if (m) {
    const i = Number(m[1]);
    if (i === numLayers) return { slot: 'final_norm', layer: null, width: 'hidden' };
    return familyLayerRef(spec, i, 'in');
  }
  const prefix = spec.layerPrefix.replace(/\./g, '\\.');
  m = new RegExp(`^${prefix}\\.(\\d+)(?:\\.([a-z0-9_.]+))?:(in|out)$`).exec(name);
  if (!m) return null;
  let modules = MODULES.get(spec);
  if (!modules) MODULES.set(spec, (modules = layerModules(spec)));
  const io = modules.get(m[2] ?? '');
  const s = io?.[m[3] === 'in' ? 0 : 1];
  return s === undefined || s === null ? null : familyLayerRef(spec, Number(m[1]), s);
}

/** The slot a Llama-family run file's tensor name lands in (slotOfFamilyName of LLAMA_FAMILY). */
export function slotOfLlamaName(name: string, numLayers: number): FamilySlotRef | null {
  return slotOfFamilyName(LLAMA_FAMILY, name, numLayers);
}

/** The layer index a name of a family's run mentions (`model.layers.3…`, `hidden_states.3`), or null. */
export function familyLayerIndexIn(spec: FamilySpec, name: string): number | null {
  const m =
    /^hidden_states\.(\d+)$/.exec(name) ??
    new RegExp(`^${spec.layerPrefix.replace(/\./g, '\\.')}\\.(\\d+)`).exec(name);
  return m ? Number(m[1]) : null;
}
