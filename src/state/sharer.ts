// The sharer's per-layer summary (carried by a permalink) against the viewer's own report of the same run:
// do the two machines agree? Same first divergent layer, same verdict, and per-layer ratios to the noise
// floor within a factor (AGREE_FACTOR) — or both under the threshold, where the exact ratio is rounding noise
// that differs from GPU to GPU by design. Pure.
import type { SharerSummary } from '../run/permalink';
import type { Metric } from '../run/runspec';

/** Two ratios to the noise floor agree when the larger is at most this many times the smaller. */
export const AGREE_FACTOR = 10;

export interface LayerAgreement {
  layer: number;
  /** The sharer's ratio (null: not finite on their side, or the layer is missing). */
  sharer: number | null;
  /** The viewer's ratio (null: not finite, or the layer is missing). */
  viewer: number | null;
  /** max / min of the two ratios (Infinity when one is 0 and the other not), null when one is missing. */
  factor: number | null;
  /** Both under the threshold k, or within AGREE_FACTOR of each other. */
  agree: boolean;
}

export interface SharerAgreement {
  layers: LayerAgreement[];
  sharerFirst: number | null;
  viewerFirst: number | null;
  /** The same first divergent layer (both null counts as the same). */
  sameFirst: boolean;
  /**
   * The same headline: where both give one, the same verdict (agree, diverged, generation diverged); in older links,
   * both runs diverge somewhere, or neither does.
   */
  sameVerdict: boolean;
  /** The sharer's headline and the viewer's, where both have one (null in older links). */
  sharerVerdict: string | null;
  viewerVerdict: string | null;
  /** The ratios are in the same metric (else only the first layer is compared). */
  sameMetric: boolean;
  sameLayerCount: boolean;
  sharerLayers: number;
  viewerLayers: number;
  /** Every layer agrees (false when the metrics or layer counts differ). */
  ratiosAgree: boolean;
  /** sameFirst, sameVerdict and ratiosAgree. */
  agree: boolean;
}

export interface ViewerReport {
  metric: Metric;
  k: number;
  layers: readonly { ratio: number }[];
  firstDivergentLayer: number | null;
  /** The viewer's headline (the generated text included). */
  verdict?: string;
}

function finiteRatio(r: number | null | undefined): number | null {
  return typeof r === 'number' && Number.isFinite(r) && r >= 0 ? r : null;
}

function factorOf(a: number, b: number): number {
  const lo = Math.min(a, b);
  const hi = Math.max(a, b);
  if (hi === 0) return 1;
  if (lo === 0) return Number.POSITIVE_INFINITY;
  return hi / lo;
}

export function compareWithSharer(summary: SharerSummary, report: ViewerReport): SharerAgreement {
  const sameMetric = summary.metric === report.metric;
  const n = Math.max(summary.ratios.length, report.layers.length);
  const layers: LayerAgreement[] = [];
  for (let i = 0; i < n; i++) {
    const sharer = finiteRatio(summary.ratios[i]);
    const viewer = finiteRatio(report.layers[i]?.ratio);
    const factor = sharer === null || viewer === null ? null : factorOf(sharer, viewer);
    const agree =
      sameMetric &&
      sharer !== null &&
      viewer !== null &&
      ((sharer <= report.k && viewer <= report.k) || (factor !== null && factor <= AGREE_FACTOR));
    layers.push({ layer: i, sharer, viewer, factor, agree });
  }
  const sharerFirst = summary.firstDivergentLayer;
  const viewerFirst = report.firstDivergentLayer;
  const sameFirst = sharerFirst === viewerFirst;
  const sharerVerdict = summary.verdict ?? null;
  const viewerVerdict = sharerVerdict !== null ? (report.verdict ?? null) : null;
  const sameVerdict =
    sharerVerdict !== null && viewerVerdict !== null
      ? sharerVerdict === viewerVerdict
      : (sharerFirst === null) === (viewerFirst === null);
  const sameLayerCount = summary.ratios.length === report.layers.length;
  const ratiosAgree = sameMetric && sameLayerCount && layers.every((l) => l.agree);
  return {
    layers,
    sharerFirst,
    viewerFirst,
    sameFirst,
    sameVerdict,
    sharerVerdict,
    viewerVerdict,
    sameMetric,
    sameLayerCount,
    sharerLayers: summary.ratios.length,
    viewerLayers: report.layers.length,
    ratiosAgree,
    agree: sameFirst && sameVerdict && ratiosAgree,
  };
}

/** One sentence for the viewer. */
export function agreementSentence(a: SharerAgreement): string {
  const where = (l: number | null) => (l === null ? 'no layer diverges' : `first divergent layer ${l}`);
  const text = a.viewerVerdict === 'generation-diverged' ? ', the generated text diverges' : '';
  if (a.agree)
    return `Your run agrees with the sharer's: ${where(a.viewerFirst)}${text} on both machines, and every layer's ratio to the noise floor is within a factor of ${AGREE_FACTOR} (or under the threshold on both).`;
  const parts: string[] = [];
  const headline = (v: string | null) => (v === 'generation-diverged' ? 'generation diverged' : v);
  if (!a.sameFirst) parts.push(`the sharer saw ${where(a.sharerFirst)}, you see ${where(a.viewerFirst)}`);
  else if (!a.sameVerdict && a.sharerVerdict && a.viewerVerdict)
    parts.push(`the sharer's verdict is ${headline(a.sharerVerdict)}, yours ${headline(a.viewerVerdict)}`);
  if (!a.sameMetric) parts.push('the ratios are in different metrics');
  else if (!a.sameLayerCount)
    parts.push(`the sharer's summary has ${a.sharerLayers} layers, your report ${a.viewerLayers}`);
  else {
    const off = a.layers.filter((l) => !l.agree).map((l) => l.layer);
    if (off.length)
      parts.push(
        `the ratio differs by more than a factor of ${AGREE_FACTOR} at layer${off.length > 1 ? 's' : ''} ${off.join(', ')}`,
      );
  }
  return `Your run differs from the sharer's: ${parts.join('; ')}.`;
}

/**
 * Whether the sharer's cause and the viewer's are the same (by id; no cause on both counts as the same), or null
 * when the link carries none (made before links carried it) or the viewer's run has not looked yet.
 */
export function sameCause(
  theirs: SharerSummary['cause'],
  yours: { id: string } | null | undefined,
): boolean | null {
  if (theirs === undefined || yours === undefined) return null;
  return (theirs?.id ?? null) === (yours?.id ?? null);
}
