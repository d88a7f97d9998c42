// LayerNorm's eps other than the config's: solved for from each row's scale (the median over rows).
import { type Cause, NORM_OPS } from '../types';
import { median, num } from './search';
import { rowScales } from './shared';

export const lnEps: Cause = {
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
