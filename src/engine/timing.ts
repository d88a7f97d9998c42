// Per-op GPU times (timestamp queries, one pass per op) summed per layer and per op kind.
import type { PassTiming } from '../gpu/timestamps';

export interface TimingSummary {
  totalNs: number;
  /** Per op in plan order, with its layer (null outside the layers) and kind ('ln1', 'flash_attention', …). */
  ops: { label: string; layer: number | null; kind: string; ns: number }[];
  perLayer: number[];
  /** Summed over layers, by op kind. */
  perKind: Record<string, number>;
}

const LAYER = /^layers\.(\d+)\.(.+)$/;

export function summarizeTimings(timings: PassTiming[], numLayers: number): TimingSummary {
  const perLayer = new Array<number>(numLayers).fill(0);
  const perKind: Record<string, number> = {};
  let totalNs = 0;
  const ops = timings.map(({ label, ns }) => {
    const m = LAYER.exec(label);
    const layer = m ? Number(m[1]) : null;
    const kind = m ? m[2] : label;
    if (layer !== null && layer < numLayers) perLayer[layer] += ns;
    perKind[kind] = (perKind[kind] ?? 0) + ns;
    totalNs += ns;
    return { label, layer, kind, ns };
  });
  return { totalNs, ops, perLayer, perKind };
}
