// The verdict covers the text (pure): a cached decode's logits against its uncached forward, row by row against
// the floor; what the generation's parts (parting, cached check, decode check) make of the verdict; the words.
import { describe, expect, it } from 'vitest';
import { freshSeed } from '../kernels/testing';
import { mulberry32 } from '../numeric/random';
import type { TestedCause } from './causes/types';
import type { DecodeCheck } from './decode-run-file';
import { cachedVsFull, generationVerdictOf, generationWords, overallVerdict } from './generation-verdict';
import type { GenerationParting, GenerationResult } from './report';

function logits(rng: () => number, rows: number, V: number): Float32Array {
  return Float32Array.from({ length: rows * V }, () => (rng() - 0.5) * 20);
}

describe('cachedVsFull', () => {
  it('over 60 seeds: equal rows are within; one row moved past k × floor is the first bad step', () => {
    const base = freshSeed();
    for (let s = 0; s < 60; s++) {
      const seed = base + s;
      const rng = mulberry32(seed);
      const V = 5 + Math.floor(rng() * 40);
      const rows = 1 + Math.floor(rng() * 7);
      const full = logits(rng, rows, V);
      const floor = 1e-6;
      const k = 10;
      const same = cachedVsFull('fused', full.slice(), full, V, floor, k);
      expect(same, `seed ${seed}`).toEqual({
        path: 'fused',
        relL2: 0,
        ratio: 0,
        within: true,
        firstStep: null,
      });
      // Row r moved by 1000 × the floor relative to its own norm: past k, and the first step is r + 1 (1-based).
      const r = Math.floor(rng() * rows);
      const moved = full.slice();
      let norm = 0;
      for (let i = r * V; i < (r + 1) * V; i++) norm += full[i] * full[i];
      moved[r * V] += 1000 * floor * Math.sqrt(norm);
      const bad = cachedVsFull('fused', moved, full, V, floor, k);
      expect(bad.within, `seed ${seed}`).toBe(false);
      expect(bad.firstStep, `seed ${seed}`).toBe(r + 1);
      expect(bad.ratio, `seed ${seed}`).toBeGreaterThan(0);
      // A move well within the floor stays within.
      const tiny = full.slice();
      tiny[r * V] += 0.01 * floor * Math.sqrt(norm);
      const ok = cachedVsFull('reference', tiny, full, V, floor, k);
      expect(ok.within, `seed ${seed}: ×${ok.ratio}`).toBe(true);
      expect(ok.firstStep).toBeNull();
    }
  });

  it('a NaN in the cached logits is never within; lengths that differ are refused', () => {
    const full = Float32Array.from([1, 2, 3, 4]);
    const cached = Float32Array.from([1, Number.NaN, 3, 4]);
    const r = cachedVsFull('fused', cached, full, 2, 1e-7, 10);
    expect(r.within).toBe(false);
    expect(r.firstStep).toBe(1);
    expect(() => cachedVsFull('fused', full.slice(0, 2), full, 2, 1e-7, 10)).toThrow(/2 logits against 4/);
  });
});

const side = { chose: 1, top: [], gap: 1, margin: 1, error: 0, ratio: 0, fullAgrees: true };
function parting(kind: GenerationParting['kind'], step: number): GenerationParting {
  return {
    step,
    row: 9 + step,
    chosenIn: step === 0 ? 'prefill' : 'decode',
    kind,
    floor: 1e-5,
    k: 10,
    reference: side,
    fused: { ...side, chose: 2, fullAgrees: kind !== 'decode' },
    exact: [],
    words: 'w',
  };
}
const decodeCheck = (path: string, diverged: boolean): DecodeCheck => ({
  path,
  verdict: diverged ? 'diverged' : 'agree',
  checks: 40,
  checkedFrom: 10,
  born: diverged
    ? {
        check: 'layers.2.attention',
        module: 'gpt_neox.layers.2.attention',
        what: 'the attention core (rotary, scores, softmax, values)',
        layer: 2,
        ratio: 1e4,
        row: 10,
        step: 1,
      }
    : null,
  sentence: diverged ? 'decode step 1 (position 10), layer 2: …' : 'agrees with the exact forward',
});
function gen(over: Partial<GenerationResult> = {}): GenerationResult {
  return {
    reference: { ids: [1, 1, 1, 1], text: null },
    fused: { ids: [1, 1, 1, 1], text: null },
    firstDifference: null,
    parting: null,
    cached: [
      { path: 'reference', relL2: 0, ratio: 0, within: true, firstStep: null },
      { path: 'fused', relL2: 0, ratio: 0, within: true, firstStep: null },
    ],
    ...over,
  };
}

