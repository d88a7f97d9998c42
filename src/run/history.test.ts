// Run history and the model cache on an in-memory IndexedDB (fake-indexeddb).
import 'fake-indexeddb/auto';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  cacheModelFiles,
  clearModelCache,
  clearRuns,
  deleteCachedModel,
  deleteRun,
  getCachedModel,
  getRun,
  listCachedModels,
  listRuns,
  MODEL_CAP,
  REPORT_MAX_BYTES,
  RUN_CAP,
  saveRun,
  settingsLine,
  sha256Hex,
} from './history';
import { defaultRunSpec, type RunSpec } from './runspec';

const report = (over: Record<string, unknown> = {}) => ({
  schema: 'divergence-report/1',
  model: { name: 'neox-kjv-bytes' },
  verdict: 'diverged',
  firstDivergentLayer: 1,
  layers: [{ ratio: 0.2 }, { ratio: 1.4e6 }],
  ...over,
});

const at = (i: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();

beforeEach(async () => {
  await clearRuns();
  await clearModelCache();
});

describe('run history', () => {
  it('saves, lists newest first, gets, deletes and clears', async () => {
    const spec: RunSpec = {
      ...defaultRunSpec(),
      prompt: {
        text: '  In the beginning\n\nGod created the heaven and the earth. And the earth was without form',
      },
    };
    const a = await saveRun({
      spec,
      report: report({ verdict: 'agree', firstDivergentLayer: null }),
      createdAt: at(1),
    });
    const b = await saveRun({
      spec: { ...spec, prompt: { tokens: [1, 2, 3] } },
      report: report(),
      createdAt: at(3),
    });
    const c = await saveRun({ spec, report: report({ model: {} }), createdAt: new Date(at(2)) });
    expect(new Set([a, b, c]).size).toBe(3);

    const list = await listRuns();
    expect(list.map((s) => s.id)).toEqual([b, c, a]);
    expect(list[2]).toEqual({
      id: a,
      createdAt: at(1),
      model: 'neox-kjv-bytes',
      prompt: 'In the beginning God created the heaven and the earth. And…',
      verdict: 'agree',
      firstDivergentLayer: null,
      hasReport: true,
      reportBytes: expect.any(Number),
      settings: 'fp32 · all 6 fused kernels · no fault',
    });
    expect(list[2].prompt.length).toBeLessThanOrEqual(60);
    expect(list[0]).toMatchObject({ prompt: 'tokens: 1, 2, 3', verdict: 'diverged', firstDivergentLayer: 1 });
    expect(list[1].model).toBe('neox-kjv-bytes'); // no name in the report: the spec's embedded id

    // Runs on one prompt told apart by precision, kernels and fault.
    expect(
      settingsLine({
        ...spec,
        precision: 'fp16',
        fused: ['gemm'],
        faults: [{ id: 'gptj_rotary', fromLayer: 2 }],
      }),
    ).toBe('fp16 · fused: gemm · fault gptj_rotary from layer 2');

    const got = await getRun(b);
    expect(got?.spec).toEqual({ ...spec, prompt: { tokens: [1, 2, 3] } });
    expect(got?.report).toEqual(report());
    expect(got?.createdAt).toBe(at(3));

    await deleteRun(b);
    expect(await getRun(b)).toBeUndefined();
    expect((await listRuns()).map((s) => s.id)).toEqual([c, a]);
    await clearRuns();
    expect(await listRuns()).toEqual([]);
  });

  it('names models from the spec when the report has no name', async () => {
    const sha = 'a'.repeat(64);
    await saveRun({
      spec: {
        ...defaultRunSpec(),
        model: { kind: 'url', url: 'https://example.org/m/pythia-70m/model.safetensors', sha256: sha },
      },
      report: {},
      createdAt: at(1),
    });
    await saveRun({
      spec: { ...defaultRunSpec(), model: { kind: 'file', sha256: sha, name: 'mine.safetensors' } },
      report: {},
      createdAt: at(2),
    });
    await saveRun({
      spec: { ...defaultRunSpec(), model: { kind: 'file', sha256: sha } },
      report: {},
      createdAt: at(3),
    });
    expect((await listRuns()).map((s) => [s.model, s.verdict])).toEqual([
      [`file ${sha.slice(0, 12)}`, 'unknown'],
      ['mine.safetensors', 'unknown'],
      ['model.safetensors', 'unknown'],
    ]);
  });

  it(`keeps the newest ${RUN_CAP} runs`, async () => {
    const ids: string[] = [];
    for (let i = 0; i < RUN_CAP + 5; i++)
      ids.push(await saveRun({ spec: defaultRunSpec(), report: report(), createdAt: at(i) }));
    const list = await listRuns();
    expect(list.length).toBe(RUN_CAP);
    expect(list[0].id).toBe(ids[ids.length - 1]);
    expect(list[list.length - 1].id).toBe(ids[5]);
    for (const old of ids.slice(0, 5)) expect(await getRun(old)).toBeUndefined();
  });

  it('stores only the summary of a report too large or not storable', async () => {
    const huge = report({ blob: 'x'.repeat(REPORT_MAX_BYTES + 1) });
    const id = await saveRun({ spec: defaultRunSpec(), report: huge, createdAt: at(1) });
    const run = await getRun(id);
    expect(run?.report).toBeNull();
    expect(run?.summary).toMatchObject({ hasReport: false, verdict: 'diverged', firstDivergentLayer: 1 });
    expect(run?.summary.reportBytes).toBeGreaterThan(REPORT_MAX_BYTES);

    const cyclic: Record<string, unknown> = report();
    cyclic.self = cyclic; // JSON cannot measure it: treated as too large
    const id2 = await saveRun({ spec: defaultRunSpec(), report: cyclic, createdAt: at(2) });
    expect((await getRun(id2))?.report).toBeNull();

    const withFn = report({ render: () => 1 }); // the structured clone refuses functions
    const id3 = await saveRun({ spec: defaultRunSpec(), report: withFn, createdAt: at(3) });
    expect((await getRun(id3))?.summary.hasReport).toBe(false);
    expect((await listRuns()).length).toBe(3);
  });
});

describe('model cache', () => {
  const enc = new TextEncoder();

  it('hashes with SHA-256', async () => {
    expect(await sha256Hex(enc.encode('abc'))).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
    expect(await sha256Hex(new ArrayBuffer(0))).toBe(
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
    const big = new Uint8Array(10);
    big.set(enc.encode('abc'), 4);
    expect(await sha256Hex(big.subarray(4, 7))).toBe(await sha256Hex(enc.encode('abc')));
  });

  it('caches files under the weights’ sha256 and returns them', async () => {
    const weights = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7) & 255);
    const sha = await sha256Hex(weights);
    await cacheModelFiles(
      sha,
      { config: '{"a":1}', weights: weights.buffer, tokenizer: '{"type":"bytes"}' },
      'tiny',
    );
    const got = await getCachedModel(sha);
    expect(got).toMatchObject({
      sha256: sha,
      name: 'tiny',
      config: '{"a":1}',
      tokenizer: '{"type":"bytes"}',
      bytes: 1000,
    });
    expect(new Uint8Array(got!.weights)).toEqual(weights);
    expect(await getCachedModel('0'.repeat(64))).toBeUndefined();
    expect(await getCachedModel('not a hash')).toBeUndefined();
    await deleteCachedModel(sha);
    expect(await getCachedModel(sha)).toBeUndefined();
  });

  it('refuses weights that do not match the hash', async () => {
    const weights = enc.encode('weights');
    await expect(
      cacheModelFiles('0'.repeat(64), { config: '{}', weights: weights.buffer }, 'x'),
    ).rejects.toThrow(/hash/);
    await expect(cacheModelFiles('XYZ', { config: '{}', weights: weights.buffer }, 'x')).rejects.toThrow(
      /sha256/,
    );
    expect(await listCachedModels()).toEqual([]);
  });

  it(`keeps the ${MODEL_CAP} most recently cached models`, async () => {
    const shas: string[] = [];
    for (let i = 0; i < MODEL_CAP + 2; i++) {
      const w = enc.encode(`model ${i}`);
      const sha = await sha256Hex(w);
      shas.push(sha);
      await cacheModelFiles(sha, { config: '{}', weights: w }, `m${i}`);
      await new Promise((r) => setTimeout(r, 2)); // distinct cachedAt
    }
    const list = await listCachedModels();
    expect(list.map((m) => m.name)).toEqual(['m4', 'm3', 'm2']);
    expect(await getCachedModel(shas[0])).toBeUndefined();
    expect((await getCachedModel(shas[4]))?.name).toBe('m4');
  });
});
