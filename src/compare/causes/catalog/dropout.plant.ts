import { mulberry32 } from '../../../numeric/random';
import type { Plant } from '../plant.testdata';

/** A tenth of the elements dropped, drawn from the op's own data (a fresh mask for each draw of the op). */
function mask(d: { exact: Float64Array }): Uint8Array {
  const rng = mulberry32(Math.floor(Math.abs(d.exact[0]) * 2 ** 30));
  return Uint8Array.from(d.exact, () => (rng() < 0.1 ? 1 : 0));
}

export const PLANTS: Plant[] = [
  {
    cause: 'dropout',
    op: 'dense',
    variant: (d) => ({ dropout: { p: 0.1, dropped: mask(d) } }),
    params: { p: 0.1 },
    approx: ['p'],
  },
];
