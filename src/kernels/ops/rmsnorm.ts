// The RMSNorm op (`rmsnorm`: HF LlamaRMSNorm, y = x / sqrt(mean(x²) + eps) · w over the hidden size — the Llama
// family's input_layernorm and post_attention_layernorm; its final norm is the same form, ops/families.ts): every
// form the registry holds of it, from this one file: its fp64 single-op oracle (rmsNormF64, with the ways an RMSNorm
// is miswritten as a variant: the causes), the WGSL reference launcher (shaders/reference/rmsnorm.wgsl) and the
// double-float one (shaders/oracle/rmsnorm.wgsl). HF computes the variance in fp32 of the input cast to fp32,
// normalises, casts back to the input dtype and then multiplies by the weight; in fp64 every cast is the identity, so
// the order drops out of the oracle. Its fused kernel, the residual add + RMSNorm (switch `layernorm`,
// shaders/fused/add_rmsnorm.wgsl), is launched here too, with its form that also adds up the split-K partials of the
// projection before it (add_rmsnorm_fold.wgsl: the o and the down projections' reduction folded into the norm after
// them, the same bits as the reduction then add_rmsnorm, one dispatch fewer). Qwen3's per-head q/k norm (`qk_norm`)
// is the second op kind of this file: the same oracle and launchers over T · heads rows. And the causes of both (the
// why's variants of a norm: its eps, the mean, the weight, half precision and its cast order; the q/k norm skipped or
// over the whole row), with the forms a variant cannot say.

import type { DispatchSpec } from '../../gpu/program';
import { type NumFormat, roundArray, roundTo } from '../../numeric/round';
import type { ModelConfig, Tensor } from '../../numeric/types';
import type { CauseArgs, CausesForm, CauseVariant, Fp64Form, OpStep } from '../../ops/types';
import { headsOf as headsOfWidth } from '../../ops/widths';
import { dispatchOf, kernelOf } from '../define';
import { partialsRange, type SplitPartials } from '../fused-linear-fold';
import { type NormLauncher, normDispatchOf } from '../fused-norm';
import { type KernelOpts, rowGroups } from '../grid';
import { DF_INCLUDES, dfParam } from '../oracle/df-common';
import { type DfForm, dfNeed, dfRows } from '../oracle/df-form';
import { fp64Llama, fp64One, type OpModule, type WgslForm, wgslNeed, wgslOpts } from './forms';

export interface RmsNormVariant {
  /** x / (sqrt(mean(x²)) + eps) instead of / sqrt(mean(x²) + eps). */
  epsOutside?: boolean;
  /** Subtract the row mean first (a LayerNorm without bias): (x - mean) / sqrt(var + eps) · w. */
  centered?: boolean;
  /** Leave out the weight. */
  noWeight?: boolean;
}

/** x [rows, d] -> [rows, d]: x / sqrt(mean(x²) + eps) · weight. */
export function rmsNormF64(
  x: ArrayLike<number>,
  rows: number,
  d: number,
  weight: ArrayLike<number>,
  eps: number,
  v: RmsNormVariant = {},
): Float64Array {
  if (x.length < rows * d)
    throw new Error(`rmsNormF64: x has ${x.length} values, [${rows}, ${d}] needs ${rows * d}`);
  if (!v.noWeight && weight.length < d)
    throw new Error(`rmsNormF64: weight has ${weight.length} values, needs ${d}`);
  const out = new Float64Array(rows * d); // [rows, d]
  for (let r = 0; r < rows; r++) {
    const off = r * d;
    let mean = 0;
    if (v.centered) {
      for (let e = 0; e < d; e++) mean += x[off + e];
      mean /= d;
    }
    let sq = 0;
    for (let e = 0; e < d; e++) {
      const c = x[off + e] - mean;
      sq += c * c;
    }
    const ms = sq / d;
    const inv = v.epsOutside ? 1 / (Math.sqrt(ms) + eps) : 1 / Math.sqrt(ms + eps);
    for (let e = 0; e < d; e++) out[off + e] = (x[off + e] - mean) * inv * (v.noWeight ? 1 : weight[e]);
  }
  return out;
}

export const rmsNormKernel = kernelOf('reference/rmsnorm', ['common/precision.wgsl'], {
  x: 'read', // [rows, d]
  weight: 'read', // [d]
  y: 'rw', // [rows, d]
});

const WG = 128;

/** An RMSNorm launcher, the reference's or the double-float one: x, y [rows, d], weight [d], eps. */
type RmsNormLauncher = (
  label: string,
  b: { x: GPUBuffer; weight: GPUBuffer; y: GPUBuffer },
  rows: number,
  d: number,
  eps: number,
  opts?: KernelOpts,
) => DispatchSpec;

