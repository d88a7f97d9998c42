// Which fused kernel stands for which reference ops, read from the kernels' own declarations
// (FUSED_KERNELS[].replaces / fusedAway — the table the fused plan is built from): the drill-down groups a
// layer's ops under the kernel that replaced them and says where a fused-away op's error shows; the timing
// chart puts each fused kernel's time beside the time of the reference ops it replaced. Pure functions.
import { FUSED_KERNELS, type FusedKernelId, type FusedKernelInfo } from '../../state/kernel-catalog';

/** The switched-on fused kernel that replaced this reference op (by its op name: 'attn_out', 'gelu'), or null. */
export function kernelOfOp(op: string, fusedOn: readonly FusedKernelId[]): FusedKernelInfo | null {
  return FUSED_KERNELS.find((k) => fusedOn.includes(k.id) && k.replaces.includes(op)) ?? null;
}

/**
 * The op that carries a fused-away op's error: the next op of the layer that is written out and compared
 * (the kernel's output: fc1 → gelu, scores/probs → ctx, qkv → q), or null.
 */
export function carrierOf(
  taps: readonly { op: string; status: 'compared' | 'fused-away' }[],
  index: number,
): string | null {
  for (let j = index + 1; j < taps.length; j++) if (taps[j].status === 'compared') return taps[j].op;
  return null;
}

/** Taps named after what they hold rather than the op that writes them: q, k (rotary) and v (the qkv split). */
const WRITTEN_BY: Record<string, string> = { q: 'rotary', k: 'rotary', v: 'qkv' };

/** The switched-on fused kernel that computes this tap (by its op name), or null. */
export function kernelOfTap(op: string, fusedOn: readonly FusedKernelId[]): FusedKernelInfo | null {
  return kernelOfOp(op, fusedOn) ?? (op in WRITTEN_BY ? kernelOfOp(WRITTEN_BY[op], fusedOn) : null);
}

/** How far an op's error is above its own noise floor (error / floor); ∞ when the floor is 0 and it is not. */
export function aboveFloor(error: number, floor: number): number {
  if (Number.isNaN(error) || Number.isNaN(floor)) return Number.NaN;
  if (error === 0) return 0;
  if (floor === 0) return Number.POSITIVE_INFINITY;
  return error / floor;
}

/** The colour band of an op's error: at or under its floor, up to k × it, past k × it, or not finite. */
export type Band = 'floor' | 'above' | 'far' | 'nonfinite';

export function bandOf(ratio: number, k: number): Band {
  if (Number.isNaN(ratio)) return 'nonfinite';
  if (ratio <= 1) return 'floor';
  if (ratio <= k) return 'above';
  return 'far';
}

export interface TimeGroup {
  /** The fused kernel, or null for the ops both paths run the same way. */
  kernel: FusedKernelInfo | null;
  /** The fused kernel's time (summed over layers); for the shared group, the fused path's time of those ops. */
  fusedNs: number;
  /** The reference ops it replaced, each with its time (summed over layers). */
  replaced: { op: string; ns: number }[];
  referenceNs: number;
}

/**
 * One group per switched-on fused kernel (its time beside the reference ops it replaced), then the ops both
 * paths share. A fused kernel's dispatches are labelled with its id, except the GEMM, whose dispatches keep
 * the op names (attn_out, logits); both are handled.
 */
export function timeGroups(
  reference: Record<string, number>,
  fused: Record<string, number>,
  fusedOn: readonly FusedKernelId[],
): TimeGroup[] {
  const claimedRef = new Set<string>();
  const claimedFused = new Set<string>();
  const groups: TimeGroup[] = [];
  for (const k of FUSED_KERNELS) {
    if (!fusedOn.includes(k.id)) continue;
    const replaced = k.replaces.filter((op) => op in reference).map((op) => ({ op, ns: reference[op] }));
    for (const r of replaced) claimedRef.add(r.op);
    let fusedNs = 0;
    for (const kind of [k.id, ...k.replaces]) {
      if (kind in fused && !claimedFused.has(kind)) {
        fusedNs += fused[kind];
        claimedFused.add(kind);
      }
    }
    if (replaced.length === 0 && fusedNs === 0) continue;
    groups.push({ kernel: k, fusedNs, replaced, referenceNs: replaced.reduce((a, r) => a + r.ns, 0) });
  }
  const shared = Object.keys(reference)
    .filter((op) => !claimedRef.has(op))
    .map((op) => ({ op, ns: reference[op] }));
  const sharedFused = Object.keys(fused)
    .filter((op) => !claimedFused.has(op))
    .reduce((a, op) => a + fused[op], 0);
  if (shared.length > 0 || sharedFused > 0)
    groups.push({
      kernel: null,
      fusedNs: sharedFused,
      replaced: shared.sort((a, b) => b.ns - a.ns),
      referenceNs: shared.reduce((a, r) => a + r.ns, 0),
    });
  return groups;
}