describe('generationVerdictOf and the words', () => {
  it('agrees when the texts are the same and each cached decode equals its uncached forward', () => {
    const g = gen();
    expect(generationVerdictOf(g)).toBe('agree');
    expect(generationWords(g, 10)).toMatch(/^both paths generate the same 4 tokens/);
    expect(overallVerdict('agree', { ...g, verdict: 'agree' })).toBe('agree');
  });

  it('a near tie flipped by rounding is benign: the verdict stays agree, with the note', () => {
    const g = gen({ firstDifference: 2, parting: parting('near-tie', 2) });
    expect(generationVerdictOf(g)).toBe('near-tie');
    expect(generationWords(g, 10)).toContain('near tie flipped by rounding (benign');
    expect(overallVerdict('agree', { ...g, verdict: 'near-tie' })).toBe('agree');
  });

  it.each([
    ['divergence', parting('divergence', 2)],
    ['decode', parting('decode', 1)],
  ] as const)('texts that part by a %s make the generation diverge', (_kind, p) => {
    const g = gen({ firstDifference: p.step, parting: p });
    expect(generationVerdictOf(g)).toBe('diverged');
    expect(generationWords(g, 10)).toContain(
      `the texts part at generated token ${p.step + 1} (decode step ${p.step})`,
    );
    expect(overallVerdict('agree', { ...g, verdict: 'diverged' })).toBe('generation-diverged');
    // The prompt's own divergence takes the headline.
    expect(overallVerdict('diverged', { ...g, verdict: 'diverged' })).toBe('diverged');
  });

  it('a cached decode off its uncached forward diverges though the texts are the same', () => {
    const g = gen({
      cached: [
        { path: 'reference', relL2: 0, ratio: 0, within: true, firstStep: null },
        { path: 'fused', relL2: 1e-2, ratio: 1e5, within: false, firstStep: 1 },
      ],
    });
    expect(generationVerdictOf(g)).toBe('diverged');
    const w = generationWords(g, 10);
    expect(w).toMatch(/^generation diverges at decode step 1: the fused path's cached decode leaves/);
    expect(w).toContain('the texts stay the same for all 4 tokens');
  });

  it("a decode check born in the prompt's rows tells it from the prompt on, its cause said once", () => {
    const kv: TestedCause = {
      id: 'kv-interleaved',
      family: 'layout',
      words: 'KV heads mapped wrong',
      params: {},
      residual: 1,
    };
    const prefillBorn: DecodeCheck = {
      ...decodeCheck('fused', true),
      checkedFrom: 0,
      born: { ...decodeCheck('fused', true).born!, row: 0, step: 0 },
      sentence:
        'every row of the prompt (the prefill, positions 0–9) and every decode step after it, layer 2: the ' +
        'attention core: its output is 1e4× its floor away; probable cause: KV heads mapped wrong (×1.0 left).',
      cause: {
        named: [kv],
        runnerUp: null,
        error: 1e4,
        words: 'KV heads mapped wrong',
        tested: [kv],
        sampled: null,
        ms: 1,
      },
    };
    const g = gen({
      firstDifference: 1,
      parting: parting('divergence', 1),
      decode: [decodeCheck('reference', false), prefillBorn],
    });
    const w = generationWords(g, 10);
    expect(w).toMatch(
      /^generation diverges at the prompt: the fused path's decode check: every row of the prompt \(the prefill, positions 0–9\) and every decode step after it, layer 2: the attention core: its output is 1e4× its floor away; the texts part at /,
    );
    expect(w.match(/probable cause/g)).toHaveLength(1);
    expect(w).toMatch(/; probable cause: KV heads mapped wrong \[kv-interleaved\]$/);
    expect(w).not.toContain('.;');
  });

  it('tells the decode finding and the parting as one story', () => {
    const g = gen({
      firstDifference: 2,
      parting: parting('decode', 2),
      decode: [decodeCheck('reference', false), decodeCheck('fused', true)],
    });
    expect(generationVerdictOf(g)).toBe('diverged');
    expect(generationWords(g, 10)).toBe(
      'generation diverges at decode step 1: born at decode step 1 (position 10), layer 2, the attention core ' +
        '(rotary, scores, softmax, values), on the fused path; the texts part at generated token 3 (decode step 2), ' +
        'where a cached decode chose otherwise than its own uncached forward',
    );
  });
});
