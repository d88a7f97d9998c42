// The one precision table (PRECISION_FORMATS) against the roundings it names: each mode's unit roundoff is the
// spacing its storage rounding has at 1, its storage format rounds as numeric/round.ts's format of that name, its
// dtype holds that format's bits, and its WGSL code is the one shaders/common/precision.wgsl gives that format.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PRECISION_FORMATS, PRECISIONS, roundStorage, storageUnitRoundoff } from './precision';
import { mulberry32 } from './random';
import { roundTo } from './round';

const BYTES = { F32: 4, F16: 2, BF16: 2 } as const;
const MANTISSA = { fp32: 23, fp16: 10, bf16: 7 } as const;

describe('the precision table', () => {
  it.each(PRECISIONS)('%s: its unit roundoff, format, dtype and WGSL code agree with the roundings', (p) => {
    const f = PRECISION_FORMATS[p];
    const u = storageUnitRoundoff(p);
    expect(u).toBe(2 ** -(MANTISSA[f.storage] + 1));
    // 1 + 2u is the next value after 1; 1 + u is the tie, which rounds to even (1); 1 + 1.5u rounds up.
    expect(roundStorage(p, 1 + 2 * u)).toBe(1 + 2 * u);
    expect(roundStorage(p, 1 + u)).toBe(1);
    expect(roundStorage(p, 1 + 1.5 * u)).toBe(1 + 2 * u);
    expect(BYTES[f.dtype] * 8).toBe(f.storage === 'fp32' ? 32 : 16);
    expect(f.dtype === 'BF16').toBe(f.storage === 'bf16');
    // shaders/common/precision.wgsl: STORAGE_PREC 0 = fp32, 1 = fp16 storage, 2 = bf16 storage.
    const wgsl = readFileSync('shaders/common/precision.wgsl', 'utf8');
    const said = new RegExp(`${f.storageCode} = ${f.storage}`).test(wgsl);
    expect(said, `precision.wgsl names code ${f.storageCode} ${f.storage}`).toBe(true);
    expect(f.accF16).toBe(p === 'fp16acc');
  });

  it('rounds as numeric/round.ts rounds to the storage format (after f32), 50 seeds', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const rng = mulberry32(seed);
      for (const p of PRECISIONS) {
        const s = PRECISION_FORMATS[p].storage;
        for (let i = 0; i < 200; i++) {
          // Magnitudes from 2^-20 to 2^20, both signs: fp16's subnormals (below 2^-14) and its overflow (past
          // 65504) included.
          const x = (rng() < 0.5 ? -1 : 1) * 2 ** (40 * rng() - 20);
          const want = roundTo(s, Math.fround(x));
          expect(roundStorage(p, x), `seed ${seed} ${p} x=${x}`).toBe(want);
        }
      }
    }
  });
});
