// How many of a tensor's largest elements hold a share of its squared sum: what sorting the squares and summing from
// the largest gives, found in linear time (the squares binned by their leading bits, only the bin where the share is
// reached sorted). The anatomy asks it of every op's error, up to millions of elements.

const BINS = 1 << 15;

/**
 * The fewest largest squares whose sum reaches `share` of the whole (non-finite elements count as zero), and the
 * smallest of them (the largest square when none is needed). largest.test.ts holds it to the sorted definition.
 */
export function largestHolding(a: ArrayLike<number>, share: number): { count: number; threshold: number } {
  const n = a.length;
  const sq = new Float64Array(n);
  let total = 0;
  let max = 0;
  for (let i = 0; i < n; i++) {
    const x = a[i];
    const s = Number.isFinite(x) ? x * x : 0;
    sq[i] = s;
    total += s;
    if (s > max) max = s;
  }
  const target = share * total;
  if (!(total > 0) || !Number.isFinite(total)) return bySorting(sq, target, max);
  // A square is ≥ 0: its float64's upper 16 bits (11 of exponent, 4 of mantissa) order it; a bin holds one value of
  // those bits (little-endian: the high word is the second of each pair).
  const hi = new Uint32Array(sq.buffer);
  const sum = new Float64Array(BINS);
  const count = new Int32Array(BINS);
  for (let i = 0; i < n; i++) {
    const b = hi[2 * i + 1] >>> 16;
    sum[b] += sq[i];
    count[b]++;
  }
  let acc = 0;
  let k = 0;
  for (let b = BINS - 1; b >= 0; b--) {
    if (count[b] === 0) continue;
    if (acc + sum[b] < target) {
      acc += sum[b];
      k += count[b];
      continue;
    }
    const inBin = new Float64Array(count[b]);
    for (let i = 0, j = 0; i < n; i++) if (hi[2 * i + 1] >>> 16 === b) inBin[j++] = sq[i];
    inBin.sort();
    let last = max;
    for (let i = inBin.length - 1; i >= 0 && acc < target; i--, k++) {
      acc += inBin[i];
      last = inBin[i];
    }
    return { count: k, threshold: k > 0 ? last : max };
  }
  // The bins' sums fell short of the whole by a rounding (a share of 1): the definition decides.
  return bySorting(sq, target, max);
}

/** The definition: every square sorted, summed from the largest until the share is reached. */
function bySorting(sq: Float64Array, target: number, max: number): { count: number; threshold: number } {
  const sorted = Float64Array.from(sq).sort();
  let acc = 0;
  let k = 0;
  for (let i = sorted.length - 1; i >= 0 && acc < target; i--, k++) acc += sorted[i];
  return { count: k, threshold: k > 0 ? sorted[sorted.length - k] : max };
}
