// The lines `cli compare` prints: the generation line says why the texts part, or that they agree.
import { describe, expect, it } from 'vitest';
import { fixtureReport } from '../ui/report-fixture';
import { formatVerdict } from './compare';

describe('formatVerdict', () => {
  it('says where and why the generated texts part', () => {
    const r = fixtureReport();
    const line = formatVerdict(r)
      .split('\n')
      .find((l) => l.startsWith('generation:'));
    expect(line).toMatch(/^generation: near tie at generated token 2 — The texts part at generated token 2/);
    expect(line).toMatch(/near tie flipped by rounding \(benign\)/);
  });
  it('says when both paths generate the same tokens', () => {
    const r = fixtureReport();
    const same = { ...r, generation: { ...r.generation!, firstDifference: null, parting: null } };
    expect(formatVerdict(same)).toMatch(/^generation: both paths generate the same 2 tokens$/m);
  });
  it('prints one line per path whose decode was checked', () => {
    const r = fixtureReport();
    const decode = [
      { path: 'reference', verdict: 'agree' as const, checks: 20, born: null, sentence: 'run A agrees.' },
      {
        path: 'fused',
        verdict: 'diverged' as const,
        checks: 20,
        born: { check: 'layers.1.attention', module: 'm', layer: 1, ratio: 50, row: 9, step: 2 },
        sentence: 'run A, decode step 2 (position 9), layer 1: …',
      },
    ];
    const text = formatVerdict({ ...r, generation: { ...r.generation!, decode } });
    expect(text).toMatch(/^decode \(reference path\): run A agrees\.$/m);
    expect(text).toMatch(/^decode \(fused path\): run A, decode step 2 \(position 9\), layer 1: …$/m);
    expect(formatVerdict(r)).not.toMatch(/^decode /m);
  });

  it('prints no generation line without generation', () => {
    expect(formatVerdict({ ...fixtureReport(), generation: null })).not.toMatch(/generation:/);
  });
});
