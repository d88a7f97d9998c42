// Pass 1's dispatches on several operand buffers at once. packTiles (gpu-metrics-tiles.ts) makes one dispatch per
// pair of operand buffers; a compare's jobs sit on hundreds of tap buffers (one a tap), so that was hundreds of
// dispatches, each waiting for the one before (they all write the records) and each a few microseconds of launch
// and drain whatever its size. Here consecutive pair dispatches are merged while their distinct bindings fit the
// kernel's operand slots (SLOTS_WIDE where the adapter allows as many storage buffers, else SLOTS_NARROW): each
// table entry names its operands' slots (flags bits 16–23 for a, 24–31 for b), and the entries' first-tile words
// are renumbered within the merged dispatch. A tap's jobs are listed together (fused against reference, reference
// against oracle), so a merged dispatch holds every pair of several taps, and the workgroups that read the same
// reference tap for two jobs run side by side (the second read from the cache, not from memory).
import { TILE_WORDS } from '../kernels/metrics';
import type { PackedDispatch } from './gpu-metrics-tiles';

/** Operand slots of the two pass-1 kernels (shaders/metrics/slots_*.wgsl). */
export const SLOTS_WIDE = 13;
export const SLOTS_NARROW = 5;
/** Storage buffers pass 1 binds besides its operands (tiles, edges, records). */
export const FIXED_BINDINGS = 3;

export interface SlotDispatch {
  /** The operand bindings, slot by slot (fewer than the kernel's slots: the rest repeat slot 0). */
  slots: GPUBufferBinding[];
  table: Uint32Array;
  groups: number;
}

/** The kernel's operand slots for an adapter's maxStorageBuffersPerShaderStage. */
export function slotsFor(maxStorageBuffers: number): number {
  return maxStorageBuffers >= SLOTS_WIDE + FIXED_BINDINGS ? SLOTS_WIDE : SLOTS_NARROW;
}

function sameBinding(x: GPUBufferBinding, y: GPUBufferBinding): boolean {
  return x.buffer === y.buffer && (x.offset ?? 0) === (y.offset ?? 0) && x.size === y.size;
}

/**
 * Merges pair dispatches, in order, into dispatches of at most `slots` distinct bindings and `maxGroups`
 * workgroups (a pair dispatch alone fits both: packTiles kept it within maxGroups, and it has two bindings).
 */
export function mergeDispatches(packed: PackedDispatch[], slots: number, maxGroups: number): SlotDispatch[] {
  const out: SlotDispatch[] = [];
  let cur: {
    slots: GPUBufferBinding[];
    parts: { p: PackedDispatch; sa: number; sb: number }[];
    groups: number;
  } | null = null;
  const flush = () => {
    if (!cur) return;
    const words = cur.parts.reduce((s, x) => s + x.p.table.length, 0);
    const table = new Uint32Array(words);
    let at = 0;
    let first = 0;
    for (const { p, sa, sb } of cur.parts) {
      table.set(p.table, at);
      for (let e = 0; e < p.tiles; e++) {
        const o = at + e * TILE_WORDS;
        table[o + 3] = (table[o + 3] & 0xffff) | (sa << 16) | (sb << 24);
        table[o + 6] += first;
      }
      at += p.table.length;
      first += p.groups;
    }
    out.push({ slots: cur.slots, table, groups: cur.groups });
    cur = null;
  };
  for (const p of packed) {
    const a = p.a;
    const b = p.b;
    if (cur) {
      const c: NonNullable<typeof cur> = cur;
      const more = [a, b].filter(
        (x, i) => !c.slots.some((s) => sameBinding(s, x)) && (i === 0 || !sameBinding(a, b)),
      );
      if (c.slots.length + more.length > slots || c.groups + p.groups > maxGroups) flush();
    }
    cur ??= { slots: [], parts: [], groups: 0 };
    const slotOf = (x: GPUBufferBinding) => {
      const c = cur!;
      let i = c.slots.findIndex((s) => sameBinding(s, x));
      if (i < 0) i = c.slots.push(x) - 1;
      return i;
    };
    const sa = slotOf(a);
    const sb = slotOf(b);
    cur.parts.push({ p, sa, sb });
    cur.groups += p.groups;
  }
  flush();
  return out;
}
