// A term of the residual sum read from another recorded tensor, or from another term of the same sum (one term read
// twice, another left out): every term × every tensor of its size.
import { type Candidate, type Cause, RESIDUAL_OPS } from '../types';
import { othersLike, slotWords } from './shared';

export const residualWrongTensor: Cause = {
  id: 'residual-wrong-tensor',
  family: 'operands',
  ops: RESIDUAL_OPS,
  candidates: (s) =>
    s.data.inputs.flatMap((x, j) => {
      // Another recorded tensor, or another term of the same sum (one term read twice, another left out).
      const terms = s.data.inputs
        .map((data, i) => ({ slot: s.data.inputSlots[i], data, i }))
        .filter((t) => t.i !== j && t.i > 0 && t.data.length === x.length);
      return [...othersLike(s.data, x.length), ...terms].map(
        (o): Candidate => ({
          params: { term: s.data.inputSlots[j], from: o.slot },
          variant: { replace: { term: j, data: o.data } },
        }),
      );
    }),
  words: (p, d) =>
    `the residual sum reads ${slotWords(String(p.from), d.layer)} where ${slotWords(String(p.term), d.layer)} belongs`,
};