/**
 * y = x / sqrt(mean(x²) + eps) · weight over d (HF LlamaRMSNorm) — x, y: [rows, d]; weight: [d]. One workgroup per
 * row. Qwen3's per-head q/k norm is the same launch with rows = T · heads, d = head_dim.
 */
export const rmsNorm: RmsNormLauncher = (label, b, rows, d, eps, opts = {}) =>
  dispatchOf(label, rmsNormKernel, { WG, ...opts.constants }, b, [rows, d, { f32: eps }], rowGroups(rows));

export const dfRmsNormKernel = kernelOf('oracle/rmsnorm', DF_INCLUDES, {
  x: 'read', // [rows, d] df
  weight: 'read', // [d] f32
  y: 'rw', // [rows, d] df
});

const DF_ROW_WG = 64;

/** y = x / sqrt(mean(x²) + eps) · weight over each row of d, in df — x, y: [rows, d]; one workgroup a row. */
export const dfRmsNorm: RmsNormLauncher = (label, b, rows, d, eps, opts = {}) => {
  if (!Number.isInteger(rows) || rows < 1 || !Number.isInteger(d) || d < 1)
    throw new Error(`${label}: RMSNorm over [${rows}, ${d}] needs positive integer sizes`);
  const params = [rows, d, 0, 0, ...dfParam(eps), ...dfParam(1)];
  return dispatchOf(label, dfRmsNormKernel, { WG: DF_ROW_WG, ...opts.constants }, b, params, rowGroups(rows));
};

export const addRmsNormKernel = kernelOf(
  'fused/add_rmsnorm',
  ['common/precision.wgsl', 'common/row_stats.wgsl', 'common/rms_row.wgsl'],
  {
    a: 'read', // [rows, d]
    b: 'read', // [rows, d]
    w: 'read', // [d]
    r: 'rw', // [rows, d]
    y: 'rw', // [rows, d]
  },
);

/**
 * A fused RMSNorm dispatch (add_rmsnorm.wgsl, add_rmsnorm_fold.wgsl): one workgroup per row of d (rowGroups: rows past
 * 65535 on a 2-D grid), params [rows, d, eps, ...more]; d past what the device's workgroup memory holds is refused
 * before anything is recorded.
 */
export const rmsNormDispatch = normDispatchOf(
  (label, d, max) => `${label}: fused RMSNorm supports d <= ${max} with this workgroup memory, got ${d}`,
  rowGroups,
);

/**
 * r = a + b; y = RMSNorm(r; w, eps) — a, b, r, y: [rows, d]; w: [d]. With `b: null` RMSNorm of a alone (the first
 * layer's input norm): b and r are not touched (`dummy` is bound for r). Faults: FAULT_EPS_OUTSIDE, and row_stats'
 * FAULT_EPS_SCALE and FAULT_REORDER.
 */
export const addRmsNorm: NormLauncher<{
  a: GPUBuffer;
  b: GPUBuffer | null;
  w: GPUBuffer;
  r: GPUBuffer | null;
  y: GPUBuffer;
  dummy: GPUBuffer;
}> = (label, buf, rows, d, eps, opts = {}) => {
  const add = buf.b !== null;
  if (add !== (buf.r !== null)) throw new Error(`${label}: the residual add needs both b and r (or neither)`);
  const buffers = { a: buf.a, b: buf.b ?? buf.a, w: buf.w, r: buf.r ?? buf.dummy, y: buf.y };
  return rmsNormDispatch(label, addRmsNormKernel, [rows, d, eps], opts, { ADD: add }, buffers);
};

export const addRmsNormFoldKernel = kernelOf(
  'fused/add_rmsnorm_fold',
  ['common/precision.wgsl', 'common/row_stats.wgsl', 'common/rms_row.wgsl'],
  {
    a: 'read', // [rows, d] residual stream
    b_bias: 'read', // [d] the projection's bias (or a dummy)
    b_part: 'read', // [S, rows, d] the projection's partials
    w: 'read', // [d]
    b: 'rw', // [rows, d] the projection's output
    r: 'rw', // [rows, d]
    y: 'rw', // [rows, d]
  },
);

/**
 * b = the split projection's output formed from its partials (as its reduction would), r = a + b, y = RMSNorm(r; w,
 * eps): a, b, r, y [rows, d], w [d]. Faults as addRmsNorm's: FAULT_EPS_OUTSIDE, row_stats' FAULT_EPS_SCALE and
 * FAULT_REORDER.
 */
