// The classroom scenarios: valid specs that run quickly on the embedded model, short links that resolve to
// them (autorun off), and the field reports they promise to retell actually covered.
import { describe, expect, it } from 'vitest';
import { faultInfo } from './faults';
import { LinkError } from './link-bytes';
import { decodeLink, encodeLink, scenarioLink } from './permalink';
import { parseRunSpec, type RunSpec } from './runspec';
import { SCENARIOS, type ScenarioExpectation, scenarioById, scenariosWords } from './scenarios';

const runsOf = (s: (typeof SCENARIOS)[number]) => [
  { label: 'main', spec: s.spec, expect: s.expect, link: scenarioLink(s.id) },
  ...(s.variants ?? []).map((v, i) => ({ ...v, link: scenarioLink(s.id, i + 1) })),
];
const bytes = (spec: RunSpec) =>
  'text' in spec.prompt ? new TextEncoder().encode(spec.prompt.text).length : spec.prompt.tokens.length;

describe('scenarios', () => {
  it('has at least five, with unique short slugs', () => {
    expect(SCENARIOS.length).toBeGreaterThanOrEqual(5);
    const ids = SCENARIOS.map((s) => s.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[a-z0-9][a-z0-9-]{1,31}$/);
  });

  describe.each(SCENARIOS.map((s) => [s.id, s] as const))('%s', (_id, s) => {
    it('tells its field report in a few sentences and a few steps', () => {
      expect(s.title.length).toBeGreaterThan(0);
      expect(s.story).toContain(`Field report ${String(s.report).padStart(3, '0')}`);
      const sentences = s.story.split(/(?<=[.!?])\s+(?=[A-Z])/).length;
      expect(sentences).toBeGreaterThanOrEqual(2);
      expect(sentences).toBeLessThanOrEqual(3);
      expect(s.steps.length).toBeGreaterThanOrEqual(3);
      expect(s.steps.length).toBeLessThanOrEqual(6);
      for (const step of s.steps) expect(step.trim().length).toBeGreaterThan(10);
    });

    it.each(runsOf(s).map((r) => [r.label, r] as const))('%s: a valid, quick spec', (_label, r) => {
      expect(parseRunSpec(r.spec)).toStrictEqual(r.spec);
      expect(r.spec.model).toEqual({ kind: 'embedded', id: 'neox-kjv-bytes' });
      expect(bytes(r.spec)).toBeLessThanOrEqual(40);
      expect(r.spec.generate).toBeLessThanOrEqual(16);
      checkExpectation(r.spec, r.expect);
    });

    it.each(runsOf(s).map((r) => [r.label, r] as const))('%s: its short link resolves to it', (_label, r) => {
      expect(r.link).toMatch(/^#s=[a-z0-9-]+(\/\d+)?$/);
      const p = decodeLink(r.link);
      expect(p).toStrictEqual({ v: 1, spec: r.spec, autorun: false });
      // A copy: changing what a link gave does not change the catalog.
      p.spec.fused.length = 0;
      expect(r.spec.fused.length).toBeGreaterThan(0);
      // The full link of the same run round-trips too.
      expect(decodeLink(encodeLink({ v: 1, spec: r.spec })).spec).toStrictEqual(r.spec);
    });
  });

  it('says how many stories it tells and from how many field reports', () => {
    const words = scenariosWords();
    expect(words).toMatch(new RegExp(`^${SCENARIOS.length} stories from \\d+ field reports`));
    const reports = Number(/from (\d+) field/.exec(words)![1]);
    expect(reports).toBe(new Set(SCENARIOS.map((s) => s.report)).size);
    expect(reports).toBeLessThan(SCENARIOS.length);
  });

  it('covers the five required stories', () => {
    const all = SCENARIOS.flatMap((s) => runsOf(s).map((r) => ({ s, ...r })));
    const withFault = (id: string) => all.filter((r) => r.spec.faults.some((f) => f.id === id));
    // (a) A fault planted from layer 1 that diverges from layer 1.
    expect(
      all.some(
        (r) =>
          r.spec.faults.some(
            (f) => ['residual_wiring', 'alias_residual'].includes(f.id) && f.fromLayer === 1,
          ) && r.expect.firstDivergentLayer === 1,
      ),
    ).toBe(true);
    // (b) Reordering stays inside the floor; fp16 accumulation leaves it.
    expect(withFault('reordered_sum').every((r) => r.expect.firstDivergentLayer === null)).toBe(true);
    expect(withFault('reordered_sum').length).toBeGreaterThan(0);
    expect(withFault('fp16_accumulation').some((r) => r.expect.firstDivergentLayer !== null)).toBe(true);
    // (c) The offset tile load, and the race with the determinism badge.
    expect(withFault('tile_offset').some((r) => r.expect.kernel === 'gemm')).toBe(true);
    expect(withFault('missing_barrier').some((r) => r.expect.deterministic === false)).toBe(true);
    // (d) no_rescale: a one-tile prompt (≤ 8 bytes) agrees, a longer one diverges.
    const nr = withFault('no_rescale');
    expect(nr.some((r) => bytes(r.spec) <= 8 && r.expect.firstDivergentLayer === null)).toBe(true);
    expect(nr.some((r) => bytes(r.spec) > 8 && r.expect.firstDivergentLayer !== null)).toBe(true);
    // (e) Fast but wrong: every fused kernel with gelu_relu, and a note pointing at the timing panel.
    const fbw = withFault('gelu_relu');
    expect(fbw.some((r) => r.spec.fused.length === 6 && /timing panel/.test(r.expect.note))).toBe(true);
  });

  it('resolves only scenarios that exist', () => {
    expect(scenarioById('fused-add')?.id).toBe('fused-add');
    expect(scenarioById('nope')).toBeUndefined();
    expect(() => scenarioLink('nope')).toThrow(LinkError);
    expect(() => scenarioLink('fused-add', 0)).toThrow(LinkError);
    expect(() => scenarioLink('fused-add', 99)).toThrow(LinkError);
    expect(() => decodeLink('#s=fused-add/99')).toThrow(LinkError);
  });
});

/** The expectation is consistent with the spec (the GPU tests check the analysis itself). */
function checkExpectation(spec: RunSpec, e: ScenarioExpectation) {
  expect(e.note.length).toBeGreaterThan(0);
  if (e.kernel) {
    expect(spec.fused).toContain(e.kernel);
    expect(spec.faults.map((f) => faultInfo(f.id).kernel)).toContain(e.kernel);
  }
  if (e.firstDivergentLayer !== null) {
    expect(e.firstDivergentLayer).toBeLessThan(4); // the embedded model has 4 layers
    expect(spec.faults.some((f) => f.fromLayer !== undefined && f.fromLayer <= e.firstDivergentLayer!)).toBe(
      true,
    );
  }
  for (const f of spec.faults) expect(f.fromLayer, 'scenario faults name their layer').toBeDefined();
}
