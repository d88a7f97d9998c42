// Where NaN/Inf first appear in a report: the first tap in plan order (then the layer outputs, then the logits)
// whose fused or reference values hold them, with how many. A finding in its own right, named to the user.
import type { Report } from './report';

export interface NonFiniteFinding {
  /** The tap (e.g. 'layers.1.attn_out'), or 'layers.i.out' / 'logits' when no tap records them. */
  where: string;
  layer: number | null;
  /** NaN/±Inf values in the fused path there (the compared side). */
  fused: number;
  /** NaN/±Inf values in the reference path there (the baseline). */
  reference: number;
}

export function firstNonFinite(r: Report): NonFiniteFinding | null {
  for (const t of r.taps) {
    const m = t.vsReference ?? t.refVsOracle;
    if (!m) continue;
    const fused = t.vsReference ? t.vsReference.nanCount + t.vsReference.infCount : 0;
    const reference = t.vsReference
      ? t.vsReference.baselineNonFinite
      : (t.refVsOracle?.nanCount ?? 0) + (t.refVsOracle?.infCount ?? 0);
    if (fused + reference > 0) return { where: t.name, layer: t.layer, fused, reference };
  }
  for (const l of r.layers) {
    const p = l.propagated;
    if (p.nanCount + p.infCount + p.baselineNonFinite > 0)
      return {
        where: `layers.${l.layer}.out`,
        layer: l.layer,
        fused: p.nanCount + p.infCount,
        reference: p.baselineNonFinite,
      };
  }
  const p = r.logits.propagated;
  if (p.nanCount + p.infCount + p.baselineNonFinite > 0)
    return { where: 'logits', layer: null, fused: p.nanCount + p.infCount, reference: p.baselineNonFinite };
  return null;
}

/** One sentence: "NaN/Inf first in layers.1.attn_out: 128 values on the fused path, 128 on the reference path". */
export function describeNonFinite(f: NonFiniteFinding): string {
  return `NaN/Inf first appear in ${f.where}: ${f.fused} value${f.fused === 1 ? '' : 's'} on the fused path, ${f.reference} on the reference path`;
}