export const addRmsNormFold: NormLauncher<{
  a: GPUBuffer;
  part: SplitPartials;
  w: GPUBuffer;
  b: GPUBuffer;
  r: GPUBuffer;
  y: GPUBuffer;
  dummy: GPUBuffer;
}> = (label, buf, rows, d, eps, opts = {}) => {
  const { part } = buf;
  const buffers = {
    a: buf.a,
    b_bias: part.bias ?? buf.dummy,
    b_part: partialsRange(part, rows, d),
    w: buf.w,
    b: buf.b,
    r: buf.r,
    y: buf.y,
  };
  const more = [part.K, part.kChunk, part.bias ? 1 : 0];
  return rmsNormDispatch(label, addRmsNormFoldKernel, [rows, d, eps], opts, {}, buffers, more);
};

/** fp64: HF's cast order is the identity in fp64; a cause's variant (RmsNormVariant) as the oracle takes it. */
const fp64: Fp64Form = (a) =>
  rmsNormF64(
    fp64One(a),
    a.T,
    a.cfg.hiddenSize,
    (a.weights as Tensor).data,
    fp64Llama(a).rmsNormEps,
    a.variant as RmsNormVariant,
  );

const wgsl: WgslForm = (a) => [
  rmsNorm(
    a.label,
    { x: a.inputs[0], weight: wgslNeed(a.weight, a), y: a.out },
    a.T,
    a.cfg.hiddenSize,
    a.cfg.rmsNormEps,
    wgslOpts(a),
  ),
];

const df: DfForm = (a) => {
  if (a.cfg.family !== 'llama') throw new Error(`${a.label}: an RMSNorm in a GPT-NeoX model`);
  const b = { x: a.inputs[0], weight: dfNeed(a.weight, a), y: a.out };
  return [dfRmsNorm(a.label, b, dfRows(a), a.cfg.hiddenSize, a.cfg.rmsNormEps, { constants: a.df })];
};

/** Its fused kernel's launchers under the switch id (the Llama fused forward reaches them so: ops/index.ts). */
export const RMSNORM_FUSED = { layernorm: { add: addRmsNorm, addFold: addRmsNormFold } } as const;

/**
 * RMSNorm (either norm op) in `format` as HF's LlamaRMSNorm computes it in a model of that dtype: x and the weight
 * in the format, the statistics and the normalisation in fp32 (here fp64), the normalised value cast back to the
 * format, then the product with the weight rounded (`weightFirst`: the weight applied before the one cast back).
 */
export function rmsHalfForm(format: NumFormat, weightFirst: boolean): Fp64Form {
  return (a) => {
    const w = roundArray(format, (a.weights as Tensor).data);
    const d = w.length;
    const x = roundArray(format, a.inputs[0]);
    const n = rmsNormF64(x, x.length / d, d, w, fp64Llama(a).rmsNormEps, { noWeight: true });
    const out = new Float64Array(n.length);
    for (let i = 0; i < n.length; i++) {
      const wi = w[i % d];
      out[i] = weightFirst ? roundTo(format, n[i] * wi) : roundTo(format, roundTo(format, n[i]) * wi);
    }
    return out;
  };
}

/**
 * The causes of a norm (`norm`: its words): eps outside the root (a grid of 1 … 1e6 × the config's, and — tune — any
 * eps between, solved from the run where the grid misses), eps inside the root off, the mean subtracted, no weight,
 * computed in half (HF's cast order in a half model) or with the weight before the cast back.
 */
function normCauses(norm: string, { cfg }: CauseArgs): CauseVariant[] {
  const out: CauseVariant[] = [];
  const outside = (eps: number): CauseVariant => {
    const factor = eps / cfg.rmsNormEps;
    return {
      id: 'rms-eps-outside',
      family: 'constants',
      words: `${norm}'s eps is added outside the root, to the RMS (eps ${eps.toPrecision(3)}${factor === 1 ? ', the config’s' : `, ${Number(factor.toPrecision(3))} × the config’s`})`,
      params: { eps },
      cfg: { rmsNormEps: eps },
      variant: { epsOutside: true },
      tune: { key: 'eps', value: eps, make: outside },
    };
  };
  const inside = (eps: number): CauseVariant => ({
    id: 'rms-eps',
    family: 'constants',
    words: `${norm}'s eps (inside the root) is ${eps.toPrecision(3)}, ${Number((eps / cfg.rmsNormEps).toPrecision(3))} × the config’s ${cfg.rmsNormEps}`,
    params: { eps },
    cfg: { rmsNormEps: eps },
    tune: { key: 'eps', value: eps, make: inside },
  });
  for (const factor of [1, 10, 100, 1e3, 1e4, 1e5, 1e6]) out.push(outside(cfg.rmsNormEps * factor));
  for (const factor of [0.01, 0.1, 10, 100, 1e3, 1e4, 1e5, 1e6]) out.push(inside(cfg.rmsNormEps * factor));
  out.push({
    id: 'rms-mean-subtracted',
    family: 'function',
    words: `${norm} subtracts the row mean (a LayerNorm without bias)`,
    params: {},
    variant: { centered: true },
  });
  out.push({
    id: 'rms-no-weight',
    family: 'operands',
    words: `${norm}'s weight is left out`,
    params: {},
    variant: { noWeight: true },
  });
  for (const format of ['bf16', 'fp16'] as const) {
    out.push({
      id: `rms-${format}`,
      family: 'narrower',
      words: `${norm} is computed in ${format} as in a ${format} model: its input and weight in ${format}, the normalised value cast back to ${format}, then the product rounded`,
      params: { format },
      form: rmsHalfForm(format, false),
    });
    out.push({
      id: 'rms-cast-order',
      family: 'narrower',
      words: `${norm} in ${format} applies the weight before the cast back to ${format} (one rounding; HF casts, then multiplies)`,
      params: { format },
      form: rmsHalfForm(format, true),
    });
  }
  return out;
}

