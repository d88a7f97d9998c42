// The Hub preset table and URL layout, and the test-only override: only a well-formed override is used, and
// only whole (a malformed one is ignored, never half-applied).
import { describe, expect, it } from 'vitest';
import {
  HUB_OVERRIDE_KEY,
  HUB_PRESETS,
  modelNameOfUrl,
  parseHubOverride,
  parseResolveUrl,
  readHubOverride,
  resolvePresets,
  resolveUrl,
} from './hub';

describe('Hub presets', () => {
  it('pin every preset to a commit and a sha256, with plausible fp16 sizes for their parameter counts', () => {
    expect(HUB_PRESETS.map((p) => p.id)).toEqual(['pythia-70m', 'pythia-160m', 'pythia-410m']);
    for (const p of HUB_PRESETS) {
      expect(p.revision).toMatch(/^[0-9a-f]{40}$/);
      expect(p.sha256).toMatch(/^[0-9a-f]{64}$/);
      // fp16 weights (2 bytes per parameter) plus the U8 causal-mask buffers (2048² bytes per layer).
      const expected = 2 * p.params + p.layers * 2048 * 2048;
      expect(Math.abs(p.weightsBytes - expected) / expected, p.id).toBeLessThan(0.01);
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
    expect(modelNameOfUrl(resolvePresets()[2].url)).toBe('pythia-410m');
    expect(modelNameOfUrl('https://example.org/models/my-neox/')).toBe('my-neox');
    expect(modelNameOfUrl('https://example.org/')).toBe('example.org');
  });

  it('resolves to huggingface.co without an override, to the stand-in with its own hashes with one', () => {
    const hub = resolvePresets();
    expect(hub[0].url).toBe(
      'https://huggingface.co/EleutherAI/pythia-70m/resolve/2ab25ed47af79376eed2baaf8bbb7a192a0c73ff/',
    );
    expect(hub[0].sha256).toBe(HUB_PRESETS[0].sha256);
    const sha = 'a'.repeat(64);
    const o = parseHubOverride(
      JSON.stringify({
        origin: 'http://127.0.0.1:9999',
        presets: { 'pythia-160m': { sha256: sha, bytes: 12 } },
      }),
    );
    expect(o).not.toBeNull();
    const test = resolvePresets(o);
    expect(test[1]).toMatchObject({ sha256: sha, weightsBytes: 12, exact: true });
    expect(test[1].url.startsWith('http://127.0.0.1:9999/EleutherAI/pythia-160m/resolve/')).toBe(true);
    expect(test[0].sha256).toBe(HUB_PRESETS[0].sha256); // a preset the override leaves out keeps the table's
  });

  it('ignores a malformed override whole', () => {
    const ok = { origin: 'http://127.0.0.1:9999', presets: {} };
    expect(parseHubOverride(JSON.stringify(ok))).toEqual(ok);
    const bad: unknown[] = [
      null,
      'x',
      { ...ok, origin: 'javascript:alert(1)' },
      { ...ok, origin: 'http://127.0.0.1:9999/some/path' },
      { ...ok, origin: 'file:///etc' },
      { origin: ok.origin },
      { ...ok, presets: { 'gpt-2': { sha256: 'a'.repeat(64), bytes: 1 } } },
      { ...ok, presets: { 'pythia-70m': { sha256: 'A'.repeat(64), bytes: 1 } } },
      { ...ok, presets: { 'pythia-70m': { sha256: 'a'.repeat(64), bytes: -1 } } },
      { ...ok, presets: { 'pythia-70m': null } },
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
