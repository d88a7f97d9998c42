// The rotary embedding (`rotary`: RoPE, rotate-half over the first rotary dims of each head): every form the registry
// holds of it, from this one file. GPT-NeoX rotates the fused QKV [T, H, 3, hd] on rotary_ndims and packs q, k, v
// into one [3, H, T, hd] buffer; the Llama family rotates q [T, H·hd] and k [T, KV·hd] per projection into heads
// ([heads, T, hd], the KV heads' count from ops/widths.ts), with the config's theta and rope_scaling (llamaInvFreq).
// The single-op oracles are kernels/cpu/rotary.ts (with the causes' RotaryVariant), the WGSL reference launchers
// kernels/rope.ts (the Llama family's; GPT-NeoX's reference plan runs kernels/rotary.ts on the layer's context,
// engine/plan-ops.ts); its double-float launchers (shaders/oracle/rope_heads, rotary_packed) and their fp64 angle
// tables are here. It is not in OP_MODULES: the fused kernel its descriptor lists, the q/k/v + rotary GEMM
// (`qkv_rotary`), replaces the projections too and keeps its launchers in kernels/fused-llama.ts, so no module
// registers it; the form tables (kernels/cpu/op-fp64.ts, engine/llama-wgsl-forms.ts, kernels/oracle/df-forms.ts)
// take its forms from ROTARY by name. And its causes (the why's variants of it: theta off, the frequency scaling
// skipped, GPT-J pairs).

import type { DispatchSpec } from '../../gpu/program';
import type { LlamaConfig } from '../../numeric/types';
import type { CausesForm, CauseVariant, Fp64Args, Fp64Form } from '../../ops/types';
import { headsOf } from '../../ops/widths';
import { type RotaryVariant, ropeHeadsF64, rotaryInvFreq, splitHeadsRotaryF64 } from '../cpu/rotary';
import { angleTableOf, type RotaryAngles } from '../cpu/rotary-angles';
import { dispatch1d, kernelOf } from '../define';
import type { KernelOpts } from '../grid';
import { DF_INCLUDES } from '../oracle/df-common';
import type { DfForm } from '../oracle/df-form';
import { checkRotaryDims, ropeHeads } from '../rope';
import { fp64Llama as llama, type OpModule, fp64One as one, type WgslForm, wgslOpts } from './forms';

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
  checkRotaryDims(label, r, hd);
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
  checkRotaryDims(label, r, hd);
  return dispatch1d(label, dfRotaryPackedKernel, WG, H * T * hd, opts, b, [T, H, hd, r]);
}

/** The inverse frequencies of a Llama-family config (theta, rope_scaling; fp32 steps under 'hf-fp32'). */
export function llamaInvFreq(cfg: LlamaConfig, angles: Fp64Args['angles'] = 'exact'): Float64Array {
  const scaling = cfg.ropeScaling.type === 'default' ? null : cfg.ropeScaling;
  return rotaryInvFreq(cfg.rotaryDim, cfg.ropeTheta, angles, scaling);
}

/** GPT-NeoX: the fused QKV [T, H, 3, hd] split and rotated, packed as q, k, v each [H, T, hd]. */
function neoxRotary(a: Fp64Args): Float64Array {
  if (a.cfg.family === 'llama') throw new Error('unreachable');
  const { numHeads: H, headDim: hd } = a.cfg;
  const { q, k, v } = splitHeadsRotaryF64(
    one(a),
    a.T,
    H,
    hd,
    a.cfg.rotaryNdims,
    a.cfg.rotaryBase,
    a.angles,
    a.variant as RotaryVariant,
  );
  const out = new Float64Array(3 * q.length);
  out.set(q, 0);
  out.set(k, q.length);
  out.set(v, 2 * q.length);
  return out;
}

