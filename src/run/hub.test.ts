// The Hub preset table and URL layout, and the test-only override: only a well-formed override is used, and
// only whole (a malformed one is ignored, never half-applied).
import { describe, expect, it } from 'vitest';
import {
  HUB_ORIGIN,
  HUB_OVERRIDE_KEY,
  HUB_PRESETS,
  hubOrigin,
  modelNameOfUrl,
  parseHubOverride,
  parseResolveUrl,
  readHubOverride,
  resolveUrl,
} from './hub';

describe('Hub presets', () => {
  it('list the whole Pythia suite by repo id, standard and deduped, with the model card shapes', () => {
    const sizes = ['70m', '160m', '410m', '1b', '1.4b', '2.8b', '6.9b', '12b'];
    expect(HUB_PRESETS.map((p) => p.repo)).toEqual([
      ...sizes.map((s) => `EleutherAI/pythia-${s}`),
      ...sizes.map((s) => `EleutherAI/pythia-${s}-deduped`),
    ]);
    for (const p of HUB_PRESETS) {
      // GPT-NeoX parameters: embeddings and head (50304 × d each, Pythia's padded vocabulary) plus 12 d² + 13 d
      // per layer and the final norm.
      const d = p.d;
      const expected = 2 * 50304 * d + p.layers * (12 * d * d + 13 * d) + 2 * d;
      expect(Math.abs(p.params - expected) / expected, p.id).toBeLessThan(0.01);
      expect(d % p.heads, p.id).toBe(0);
    }
  });

  it('builds resolve URLs in the Hub layout, escaping a branch name, and reads them back', () => {
    expect(resolveUrl('https://huggingface.co', 'EleutherAI/pythia-70m', 'main', 'config.json')).toBe(
      'https://huggingface.co/EleutherAI/pythia-70m/resolve/main/config.json',
    );
    const pr = resolveUrl('https://huggingface.co/', 'EleutherAI/pythia-70m', 'refs/pr/2');
    expect(pr).toBe('https://huggingface.co/EleutherAI/pythia-70m/resolve/refs%2Fpr%2F2/');
    expect(parseResolveUrl(pr)).toEqual({ repo: 'EleutherAI/pythia-70m', revision: 'refs/pr/2' });
    expect(new URL('model.safetensors', pr).href).toBe(`${pr}model.safetensors`);
    expect(() => resolveUrl('https://huggingface.co', '../etc', 'main')).toThrow(/not a Hub repository/);
    expect(() => resolveUrl('https://huggingface.co', 'a/b', '')).toThrow(/not a revision/);
    expect(parseResolveUrl('https://example.org/models/x/')).toBeNull();
    expect(parseResolveUrl('not a url')).toBeNull();
  });

  it('names a model after its repo for a Hub URL, else after its folder', () => {
    expect(modelNameOfUrl(resolveUrl(HUB_ORIGIN, 'EleutherAI/pythia-410m', 'a'.repeat(40)))).toBe(
      'pythia-410m',
    );
    expect(modelNameOfUrl('https://example.org/models/my-neox/')).toBe('my-neox');
    expect(modelNameOfUrl('https://example.org/')).toBe('example.org');
  });

  it('talks to huggingface.co without an override, to the stand-in with one', () => {
    expect(hubOrigin(null)).toBe('https://huggingface.co');
    expect(hubOrigin(parseHubOverride('{"origin": "http://127.0.0.1:9999"}'))).toBe('http://127.0.0.1:9999');
  });

  it('ignores a malformed override whole', () => {
    const ok = { origin: 'http://127.0.0.1:9999' };
    expect(parseHubOverride(JSON.stringify(ok))).toEqual(ok);
    const bad: unknown[] = [
      null,
      'x',
      { ...ok, origin: 'javascript:alert(1)' },
      { ...ok, origin: 'http://127.0.0.1:9999/some/path' },
      { ...ok, origin: 'file:///etc' },
      { origin: 3 },
      {},
    ];
    for (const b of bad) expect(parseHubOverride(JSON.stringify(b)), JSON.stringify(b)).toBeNull();
    expect(parseHubOverride('{not json')).toBeNull();
    expect(parseHubOverride(null)).toBeNull();
    expect(readHubOverride(null)).toBeNull();
    const store = new Map([[HUB_OVERRIDE_KEY, JSON.stringify(ok)]]);
    expect(readHubOverride({ getItem: (k) => store.get(k) ?? null })).toEqual(ok);
    expect(
      readHubOverride({
        getItem: () => {
          throw new Error('storage is off');
        },
      }),
    ).toBeNull();
  });
});

