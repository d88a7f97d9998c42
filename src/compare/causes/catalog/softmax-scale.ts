// The softmax scale other than 1/√head_dim: searched on a log grid (unscaled and 1/head_dim tried, and named).
import { ATTENTION_OPS, type Cause } from '../types';
import { num, searchLog } from './search';

export const softmaxScale: Cause = {
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
