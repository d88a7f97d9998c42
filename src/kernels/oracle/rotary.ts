import type { KernelDef } from '../../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../../gpu/program';
import { type RotaryAngles, rotaryAngleTable } from '../cpu/rotary-angles';
import { grid1d, type KernelOpts } from '../grid';
import { DF_INCLUDES } from './df-common';

export const dfRotaryKernel: KernelDef = {
  name: 'oracle/rotary',
  file: 'oracle/rotary.wgsl',
  includes: DF_INCLUDES,
  bindings: [
    { name: 'params', kind: 'uniform' },
    { name: 'qkv', kind: 'read' }, // [T, H, 3, hd] df
    { name: 'cos', kind: 'read' }, // [T, r/2] df
    { name: 'sin', kind: 'read' }, // [T, r/2] df
    { name: 'q', kind: 'rw' }, // [H, T, hd] df
    { name: 'k', kind: 'rw' }, // [H, T, hd] df
    { name: 'v', kind: 'rw' }, // [H, T, hd] df
  ],
};

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
  return {
    label,
    kernel: dfRotaryKernel,
    constants: { WG, ...opts.constants },
    buffers: b,
    params: paramsBytes([T, H, hd, r]),
    workgroups: grid1d(H * T * hd, WG),
  };
}
