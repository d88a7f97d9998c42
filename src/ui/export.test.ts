import Ajv2020 from 'ajv/dist/2020';
import { autoType, csvParse } from 'd3';
import { describe, expect, it } from 'vitest';
import schema from '../../docs/report.schema.json';
import type { Report } from '../compare/analyze';
import {
  CSV_METRIC_FIELDS,
  csvField,
  exportName,
  layersToCsv,
  nonFiniteAsString,
  reportToJson,
} from './export';
import { fixtureReport } from './report-fixture';

const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);

describe('report JSON', () => {
  it('writes non-finite numbers as strings and strips nothing', () => {
    const r = fixtureReport();
    const text = reportToJson(r);
    const back = JSON.parse(text);
    expect(back.layers[1].localRatio).toBe('Infinity');
    expect(back.layers[1].local.relL2).toBe('Infinity');
    expect(back.layers[1].perToken).toEqual([0, 0.2, 'Infinity']);
    expect(back.layers[0].propagated.sqnrDb).toBe('Infinity');
    const revived = JSON.parse(text, (_k, v) => (v === 'Infinity' ? Number.POSITIVE_INFINITY : v));
    expect(revived).toEqual(r);
    expect(Object.keys(back).sort()).toEqual(Object.keys(r).sort());
  });

  it('spells every non-finite value', () => {
    expect(nonFiniteAsString('', Number.NEGATIVE_INFINITY)).toBe('-Infinity');
    expect(nonFiniteAsString('', Number.NaN)).toBe('NaN');
    expect(nonFiniteAsString('', 1.5)).toBe(1.5);
    expect(nonFiniteAsString('', 'x')).toBe('x');
  });

  it('validates against docs/report.schema.json', () => {
    const ok = validate(JSON.parse(reportToJson(fixtureReport())));
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
  });

  it('a report whose texts part keeps why (the parting) and validates; a parting of an unknown kind does not', () => {
    const back = JSON.parse(reportToJson(fixtureReport()));
    expect(back.generation.parting.kind).toBe('near-tie');
    expect(back.generation.parting.step).toBe(1);
    const bad = {
      ...back,
      generation: { ...back.generation, parting: { ...back.generation.parting, kind: 'x' } },
    };
    expect(validate(bad)).toBe(false);
    expect(validate({ ...back, generation: { ...back.generation, parting: null } })).toBe(true);
  });

  it('a custom kernel run keeps its isolated test (a failing row with an infinite ratio) and validates', () => {
    const r = fixtureReport();
    const custom = { slot: 'layernorm2' as const, source: 'fn main() {}' };
    const row = { shape: 'T=7 d=90', output: 'y1', maxAbs: 0.5, bad: 3, seed: 12, report: 'y1[0]: NaN' };
    const isolated = {
      slot: custom.slot,
      rows: [{ ...row, worstRatio: Number.POSITIVE_INFINITY, pass: false }],
      pass: false,
      oracle: 'fp64 LayerNorm',
      tolerance: '4 ulp',
      ms: 12,
    };
    const back = JSON.parse(reportToJson({ ...r, spec: { ...r.spec, custom }, isolated }));
    expect(back.isolated.rows[0].worstRatio).toBe('Infinity');
    expect(validate(back), JSON.stringify(validate.errors)).toBe(true);
    expect(validate({ ...back, isolated: null })).toBe(true);
    expect(validate({ ...back, isolated: { ...isolated, rows: [{ ...row, pass: false }] } })).toBe(false);
  });

  it('the schema rejects a report with a missing field, an extra field or a raw null for a number', () => {
    const r = JSON.parse(reportToJson(fixtureReport()));
    delete r.verdict;
    expect(validate(r)).toBe(false);
    const s = JSON.parse(reportToJson(fixtureReport()));
    s.extra = 1;
    expect(validate(s)).toBe(false);
    // What plain JSON.stringify makes of Infinity: null — the schema must catch it.
    const t = JSON.parse(JSON.stringify(fixtureReport()));
    expect(t.layers[1].localRatio).toBeNull();
    expect(validate(t)).toBe(false);
  });
});

