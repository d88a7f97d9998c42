// A narrower type inside the residual sum: one term kept in half before an fp32 add (which term, which format), or
// the additions themselves in half (each partial sum rounded, in HF's order).
import type { NumFormat } from '../../../numeric/round';
import { type Cause, RESIDUAL_OPS } from '../types';
import { slotWords } from './shared';

const FORMATS: NumFormat[] = ['bf16', 'fp16'];

export const residualTermRounded: Cause = {
  id: 'residual-term-rounded',
  family: 'narrower',
  ops: ['residual'],
  candidates: (s) =>
    s.data.inputs.flatMap((_, term) =>
      FORMATS.map((format) => ({
        params: { term: s.data.inputSlots[term], format },
        variant: { termFormat: { term, format } },
      })),
    ),
  words: (p, d) => `${slotWords(String(p.term), d.layer)} is rounded to ${p.format} before the residual sum`,
};

export const residualSumHalf: Cause = {
  id: 'residual-sum-half',
  family: 'narrower',
  ops: RESIDUAL_OPS,
  candidates: () => FORMATS.map((format) => ({ params: { format }, variant: { sumFormat: format } })),
  words: (p) => `the residual additions are done in ${p.format} (each partial sum rounded)`,
};
