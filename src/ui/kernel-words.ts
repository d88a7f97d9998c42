// What each fused-kernel switch is called and does, in the loaded model's family: the op registry's words for it
// (ops/fused.ts; GPT-NeoX's are also engine/fused-kernels.ts FUSED_KERNELS'). The switches, links and reports keep
// GPT-NeoX's ids; a Llama-family model runs its own kernels under them, so the page names those: a Llama model's
// panel never says "LayerNorm" or "GELU" of a kernel that computes RMSNorm or SwiGLU.
import { LLAMA_FAMILY } from '../ops/families';
import { FUSED } from '../ops/fused';
import { FUSED_KERNELS } from '../state/kernel-catalog';

export type Family = 'gpt_neox' | 'llama';

export interface KernelWords {
  title: string;
  description: string;
}

/** The switch's title and description for a model of `family` (absent: GPT-NeoX, as older reports are). */
export function kernelWords(id: string, family?: Family | null): KernelWords {
  const llama = family === 'llama' ? FUSED.find((k) => k.id === id)?.llama : undefined;
  if (llama) return { title: llama.title, description: llama.description };
  const k = FUSED_KERNELS.find((x) => x.id === id);
  return k ? { title: k.title, description: k.description } : { title: id, description: '' };
}

/**
 * The fused kernel (by its switch id) that writes each of a Llama-family layer's slots on the fused path: the one
 * whose Llama op kinds (ops/fused.ts) hold the slot's step's op — the add + RMSNorm the norms and both residual adds,
 * the q/k/v + rotary GEMM the projections and their rotation, the flash attention the attention core, the tiled GEMM
 * o_proj and down_proj, the gate/up GEMM the gate, up and SwiGLU. Slots of op kinds no kernel replaces (Qwen3's q/k
 * norms) are left unbracketed.
 */
const LLAMA_SLOT_KERNEL: ReadonlyMap<string, string> = new Map(
  LLAMA_FAMILY.layer.flatMap((step) => {
    const k = FUSED.find((x) => x.llama.ops.includes(step.op));
    return k ? [[step.slot, k.id] as const] : [];
  }),
);

/**
 * The switched-on fused kernel that writes a Llama-family layer's slot, or null: its switch id, its title and its
 * name (the family's kernel, ops/fused.ts `llama.kernel`: what a chart labels it with, never GPT-NeoX's switch id).
 */
export function llamaKernelOfSlot(
  slot: string,
  fusedOn: readonly string[],
): { id: string; title: string; name: string } | null {
  const id = LLAMA_SLOT_KERNEL.get(slot);
  if (!id || !fusedOn.includes(id)) return null;
  return { id, title: kernelWords(id, 'llama').title, name: llamaKernelName(id) };
}

/** The Llama family's own name for the kernel it runs under switch `id` (the id itself where it runs none). */
export function llamaKernelName(id: string): string {
  return FUSED.find((k) => k.id === id)?.llama.kernel ?? id;
}
