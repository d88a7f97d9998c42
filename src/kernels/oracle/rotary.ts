import type { DispatchSpec } from '../../gpu/program';
import { type RotaryAngles, rotaryAngleTable } from '../cpu/rotary-angles';
import { dispatch1d, kernelOf } from '../define';
import type { KernelOpts } from '../grid';
import { DF_INCLUDES } from './df-common';

export const dfRotaryKernel = kernelOf('oracle/rotary', DF_INCLUDES, {
  qkv: 'read', // [T, H, 3, hd] df
  cos: 'read', // [T, r/2] df
  sin: 'read', // [T, r/2] df
  q: 'rw', // [H, T, hd] df
  k: 'rw', // [H, T, hd] df
  v: 'rw', // [H, T, hd] df
});

const WG = 256;

/**
 * cos/sin tables [T, r/2] in fp64, exactly as the CPU oracle computes them (angle = t · inv_freq[i],
 * inv_freq from rotaryInvFreq), as plain doubles: split into df pairs for upload with toDfPairs. At least one
 * element long so they can back a buffer when r = 0.
 */
export function rotaryTablesF64(
  T: number,
  r: number,
  base: number,
  angles: RotaryAngles = 'exact',
): { cos: Float64Array; sin: Float64Array } {
  const half = r / 2;
  const theta = rotaryAngleTable(T, r, base, angles); // [T, r/2]
  const cos = new Float64Array(Math.max(1, T * half));
  const sin = new Float64Array(Math.max(1, T * half));
  for (let t = 0; t < T; t++) {
    for (let i = 0; i < half; i++) {
      const angle = theta[t * half + i];
      cos[t * half + i] = Math.cos(angle);
      sin[t * half + i] = Math.sin(angle);
    }
  }
  return { cos, sin };
}

/** qkv [T, H, 3, hd] -> q, k, v [H, T, hd], q and k rotated (rotate-half) on their first r dims, in df. */
export function dfRotary(
  label: string,
  b: { qkv: GPUBuffer; cos: GPUBuffer; sin: GPUBuffer; q: GPUBuffer; k: GPUBuffer; v: GPUBuffer },
  T: number,
  H: number,
  hd: number,
  r: number,
  opts: KernelOpts = {},
): DispatchSpec {
  if (r < 0 || r > hd || r % 2 !== 0)
    throw new Error(`${label}: rotary_ndims ${r} must be even and within [0, ${hd}]`);
  return dispatch1d(label, dfRotaryKernel, WG, H * T * hd, opts, b, [T, H, hd, r]);
}
