import { describe, expect, it } from 'vitest';
import type { Anatomy } from '../compare/causes/anatomy';
import { elementsShifted } from '../compare/causes/catalog/elements-shifted';
import { inputShifted } from '../compare/causes/catalog/input-shifted';
import { rowsShifted } from '../compare/causes/catalog/rows-shifted';
import type { CauseVerdict, TestedCause } from '../compare/causes/types';
import type { PathWhy } from '../compare/report';
import {
  anatomyCells,
  causeExportLines,
  foundCauseSentence,
  hottestCell,
  pathCauseView,
  shortCause,
  testedRows,
  timesFloor,
  verdictView,
  whySentenceShown,
  withoutCauseClause,
} from './cause-words';

const tc = (id: string, residual: number, words = `words of ${id}`): TestedCause => ({
  id,
  family: 'layout',
  words,
  params: {},
  residual,
});

function verdict(named: TestedCause[], tested: TestedCause[]): CauseVerdict {
  return {
    named,
    runnerUp: tested.find((t) => !named.some((n) => n.id === t.id)) ?? null,
    error: 7.7e6,
    words: 'w',
    tested,
    sampled: null,
    ms: 1,
  };
}

function anatomy(rows: string[], cols: string[], values: number[]): Anatomy {
  return {
    rows: { kind: 'from', first: 1, last: 2, count: 2, of: 3, words: 'from row 1 on' },
    groups: { axis: 'heads', labels: cols, share: cols.map(() => 1 / cols.length), words: 'evenly' },
    parts: [],
    shape: { kind: 'everywhere', elements: 3, of: 6, words: 'spread' },
    size: { bf16: 1, fp16: 8, tf32: 8, fp32: 65536, words: 'typically 1 bf16 ULP' },
    heatmap: { rowLabels: rows, colLabels: cols, values },
    sentence: 'The error is from row 1 on.',
  };
}

function why(over: Partial<PathWhy>): PathWhy {
  return {
    layer: 2,
    checks: [
      { id: 'layers.2.ln1', op: 'ln1', what: 'ln1', ratio: 0.5, nonFinite: 0 },
      { id: 'layers.2.act', op: 'act', what: 'the GELU', ratio: 4e4, nonFinite: 0 },
    ],
    born: 'layers.2.act',
    cause: verdict([tc('act-relu', 0.8)], [tc('act-relu', 0.8), tc('act-silu', 900)]),
    anatomy: null,
    race: null,
    sentence: 'Layer 2: the error is born at the GELU (layers.2.act).',
    ...over,
  };
}