describe('layers CSV', () => {
  const split = (csv: string) => {
    const lines = csv.trimEnd().split('\r\n');
    return {
      comments: lines.filter((l) => l.startsWith('#')),
      table: lines.filter((l) => !l.startsWith('#')),
    };
  };

  it('carries the run as comment lines above one header and one row per layer', () => {
    const r = fixtureReport();
    const { comments, table } = split(layersToCsv(r));
    expect(table).toHaveLength(3);
    const joined = comments.join('\n');
    for (const label of ['Model:', 'Prompt:', 'Fused kernels:', 'Fault:', 'Precision:', 'Adapter:', 'Date:'])
      expect(joined).toContain(`# ${label}`);
    expect(joined).toContain(r.createdAt);
    const header = table[0].split(',');
    expect(header.slice(0, 5)).toEqual(['layer', 'diverged', 'born', 'ratio', 'localRatio']);
    expect(header).toHaveLength(5 + 5 * CSV_METRIC_FIELDS.length + 1);
    expect(header).toContain('propagated.relL2');
    expect(header).toContain('localFloor.maxUlp');
  });

  it('reads back with d3.autoType: numbers, booleans, ∞ and NaN as numbers', () => {
    const r = fixtureReport();
    r.layers[0].propagated.maxAbs = Number.NaN;
    r.layers[0].propagated.meanAbs = Number.NEGATIVE_INFINITY;
    const { table } = split(layersToCsv(r));
    const rows = csvParse(table.join('\n'), autoType);
    expect(rows).toHaveLength(2);
    const row1 = rows[1] as Record<string, unknown>;
    expect(row1.layer).toBe(1);
    expect(row1.diverged).toBe(true);
    expect(row1.ratio).toBe(1500000);
    expect(row1.localRatio).toBe(Number.POSITIVE_INFINITY);
    expect(row1['propagated.relL2']).toBe(0.3);
    expect(row1['local.relL2']).toBe(Number.POSITIVE_INFINITY);
    expect(row1['perToken.max']).toBe(Number.POSITIVE_INFINITY);
    const row0 = rows[0] as Record<string, unknown>;
    expect(row0['propagated.sqnrDb']).toBe(Number.POSITIVE_INFINITY);
    expect(row0['propagated.maxAbs']).toBeNaN();
    expect(row0['propagated.meanAbs']).toBe(Number.NEGATIVE_INFINITY);
  });

  it('a prompt with commas, quotes and newlines stays inside its comment line', () => {
    const r = fixtureReport();
    r.spec = { ...r.spec, prompt: { text: 'a, "b"\nc' } };
    const { comments, table } = split(layersToCsv(r));
    expect(comments.find((l) => l.startsWith('# Prompt:'))).toBe('# Prompt: a, "b" c');
    expect(table).toHaveLength(3);
  });

  it('writes fields as d3 and pandas read them', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField(null)).toBe('');
    expect(csvField(false)).toBe('false');
    expect(csvField(Number.NaN)).toBe('NaN');
    expect(csvField(Number.NEGATIVE_INFINITY)).toBe('-Infinity');
  });
});

describe('export names', () => {
  it('are safe file names built from the model and the time', () => {
    const r = fixtureReport();
    expect(exportName(r, 'error-curve', 'svg')).toBe(
      'divergence-tiny-2026-11-22T10-11-12-345-error-curve.svg',
    );
    r.model.name = '../../etc/passwd <x>';
    const n = exportName(r, 'hist-layers.1.k', 'png');
    expect(n).not.toMatch(/[/<> ]/);
    expect(n.endsWith('-hist-layers.1.k.png')).toBe(true);
  });
});

describe('the why in the exports', () => {
  const why: NonNullable<Report['why']> = {
    layer: 1,
    checks: [
      { id: 'layers.1.ln1', op: 'ln1', what: 'the first LayerNorm', ratio: 0.4, nonFinite: 0 },
      { id: 'layers.1.act', op: 'act', what: 'the GELU', ratio: 3.2e4, nonFinite: 0 },
    ],
    born: 'layers.1.act',
    cause: {
      named: [
        { id: 'act-relu', family: 'function', words: 'the activation is ReLU', params: {}, residual: 0.6 },
      ],
      runnerUp: { id: 'act-silu', family: 'function', words: 'SiLU', params: {}, residual: 800 },
      error: 3.2e4,
      words: 'the activation is ReLU [act-relu] — explains all but 0.6× floor',
      tested: [
        { id: 'act-relu', family: 'function', words: 'the activation is ReLU', params: {}, residual: 0.6 },
        { id: 'act-silu', family: 'function', words: 'SiLU', params: {}, residual: 800 },
      ],
      sampled: null,
      ms: 3,
    },
    anatomy: {
      rows: { kind: 'every', first: 0, last: 2, count: 3, of: 3, words: 'every row' },
      groups: { axis: 'MLP width', labels: ['0–3', '4–7'], share: [0.5, 0.5], words: 'all MLP width evenly' },
      parts: [],
      shape: { kind: 'everywhere', elements: 20, of: 24, words: 'spread over the whole tensor' },
      size: { bf16: 300, fp16: 2400, tf32: 2400, fp32: 2e7, words: 'typically 3e2 bf16 ULP' },
      heatmap: { rowLabels: ['0', '1', '2'], colLabels: ['0–3', '4–7'], values: [1, 2, 3, 4, 5, 6] },
      sentence: 'The error is in every row, all MLP width evenly, spread over the whole tensor.',
    },
    race: null,
    sentence:
      'Layer 1: the error is born at the GELU (layers.1.act), 3.2e+4× its floor; probable cause: ReLU.',
  };

  it('carries the why, its cause and anatomy in the JSON, valid against the schema', () => {
    const r = { ...fixtureReport(), why };
    const back = JSON.parse(reportToJson(r));
    expect(back.why.born).toBe('layers.1.act');
    expect(back.why.cause.named[0].id).toBe('act-relu');
    expect(back.why.cause.tested).toHaveLength(2);
    expect(back.why.anatomy.heatmap.values).toEqual([1, 2, 3, 4, 5, 6]);
    validate(back);
    expect(validate.errors ?? []).toEqual([]);
  });

  it('gives the CSV the why, the cause and the anatomy as comment lines (none when nothing is born)', () => {
    const text = layersToCsv({ ...fixtureReport(), why });
    const comments = text.split('\r\n').filter((l) => l.startsWith('#'));
    expect(comments).toContain(`# Why: ${why.sentence}`);
    expect(
      comments.some((l) => l.startsWith('# Cause: the activation is ReLU [act-relu] (explains all but 0.6×')),
    ).toBe(true);
    expect(comments).toContain(`# Anatomy: ${why.anatomy!.sentence}`);
    const parsed = csvParse(
      text
        .split('\r\n')
        .filter((l) => !l.startsWith('#'))
        .join('\n'),
      autoType,
    );
    expect(parsed.length).toBe(fixtureReport().layers.length);
    const plain = layersToCsv({ ...fixtureReport(), why: null });
    expect(plain).not.toContain('# Cause:');
  });
});
