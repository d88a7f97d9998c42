// The adapter's timestamp quantum and timing by repetition. Dawn quantizes timestamps (65.5 µs steps seen on
// an H200 through Vulkan; Chrome rounds to 100 µs unless WebGPU developer features are on), so an op shorter
// than a few quanta reads 0 or one step. These pure helpers detect the step from raw timestamps and turn a
// repeated dispatch (the same dispatch N times in one pass) into an honest per-op time.

/** Hint shown beside quantized timings (Chrome; Node/Dawn: the toggle disable-dawn-features=timestamp_quantization). */
export const QUANTIZED_HINT =
  'GPU timestamps are quantized on this adapter; in Chrome enable chrome://flags/#enable-webgpu-developer-features for full-resolution timings.';

const gcd = (a: bigint, b: bigint): bigint => {
  let x = a < 0n ? -a : a;
  let y = b < 0n ? -b : b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
};

/**
 * The quantum (ns) of raw timestamps: the greatest common divisor of their non-zero differences. Returns null
 * when fewer than two distinct values exist (nothing to infer from); 1 means unquantized at ns resolution.
 */
export function detectQuantumNs(raw: readonly bigint[]): number | null {
  let g = 0n;
  for (let i = 1; i < raw.length; i++) {
    const d = raw[i] - raw[i - 1];
    if (d !== 0n) g = gcd(g, d);
  }
  return g === 0n ? null : Number(g);
}

/** How many repetitions make an op of about `estimateNs` span at least `minQuanta` quanta (1 when not needed). */
export function repetitionsFor(
  estimateNs: number,
  quantumNs: number | null,
  minQuanta = 8,
  maxReps = 256,
): number {
  if (!(maxReps >= 1) || !(minQuanta > 0))
    throw new Error(`repetitionsFor: bad limits ${minQuanta}, ${maxReps}`);
  if (quantumNs === null || quantumNs <= 1) return 1;
  const target = minQuanta * quantumNs;
  if (estimateNs >= target) return 1;
  // An op read as 0 ns (below one quantum) is assumed to be at most one quantum long.
  const per = Math.max(estimateNs, 1);
  return Math.min(maxReps, Math.ceil(target / per));
}

export interface OpTime {
  ns: number;
  /** The dispatch was repeated this many times in one pass and the total divided. */
  repeats: number;
  /** Still within a few quanta after repetition (or not repeated): the number is a step, not a measurement. */
  quantized: boolean;
}

/** Per-op time from a pass that ran the same dispatch `repeats` times and measured `totalNs`. */
export function perOpTime(totalNs: number, repeats: number, quantumNs: number | null, minQuanta = 8): OpTime {
  if (!Number.isInteger(repeats) || repeats < 1)
    throw new Error(`perOpTime: repeats must be a positive integer, got ${repeats}`);
  const quantized = quantumNs !== null && quantumNs > 1 && totalNs < minQuanta * quantumNs;
  return { ns: totalNs / repeats, repeats, quantized };
}
