import { describe, expect, it } from 'vitest';
import { mulberry32, randn } from '../../numeric/random';
import { gather } from './arrays';
import { transformAt } from './exact-op';
import type { Variant } from './types';

/** The definition: each transform applied in turn to the full [T, width] tensor, then the columns taken. */
function definition(a: Float64Array, T: number, width: number, v: Variant): Float64Array {
  let out = a;
  if (v.rowShift) {
    const { shift, from } = v.rowShift;
    out = Float64Array.from(a);
    for (let t = from; t < T; t++) {
      const src = t - shift;
      for (let c = 0; c < width; c++) out[t * width + c] = src >= 0 && src < T ? a[src * width + c] : 0;
    }
  }
  if (v.elemShift) {
    const src = out;
    out = new Float64Array(src.length);
    for (let i = 0; i < out.length; i++) {
      const j = i - v.elemShift;
      out[i] = j >= 0 && j < src.length ? src[j] : 0;
    }
  }
  if (v.broadcastRow !== undefined) {
    const row = out.slice(v.broadcastRow * width, (v.broadcastRow + 1) * width);
    out = new Float64Array(out.length);
    for (let t = 0; t < T; t++) out.set(row, t * width);
  }
  if (v.headPerm) {
    const hd = width / v.headPerm.length;
    const src = out;
    out = new Float64Array(src.length);
    for (let t = 0; t < T; t++)
      v.headPerm.forEach((from, h) => {
        out.set(src.subarray(t * width + from * hd, t * width + (from + 1) * hd), t * width + h * hd);
      });
  }
  if (v.dropout) {
    const { p, dropped } = v.dropout;
    out = out === a ? Float64Array.from(a) : out;
    for (let i = 0; i < out.length; i++) out[i] = dropped[i] ? 0 : out[i] / (1 - p);
  }
  return out;
}

describe('transformAt', () => {
  it('equals the transforms applied in turn to the whole tensor, on any columns (60 seeds)', () => {
    const base = (Date.now() ^ 0x2545f491) >>> 0;
    for (let s = 0; s < 60; s++) {
      const seed = base + s;
      const rng = mulberry32(seed);
      const T = 2 + Math.floor(rng() * 13);
      const H = 1 + Math.floor(rng() * 4);
      const hd = 1 + Math.floor(rng() * 7);
      const width = H * hd;
      const a = Float64Array.from(randn(rng, T * width));
      const v: Variant = {};
      // Any subset of the transforms, each with random parameters (shifts either way, past the ends too).
      if (rng() < 0.5) v.rowShift = { shift: Math.floor(rng() * 2 * T) - T, from: Math.floor(rng() * T) };
      if (rng() < 0.5) v.elemShift = Math.floor(rng() * 2 * width * 2) - 2 * width;
      if (rng() < 0.3) v.broadcastRow = Math.floor(rng() * T);
      if (rng() < 0.4) {
        const perm = Array.from({ length: H }, (_, h) => h);
        for (let i = H - 1; i > 0; i--) {
          const j = Math.floor(rng() * (i + 1));
          [perm[i], perm[j]] = [perm[j], perm[i]];
        }
        v.headPerm = perm;
      }
      if (rng() < 0.4)
        v.dropout = {
          p: 0.05 + 0.5 * rng(),
          dropped: Uint8Array.from({ length: T * width }, () => +(rng() < 0.2)),
        };
      const want = definition(a, T, width, v);
      const cols =
        rng() < 0.3
          ? null
          : Int32Array.from(Array.from({ length: width }, (_, c) => c).filter(() => rng() < 0.5));
      const got = transformAt(a, T, width, v, cols);
      expect(got, `seed ${seed} ${JSON.stringify({ T, width, ...v, dropout: !!v.dropout })}`).toEqual(
        gather(want, T, width, cols),
      );
    }
  });
});
