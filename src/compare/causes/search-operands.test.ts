// The input a product variant reads shifted along each row (input-shifted: a tile loaded from the wrong offset):
// element k of a row takes k + s where that lies in the row, else 0, on the input as rounded (fresh seeds, each in
// its failure message; shifts either way, up to past the row).
import { describe, expect, it } from 'vitest';
import { roundTo } from '../../numeric/round';
import { productOperands } from './exact-op';
import { plantOp } from './plant.testdata';

const base = Math.floor(Math.random() * 2 ** 30);

describe('productOperands: a shifted input', () => {
  it('is each row read s elements along, zeros past its ends (60 seeds)', () => {
    for (let j = 0; j < 60; j++) {
      const seed = base + j;
      const d = plantOp(seed, j % 2 ? 'fc1' : 'qkv', () => ({}));
      const T = d.tokens.length;
      const x0 = d.inputs[0];
      const K = x0.length / T;
      const s = j % 5 === 0 ? (j % 10 === 0 ? K + 1 : -K) : (seed % 41) - 20 || 1;
      const format = j % 3 === 0 ? ('bf16' as const) : undefined;
      const got = productOperands({ ...d }, { inputShift: s, inputFormat: format }).x;
      for (let t = 0; t < T; t++)
        for (let k = 0; k < K; k++) {
          const src = k + s >= 0 && k + s < K ? x0[t * K + k + s] : 0;
          const want = format ? roundTo(format, src) : src;
          if (!Object.is(got[t * K + k], want))
            expect(got[t * K + k], `seed ${seed}, shift ${s}, row ${t}, element ${k}`).toBe(want);
        }
    }
  });
});
