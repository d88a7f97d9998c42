// The chunking rule (gpu/submit-chunks.ts chunkRanges), without a GPU: for every count of dispatches up to 400 and
// every count of buffers asked (none, 1 … 12, more than the dispatches), the ranges are consecutive, in order, cover
// every dispatch once, differ in size by one at most; none is empty unless there is no dispatch; the default is
// DEFAULT_CHUNKS buffers of CHUNK_MIN dispatches or more, fewer where there are not enough (a tiny model's one).
import { describe, expect, it } from 'vitest';
import { CHUNK_MIN, chunkRanges, DEFAULT_CHUNKS } from './submit-chunks';

/** What is wrong with `ranges` as a cover of `count` dispatches, or null (plain checks: 7,000 cases in milliseconds). */
function coverFault(count: number, ranges: readonly (readonly [number, number])[]): string | null {
  if (ranges.length < 1) return 'no range';
  if (ranges[0][0] !== 0 || ranges.at(-1)?.[1] !== count)
    return `ends ${ranges[0][0]}, ${ranges.at(-1)?.[1]}`;
  for (let i = 1; i < ranges.length; i++)
    if (ranges[i][0] !== ranges[i - 1][1])
      return `range ${i} starts at ${ranges[i][0]}, not ${ranges[i - 1][1]}`;
  const sizes = ranges.map(([s, e]) => e - s);
  if (count > 0 && Math.min(...sizes) < 1) return `an empty range: ${sizes}`;
  if (Math.max(...sizes) - Math.min(...sizes) > 1) return `sizes ${sizes}`;
  return null;
}

describe('chunkRanges', () => {
  it('covers every dispatch once, in order, in balanced ranges; the default rule', () => {
    const faults: string[] = [];
    for (let count = 0; count <= 400; count++) {
      const byRule = chunkRanges(count);
      const expected = Math.max(1, Math.min(DEFAULT_CHUNKS, Math.floor(count / CHUNK_MIN)));
      const fault = coverFault(count, byRule);
      if (fault) faults.push(`${count} by the rule: ${fault}`);
      if (byRule.length !== expected)
        faults.push(`${count} by the rule: ${byRule.length} buffers, not ${expected}`);
      if (byRule.length > 1 && byRule.some(([s, e]) => e - s < CHUNK_MIN))
        faults.push(`${count} by the rule: a buffer under ${CHUNK_MIN}`);
      for (const asked of [1, 2, 3, 5, 8, 12, count + 1, count + 7]) {
        const ranges = chunkRanges(count, asked);
        const f = coverFault(count, ranges);
        if (f) faults.push(`${count} in ${asked}: ${f}`);
        if (ranges.length !== Math.max(1, Math.min(asked, count)))
          faults.push(`${count} in ${asked}: ${ranges.length} buffers`);
      }
    }
    expect(faults.slice(0, 10)).toEqual([]);
    // A tiny model's 15 dispatches stay one buffer; 31 too; 32 are two; a large forward is DEFAULT_CHUNKS.
    expect(chunkRanges(15)).toEqual([[0, 15]]);
    expect(chunkRanges(2 * CHUNK_MIN - 1)).toHaveLength(1);
    expect(chunkRanges(2 * CHUNK_MIN)).toEqual([
      [0, CHUNK_MIN],
      [CHUNK_MIN, 2 * CHUNK_MIN],
    ]);
    expect(chunkRanges(1000)).toHaveLength(DEFAULT_CHUNKS);
  });

  it('refuses a count of buffers that is not a positive whole number, and a bad count of dispatches', () => {
    for (const bad of [0, -1, 2.5, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => chunkRanges(40, bad), `${bad} buffers`).toThrow(
        /command buffers \(a whole number, at least 1\)/,
      );
    for (const bad of [-1, 1.5, Number.NaN])
      expect(() => chunkRanges(bad), `${bad} dispatches`).toThrow(/dispatches/);
  });
});
