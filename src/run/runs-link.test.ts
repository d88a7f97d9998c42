// Links to an analysis of runs: a report's runs, k and findings survive the round trip; anything malformed is
// refused with one sentence (LinkError), never another exception.
import { deflateSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import type { RunsReport } from '../compare/runs-report';
import { base64urlEncode, LinkError } from './link-bytes';
import { decodeRunsLink, isRunsLink, runsLinkOf } from './runs-link';

const sha = (c: string) => c.repeat(64);
const report = {
  k: 10,
  adapter: { vendor: 'nvidia', architecture: '', device: 'h100', description: 'NVIDIA H100\u0007' },
  runs: [
    { id: 'A', file: 'clean.safetensors', sha256: sha('a'), label: 'clean' },
    { id: 'B', file: 'mine.safetensors', sha256: sha('b'), label: null },
  ],
  findings: [
    { run: 'A', diverged: false, check: null, layer: null },
    { run: 'B', diverged: true, check: 'layers.7.residual', layer: 7 },
  ],
  checks: [{ run: 'B', id: 'layers.7.residual', ratio: 28123.456 }],
} as unknown as RunsReport;

const raw = (json: unknown) =>
  `#u1=${base64urlEncode(deflateSync(new TextEncoder().encode(JSON.stringify(json))))}`;

describe('runs links', () => {
  it('carry the model, each run sha256 and label, k and the sharer findings', () => {
    const link = runsLinkOf(report, { kind: 'embedded', id: 'neox-kjv-bytes' });
    expect(isRunsLink(link)).toBe(true);
    const p = decodeRunsLink(link);
    expect(p.model).toEqual({ kind: 'embedded', id: 'neox-kjv-bytes' });
    expect(p.runs).toEqual([
      { name: 'clean.safetensors', sha256: sha('a'), label: 'clean' },
      { name: 'mine.safetensors', sha256: sha('b'), label: null },
    ]);
    expect(p.k).toBe(10);
    expect(p.sharer?.adapter).toBe('NVIDIA H100');
    expect(p.sharer?.findings[1]).toEqual({ run: 'B', check: 'layers.7.residual', layer: 7, ratio: 28120 });
  });

  it('refuses malformed links with one sentence', () => {
    const good = decodeRunsLink(runsLinkOf(report, { kind: 'embedded', id: 'neox-kjv-bytes' }));
    const cases: [string, RegExp][] = [
      ['#r1=abc', /not a link to an analysis of runs/],
      ['#u1=%%%', /damaged|base64/i],
      [raw({ ...good, extra: 1 }), /unknown key 'extra'/],
      [raw({ ...good, runs: [] }), /one or two runs/],
      [raw({ ...good, runs: [{ ...good.runs[0], sha256: 'xyz' }] }), /no sha256/],
      [raw({ ...good, runs: [{ ...good.runs[0], label: 'a\nb' }] }), /label/],
      [
        raw({ ...good, model: { kind: 'url', url: 'javascript:alert(1)', sha256: sha('c') } }),
        /model is not valid/,
      ],
      [raw({ ...good, k: 0 }), /k is not/],
      [raw({ ...good, sharer: { ...good.sharer, findings: [{ run: 'C' }] } }), /names no run/],
      [`#u1=${'A'.repeat(20000)}`, /too long/],
    ];
    for (const [link, why] of cases) {
      let err: unknown = null;
      try {
        decodeRunsLink(link);
      } catch (e) {
        err = e;
      }
      expect(err, link.slice(0, 40)).toBeInstanceOf(LinkError);
      expect((err as Error).message, link.slice(0, 40)).toMatch(why);
    }
  });
});
