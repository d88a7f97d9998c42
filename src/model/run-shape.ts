// Where each name of a run file lands and the shapes its tensor may have there (run-file.ts reads a run with these):
// GPT-NeoX's names (run-names.ts slotOfName, TransformerLens' hook_z per head) and a registry family's (the Llama
// family's, slotOfFamilyName; q and k also per head). A tensor of another shape is refused in one line.
import type { LlamaConfig, NeoXConfig } from '../numeric/types';
import type { FamilySpec } from '../ops/types';
import { headsOf, slotWidth } from '../ops/widths';
import { ModelLoadError, quoteName } from './errors';
import { type SlotRef, slotOfFamilyName } from './run-names';
import type { SafetensorsEntry } from './safetensors';

/** Where a name of a run lands, in either family's names: its slot and the shapes its tensor may have. */
export interface NameRef {
  slot: string;
  /** The shapes a tensor of T rows may have there: [T, width] first (the one said when it has another). */
  shapes: (T: number) => number[][];
}

/** GPT-NeoX's: [T, width] (TransformerLens' hook_z: [T, H, head_dim]). */
export function neoxRef(ref: SlotRef, cfg: NeoXConfig): NameRef {
  const width = slotWidth(cfg, ref.kind);
  return { slot: ref.slot, shapes: (T) => [ref.heads ? [T, cfg.numHeads, cfg.headDim] : [T, width]] };
}

/**
 * A family's (the Llama family's): [T, width]; q and k (and their per-head norms) also as [T, heads, head_dim],
 * which is how Hugging Face hands them to Qwen3's q_norm and k_norm (the same elements in the same order).
 */
export function familyRef(name: string, spec: FamilySpec, cfg: LlamaConfig): NameRef | null {
  const ref = slotOfFamilyName(spec, name, cfg.numLayers);
  if (!ref) return null;
  const width = slotWidth(cfg, ref.width);
  const heads = ref.width === 'q' || ref.width === 'kv' ? headsOf(cfg, ref.width) : null;
  return {
    slot: ref.slot,
    shapes: (T) => [[T, width], ...(heads === null ? [] : [[T, heads, cfg.headDim]])],
  };
}

/** Checks a tensor's shape against its slot's shapes. */
export function checkShape(e: SafetensorsEntry, ref: NameRef, T: number, file: string): void {
  const options = ref.shapes(T);
  const want = options[0];
  const s = e.shape;
  if (options.some((w) => s.length === w.length && s.every((n, i) => n === w[i]))) return;
  const name = quoteName(e.name);
  const shown = `[${s.join(', ')}]`;
  if (s.length === want.length + 1 && s[0] === 1 && s.slice(1).every((n, i) => n === want[i]))
    throw new ModelLoadError(
      file,
      `tensor ${name} has shape ${shown}: a run drops the batch dimension, expected [${want.join(', ')}]`,
      e.name,
    );
  if (s.length !== want.length)
    throw new ModelLoadError(
      file,
      `tensor ${name} has rank ${s.length} (shape ${shown}), expected rank ${want.length} [${want.join(', ')}]`,
      e.name,
    );
  if (s[0] !== T)
    throw new ModelLoadError(
      file,
      `tensor ${name} has ${s[0]} rows but __metadata__.tokens holds ${T} tokens (a run of another prompt?)`,
      e.name,
    );
  throw new ModelLoadError(
    file,
    `tensor ${name} has shape ${shown}, expected [${want.join(', ')}] for this model (a run of another model?)`,
    e.name,
  );
}
