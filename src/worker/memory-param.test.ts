// The page's ?memory=GiB: a positive number caps the engine's GPU memory for weights; anything else is ignored.
import { describe, expect, it } from 'vitest';
import { memoryParam } from './client';

describe('?memory=GiB', () => {
  it('reads a positive number of GiB and ignores anything else', () => {
    expect(memoryParam('?memory=6.5')).toBe(6.5);
    expect(memoryParam('?model=x&memory=12')).toBe(12);
    for (const bad of ['', '?memory=', '?memory=abc', '?memory=0', '?memory=-3', '?memory=Infinity', '?x=1'])
      expect(memoryParam(bad), bad).toBeNull();
  });
});