const causes: CausesForm = (a) => normCauses('the RMSNorm', a);

export const RMSNORM: OpModule = { kind: 'rmsnorm', fp64, wgsl, df, fused: RMSNORM_FUSED, causes };

// Qwen3's per-head q/k norm (`qk_norm`: self_attn.q_norm and k_norm, an RMSNorm of each head's head_dim values alone,
// between the projection and the rotary; a step only where the config has it): the RMSNorm's oracle and launchers
// over T · heads rows of head_dim. No fused kernel replaces it: the Llama fused forward keeps the three projections
// and the reference norms where it is present.

/** The heads of the step's slot: q's or k's (and v's). */
const headsOf = (cfg: ModelConfig, step: OpStep) => headsOfWidth(cfg, step.width);

const qkFp64: Fp64Form = (a) => {
  const cfg = fp64Llama(a);
  const x = fp64One(a);
  const rows = x.length / cfg.headDim; // T · heads: each head's hd values normalised alone
  return rmsNormF64(
    x,
    rows,
    cfg.headDim,
    (a.weights as Tensor).data,
    cfg.rmsNormEps,
    a.variant as RmsNormVariant,
  );
};

const qkWgsl: WgslForm = (a) => {
  const { headDim: hd, rmsNormEps: eps } = a.cfg;
  const b = { x: a.inputs[0], weight: wgslNeed(a.weight, a), y: a.out };
  return [rmsNorm(a.label, b, a.T * headsOf(a.cfg, a.step), hd, eps, wgslOpts(a))];
};

const qkDf: DfForm = (a) => {
  const cfg = a.cfg;
  if (cfg.family !== 'llama') throw new Error(`${a.label}: a q/k norm in a GPT-NeoX model`);
  const b = { x: a.inputs[0], weight: dfNeed(a.weight, a), y: a.out };
  const rows = dfRows(a) * headsOf(cfg, a.step);
  return [dfRmsNorm(a.label, b, rows, cfg.headDim, cfg.rmsNormEps, { constants: a.df })];
};

/** Qwen3's q/k norm left out: its input passed through. */
export const normSkipped: Fp64Form = (a) => Float64Array.from(a.inputs[0]);

/** Qwen3's q/k norm over a row's whole projection (heads · hd values) with the [hd] weight on every head. */
export const normWholeRow: Fp64Form = (a) => {
  const w = (a.weights as Tensor).data;
  const hd = w.length;
  const x = a.inputs[0];
  const width = x.length / a.T;
  const tiled = new Float64Array(width);
  for (let e = 0; e < width; e++) tiled[e] = w[e % hd];
  return rmsNormF64(x, a.T, width, tiled, fp64Llama(a).rmsNormEps);
};

/** A norm's causes, and the q/k norm's own: left out, or taken over the whole projection. */
const qkCauses: CausesForm = (a) => [
  ...normCauses('the q/k RMSNorm', a),
  {
    id: 'qk-norm-skipped',
    family: 'operands',
    words: 'the q/k norm is left out: the projection goes to the rotary unnormalised',
    params: {},
    form: normSkipped,
  },
  {
    id: 'qk-norm-whole',
    family: 'layout',
    words: 'the q/k norm is taken over the whole projection of a row (all its heads at once), not per head',
    params: {},
    form: normWholeRow,
  },
];

export const QK_NORM: OpModule = {
  kind: 'qk_norm',
  fp64: qkFp64,
  wgsl: qkWgsl,
  df: qkDf,
  fused: {},
  causes: qkCauses,
};
