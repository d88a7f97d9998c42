// Histogram bin edges for the GPU metrics, taken from the CPU histogram itself: for each bin k ≥ 1 the least
// f64 error that errorHistogram puts in bin k or above, found by bisection over f64 bit patterns (the bin is a
// monotone function of the error). The GPU compares an error with these edges instead of taking a logarithm,
// so values on an edge (|a − b| = 1 or 100, where log10 is exact) land where the CPU puts them.
import { f32Bits } from '../numeric/bits';
import { errorHistogram } from './metrics';

const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);

function fromBits(b: bigint): number {
  u64[0] = b;
  return f64[0];
}

function toBits(x: number): bigint {
  f64[0] = x;
  return u64[0];
}

/** The CPU histogram's bin of one positive error. */
export function cpuBin(e: number, bins: number): number {
  return errorHistogram([e], [0], bins).counts.indexOf(1);
}

/** edges[k − 1] = least positive f64 e with cpuBin(e) ≥ k, k = 1 … bins − 1 (ascending). */
export function histogramEdges(bins: number): Float64Array {
  const out = new Float64Array(bins - 1);
  let lo0 = toBits(Number.MIN_VALUE);
  const top = toBits(Number.MAX_VALUE);
  for (let k = 1; k < bins; k++) {
    let lo = lo0; // cpuBin(lo) < k unless lo is the least value (never: edges lie inside 1e-12 … 1e4)
    let hi = top; // cpuBin(hi) ≥ k
    while (hi - lo > 1n) {
      const mid = (lo + hi) / 2n;
      if (cpuBin(fromBits(mid), bins) >= k) hi = mid;
      else lo = mid;
    }
    out[k - 1] = fromBits(hi);
    lo0 = hi;
  }
  return out;
}

/**
 * The edges as the shader's Diff triples (4 words each: exponent e as i32, h, l as f32 bits, 0):
 * value = (h + l)·2^e with h = fround of the significand, l the f32 rounding of the rest (an edge is held to
 * about 2^-48 relative: an error within that of an edge, never an f32 value, could fall on the other side).
 */
export function edgeWords(edges: Float64Array): Uint32Array {
  const out = new Uint32Array(edges.length * 4);
  const i32 = new Int32Array(out.buffer);
  edges.forEach((t, k) => {
    let hi = Math.fround(t);
    let lo = Math.fround(t - hi);
    // Canonical: hi is the f32 rounding of hi + lo (as the shader's two_sum leaves its differences).
    for (let it = 0; it < 3 && Math.fround(hi + lo) !== hi; it++) {
      const s = hi + lo;
      hi = Math.fround(s);
      lo = Math.fround(s - hi);
    }
    const e = ((f32Bits(hi) >>> 23) & 0xff) - 127;
    const scale = 2 ** -e;
    i32[4 * k] = e;
    out[4 * k + 1] = f32Bits(hi * scale);
    out[4 * k + 2] = f32Bits(lo * scale);
  });
  return out;
}

/** The least and number of exponents of the bins-by-exponent table (BIN_K0, BIN_KS in compare_tiles.wgsl). */
export const BIN_K0 = -48;
export const BIN_KS = 72;

/**
 * The shader's bins by exponent, after the edge triples: for exponent k = BIN_K0 + j, the number of edges whose
 * exponent is below k, plus 256 when an edge has exponent k (at most one does: consecutive edges are more than a
 * factor 2 apart, checked here). An error of exponent k is then in that bin, or in the next when it reaches
 * that edge. The table's ends lie beyond the edges' exponents, so clamping k to them is exact.
 */
export function binWords(edgeTriples: Uint32Array): Uint32Array {
  const i32 = new Int32Array(edgeTriples.buffer, edgeTriples.byteOffset, edgeTriples.length);
  const exps = Array.from({ length: edgeTriples.length / 4 }, (_, j) => i32[4 * j]);
  if (exps[0] <= BIN_K0 || exps[exps.length - 1] >= BIN_K0 + BIN_KS - 1)
    throw new Error(
      `GpuMetrics: histogram edges' exponents ${exps[0]} … ${exps.at(-1)} outside the bin table`,
    );
  const out = new Uint32Array(BIN_KS);
  for (let j = 0; j < BIN_KS; j++) {
    const k = BIN_K0 + j;
    const at = exps.filter((e) => e === k).length;
    if (at > 1) throw new Error(`GpuMetrics: ${at} histogram edges of exponent ${k}`);
    out[j] = exps.filter((e) => e < k).length + (at ? 256 : 0);
  }
  return out;
}
