// Small seeded PRNGs (CPU oracles, GPU kernel tests, fault seeds and synthetic models share them): deterministic,
// no dependencies.

/**
 * mulberry32: a 32-bit seeded PRNG. Returns a function giving uniform floats in [0, 1)
 * (multiples of 2^-32). The same seed always gives the same sequence.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * n samples of N(0, std^2) by Box-Muller, as a Float32Array. Consumes two rng() draws per pair of samples
 * (an odd n drops the last sample's partner).
 */
export function randn(rng: () => number, n: number, std = 1): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const u1 = 1 - rng(); // (0, 1]: log stays finite
    const u2 = rng();
    const r = Math.sqrt(-2 * Math.log(u1)) * std;
    const theta = 2 * Math.PI * u2;
    out[i] = r * Math.cos(theta);
    if (i + 1 < n) out[i + 1] = r * Math.sin(theta);
  }
  return out;
}