/** Llama family: q or k [T, heads·hd] -> [heads, T, hd], rotate-half over the whole head. */
function llamaRotary(a: Fp64Args): Float64Array {
  const cfg = llama(a);
  const x = one(a);
  const heads = x.length / (a.T * cfg.headDim);
  return ropeHeadsF64(
    x,
    a.T,
    heads,
    cfg.headDim,
    llamaInvFreq(cfg, a.angles),
    a.angles,
    a.variant as RotaryVariant,
  );
}

/** Both families' rotary in fp64: the config says which layout. */
const fp64: Fp64Form = (a) => (a.cfg.family === 'llama' ? llamaRotary(a) : neoxRotary(a));

// q at its rows [H, T, hd]; k [KV, T, hd], or into the cache at its positions (a.out is then the cache's k).
const wgsl: WgslForm = (a) => {
  const query = a.step.width === 'q_heads';
  const heads = headsOf(a.cfg, a.step.width);
  const b = { x: a.inputs[0], ...a.rope, out: a.out };
  const { headDim: hd, rotaryDim: r } = a.cfg;
  return [ropeHeads(a.label, b, a.T, heads, hd, r, wgslOpts(a), undefined, a.kv?.at, query)];
};

// Llama: q or k [T, heads·hd] -> [heads, T, hd], rotate-half over the first rotaryDim dims of each head.
// GPT-NeoX: the fused QKV [T, H, 3, hd] -> q, k, v packed [3, H, T, hd], q and k rotated on rotary_ndims.
const df: DfForm = (a) => {
  const cfg = a.cfg;
  const opts = { constants: a.df };
  if ((a.from ?? 0) !== 0)
    throw new Error(`${a.label}: the rotary is computed over every row, not from row ${a.from}`);
  if (cfg.family !== 'llama') {
    const b = { qkv: a.inputs[0], ...a.rope, out: a.out };
    return [dfRotaryPacked(a.label, b, a.T, cfg.numHeads, cfg.headDim, cfg.rotaryNdims, opts)];
  }
  const heads = headsOf(cfg, a.step.width);
  const b = { x: a.inputs[0], ...a.rope, out: a.out };
  return [dfRopeHeads(a.label, b, a.T, heads, cfg.headDim, cfg.rotaryDim, opts)];
};

/**
 * The rotary's causes: another theta (a grid of 0.01 … 100 × the config's, and — tune — any theta between, solved
 * from the run where the grid misses), the llama3 or linear frequency scaling skipped, GPT-J's interleaved pairs.
 */
const causes: CausesForm = (a) => {
  const cfg = a.cfg;
  const out: CauseVariant[] = [];
  const theta = (v: number): CauseVariant => ({
    id: 'rotary-theta',
    family: 'constants',
    words: `the rope theta is ${Number(v.toPrecision(6))}, not ${cfg.ropeTheta}`,
    params: { theta: v },
    cfg: { ropeTheta: v },
    tune: { key: 'theta', value: v, make: theta },
  });
  for (const f of [0.01, 0.1, 0.5, 2, 10, 100]) out.push(theta(cfg.ropeTheta * f));
  if (cfg.ropeScaling.type !== 'default')
    out.push({
      id: 'rotary-scaling-skipped',
      family: 'constants',
      words: `the ${cfg.ropeScaling.type} frequency scaling of the rotary is skipped`,
      params: { type: cfg.ropeScaling.type },
      cfg: { ropeScaling: { type: 'default' } as LlamaConfig['ropeScaling'] },
    });
  out.push({
    id: 'rotary-gptj',
    family: 'layout',
    words: "the rotary rotates GPT-J's interleaved pairs (2i, 2i + 1) instead of rotate-half",
    params: {},
    variant: { gptj: true },
  });
  return out;
};

/** The rotary's forms, which the form tables take by name (not an OP_MODULES entry: see above). */
export const ROTARY: Required<Pick<OpModule, 'kind' | 'fp64' | 'wgsl' | 'df' | 'causes'>> = {
  kind: 'rotary',
  fp64,
  wgsl,
  df,
  causes,
};
