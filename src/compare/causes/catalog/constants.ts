// Constants: LayerNorm's eps and where it sits, biased vs unbiased variance, the softmax scale, the rotary base and
// width. Where a value can be solved for from the data it is, and reported with the value found.
import { widthOf } from '../exact-op';
import { ATTENTION_OPS, type Cause, NORM_OPS, type OpData } from '../types';
import { median, num, searchLog } from './search';

/** Per row: the scale s the recorded output applies to (x - mean), and the row's biased variance. */
function rowScales(d: OpData): { s: number; variance: number }[] {
  const T = d.tokens.length;
  const w = widthOf(d);
  const n = d.weights.norm!;
  const g = n.weight.data;
  const b = n.bias.data;
  let gMax = 0;
  for (let c = 0; c < w; c++) gMax = Math.max(gMax, Math.abs(g[c]));
  const x = d.inputs[0];
  const rows = [];
  for (let t = 0; t < T; t++) {
    let mean = 0;
    for (let c = 0; c < w; c++) mean += x[t * w + c] / w;
    let zz = 0;
    let yz = 0;
    let sq = 0;
    for (let c = 0; c < w; c++) {
      const z = x[t * w + c] - mean;
      sq += z * z;
      if (Math.abs(g[c]) <= 1e-3 * gMax) continue;
      const y = (d.recorded[t * w + c] - b[c]) / g[c];
      yz += y * z;
      zz += z * z;
    }
    rows.push({ s: zz > 0 ? yz / zz : Number.NaN, variance: sq / w });
  }
  return rows;
}

const lnEps: Cause = {
  id: 'ln-eps',
  family: 'constants',
  ops: NORM_OPS,
  candidates: (s) => {
    const eps = median(rowScales(s.data).map((r) => 1 / (r.s * r.s) - r.variance));
    if (!(eps > 0)) return [];
    const nice = Number(eps.toPrecision(1));
    return [eps, nice].map((e) => ({ params: { eps: e }, variant: { eps: e } }));
  },
  words: (p, d) => `LayerNorm's eps is ${num(Number(p.eps))} instead of ${num(d.cfg.layerNormEps)}`,
};

const lnEpsOutside: Cause = {
  id: 'ln-eps-outside',
  family: 'constants',
  ops: NORM_OPS,
  candidates: (s) => {
    const eps = median(rowScales(s.data).map((r) => 1 / r.s - Math.sqrt(r.variance)));
    if (!(eps > 0)) return [];
    const nice = Number(eps.toPrecision(1));
    return [eps, nice, s.data.cfg.layerNormEps].map((e) => ({
      params: { eps: e },
      variant: { eps: e, norm: { epsOutside: true } },
    }));
  },
  words: (p) =>
    `LayerNorm adds eps (${num(Number(p.eps))}) to the standard deviation, outside the square root`,
};

const lnUnbiased: Cause = {
  id: 'ln-unbiased-var',
  family: 'constants',
  ops: NORM_OPS,
  candidates: () => [{ params: {}, variant: { norm: { unbiased: true } } }],
  words: () => 'LayerNorm divides the variance by d − 1 (unbiased) instead of d',
};

const softmaxScale: Cause = {
  id: 'softmax-scale',
  family: 'constants',
  ops: ATTENTION_OPS,
  candidates: (s) => {
    const hd = s.data.cfg.headDim;
    const nominal = 1 / Math.sqrt(hd);
    const scale = searchLog(s, (x) => ({ scores: { scale: x } }), nominal / 64, nominal * 64, 24, [
      1,
      1 / hd,
    ]);
    return [{ params: { scale }, variant: { scores: { scale } } }];
  },
  words: (p, d) => {
    const x = Number(p.scale);
    const hd = d.cfg.headDim;
    const known =
      Math.abs(x - 1) < 1e-3 ? ' (unscaled)' : Math.abs(x * hd - 1) < 1e-3 ? ` (1/${hd}: 1/head_dim)` : '';
    return `the softmax scale is ${num(x)}${known} instead of 1/√${hd} = ${num(1 / Math.sqrt(hd))}`;
  },
};

const rotaryBase: Cause = {
  id: 'rotary-base',
  family: 'constants',
  ops: ATTENTION_OPS,
  candidates: (s) => {
    if (s.data.cfg.rotaryNdims === 0) return [];
    const base = searchLog(s, (x) => ({ rotaryBase: x }), 10, 1e7, 24);
    return [{ params: { base }, variant: { rotaryBase: base } }];
  },
  words: (p, d) => `the rotary base is ${num(Number(p.base))} instead of ${num(d.cfg.rotaryBase)}`,
};

const rotaryWidth: Cause = {
  id: 'rotary-width',
  family: 'constants',
  ops: ATTENTION_OPS,
  candidates: (s) => {
    const { headDim, rotaryNdims } = s.data.cfg;
    const out = [];
    for (let n = 0; n <= headDim; n += 2)
      if (n !== rotaryNdims) out.push({ params: { ndims: n }, variant: { rotaryNdims: n } });
    return out;
  },
  words: (p, d) => `rotary is applied to ${p.ndims} dims of each head instead of ${d.cfg.rotaryNdims}`,
};

export const CONSTANTS: readonly Cause[] = [
  lnEps,
  lnEpsOutside,
  lnUnbiased,
  softmaxScale,
  rotaryBase,
  rotaryWidth,
];
