// The anatomy of planted errors: which rows, which column groups, what shape, what size (fresh seeds; the seed is in
// every failure message).
import { describe, expect, it } from 'vitest';
import { roundTo } from '../../numeric/round';
import { anatomy, sumRow } from './anatomy';
import { plantOp } from './plant.testdata';

const base = Math.floor(Math.random() * 2 ** 30);
const SEEDS = Number(process.env.CAUSE_SEEDS ?? 3);
const seeds = Array.from({ length: SEEDS }, (_, j) => base + 31 * j);

describe('anatomy', () => {
  it('rows from some row on, every row, one row', () => {
    for (const seed of seeds) {
      const from = plantOp(seed, 'fc1', () => ({ rowShift: { shift: 1, from: 4 } }));
      const a = anatomy(from);
      expect(a.rows, `seed ${seed}`).toMatchObject({ kind: 'from', first: 4, last: from.tokens.length - 1 });
      expect(a.sentence).toContain('from row 4 on');
      const every = anatomy(plantOp(seed, 'fc2', () => ({ bias: 0 })));
      expect(every.rows.kind, `seed ${seed}`).toBe('every');
      const one = plantOp(seed, 'dense', () => ({}));
      const w = one.recorded.length / one.tokens.length;
      for (let c = 0; c < w; c++) one.recorded[6 * w + c] += 0.5;
      expect(anatomy(one).rows, `seed ${seed}`).toMatchObject({ kind: 'one', first: 6 });
    }
  });

  it('shape: a dropped bias is bias-like, one wrong element is scattered, rounding is everywhere', () => {
    for (const seed of seeds) {
      expect(anatomy(plantOp(seed, 'fc2', () => ({ bias: 0 }))).shape.kind, `seed ${seed}`).toBe('bias-like');
      const d = plantOp(seed, 'fc1', () => ({}));
      d.recorded[17] += 3;
      expect(anatomy(d).shape, `seed ${seed}`).toMatchObject({ kind: 'scattered', elements: 1 });
      expect(anatomy(plantOp(seed, 'fc1', () => ({ outFormat: 'bf16' }))).shape.kind, `seed ${seed}`).toBe(
        'everywhere',
      );
    }
  });

  it('column groups: the head that is wrong, the part of the fused QKV that is wrong', () => {
    for (const seed of seeds) {
      const d = plantOp(seed, 'attention', () => ({}));
      const hd = d.cfg.headDim;
      const w = d.cfg.hiddenSize;
      for (let t = 0; t < d.tokens.length; t++)
        for (let e = 0; e < hd; e++) d.recorded[t * w + hd + e] += 0.1;
      const a = anatomy(d);
      expect(a.groups.axis).toBe('heads');
      expect(a.groups.share[1], `seed ${seed}`).toBeGreaterThan(0.99);
      expect(a.groups.words).toContain('h1');
      const q = plantOp(seed, 'qkv', () => ({}));
      const W = q.recorded.length / q.tokens.length;
      // Only k of every head, only its rotary dims.
      for (let t = 0; t < q.tokens.length; t++)
        for (let c = 0; c < W; c++)
          if (Math.floor(c / q.cfg.headDim) % 3 === 1 && c % q.cfg.headDim < 2) q.recorded[t * W + c] *= 1.01;
      const parts = Object.fromEntries(anatomy(q).parts.map((p) => [p.label, p.share]));
      expect(parts.k, `seed ${seed}`).toBeGreaterThan(0.99);
      if (q.cfg.rotaryNdims < q.cfg.headDim)
        expect(parts['rotary dims (q, k)'], `seed ${seed}`).toBeGreaterThan(0.99);
    }
  });

  it('size in ULPs: an output rounded to bf16 is under one bf16 ULP and many fp32 ULPs', () => {
    for (const seed of seeds) {
      const d = plantOp(seed, 'fc1', () => ({}));
      d.recorded = Float32Array.from(d.exact, (x) => roundTo('bf16', x));
      const a = anatomy(d);
      expect(a.size.bf16, `seed ${seed}`).toBeGreaterThan(0.1);
      expect(a.size.bf16, `seed ${seed}`).toBeLessThanOrEqual(0.5);
      expect(a.size.fp32, `seed ${seed}`).toBeGreaterThan(1000);
      expect(a.heatmap.values.length).toBe(a.heatmap.rowLabels.length * a.heatmap.colLabels.length);
      expect(Math.max(...a.heatmap.values)).toBeGreaterThan(10);
    }
  });
});

describe('sumRow', () => {
  it('gives the sums of one loop over every element, bit for bit (50 seeds; NaN/Inf errors count as 0)', () => {
    for (let j = 0; j < 50; j++) {
      const seed = base + 7 * j;
      const d = plantOp(seed, j % 2 ? 'fc1' : 'qkv', () => ({ outFormat: 'bf16' }));
      const T = d.tokens.length;
      const w = d.recorded.length / T;
      d.recorded[(seed >>> 3) % d.recorded.length] = j % 3 ? Number.NaN : Number.POSITIVE_INFINITY;
      const G = 1 + (seed % 7);
      const groupOf = Int32Array.from({ length: w }, (_, c) => (c * G) / w);
      const rb = Math.min(T, 5);
      // The definition: one loop over the elements in order.
      const want = { e: new Float64Array(T * w), rowSq: new Float64Array(T), cell: new Float64Array(rb * G) };
      const wantN = new Float64Array(rb * G);
      const wantMean = new Float64Array(w);
      const wantShare = new Float64Array(G);
      let total = 0;
      let exactSq = 0;
      for (let t = 0; t < T; t++)
        for (let c = 0; c < w; c++) {
          const i = t * w + c;
          const x = d.recorded[i] - d.exact[i];
          const e = Number.isFinite(x) ? x : 0;
          want.e[i] = e;
          total += e * e;
          exactSq += d.exact[i] * d.exact[i];
          want.rowSq[t] += e * e;
          wantShare[groupOf[c]] += e * e;
          want.cell[Math.floor((t * rb) / T) * G + groupOf[c]] += e * e;
          wantN[Math.floor((t * rb) / T) * G + groupOf[c]]++;
          wantMean[c] += e;
        }
      const e = new Float64Array(T * w);
      const cell = new Float64Array(rb * G);
      const cellN = new Float64Array(rb * G);
      const mean = new Float64Array(w);
      const sums = new Float64Array(2 + G);
      const rowSq = Float64Array.from({ length: T }, (_, t) =>
        sumRow(
          d.recorded,
          d.exact,
          t * w,
          w,
          groupOf,
          Math.floor((t * rb) / T) * G,
          e,
          cell,
          cellN,
          mean,
          sums,
        ),
      );
      const msg = `seed ${seed}`;
      expect(rowSq, msg).toEqual(want.rowSq);
      expect(e, msg).toEqual(want.e);
      expect(cell, msg).toEqual(want.cell);
      expect(cellN, msg).toEqual(wantN);
      expect(mean, msg).toEqual(wantMean);
      expect([...sums], msg).toEqual([total, exactSq, ...wantShare]);
    }
  });
});
