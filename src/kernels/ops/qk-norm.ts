// Qwen3's per-head q/k norm (`qk_norm`: self_attn.q_norm and k_norm, an RMSNorm of each head's head_dim values alone,
// between the projection and the rotary; a step only where the config has it): every form the registry holds of it,
// from this one file. It runs the RMSNorm's launchers (rmsnorm.ts) over T · heads rows of head_dim. No fused kernel
// replaces it: the Llama fused forward keeps the three projections and the reference norms where it is present.

import type { ModelConfig, Tensor } from '../../numeric/types';
import type { Fp64Form, OpStep } from '../../ops/types';
import { headsOf as headsOfWidth } from '../../ops/widths';
import { type DfForm, dfNeed, dfRows } from '../oracle/df-form';
import { fp64Llama, fp64One, type OpModule, type WgslForm, wgslNeed, wgslOpts } from './forms';
import { dfRmsNorm, type RmsNormVariant, rmsNorm, rmsNormF64 } from './rmsnorm';

/** The heads of the step's slot: q's or k's (and v's). */
const headsOf = (cfg: ModelConfig, step: OpStep) => headsOfWidth(cfg, step.width);

const fp64: Fp64Form = (a) => {
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

const wgsl: WgslForm = (a) => {
  const { headDim: hd, rmsNormEps: eps } = a.cfg;
  const b = { x: a.inputs[0], weight: wgslNeed(a.weight, a), y: a.out };
  return [rmsNorm(a.label, b, a.T * headsOf(a.cfg, a.step), hd, eps, wgslOpts(a))];
};

const df: DfForm = (a) => {
  const cfg = a.cfg;
  if (cfg.family !== 'llama') throw new Error(`${a.label}: a q/k norm in a GPT-NeoX model`);
  const b = { x: a.inputs[0], weight: dfNeed(a.weight, a), y: a.out };
  const rows = dfRows(a) * headsOf(cfg, a.step);
  return [dfRmsNorm(a.label, b, rows, cfg.headDim, cfg.rmsNormEps, { constants: a.df })];
};

export const QK_NORM: OpModule = { kind: 'qk_norm', fp64, wgsl, df, fused: {} };
