// A term of the residual sum left out or added twice: each term tried.
import { type Cause, RESIDUAL_OPS } from '../types';
import { slotWords } from './shared';

const termCoef = (id: string, coef: number, how: string): Cause => ({
  id,
  family: 'operands',
  ops: RESIDUAL_OPS,
  candidates: (s) =>
    s.data.inputs.map((_, j) => ({
      params: { term: s.data.inputSlots[j] },
      variant: { coefs: s.data.inputs.map((__, i) => (i === j ? coef : 1)) },
    })),
  words: (p, d) => `${slotWords(String(p.term), d.layer)} is ${how} in the residual sum`,
});

export const residualTermDropped = termCoef('residual-term-dropped', 0, 'left out');
export const residualTermDoubled = termCoef('residual-term-doubled', 2, 'added twice');
