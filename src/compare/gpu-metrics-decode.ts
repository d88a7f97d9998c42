// Decoding of the GPU metric summaries into the CPU metrics' types, with the CPU's final formulas
// (src/compare/metrics.ts): what the GPU reduced (counts, extended sums, the largest difference's operands)
// becomes FullMetrics, per-row relative L2 and the histogram. A summary that was not written (the records
// start poisoned with 0xffffffff) or does not add up to its element count throws.
import { HIST_BINS, ROW_WORDS, ZERO_EXP } from '../kernels/metrics';
import type { JobLayout } from './gpu-metrics-plan';
import type { BitDiffOut, CompareOut } from './gpu-metrics-types';
import { type FullMetrics, HIST_LOG10_MAX, HIST_LOG10_MIN } from './metrics';

export interface SummaryViews {
  u32: Uint32Array;
  i32: Int32Array;
  f32: Float32Array;
}

export function summaryViews(buf: ArrayBuffer): SummaryViews {
  return { u32: new Uint32Array(buf), i32: new Int32Array(buf), f32: new Float32Array(buf) };
}

/** (h + l)·2^e of an extended sum at word w (0 when h is 0). */
export function extValue(v: SummaryViews, w: number): number {
  const h = v.f32[w];
  if (h === 0) return 0;
  const e = v.i32[w + 2];
  return (h + v.f32[w + 1]) * 2 ** e;
}

function fail(msg: string): never {
  throw new Error(`GpuMetrics: ${msg}`);
}

function relL2From(mismatched: number, ssqE: number, ssqB: number): number {
  if (mismatched > 0) return Number.POSITIVE_INFINITY;
  if (ssqE === 0) return 0;
  return ssqB === 0 ? Number.POSITIVE_INFINITY : Math.sqrt(ssqE / ssqB);
}

/** One job's results; `j` names it in errors. */
export function decodeJob(v: SummaryViews, l: JobLayout, j: number): CompareOut {
  const w = l.rec;
  const u = v.u32;
  const [seen, nanCount, infCount, baselineNonFinite, mismatched, finite, zeros, maxUlp] = u.subarray(
    w,
    w + 8,
  );
  if (seen !== l.n) fail(`job ${j}: summary covers ${seen} of ${l.n} elements (not written or incomplete)`);
  if (finite + mismatched > l.n || nanCount + infCount > l.n || baselineNonFinite > l.n || zeros > finite)
    fail(`job ${j}: summary counts do not fit ${l.n} elements`);
  const sumAbs = extValue(v, w + 14);
  const ssqA = extValue(v, w + 17);
  const ssqB = extValue(v, w + 20);
  const ssqE = extValue(v, w + 23);
  for (const [name, s] of [
    ['sum |a − b|', sumAbs],
    ['‖a‖²', ssqA],
    ['‖b‖²', ssqB],
    ['‖a − b‖²', ssqE],
  ] as const) {
    if (!Number.isFinite(s) || s < 0) fail(`job ${j}: ${name} summary is ${s}`);
  }
  // The largest difference, recomputed in f64 from its operands exactly as the CPU computes it.
  let maxAbs = 0;
  if (v.i32[w + 8] !== ZERO_EXP) {
    const x = v.f32[w + 11];
    const y = v.f32[w + 12] + v.f32[w + 13];
    maxAbs = Math.abs(x - y);
    if (!Number.isFinite(maxAbs)) fail(`job ${j}: largest difference from non-finite operands`);
  }
  if ((maxAbs === 0) !== (ssqE === 0) || (maxAbs === 0) !== (finite === zeros))
    fail(
      `job ${j}: largest difference ${maxAbs} disagrees with ‖a − b‖² ${ssqE} and ${finite - zeros} nonzero`,
    );
  const mismatch = mismatched > 0;
  let relL2: number;
  let sqnrDb: number;
  let cosineDistance: number;
  if (mismatch) {
    relL2 = Number.POSITIVE_INFINITY;
    sqnrDb = Number.NEGATIVE_INFINITY;
    cosineDistance = Number.POSITIVE_INFINITY;
  } else {
    relL2 = relL2From(0, ssqE, ssqB);
    sqnrDb =
      maxAbs === 0
        ? Number.POSITIVE_INFINITY
        : ssqB === 0
          ? Number.NEGATIVE_INFINITY
          : 10 * Math.log10(ssqB / ssqE);
    const na = Math.sqrt(ssqA);
    const nb = Math.sqrt(ssqB);
    if (na === 0 || nb === 0) cosineDistance = na === nb ? 0 : 1;
    else {
      const d = na - nb;
      cosineDistance = Math.min(2, Math.max(0, (ssqE - d * d) / (2 * na * nb)));
    }
  }
  const metrics: FullMetrics = {
    n: l.n,
    maxAbs: mismatch ? Number.POSITIVE_INFINITY : maxAbs,
    meanAbs: finite ? sumAbs / finite : 0,
    relL2,
    cosineDistance,
    sqnrDb,
    maxUlp,
    nanCount,
    infCount,
    baselineNonFinite,
    mismatchedNonFinite: mismatched,
    nonFiniteMismatch: mismatch,
    finiteCount: finite,
  };

  let perRow: Float64Array | null = null;
  if (l.rows > 0) {
    perRow = new Float64Array(l.rows);
    let rowSeen = 0;
    let rowMism = 0;
    for (let r = 0; r < l.rows; r++) {
      const rw = l.rowBase + r * ROW_WORDS;
      rowSeen += u[rw + 7];
      rowMism += u[rw + 6];
      perRow[r] = relL2From(u[rw + 6], extValue(v, rw), extValue(v, rw + 3));
    }
    if (rowSeen !== l.n || rowMism !== mismatched)
      fail(`job ${j}: row summaries cover ${rowSeen} of ${l.n} elements (not written or incomplete)`);
  }

  let histogram: CompareOut['histogram'] = null;
  if (l.hist >= 0) {
    const counts = Array.from(u.subarray(l.hist, l.hist + HIST_BINS));
    const nonFinite = l.n - finite;
    const total = counts.reduce((s, c) => s + c, 0);
    if (total + zeros + nonFinite !== l.n)
      fail(
        `job ${j}: histogram holds ${total} + ${zeros} zeros + ${nonFinite} non-finite of ${l.n} elements`,
      );
    const lo = HIST_LOG10_MIN;
    const hi = HIST_LOG10_MAX;
    const edges = Array.from({ length: HIST_BINS + 1 }, (_, k) => lo + ((hi - lo) * k) / HIST_BINS);
    histogram = { edges, counts, zeros, nonFinite };
  }
  return { metrics, perRow, histogram };
}

export function decodeBitDiff(v: SummaryViews, slot: number, n: number, i: number): BitDiffOut {
  const count = v.u32[slot];
  const enc = v.u32[slot + 1];
  const firstIndex = enc === 0 ? -1 : 0xffffffff - enc;
  if (count > n || (count === 0) !== (firstIndex === -1) || firstIndex >= n)
    fail(`bit diff ${i}: summary (count ${count}, first ${firstIndex}) does not fit ${n} words`);
  return { count, firstIndex };
}
