// The permalink codec: seeded round-trip properties over random RunSpecs (every field, every model kind), and
// a seeded fuzz of the decoder — whatever the fragment, decodeLink returns a valid payload or throws a
// LinkError, never anything else, and never hangs. The seed is printed on failure; LINK_SEED=<n> replays it.
import { deflateSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { FUSED_KERNELS } from '../engine/fused-kernels';
import { PRECISIONS } from '../numeric/precision';
import { mulberry32 } from '../numeric/random';
import { FAULTS } from './faults';
import { base64urlDecode, base64urlEncode, LinkError } from './link-bytes';
import {
  adapterLine,
  autorunAllowed,
  decodeLink,
  encodeLink,
  LINK_LIMITS,
  type LinkPayload,
  parseLinkPayload,
  sharerSummary,
} from './permalink';
import { defaultRunSpec, LIMITS, METRICS, type ModelRef, parseRunSpec, type RunSpec } from './runspec';

const BASE_SEED = process.env.LINK_SEED ? Number(process.env.LINK_SEED) : (Math.random() * 2 ** 31) >>> 0;
const replay = `(seed ${BASE_SEED}; replay with LINK_SEED=${BASE_SEED})`;

type Rng = () => number;
const int = (r: Rng, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
const pick = <T>(r: Rng, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
const chance = (r: Rng, p: number) => r() < p;

function shuffled<T>(r: Rng, xs: readonly T[]): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

const HEX = '0123456789abcdef';
const hex64 = (r: Rng) => Array.from({ length: 64 }, () => pick(r, HEX.split(''))).join('');
const HOSTILE = [
  '<script>alert(1)</script>',
  '<img src=x onerror="alert(1)">',
  "'; DROP TABLE runs; --",
  '{{constructor.constructor("alert(1)")()}}',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal placeholder is the hostile input
  '${process.exit()}',
  'javascript:alert(1)',
  '</textarea><svg onload=alert(1)>',
  '"\\u0000"',
  '__proto__',
];

/** Random text from ASCII, HTML-ish fragments, BMP letters, astral emoji, whitespace and escapes. */
function text(r: Rng, maxLen: number): string {
  let s = '';
  const target = int(r, 1, maxLen);
  while (s.length < target) {
    switch (int(r, 0, 7)) {
      case 0:
        s += pick(r, HOSTILE);
        break;
      case 1:
        s += String.fromCodePoint(int(r, 0x1f300, 0x1faff)); // emoji (surrogate pair)
        break;
      case 2:
        s += String.fromCharCode(int(r, 0x370, 0x4ff), int(r, 0x4e00, 0x9fff)); // Greek/Cyrillic, CJK
        break;
      case 3:
        s += pick(r, ['\n', '\t', '\r\n', ' ', '\\', '"', "'", '`', '\u2028', '\ufeff', '\u0007']);
        break;
      default:
        s += String.fromCharCode(int(r, 0x20, 0x7e));
    }
  }
  // Trim to the target without splitting a surrogate pair (a lone surrogate is valid JSON but not sensible).
  let out = s.slice(0, target);
  if (/[\ud800-\udbff]$/.test(out)) out = out.slice(0, -1);
  return out || 'x';
}

function randomModel(r: Rng): ModelRef {
  switch (int(r, 0, 2)) {
    case 0: {
      const chars = 'abcdefghijklmnopqrstuvwxyz0123456789._-';
      const id =
        pick(r, 'abcdefghijklmnopqrstuvwxyz0123456789'.split('')) +
        Array.from({ length: int(r, 0, 40) }, () => pick(r, chars.split(''))).join('');
      return { kind: 'embedded', id };
    }
    case 1: {
      const path = Array.from({ length: int(r, 0, 4) }, () =>
        text(r, 12).replace(/[^a-zA-Z0-9._-]/g, 'x'),
      ).join('/');
      return {
        kind: 'url',
        url: `${pick(r, ['https', 'http'])}://${pick(r, ['huggingface.co', 'example.org', 'localhost:8080', '127.0.0.1'])}/${path}${chance(r, 0.3) ? '?download=true&x=<b>' : ''}`,
        sha256: hex64(r),
      };
    }
    default: {
      const m: ModelRef = { kind: 'file', sha256: hex64(r) };
      if (chance(r, 0.6)) m.name = text(r, 120);
      return m;
    }
  }
}

function randomRunSpec(r: Rng): RunSpec {
  const fused = shuffled(
    r,
    FUSED_KERNELS.map((k) => k.id),
  ).slice(0, int(r, 0, FUSED_KERNELS.length));
  const eligible = shuffled(
    r,
    FAULTS.filter((f) => fused.includes(f.kernel)),
  ).slice(0, int(r, 0, LIMITS.faults));
  const faults = eligible.map((f) => {
    const out: RunSpec['faults'][number] = { id: f.id };
    if (chance(r, 0.6)) out.fromLayer = int(r, 0, 1023);
    return out;
  });
  const k = chance(r, 0.3) ? pick(r, [1, 10, 1e6, 2.5]) : 1 + r() * (chance(r, 0.5) ? 100 : 999_999);
  return {
    version: 1,
    model: randomModel(r),
    prompt: chance(r, 0.7)
      ? { text: text(r, chance(r, 0.05) ? 1500 : 200) }
      : {
          tokens: Array.from({ length: int(r, 1, chance(r, 0.05) ? 600 : 60) }, () =>
            int(r, 0, chance(r, 0.5) ? 255 : 10_000_000),
          ),
        },
    generate: int(r, 0, LIMITS.generate),
    precision: pick(r, PRECISIONS),
    fused,
    faults,
    seed: int(r, 0, 2 ** 31 - 1),
    k,
    metric: pick(r, METRICS),
  };
}

function randomPayload(r: Rng): LinkPayload {
  const p: LinkPayload = { v: 1, spec: randomRunSpec(r) };
  if (chance(r, 0.5)) p.autorun = chance(r, 0.5);
  if (chance(r, 0.5)) {
    const n = int(r, 0, chance(r, 0.1) ? 300 : 40);
    const ratios = Array.from({ length: n }, () =>
      chance(r, 0.1) ? null : pick(r, [0, 1e-300, 1e300, Number.MAX_VALUE, 0.5]) * (chance(r, 0.5) ? 1 : r()),
    );
    p.sharer = {
      adapter: text(r, LINK_LIMITS.adapterChars),
      summary: {
        metric: pick(r, METRICS),
        ratios,
        firstDivergentLayer: n > 0 && chance(r, 0.6) ? int(r, 0, n - 1) : null,
      },
    };
  }
  return p;
}

describe('base64url', () => {
  it('round-trips every length 0..300 and rejects non-canonical or foreign text', () => {
    const r = mulberry32(BASE_SEED);
    for (let n = 0; n <= 300; n++) {
      const bytes = Uint8Array.from({ length: n }, () => int(r, 0, 255));
      const s = base64urlEncode(bytes);
      expect(s).toMatch(/^[A-Za-z0-9_-]*$/);
      expect(Array.from(base64urlDecode(s))).toEqual(Array.from(bytes));
      expect(Buffer.from(bytes).toString('base64url')).toBe(s);
    }
    for (const bad of ['A', 'AB=', 'A+B/', 'AB C', 'AAA\u00e9', 'AB', 'AAB']) {
      // 'AB' and 'AAB' have non-zero unused bits ('AA' and 'AAA' are canonical).
      expect(() => base64urlDecode(bad), bad).toThrow(LinkError);
    }
    expect(Array.from(base64urlDecode('AA'))).toEqual([0]);
  });
});

describe('encodeLink / decodeLink round trip', () => {
  it(`round-trips 600 random payloads ${replay}`, () => {
    const r = mulberry32(BASE_SEED ^ 0x5eed);
    let tooLong = 0;
    const kinds = new Set<string>();
    for (let i = 0; i < 600; i++) {
      const p = randomPayload(r);
      const ctx = `case ${i} ${replay}`;
      expect(parseRunSpec(p.spec), ctx).toStrictEqual(p.spec); // the generator makes valid specs
      kinds.add(p.spec.model.kind);
      kinds.add('text' in p.spec.prompt ? 'text' : 'tokens');
      let link: string;
      try {
        link = encodeLink(p);
      } catch (e) {
        // Only an honestly oversized run may fail to encode.
        expect(e, ctx).toBeInstanceOf(LinkError);
        expect((e as LinkError).reason, ctx).toBe('too-long');
        tooLong++;
        continue;
      }
      expect(link, ctx).toMatch(/^#r1=[A-Za-z0-9_-]+$/);
      expect(link.length, ctx).toBeLessThanOrEqual(LINK_LIMITS.fragmentChars);
      expect(decodeLink(link), ctx).toStrictEqual(p);
      expect(decodeLink(link.slice(1)), ctx).toStrictEqual(p); // the '#' is optional
      expect(encodeLink(decodeLink(link)), ctx).toBe(link); // canonical: one link per payload
    }
    expect(kinds).toEqual(new Set(['embedded', 'url', 'file', 'text', 'tokens']));
    expect(tooLong).toBeLessThan(60);
  });

  it('keeps hostile prompt text as plain text, byte for byte', () => {
    for (const t of HOSTILE) {
      const p: LinkPayload = { v: 1, spec: { ...defaultRunSpec(), prompt: { text: t } }, autorun: false };
      expect(decodeLink(encodeLink(p)).spec.prompt).toEqual({ text: t });
    }
  });

  it('refuses to encode what it would refuse to decode', () => {
    const bad = { v: 1, spec: { ...defaultRunSpec(), k: 0 } } as LinkPayload;
    expect(() => encodeLink(bad)).toThrow(/k/);
    const extra = { v: 1, spec: defaultRunSpec(), evil: true } as unknown as LinkPayload;
    expect(() => encodeLink(extra)).toThrow(LinkError);
    // A 4000-character prompt of random letters and 1024 full-precision ratios do not fit in 16 KiB: a
    // LinkError, not a link that would be refused on opening.
    const r = mulberry32(7);
    const huge = Array.from({ length: LIMITS.promptChars }, () =>
      String.fromCharCode(int(r, 0x4e00, 0x9fff)),
    ).join('');
    const ratios = Array.from({ length: LINK_LIMITS.ratios }, () => r() * 1e6);
    const big: LinkPayload = {
      v: 1,
      spec: { ...defaultRunSpec(), prompt: { text: huge } },
      sharer: { adapter: 'x', summary: { metric: 'relL2', ratios, firstDivergentLayer: null } },
    };
    expect(() => encodeLink(big)).toThrow(expect.objectContaining({ reason: 'too-long' }));
  });

  it('builds a sharer summary from a report and keeps it inside the limits', () => {
    const s = sharerSummary({
      metric: 'relL2',
      layers: [
        { ratio: 0.123456 },
        { ratio: Number.POSITIVE_INFINITY },
        { ratio: 1234567.89 },
        { ratio: Number.NaN },
      ],
      firstDivergentLayer: 1,
    });
    expect(s).toEqual({ metric: 'relL2', ratios: [0.1235, null, 1235000, null], firstDivergentLayer: 1 });
    const p: LinkPayload = {
      v: 1,
      spec: defaultRunSpec(),
      sharer: {
        adapter: adapterLine({ vendor: 'nvidia', architecture: 'hopper', device: '', description: '' }),
        summary: s,
      },
    };
    expect(p.sharer!.adapter).toBe('nvidia hopper');
    expect(decodeLink(encodeLink(p))).toStrictEqual(p);
    expect(adapterLine({ description: `a\u0000b\n${'x'.repeat(500)}` }).length).toBe(
      LINK_LIMITS.adapterChars,
    );
  });

  it('honours autorun only for modest runs of an embedded model', () => {
    const base = defaultRunSpec();
    expect(autorunAllowed({ v: 1, spec: base, autorun: true })).toBe(true);
    expect(autorunAllowed({ v: 1, spec: base })).toBe(false);
    expect(
      autorunAllowed({
        v: 1,
        spec: { ...base, model: { kind: 'url', url: 'https://evil.example/m', sha256: '0'.repeat(64) } },
        autorun: true,
      }),
    ).toBe(false);
    expect(autorunAllowed({ v: 1, spec: { ...base, generate: 256 }, autorun: true })).toBe(false);
  });
});

// ------------------------------------------------------------------------------------------------ fuzz

const enc = new TextEncoder();
const rawLink = (bytes: Uint8Array) => `#r1=${base64urlEncode(deflateSync(bytes, { level: 9 }))}`;
const jsonLink = (v: unknown) => rawLink(enc.encode(JSON.stringify(v)));

/** A JSON value of a random wrong type. */
function wrongValue(r: Rng): unknown {
  return pick(r, [
    null,
    true,
    -1,
    1.5,
    Number.POSITIVE_INFINITY /* JSON: null */,
    '',
    'x'.repeat(5000),
    [],
    [1, 'a', null],
    {},
    { kind: 'embedded' },
    { __proto__: { polluted: true } },
    JSON.parse('{"__proto__": {"polluted": true}}'),
    2 ** 53,
    -0,
    '<script>alert(1)</script>',
    [[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]],
  ]);
}

/** Replaces, deletes or adds one field somewhere in a (deep-copied) payload. */
function mutateJson(r: Rng, payload: LinkPayload): unknown {
  const root = JSON.parse(JSON.stringify(payload)) as Record<string, unknown>;
  const paths: (string | number)[][] = [];
  const walk = (v: unknown, path: (string | number)[]) => {
    paths.push(path);
    if (Array.isArray(v)) v.forEach((x, i) => void walk(x, [...path, i]));
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, [...path, k]);
  };
  walk(root, []);
  const path = pick(r, paths);
  if (path.length === 0) return wrongValue(r);
  let parent: Record<string | number, unknown> = root;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  const last = path[path.length - 1];
  switch (int(r, 0, 3)) {
    case 0:
      delete parent[last];
      break;
    case 1:
      if (!Array.isArray(parent)) parent[`extra${int(r, 0, 9)}`] = wrongValue(r);
      else parent[last] = wrongValue(r);
      break;
    default:
      parent[last] = wrongValue(r);
  }
  return root;
}

type Case = { kind: string; input: string; prompt?: string };

interface Pools {
  seeds: string[];
  payloads: LinkPayload[];
  bombs: string[];
  deep: string[];
}

function fuzzCase(r: Rng, { seeds, payloads, bombs, deep }: Pools): Case {
  const link = pick(r, seeds);
  const body = link.slice(4);
  const A = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  switch (int(r, 0, 13)) {
    case 0: {
      // Flip bits of one or more base64 characters (stays in the alphabet: a real bit flip of the data).
      const cs = body.split('');
      for (let n = int(r, 1, 3); n > 0; n--) {
        const i = int(r, 0, cs.length - 1);
        cs[i] = A[A.indexOf(cs[i]) ^ (1 << int(r, 0, 5))];
      }
      return { kind: 'bitflip', input: `#r1=${cs.join('')}` };
    }
    case 1: {
      // Flip a bit of a character code (may leave the alphabet).
      const i = int(r, 0, link.length - 1);
      const c = String.fromCharCode(link.charCodeAt(i) ^ (1 << int(r, 0, 15)));
      return { kind: 'charflip', input: link.slice(0, i) + c + link.slice(i + 1) };
    }
    case 2:
      return { kind: 'truncate', input: link.slice(0, int(r, 0, link.length - 1)) };
    case 3: {
      const i = int(r, 0, link.length);
      const ins = chance(r, 0.5)
        ? Array.from({ length: int(r, 1, 8) }, () => pick(r, A.split(''))).join('')
        : text(r, 8);
      return { kind: 'insert', input: link.slice(0, i) + ins + link.slice(i) };
    }
    case 4: {
      const n = int(r, 0, 400);
      const s = Array.from({ length: n }, () =>
        chance(r, 0.8) ? pick(r, A.split('')) : String.fromCharCode(int(r, 0, 0xffff)),
      ).join('');
      return { kind: 'random-text', input: `${pick(r, ['#r1=', 'r1=', '#', '', '#s=', '#r2='])}${s}` };
    }
    case 5: {
      const n = pick(r, [LINK_LIMITS.fragmentChars + 1, 100_000, 2_000_000, 20_000_000]);
      return { kind: 'huge', input: `#r1=${'A'.repeat(n)}` };
    }
    case 6: {
      const n = int(r, 0, 3000);
      return {
        kind: 'deflate-garbage',
        input: rawLink(Uint8Array.from({ length: n }, () => int(r, 0, 255))),
      };
    }
    case 7:
      return { kind: 'deflate-text', input: rawLink(enc.encode(text(r, 500))) };
    case 8:
      return { kind: 'wrong-types', input: jsonLink(mutateJson(r, pick(r, payloads))) };
    case 9: {
      const p = pick(r, payloads);
      const prompt = Array.from({ length: int(r, 1, 4) }, () => pick(r, HOSTILE)).join(text(r, 10));
      return {
        kind: 'html-prompt',
        input: jsonLink({ ...p, spec: { ...p.spec, prompt: { text: prompt } } }),
        prompt,
      };
    }
    case 10:
      return { kind: 'bomb', input: pick(r, bombs) };
    case 11:
      return { kind: 'deep', input: pick(r, deep) };
    case 12: {
      // Not UTF-8, and a UTF-16 BOM, after inflating.
      const bytes = Uint8Array.from({ length: int(r, 1, 50) }, () => int(r, 0x80, 0xff));
      return {
        kind: 'not-utf8',
        input: rawLink(chance(r, 0.5) ? bytes : Uint8Array.from([0xff, 0xfe, 0x7b, 0, 0x7d, 0])),
      };
    }
    default:
      return {
        kind: 'prefix',
        input: pick(r, [
          '',
          '#',
          '   ',
          '#r1=',
          '#r0=AAAA',
          '#r999999=AAAA',
          '#s=',
          '#s=nope',
          '#s=fused-add/99',
          '#s=FUSED-ADD',
          '#s=fused-add/0',
          '#s=../../etc/passwd',
          `#s=${'a'.repeat(500)}`,
          'javascript:alert(1)',
          `${link}#${link}`,
          `#r1=${body}=`,
        ]),
      };
  }
}

describe('decodeLink fuzz', () => {
  it(`6000 mutated links: a valid payload or a LinkError, never anything else ${replay}`, {
    timeout: 120_000,
  }, () => {
    const r = mulberry32(BASE_SEED ^ 0xf022);
    const payloads = Array.from({ length: 40 }, () => randomPayload(r));
    const seeds = payloads.flatMap((p) => {
      try {
        return [encodeLink(p)];
      } catch {
        return [];
      }
    });
    // Decompression bombs (small links that expand to megabytes) and deep nesting, made once.
    const bombs = [300_000, 1_000_000, 5_000_000].map((n) =>
      rawLink(enc.encode(JSON.stringify({ v: 1, spec: defaultRunSpec(), pad: ' '.repeat(n) }))),
    );
    const deep = [13, 1000, 100_000, 200_000].map((d) =>
      rawLink(enc.encode(`${'['.repeat(d)}${']'.repeat(d)}`)),
    );
    const pools: Pools = { seeds, payloads, bombs, deep };
    const failures: string[] = [];
    const outcomes = new Map<string, number>();
    const t0 = performance.now();
    let slowest = { ms: 0, kind: '' };
    for (let i = 0; i < 6000; i++) {
      const c = fuzzCase(r, pools);
      const t = performance.now();
      try {
        const p = decodeLink(c.input);
        // Whatever decodes is a valid, normalized payload.
        expect(parseLinkPayload(p)).toStrictEqual(p);
        outcomes.set('ok', (outcomes.get('ok') ?? 0) + 1);
        if (c.prompt !== undefined && !('text' in p.spec.prompt && p.spec.prompt.text === c.prompt))
          failures.push(`case ${i} (${c.kind}): the prompt did not come back as the same plain text`);
      } catch (e) {
        if (!(e instanceof LinkError) || e.reason === 'internal' || !e.message || /\n/.test(e.message)) {
          failures.push(
            `case ${i} (${c.kind}, input ${JSON.stringify(c.input.slice(0, 120))}): ${String(e)} ${e instanceof LinkError ? `[${e.reason}] cause ${String(e.cause)}` : ''}`,
          );
        } else outcomes.set(e.reason, (outcomes.get(e.reason) ?? 0) + 1);
      }
      const ms = performance.now() - t;
      if (ms > slowest.ms) slowest = { ms, kind: c.kind };
      if (failures.length > 20) break;
    }
    const total = performance.now() - t0;
    expect(failures, `${failures.length} failures ${replay}:\n${failures.join('\n')}`).toEqual([]);
    // Time box: the whole fuzz in well under the test timeout, no single case anywhere near a hang.
    expect(total, `total ${total.toFixed(0)} ms ${replay}`).toBeLessThan(60_000);
    expect(slowest.ms, `slowest case ${slowest.kind} ${slowest.ms.toFixed(0)} ms ${replay}`).toBeLessThan(
      2_000,
    );
    // The fuzz reached every stage of the decoder.
    for (const reason of [
      'ok',
      'too-long',
      'format',
      'version',
      'base64',
      'inflate',
      'too-large',
      'encoding',
      'json',
      'payload',
      'spec',
      'sharer',
      'scenario',
    ])
      expect(
        outcomes.get(reason) ?? 0,
        `${reason} ${JSON.stringify([...outcomes])} ${replay}`,
      ).toBeGreaterThan(0);
  });

  it('gives one clear message per failure stage', () => {
    const msg = (s: string) => {
      try {
        decodeLink(s);
      } catch (e) {
        expect(e).toBeInstanceOf(LinkError);
        return (e as LinkError).message;
      }
      throw new Error(`decoded: ${s}`);
    };
    expect(msg(`#r1=${'A'.repeat(LINK_LIMITS.fragmentChars)}`)).toMatch(/too long/);
    expect(msg('#x=1')).toMatch(/not a divergence-explorer link/);
    expect(msg('#r2=AAAA')).toMatch(/format r2/);
    expect(msg('#r1=!!!!')).toMatch(/base64url/);
    expect(msg('#r1=AAAA')).toMatch(/decompress/);
    expect(msg(rawLink(new Uint8Array(300_000)))).toMatch(/256 KiB/);
    expect(msg(rawLink(Uint8Array.from([0xc3, 0x28])))).toMatch(/UTF-8/);
    expect(msg(rawLink(enc.encode('{"v":1,')))).toMatch(/not JSON/);
    expect(msg(jsonLink({ v: 2, spec: defaultRunSpec() }))).toMatch(/version 2/);
    expect(msg(jsonLink({ v: 1, spec: { ...defaultRunSpec(), fused: ['warp_drive'] } }))).toMatch(
      /fused\[0\].*warp_drive/,
    );
    expect(msg(jsonLink({ v: 1, spec: defaultRunSpec(), x: 1 }))).toMatch(/unknown key "x"/);
    expect(
      msg(
        jsonLink({
          v: 1,
          spec: defaultRunSpec(),
          sharer: { adapter: 'a', summary: { metric: 'relL2', ratios: [-1], firstDivergentLayer: null } },
        }),
      ),
    ).toMatch(/ratios\[0\]/);
    expect(msg('#s=nope')).toMatch(/scenario/);
    // Never anything but a LinkError, whatever the argument.
    for (const v of [undefined, null, 42, {}, []])
      expect(() => decodeLink(v as unknown as string)).toThrow(LinkError);
  });
});
