// What the headline tests share (headline.test.ts, headline-scenarios.test.ts): the invariant between the verdict and
// what the generated text does.
import { expect } from 'vitest';
import { headlineWords } from './generation-verdict';
import type { Report } from './report';

/** What the text does against what the headline says (the invariant of issue 37 item 1). */
export function expectHeadlineMatchesText(r: Report, ctx: string) {
  const g = r.generation;
  const why = `${ctx}: ${r.verdict}; ${g?.words}`;
  expect(
    headlineWords(r).startsWith(r.verdict === 'generation-diverged' ? 'generation diverged' : r.verdict),
    why,
  ).toBe(true);
  if (!g) return;
  const parted = g.firstDifference !== null;
  const benign = g.parting?.kind === 'near-tie';
  const cacheOff = (g.cached ?? []).some((c) => !c.within);
  const decodeFound = (g.decode ?? []).some((d) => d.verdict === 'diverged');
  if ((parted && !benign) || cacheOff || decodeFound) expect(r.verdict, why).not.toBe('agree');
  if (r.verdict === 'agree') {
    expect(!parted || benign, why).toBe(true);
    expect(g.verdict, why).toMatch(/^(agree|near-tie)$/);
  }
  if (r.verdict === 'generation-diverged') {
    expect(r.firstDivergentLayer, why).toBeNull();
    expect(g.verdict, why).toBe('diverged');
    // The decode check started by itself where the prompt agrees and the text does not.
    expect(g.decodeStarted, why).toMatch(/^(auto|asked)$/);
  }
  if (parted) expect(g.parting?.step, why).toBe(g.firstDifference);
}

export const SKIP = { bisection: true, determinism: true, why: true, taps: true };
