// The one fp64 linear (linear.ts): its plain form against a plain fp64 sum, and its variant form (LinearParams:
// the causes' products) against the plain one — the identity reading gives the same columns, a transposed or
// rounded weight, a scaled bias and an fp16 accumulator what they say. Random sizes off any tile (M, K, N drawn),
// 60 seeds; a seed is named on failure.
import { describe, expect, it } from 'vitest';
import { mulberry32, randn } from '../../numeric/random';
import { roundTo } from '../../numeric/round';
import { accumulateF16, type LinearParams, linearF64 } from './linear';

/** A sum of K products in fp64, each output exact to about K · 2^-53 of the sum of |terms|: the tolerance. */
function reference(
  x: Float64Array,
  M: number,
  K: number,
  w: Float64Array,
  b: Float64Array | null,
  N: number,
) {
  const y = new Float64Array(M * N);
  const mag = new Float64Array(M * N);
  for (let m = 0; m < M; m++)
    for (let n = 0; n < N; n++) {
      let s = b ? b[n] : 0;
      let a = b ? Math.abs(b[n]) : 0;
      for (let k = 0; k < K; k++) {
        s += x[m * K + k] * w[n * K + k];
        a += Math.abs(x[m * K + k] * w[n * K + k]);
      }
      y[m * N + n] = s;
      mag[m * N + n] = a;
    }
  return { y, tol: (i: number) => (K + 2) * 2 ** -52 * mag[i] };
}

describe('linearF64, the one fp64 linear', () => {
  it('plain and with LinearParams (columns, weight rows, bias, fp16 accumulator), 60 seeds', () => {
    for (let seed = 1; seed <= 60; seed++) {
      const r = mulberry32(seed);
      const M = 1 + Math.floor(r() * 9);
      const K = 1 + Math.floor(r() * 70);
      const N = 1 + Math.floor(r() * 13);
      const x = Float64Array.from(randn(r, M * K));
      const w = Float64Array.from(randn(r, N * K));
      const b = r() < 0.5 ? Float64Array.from(randn(r, N)) : null;
      const msg = `seed ${seed} M ${M} K ${K} N ${N}`;
      const ref = reference(x, M, K, w, b, N);
      const plain = linearF64(x, M, K, w, b, N);
      for (let i = 0; i < plain.length; i++)
        expect(Math.abs(plain[i] - ref.y[i]), msg).toBeLessThanOrEqual(ref.tol(i));

      // The identity reading of a few columns, in a shuffled order: those columns of the plain product.
      const cols = Int32Array.from({ length: 1 + Math.floor(r() * N) }, () => Math.floor(r() * N));
      const id: LinearParams = {
        cols,
        row: (n, _N, out) => out.set(w.subarray(n * K, (n + 1) * K)),
        bias: (n) => (b ? b[n] : 0),
      };
      const some = linearF64(x, M, K, [], null, N, id);
      expect(some.length, msg).toBe(M * cols.length);
      for (let m = 0; m < M; m++)
        cols.forEach((n, j) => {
          const i = m * N + n;
          expect(Math.abs(some[m * cols.length + j] - ref.y[i]), msg).toBeLessThanOrEqual(ref.tol(i));
        });

      // A weight rounded to bf16 and a bias doubled: the plain product of those operands.
      const wb = w.map((v) => roundTo('bf16', v));
      const b2 = b ? b.map((v) => 2 * v) : null;
      const varied = linearF64(x, M, K, [], null, N, {
        cols: null,
        row: (n, _N, out) => out.set(wb.subarray(n * K, (n + 1) * K)),
        bias: (n) => (b2 ? b2[n] : 0),
      });
      const want = reference(x, M, K, wb, b2, N);
      for (let i = 0; i < varied.length; i++)
        expect(Math.abs(varied[i] - want.y[i]), msg).toBeLessThanOrEqual(want.tol(i));

      // An fp16 accumulator: each output is accumulateF16 of its row plus the bias, rounded to f32.
      const acc = { chunk: 1 + Math.floor(r() * 40), fused: r() < 0.5 };
      const half = linearF64(x, M, K, [], null, N, { ...id, cols: null, acc });
      for (let m = 0; m < M; m++)
        for (let n = 0; n < N; n++) {
          const s = accumulateF16(x, m * K, w.subarray(n * K, (n + 1) * K), K, acc.chunk, acc.fused);
          expect(half[m * N + n], msg).toBe(Math.fround(s + (b ? b[n] : 0)));
        }
    }
  });

  it('refuses operands shorter than their shapes, naming which', () => {
    expect(() => linearF64(new Float64Array(5), 2, 3, new Float64Array(6), null, 2)).toThrow(
      'linearF64: x has 5 elements, need 2x3',
    );
    expect(() => linearF64(new Float64Array(6), 2, 3, new Float64Array(5), null, 2)).toThrow(
      'linearF64: weight has 5 elements, need 2x3',
    );
  });
});
