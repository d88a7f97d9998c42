// Launchers for the rotary's double-float oracle kernels (shaders/oracle/): the rotary over heads (rotate-half; the
// head split alone for v) and GPT-NeoX's packed into one buffer, with their fp64 angle tables. The linears, the
// embedding and the residual adds are GPT-NeoX's (linear.ts, embedding.ts, residual.ts); the attention core's,
// RMSNorm's and SwiGLU's are in their op modules (kernels/ops/attention.ts, rmsnorm.ts, swiglu.ts). The fp64 forms
// they match: src/kernels/cpu/rotary.ts ropeHeadsF64, splitHeadsRotaryF64.
import type { DispatchSpec } from '../../gpu/program';
import { angleTableOf, type RotaryAngles } from '../cpu/rotary-angles';
import { dispatch1d, kernelOf } from '../define';
import type { KernelOpts } from '../grid';
import { DF_INCLUDES } from './df-common';

export const dfRopeHeadsKernel = kernelOf('oracle/rope_heads', DF_INCLUDES, {
  x: 'read', // [T, heads, hd] df
  cos: 'read', // [T, r/2] df
  sin: 'read', // [T, r/2] df
  out: 'rw', // [heads, T, hd] df
});

export const dfRotaryPackedKernel = kernelOf('oracle/rotary_packed', DF_INCLUDES, {
  qkv: 'read', // [T, H, 3, hd] df
  cos: 'read', // [T, r/2] df
  sin: 'read', // [T, r/2] df
  out: 'rw', // [3, H, T, hd] df
});

const WG = 256;

/**
 * cos/sin tables [T, half] of the angles t · invFreq[i] in fp64, exactly as the CPU oracle's ropeHeadsF64 computes
 * them (angleTableOf, then Math.cos / Math.sin), as plain doubles: split into df pairs for upload (toDfPairs). At
 * least one element long so they can back a buffer when there is no rotation.
 */
export function ropeTablesF64(
  T: number,
  invFreq: ArrayLike<number>,
  angles: RotaryAngles = 'exact',
): { cos: Float64Array; sin: Float64Array } {
  const half = invFreq.length;
  const theta = angleTableOf(T, invFreq, angles); // [T, half]
  const cos = new Float64Array(Math.max(1, T * half));
  const sin = new Float64Array(Math.max(1, T * half));
  for (let i = 0; i < T * half; i++) {
    cos[i] = Math.cos(theta[i]);
    sin[i] = Math.sin(theta[i]);
  }
  return { cos, sin };
}

/**
 * x [T, heads, hd] -> out [heads, T, hd] in df, each head's first r dims rotated (rotate-half) with the tables'
 * cos/sin [T, r/2]; r = 0 is the head split alone.
 */
export function dfRopeHeads(
  label: string,
  b: { x: GPUBuffer; cos: GPUBuffer; sin: GPUBuffer; out: GPUBuffer },
  T: number,
  heads: number,
  hd: number,
  r: number,
  opts: KernelOpts = {},
): DispatchSpec {
  if (r < 0 || r > hd || r % 2 !== 0)
    throw new Error(`${label}: rotary dims ${r} must be even and within [0, ${hd}]`);
  return dispatch1d(label, dfRopeHeadsKernel, WG, heads * T * hd, opts, b, [T, heads, hd, r]);
}

/**
 * GPT-NeoX's fused QKV [T, H, 3, hd] -> q, k, v packed in one buffer ([3, H, T, hd]: the registry's `qkv_rot` slot),
 * q and k rotated (rotate-half) on their first r dims, in df.
 */
export function dfRotaryPacked(
  label: string,
  b: { qkv: GPUBuffer; cos: GPUBuffer; sin: GPUBuffer; out: GPUBuffer },
  T: number,
  H: number,
  hd: number,
  r: number,
  opts: KernelOpts = {},
): DispatchSpec {
  if (r < 0 || r > hd || r % 2 !== 0)
    throw new Error(`${label}: rotary dims ${r} must be even and within [0, ${hd}]`);
  return dispatch1d(label, dfRotaryPackedKernel, WG, H * T * hd, opts, b, [T, H, hd, r]);
}