describe('the Hub mirror, the override limits, ids checked before any request', () => {
  it('takes an http(s) origin as a mirror and refuses anything else in one line', async () => {
    const { parseHubMirror, readHubMirror, HUB_MIRROR_KEY } = await import('./hub');
    expect(parseHubMirror(' https://hf-mirror.example.org/ ')).toBe('https://hf-mirror.example.org');
    expect(parseHubMirror('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080');
    for (const [bad, why] of [
      ['hf-mirror.example.org', /is not a URL/],
      ['ftp://x.org', /http\(s\) address, not ftp:/],
      ['https://u:p@x.org', /user name or password/],
      ['https://x.org/hub', /an origin \(scheme, host and port\)/],
      ['https://x.org/?a=1', /an origin/],
    ] as const) {
      expect(() => parseHubMirror(bad), bad).toThrow(why);
    }
    const store = (v: string | null) => ({ getItem: (k: string) => (k === HUB_MIRROR_KEY ? v : null) });
    expect(readHubMirror(store('https://m.example'))).toBe('https://m.example');
    expect(readHubMirror(store('https://m.example/path'))).toBeNull(); // not valid: not half-applied
    expect(readHubMirror(store(null))).toBeNull();
    expect(hubOrigin(null, 'https://m.example')).toBe('https://m.example');
    expect(hubOrigin({ origin: 'http://127.0.0.1:1' }, 'https://m.example')).toBe('http://127.0.0.1:1');
  });

  it("keeps an override's positive timeouts only", () => {
    const o = (v: unknown) => parseHubOverride(JSON.stringify({ origin: 'http://127.0.0.1:5', limits: v }));
    expect(o({ connectMs: 1500, idleMs: 2000 })?.limits).toEqual({ connectMs: 1500, idleMs: 2000 });
    expect(o({ connectMs: -1, idleMs: 'x' })?.limits).toBeUndefined();
    expect(o({ idleMs: 10 })?.limits).toEqual({ idleMs: 10 });
  });

  it('checks repository ids and revisions as the Hub allows them', async () => {
    const { checkRepoId, checkRevision } = await import('./hub');
    for (const ok of ['EleutherAI/pythia-1.4b-deduped', 'a/b', 'Org_1/model.v2'])
      expect(checkRepoId(ok)).toBe(ok);
    for (const bad of [
      'a',
      'a/b/c',
      '../a/b',
      'a/..b',
      'a/b--c',
      'a/b.',
      'a/-b',
      'a/b?c',
      'a b/c',
      'a/b#c',
      '',
    ])
      expect(() => checkRepoId(bad), bad).toThrow(/is not a Hub repository id/);
    for (const ok of ['main', 'refs/pr/1', 'step143000', 'v1.0', '0'.repeat(40)])
      expect(checkRevision(ok)).toBe(ok);
    for (const bad of ['', 'a b', '../x', 'x?y', 'x#y', 'a%2f', 'x'.repeat(201)])
      expect(() => checkRevision(bad), bad).toThrow(/is not a revision/);
  });

  it('refuses a link whose model URL holds a user name or password', async () => {
    const { parseRunSpec, defaultRunSpec } = await import('./runspec');
    const spec = {
      ...defaultRunSpec(),
      model: { kind: 'url', url: 'https://u:p@x.org/m/', sha256: 'a'.repeat(64) },
    };
    expect(() => parseRunSpec(spec)).toThrow(/user name or password/);
    expect(parseRunSpec({ ...spec, model: { ...spec.model, url: 'https://x.org/m/' } }).model.kind).toBe(
      'url',
    );
  });
});