describe('cause words', () => {
  it('says a ratio over the floor short, in every range', () => {
    expect(timesFloor(0.7461)).toBe('0.75×');
    expect(timesFloor(12.3)).toBe('12×');
    expect(timesFloor(7.7e6)).toBe('7.7e+6×');
    expect(timesFloor(Number.POSITIVE_INFINITY)).toBe('∞');
    expect(timesFloor(0)).toBe('0×');
  });

  it('names a cause with how much it leaves and the runner-up', () => {
    const v = verdictView(
      verdict([tc('rows-shifted', 0.75, 'the rows shifted')], [tc('rows-shifted', 0.75), tc('x', 6e6)]),
    );
    expect(v.state).toBe('named');
    expect(v.ids).toEqual(['rows-shifted']);
    expect(v.headline).toBe('the rows shifted');
    expect(v.detail).toContain('all but 0.75× the floor');
    expect(v.detail).toContain('x, leaves 6.0e+6×');
  });

  it('says a cause that leaves nothing explains all, not "all but 0×"', () => {
    const v = verdictView(verdict([tc('qk-norm-skipped', 0, 'the q/k norm is left out')], [tc('x', 1.8e6)]));
    expect(v.detail).toBe('explains all of an error 7.7e+6× the floor; the next best, x, leaves 1.8e+6×');
  });

  it('names both when two explain equally', () => {
    const v = verdictView(verdict([tc('a', 1, 'A'), tc('b', 1.1, 'B')], [tc('a', 1), tc('b', 1.1)]));
    expect(v.headline).toBe('A; or B (they explain it equally)');
    expect(v.ids).toEqual(['a', 'b']);
  });

  it('says no known cause explains it, with the closest candidate', () => {
    const v = verdictView(verdict([], [tc('output-bf16', 3e3, 'the output in bf16'), tc('y', 5e5)]));
    expect(v.state).toBe('unexplained');
    expect(v.headline).toBe('no known cause explains it');
    expect(v.detail).toContain('the closest, the output in bf16 (output-bf16), still leaves 3.0e+3×');
  });

  it('says a race as a race, pending while the run goes on, nothing without a born layer', () => {
    const race = pathCauseView(why({ race: { tensors: ['layers.2.ctx'], elements: 12 } }), false);
    expect(race.state).toBe('race');
    expect(race.headline).toContain('a race');
    expect(race.headline).toContain('layers.2.ctx');
    expect(pathCauseView(undefined, true).state).toBe('pending');
    expect(pathCauseView(undefined, false).state).toBe('absent');
    expect(pathCauseView(null, true).state).toBe('absent');
    expect(pathCauseView(why({ born: null, cause: null }), false).state).toBe('combined');
    const nf = pathCauseView(
      why({
        cause: null,
        checks: [{ id: 'layers.2.act', op: 'act', what: 'g', ratio: Number.POSITIVE_INFINITY, nonFinite: 7 }],
      }),
      false,
    );
    expect(nf.state).toBe('nonfinite');
    expect(nf.headline).toContain('7 NaN/Inf');
  });

  it('lists every tested cause best first with the named ones marked', () => {
    const rows = testedRows(verdict([tc('a', 0.9)], [tc('a', 0.9), tc('b', 40), tc('c', 5e4)]));
    expect(rows.map((r) => [r.id, r.named, r.residual])).toEqual([
      ['a', true, '0.9×'],
      ['b', false, '40×'],
      ['c', false, '5.0e+4×'],
    ]);
  });

  it('takes the probable-cause clause off a finding sentence only when it is there', () => {
    const s = 'run A, layer 2: fc1 is 7.7e+6× its floor; probable cause: the rows shifted — explains all.';
    expect(withoutCauseClause(s, 'the rows shifted — explains all')).toBe(
      'run A, layer 2: fc1 is 7.7e+6× its floor.',
    );
    expect(withoutCauseClause(s, 'something else')).toBe(s);
    expect(withoutCauseClause(s, undefined)).toBe(s);
  });

  it('shows the why sentence without its cause clause', () => {
    expect(
      whySentenceShown('Layer 1: born at fc1, 1e+6× its floor; probable cause: ReLU [relu] — all but 0.9×.'),
    ).toBe('Layer 1: born at fc1, 1e+6× its floor.');
    expect(whySentenceShown('Layer 1: no single op is past 10× its floor.')).toBe(
      'Layer 1: no single op is past 10× its floor.',
    );
  });

  it('lays the heatmap out row-major and finds its hottest cell', () => {
    const a = anatomy(['0', '1–2'], ['h0', 'h1', 'h2'], [0.1, 0.2, 0.3, 4, 50, 6]);
    expect(anatomyCells(a)?.find((c) => c.row === 1 && c.col === 1)?.value).toBe(50);
    expect(hottestCell(a)).toBe('the largest cell: rows 1–2, h1, 50× the floor');
    expect(anatomyCells(anatomy(['0'], ['h0', 'h1'], [1]))).toBeNull();
  });

  it('makes a short cause for a link and the lines of an export', () => {
    expect(shortCause(why({}))).toEqual({ id: 'act-relu', words: 'words of act-relu' });
    expect(shortCause(null)).toBeNull();
    expect(shortCause(why({ race: { tensors: ['t'], elements: 1 } }))?.id).toBe('race');
    const long = shortCause(why({ cause: verdict([tc('a', 1, 'x'.repeat(500))], [tc('a', 1)]) }));
    expect(long?.words.length).toBeLessThanOrEqual(200);
    const lines = causeExportLines(why({ anatomy: anatomy(['0'], ['h0'], [1]) }));
    expect(lines[0]).toBe('Why: Layer 2: the error is born at the GELU (layers.2.act).');
    expect(lines[1]).toMatch(/^Cause: words of act-relu \[act-relu\] \(explains all but 0.8× the floor/);
    expect(lines[2]).toBe('Anatomy: The error is from row 1 on.');
    expect(causeExportLines(null)).toEqual([]);
  });
});

describe('the cause a scenario says', () => {
  it('reads it from the report: named, none, race, or nothing without a born layer', () => {
    expect(foundCauseSentence(why({}))).toBe(
      'The explorer found the cause at layers.2.act: words of act-relu (act-relu; explains all but 0.8× the floor of an error 7.7e+6× the floor; the next best, act-silu, leaves 900×).',
    );
    expect(foundCauseSentence(why({ cause: verdict([], [tc('z', 50, 'zz')]) }))).toContain(
      'none explains it: the closest, zz (z), still leaves 50×',
    );
    expect(foundCauseSentence(why({ race: { tensors: ['layers.2.ctx'], elements: 3 } }))).toContain('a race');
    expect(foundCauseSentence(null)).toBeNull();
    expect(foundCauseSentence(undefined)).toBeNull();
  });
});

describe('shifts in words, either way', () => {
  // What "what was ruled out" lists: every candidate shift of the three layout causes, positive and negative. No
  // number is written with its sign ("t − -2"); the direction is a word and the arithmetic reads the right way.
  const data = {} as Parameters<typeof rowsShifted.words>[1];
  const shifts = [1, 2, 16, -1, -2, -16];
  it('rows, input elements and output elements: no minus sign before a number, the direction in words', () => {
    for (const s of shifts) {
      const lines = [
        rowsShifted.words({ shift: s, from: 0 }, data),
        rowsShifted.words({ shift: s, from: 3 }, data),
        inputShifted.words({ shift: s }, data),
        elementsShifted.words({ shift: s }, data),
      ];
      for (const l of lines) {
        expect(l, l).not.toMatch(/[-−]\s*-?\d*\s*-\d/);
        expect(l, l).not.toMatch(/(^|\s)-\d/);
      }
    }
    expect(rowsShifted.words({ shift: 2, from: 0 }, data)).toBe(
      'the output rows are shifted by 2 (row t holds row t − 2)',
    );
    expect(rowsShifted.words({ shift: -2, from: 3 }, data)).toBe(
      'the output rows are shifted by 2 toward the start (row t holds row t + 2) from row 3 on',
    );
    expect(inputShifted.words({ shift: -16 }, data)).toBe(
      'each input row is read 16 elements behind (element k takes element k − 16: a tile loaded from the wrong offset)',
    );
    expect(inputShifted.words({ shift: 1 }, data)).toBe(
      'each input row is read 1 element ahead (element k takes element k + 1: a tile loaded from the wrong offset)',
    );
    expect(elementsShifted.words({ shift: -1 }, data)).toBe(
      'the output is written 1 element early (element i holds element i + 1: a misaligned write)',
    );
    expect(elementsShifted.words({ shift: 8 }, data)).toBe(
      'the output is written 8 elements late (element i holds element i − 8: a misaligned write)',
    );
  });
});
