import type { DispatchSpec } from '../gpu/program';
import { dispatch1d, kernelOf } from './define';
import type { KernelOpts } from './grid';
import { type KvPositions, kvPositions } from './positions';

export const rotaryKernel = kernelOf('reference/rotary', ['common/precision.wgsl'], {
  qkv: 'read', // [T, H, 3, hd]
  cos: 'read', // [>= p0 + T, r/2]
  sin: 'read', // [>= p0 + T, r/2]
  q: 'rw', // [H, T, hd]
  k: 'rw', // [H, rows, hd] (rows = T in a whole forward)
  v: 'rw', // [H, rows, hd]
});

const WG = 256;

/**
 * cos/sin tables [T, r/2] for rotate-half rotary: inv_freq[i] = base^(-2i/r), angle = t · inv_freq[i],
 * computed in f64 and rounded to f32 once (GPU sin/cos carry no accuracy guarantee outside [-π, π]).
 * Arrays are at least one element long so they can back a buffer when r = 0.
 */
export function rotaryTables(T: number, r: number, base: number): { cos: Float32Array; sin: Float32Array } {
  const half = r / 2;
  const cos = new Float32Array(Math.max(1, T * half));
  const sin = new Float32Array(Math.max(1, T * half));
  for (let i = 0; i < half; i++) {
    const invFreq = 1 / base ** ((2 * i) / r);
    for (let t = 0; t < T; t++) {
      cos[t * half + i] = Math.cos(t * invFreq);
      sin[t * half + i] = Math.sin(t * invFreq);
    }
  }
  return { cos, sin };
}

/**
 * Splits qkv [T, H, 3, hd] into q, k, v [H, T, hd], rotating the first r dims of q and k. With `at` (KV-cache
 * decoding) the rows are the tokens at positions at.p0.. and k, v go to rows at.p0.. of [H, at.rows, hd].
 */
export function rotary(
  label: string,
  b: { qkv: GPUBuffer; cos: GPUBuffer; sin: GPUBuffer; q: GPUBuffer; k: GPUBuffer; v: GPUBuffer },
  T: number,
  H: number,
  hd: number,
  r: number,
  opts: KernelOpts = {},
  at?: KvPositions,
): DispatchSpec {
  const { p0, rows } = kvPositions(label, T, at);
  return dispatch1d(label, rotaryKernel, WG, H * T * hd, opts, b, [T, H, hd, r, p0, rows]);
}
