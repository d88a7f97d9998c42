// The stretches of one GpuMetrics.record (gpu-metrics-plan.ts cuts the jobs into them: a run of consecutive tiles of
// one job, one row, one segment) held as parallel typed arrays rather than an object each, and packed into
// dispatches whose buffer ranges fit the binding limits. A stretch is one table entry however many tiles it holds:
// the shader finds a workgroup's stretch and tile from its id, so the CPU's work grows with the stretches, not the
// tiles. Bit-difference tiles are stretches of one tile.
import { RANGE_WORDS, TILE_WORDS } from '../kernels/metrics';

/** Descriptor words a tile carries after its two operand offsets (TILE_WORDS in all). */
export const TILE_EXTRA = TILE_WORDS - 2;

/** A growable list of tiles: per tile its operand pair, the byte ranges it reads and its descriptor words. */
export class TileList {
  length = 0;
  /** Operand pairs by id, in the order first seen. */
  readonly pairs: { a: GPUBuffer; b: GPUBuffer }[] = [];
  private readonly ids = new Map<GPUBuffer, Map<GPUBuffer, number>>();
  pairOf: Uint32Array;
  /** Byte ranges [aByte, aEnd) of a and [bByte, bEnd) of b (f64: a df buffer's offsets pass 2^32). */
  aByte: Float64Array;
  aEnd: Float64Array;
  bByte: Float64Array;
  bEnd: Float64Array;
  /** TILE_EXTRA words per entry (count, flags, record, histogram, first tile (set when packed), tile elements /
   * count, base, slot; the rest 0). */
  words: Uint32Array;
  /** Workgroups (tiles) per entry. */
  groups: Uint32Array;

  /** `capacity`: the tiles expected (it grows past them if need be). */
  constructor(capacity = 64) {
    const n = Math.max(1, capacity);
    this.pairOf = new Uint32Array(n);
    this.aByte = new Float64Array(n);
    this.aEnd = new Float64Array(n);
    this.bByte = new Float64Array(n);
    this.bEnd = new Float64Array(n);
    this.words = new Uint32Array(n * TILE_EXTRA);
    this.groups = new Uint32Array(n);
  }

  /** The id of the operand pair (a, b). */
  pair(a: GPUBuffer, b: GPUBuffer): number {
    let byB = this.ids.get(a);
    if (!byB) this.ids.set(a, (byB = new Map()));
    let id = byB.get(b);
    if (id === undefined) {
      id = this.pairs.length;
      byB.set(b, id);
      this.pairs.push({ a, b });
    }
    return id;
  }

  /**
   * Appends an entry with its first descriptor words (w0 … w3, w5; w4 is set when packed) and its workgroup count;
   * returns its index.
   */
  push(
    pair: number,
    aByte: number,
    aEnd: number,
    bByte: number,
    bEnd: number,
    w0: number,
    w1: number,
    w2: number,
    w3 = 0,
    w5 = 0,
    groups = 1,
  ): number {
    const i = this.length++;
    if (i === this.pairOf.length) this.grow();
    this.pairOf[i] = pair;
    this.aByte[i] = aByte;
    this.aEnd[i] = aEnd;
    this.bByte[i] = bByte;
    this.bEnd[i] = bEnd;
    const o = i * TILE_EXTRA;
    this.words[o] = w0;
    this.words[o + 1] = w1;
    this.words[o + 2] = w2;
    this.words[o + 3] = w3;
    this.words[o + 5] = w5;
    this.groups[i] = groups;
    return i;
  }

  private grow(): void {
    const n = this.pairOf.length * 2;
    const more = <A extends Uint32Array | Float64Array>(a: A, per = 1): A => {
      const b = new (a.constructor as new (n: number) => A)(n * per);
      b.set(a);
      return b;
    };
    this.pairOf = more(this.pairOf);
    this.aByte = more(this.aByte);
    this.aEnd = more(this.aEnd);
    this.bByte = more(this.bByte);
    this.bEnd = more(this.bEnd);
    this.words = more(this.words, TILE_EXTRA);
    this.groups = more(this.groups);
  }
}

export interface PackedDispatch {
  a: GPUBufferBinding;
  b: GPUBufferBinding;
  /** Descriptors (TILE_WORDS each) with word offsets relative to the bindings. */
  table: Uint32Array;
  /** Entries in the table. */
  tiles: number;
  /** Workgroups: the entries' tiles together (word 6 of an entry: its first tile's index in the dispatch). */
  groups: number;
}

/**
 * Groups entries by their buffer pair and packs each group, in order of aByte, into dispatches whose a and b ranges
 * (bound from an aligned start) stay within `maxBinding` bytes and whose workgroups stay within `maxGroups` (an
 * entry alone must fit it).
 */
