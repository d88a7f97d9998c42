// LayerNorm's eps added to the standard deviation, outside the square root: the value solved for from each row's
// scale, the config's tried too.
import { type Cause, NORM_OPS } from '../types';
import { median, num } from './search';
import { rowScales } from './shared';

export const lnEpsOutside: Cause = {
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
