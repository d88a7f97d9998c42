// The Llama family's split heads + rotary (shaders/reference/rope.wgsl): one launch per part (q, k, v), reading a
// projection's rows and writing [heads, rows, hd]; the angles come from an inv_freq table (theta, rope_scaling).
import type { DispatchSpec } from '../gpu/program';
import { dispatch1d, kernelOf } from './define';
import type { KernelOpts } from './grid';
import { type KvPositions, kvPositions } from './positions';

export const ropeKernel = kernelOf('reference/rope', ['common/precision.wgsl'], {
  x: 'read', // [T, stride]
  cos: 'read', // [>= p0 + T, r/2]
  sin: 'read', // [>= p0 + T, r/2]
  out: 'rw', // [heads, rows, hd]
});

const WG = 256;

/**
 * cos/sin tables [T, r/2] (r = 2 · invFreq.length) from an inv_freq table (cpu/rotary-angles.ts rotaryInvFreq,
 * with the model's theta and rope_scaling): angle = t · invFreq[i] in f64, cos and sin rounded to f32 once. At least
 * one element long, so they can back a buffer when r = 0.
 */
export function ropeTables(T: number, invFreq: ArrayLike<number>): { cos: Float32Array; sin: Float32Array } {
  const half = invFreq.length;
  const cos = new Float32Array(Math.max(1, T * half));
  const sin = new Float32Array(Math.max(1, T * half));
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < half; i++) {
      cos[t * half + i] = Math.cos(t * invFreq[i]);
      sin[t * half + i] = Math.sin(t * invFreq[i]);
    }
  }
  return { cos, sin };
}

/** Where a part's heads sit in the rows it is read from: the row width and the part's first column. */
export interface RopeSource {
  stride: number;
  off: number;
}

/** A rotary over the first r dims of each head of hd: r even, within [0, hd] (one line naming the launch). */
export function checkRotaryDims(label: string, r: number, hd: number): void {
  if (r < 0 || r > hd || r % 2 !== 0)
    throw new Error(`${label}: rotary dims ${r} must be even and within [0, ${hd}]`);
}

/**
 * out [heads, rows, hd] ← x's part (row t at x[t · src.stride + src.off], [heads, hd]), the first r dims of each
 * head rotated (rotate-half; r = 0: copied). Without `src` x is that part alone ([T, heads · hd]); with `at`
 * (KV-cache decoding) row t is position at.p0 + t and is written there (a key or value into the cache), or with
 * `query` at row t of out [heads, T, hd].
 */
export function ropeHeads(
  label: string,
  b: { x: GPUBuffer; cos: GPUBuffer; sin: GPUBuffer; out: GPUBuffer },
  T: number,
  heads: number,
  hd: number,
  r: number,
  opts: KernelOpts = {},
  src?: RopeSource,
  at?: KvPositions,
  query = false,
): DispatchSpec {
  checkRotaryDims(label, r, hd);
  const { stride, off } = src ?? { stride: heads * hd, off: 0 };
  if (off + heads * hd > stride)
    throw new Error(`${label}: ${heads} heads of ${hd} at column ${off} do not fit rows of ${stride}`);
  const { p0, rows } = kvPositions(label, T, at);
  const [o0, KT] = query ? [0, T] : [p0, rows];
  const params = [T, heads, hd, r, p0, KT, stride, off, o0];
  return dispatch1d(label, ropeKernel, WG, heads * T * hd, opts, b, params);
}
