// The counter-based generator of the seeded weights: every value is a pure function of (seed, tensor id,
// element index), the same bits on the CPU (src/model/seeded-weights.ts) and the GPU
// (shaders/model/seeded_weights.wgsl, launched by src/kernels/seeded-weights.ts). Imports nothing of ours.
//
// The generator, for element i of tensor t under seed s (all u32 arithmetic, wrapping):
//   pcg(v)  = PCG-RXS-M-XS hash: st = v * 747796405 + 2891336453;
//             w = ((st >> ((st >> 28) + 4)) ^ st) * 277803737; return (w >> 22) ^ w
//   key     = pcg(pcg(t) ^ s)
//   h1      = pcg(i ^ key),  h2 = pcg(h1 + 0x9e3779b9)
//   n       = lo16(h1) + hi16(h1) + lo16(h2) + hi16(h2) - 131070      (integer in [-131070, 131070])
// n is a sum of four uniform 16-bit integers: bell-shaped (Irwin–Hall), mean 0, standard deviation
// N_STD = 65536 / sqrt(3) ≈ 37837, bounded by ±3.46 N_STD. The value is
//   x = f32(n) * 2^-e + offset
// with a power of two 2^-e chosen per tensor kind so that the standard deviation is within a factor √2 of the
// tensor kind's target (the table in src/model/seeded-weights.ts); f32(n) and the product are exact and the offset is 0 or 1, so the f32 value is the same on
// every adapter (no rounding a GPU could do differently, no transcendental functions). With dtype F16 the
// value is then rounded to the nearest f16 (ties to even, done on the bits with integer operations), as an
// fp16 checkpoint holds it.

/** The standard deviation of the integer n: 4 uniform 16-bit integers, sqrt(4 (2^32 - 1) / 12). */
export const N_STD = Math.sqrt((4 * (2 ** 32 - 1)) / 12);

/** How one tensor is drawn: its id (the counter's second word), scale 2^-e and offset. */
export interface SeededTensor {
  name: string;
  id: number;
  /** A power of two: x = n * scale + offset. */
  scale: number;
  offset: 0 | 1;
}

export function pcg(v: number): number {
  const st = (Math.imul(v >>> 0, 747796405) + 2891336453) >>> 0;
  const w = Math.imul(((st >>> ((st >>> 28) + 4)) ^ st) >>> 0, 277803737) >>> 0;
  return ((w >>> 22) ^ w) >>> 0;
}

/** The key of tensor `id` under `seed` (both u32). */
export function tensorKey(seed: number, id: number): number {
  return pcg((pcg(id) ^ seed) >>> 0);
}

/** The power of two nearest (in log) to std / N_STD. */
export function scaleFor(std: number): number {
  return 2 ** Math.round(Math.log2(std / N_STD));
}

/** The integer n of element i of a tensor with key `key` (see the module header). */
export function seededInt(key: number, i: number): number {
  const h1 = pcg((i ^ key) >>> 0);
  const h2 = pcg((h1 + 0x9e3779b9) >>> 0);
  return (h1 & 0xffff) + (h1 >>> 16) + (h2 & 0xffff) + (h2 >>> 16) - 131070;
}