export function packTiles(
  t: TileList,
  maxBinding: number,
  align: number,
  maxGroups: number,
): PackedDispatch[] {
  // Tile indices grouped by pair (a counting sort), each group in ascending aByte.
  const start = new Uint32Array(t.pairs.length + 1);
  for (let i = 0; i < t.length; i++) start[t.pairOf[i] + 1]++;
  for (let p = 0; p < t.pairs.length; p++) start[p + 1] += start[p];
  const order = new Uint32Array(t.length);
  const at = start.slice(0, t.pairs.length);
  for (let i = 0; i < t.length; i++) order[at[t.pairOf[i]]++] = i;
  const out: PackedDispatch[] = [];
  const emit = (p: number, from: number, to: number) => {
    let [aStart, bStart, aEnd, bEnd] = [Infinity, Infinity, 0, 0];
    for (let k = from; k < to; k++) {
      const i = order[k];
      aStart = Math.min(aStart, t.aByte[i]);
      bStart = Math.min(bStart, t.bByte[i]);
      aEnd = Math.max(aEnd, t.aEnd[i]);
      bEnd = Math.max(bEnd, t.bEnd[i]);
    }
    aStart = Math.floor(aStart / align) * align;
    bStart = Math.floor(bStart / align) * align;
    const table = new Uint32Array((to - from) * TILE_WORDS);
    let groups = 0;
    for (let k = from; k < to; k++) {
      const i = order[k];
      const o = (k - from) * TILE_WORDS;
      table[o] = (t.aByte[i] - aStart) / 4;
      table[o + 1] = (t.bByte[i] - bStart) / 4;
      for (let w = 0; w < TILE_EXTRA; w++) table[o + 2 + w] = t.words[i * TILE_EXTRA + w];
      table[o + 6] = groups;
      groups += t.groups[i];
    }
    const { a, b } = t.pairs[p];
    out.push({
      a: { buffer: a, offset: aStart, size: Math.max(4, aEnd - aStart) },
      b: { buffer: b, offset: bStart, size: Math.max(4, bEnd - bStart) },
      table,
      tiles: to - from,
      groups,
    });
  };
  for (let p = 0; p < t.pairs.length; p++) {
    const group = order.subarray(start[p], start[p + 1]);
    let sorted = true;
    for (let k = 1; k < group.length && sorted; k++) sorted = t.aByte[group[k - 1]] <= t.aByte[group[k]];
    if (!sorted) group.sort((x, y) => t.aByte[x] - t.aByte[y] || x - y);
    let first = start[p];
    let [aMin, bMin, aMax, bMax] = [0, 0, 0, 0];
    let groups = 0;
    for (let k = start[p]; k < start[p + 1]; k++) {
      const i = order[k];
      const n = k - first;
      if (t.groups[i] > maxGroups)
        throw new Error(`GpuMetrics: an entry of ${t.groups[i]} tiles, over ${maxGroups}`);
      const na = Math.min(aMin, t.aByte[i]);
      const nb = Math.min(bMin, t.bByte[i]);
      const fits =
        n > 0 &&
        groups + t.groups[i] <= maxGroups &&
        Math.max(aMax, t.aEnd[i]) - Math.floor(na / align) * align <= maxBinding &&
        Math.max(bMax, t.bEnd[i]) - Math.floor(nb / align) * align <= maxBinding;
      if (n > 0 && !fits) {
        emit(p, first, k);
        first = k;
        groups = 0;
      }
      groups += t.groups[i];
      if (k === first) {
        [aMin, bMin, aMax, bMax] = [t.aByte[i], t.bByte[i], t.aEnd[i], t.bEnd[i]];
      } else {
        [aMin, bMin] = [na, nb];
        aMax = Math.max(aMax, t.aEnd[i]);
        bMax = Math.max(bMax, t.bEnd[i]);
      }
    }
    if (start[p + 1] > first) emit(p, first, start[p + 1]);
  }
  return out;
}

/** A growable list of the pass-2 ranges (RANGE_WORDS = 8 words each). */
export class WordList {
  length = 0;
  data = new Uint32Array(256);

  /** Appends one range: five words, then zeros to RANGE_WORDS (8). */
  push5(w0: number, w1: number, w2: number, w3: number, w4: number): void {
    if (this.length + RANGE_WORDS > this.data.length) {
      const d = new Uint32Array(this.data.length * 2);
      d.set(this.data);
      this.data = d;
    }
    const d = this.data;
    const o = this.length;
    d[o] = w0;
    d[o + 1] = w1;
    d[o + 2] = w2;
    d[o + 3] = w3;
    d[o + 4] = w4;
    d[o + 5] = 0;
    d[o + 6] = 0;
    d[o + 7] = 0;
    this.length += RANGE_WORDS;
  }

  view(): Uint32Array {
    return this.data.subarray(0, this.length);
  }
}
