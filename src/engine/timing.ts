// Per-op GPU times (timestamp queries, one pass per op; short ops re-timed by repetition where the adapter's
// timestamps are quantized, src/gpu/timestamp-refine.ts) summed per layer and per op kind.
import type { PassTiming } from '../gpu/timestamps';

export interface TimingSummary {
  totalNs: number;
  /**
   * Per dispatch in plan order, with its layer (null outside the layers) and kind ('ln1', 'flash_attention', …;
   * a helper dispatch such as a split-K partial GEMM, labelled `op/part`, counts as its op's kind), how often it
   * ran in its timed pass (repeats > 1: timed by repetition) and whether its time is still quantized (both
   * absent in reports made before timing by repetition).
   */
  ops: {
    label: string;
    layer: number | null;
    kind: string;
    ns: number;
    repeats?: number;
    quantized?: boolean;
  }[];
  perLayer: number[];
  /** Summed over layers, by op kind. */
  perKind: Record<string, number>;
  // The three below are absent in reports made before timing by repetition (read as unknown).
  /** The adapter's timestamp step in ns (1: unquantized; null: unknown). */
  quantumNs?: number | null;
  /** Some op's time is still within a few steps (even after repetition): those numbers are steps, not times. */
  quantized?: boolean;
  /** Ops timed by repetition. */
  repeatedOps?: number;
}

const LAYER = /^layers\.(\d+)\.(.+)$/;

export function summarizeTimings(timings: PassTiming[], numLayers: number): TimingSummary {
  const perLayer = new Array<number>(numLayers).fill(0);
  const perKind: Record<string, number> = {};
  let totalNs = 0;
  let quantumNs: number | null = null;
  const ops = timings.map(({ label, ns, repeats, quantized, quantumNs: q }) => {
    const m = LAYER.exec(label);
    const layer = m ? Number(m[1]) : null;
    const kind = (m ? m[2] : label).replace(/\/.*$/, '');
    if (layer !== null && layer < numLayers) perLayer[layer] += ns;
    perKind[kind] = (perKind[kind] ?? 0) + ns;
    totalNs += ns;
    if (q !== undefined && q !== null) quantumNs = Math.max(quantumNs ?? 0, q);
    return { label, layer, kind, ns, repeats: repeats ?? 1, quantized: quantized ?? false };
  });
  return {
    totalNs,
    ops,
    perLayer,
    perKind,
    quantumNs,
    quantized: ops.some((o) => o.quantized),
    repeatedOps: ops.filter((o) => (o.repeats ?? 1) > 1).length,
  };
}
