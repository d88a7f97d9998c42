// Links, models named by links, history and scenarios in the state layer: settings from a spec and back,
// the sharer comparison, scenario expectations, and the controller's link / model / history flows against a
// scripted engine client and an in-memory IndexedDB.
import 'fake-indexeddb/auto';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Report } from '../compare/analyze';
import { cacheModelFiles, clearModelCache, clearRuns, listRuns, sha256Hex } from '../run/history';
import { decodeLink, encodeLink, scenarioLink, sharerSummary } from '../run/permalink';
import { defaultRunSpec, type RunSpec } from '../run/runspec';
import { SCENARIOS } from '../run/scenarios';
import { fixtureReport } from '../ui/report-fixture';
import type { InitResult, LoadedModel, LoadOptions, ModelFilesInput, WorkerError } from '../worker/api';
import type { EngineClient } from '../worker/client';
import { createController } from './controller';
import { settingsMatchLink } from './link-settings';
import { checkExpectation, scenarioRun } from './scenario';
import { settingsOf } from './settings';
import { AGREE_FACTOR, agreementSentence, compareWithSharer } from './sharer';
import { buildSpec, modelMatches, sameRun, specKey } from './spec';
import { type AppStore, canRun, createAppStore, type ModelSource } from './store';

const EMBEDDED = { id: 'neox-kjv-bytes', url: 'http://localhost/models/neox-kjv-bytes/' };
const adapter = {
  vendor: 'google',
  architecture: 'swiftshader',
  device: '',
  description: 'SwiftShader device',
  features: [],
  limits: {},
};
const features = { shaderF16: false, subgroups: false, timestampQuery: true };

function model(sha256: string, name = 'neox-kjv-bytes'): LoadedModel {
  return {
    name,
    config: {
      vocabSize: 256,
      hiddenSize: 8,
      numLayers: 4,
      numHeads: 2,
      headDim: 4,
      intermediateSize: 32,
      rotaryNdims: 4,
      rotaryBase: 10000,
      layerNormEps: 1e-5,
      useParallelResidual: true,
      maxPositionEmbeddings: 64,
      attentionBias: true,
      tieWordEmbeddings: false,
    },
    params: 1,
    gpuBytes: 1,
    tokenizer: 'bytes',
    weightsOnGpu: 'fp32',
    sha256,
    weightsBytes: 1,
  };
}

const EMBEDDED_SHA = 'e'.repeat(64);
const flush = () => new Promise((r) => setTimeout(r, 0));

/** A client whose loads succeed at once (or refuse a hash as the worker does) and whose compare returns `report`. */
function client(opts: { report?: Report } = {}) {
  const calls: string[] = [];
  const loads: { url?: string; files?: ModelFilesInput; options?: LoadOptions }[] = [];
  let loaded: LoadedModel | null = null;
  let reports = 0;
  const check = (sha: string, options?: LoadOptions): void => {
    if (options?.expectSha256 && options.expectSha256 !== sha) {
      const e: WorkerError = { kind: 'model-mismatch', message: 'not the weights the run names' };
      throw e;
    }
  };
  const c: EngineClient = {
    init: async (): Promise<InitResult> => ({ ok: true, adapter, features }),
    loadModelFromUrl: async (url, _p, options) => {
      calls.push(`url ${url}`);
      loads.push({ url, options });
      const sha = url === EMBEDDED.url ? EMBEDDED_SHA : `${url.length % 10}`.repeat(64);
      check(sha, options);
      loaded = model(sha);
      return loaded;
    },
    loadModelFromFiles: async (files, options) => {
      calls.push(`files ${files.name}`);
      loads.push({ files, options });
      const sha = await sha256Hex(files.weights);
      check(sha, options);
      loaded = model(sha, files.name);
      return loaded;
    },
    generate: () => Promise.reject({ kind: 'internal', message: 'unused' }),
    compare: async (spec) => {
      calls.push('compare');
      // Each report its own time, as analyze() stamps it (the history sorts by it).
      const createdAt = new Date(Date.UTC(2026, 0, 1, 0, 0, ++reports)).toISOString();
      return { ...(opts.report ?? fixtureReport()), spec, createdAt };
    },
    decode: async () => null,
    cancel: async () => undefined,
    poolStats: async () => ({ bytesLive: 0, bytesInUse: 0, buffersLive: 0, buffersInUse: 0 }),
    debugLoseDevice: async () => undefined,
    terminate: () => undefined,
  };
  return { c, calls, loads, loaded: () => loaded };
}

async function started(opts: { report?: Report } = {}) {
  const store = createAppStore();
  const f = client(opts);
  const ctl = createController(store, () => f.c, { embedded: EMBEDDED, pollMs: 1000 });
  await ctl.start();
  await flush();
  return { store, f, ctl };
}

const st = (store: AppStore) => store.getState();

beforeEach(async () => {
  await clearRuns();
  await clearModelCache();
});

describe('settings from a spec and back', () => {
  const m = model(EMBEDDED_SHA);
  const src = { kind: 'embedded', id: 'neox-kjv-bytes', url: EMBEDDED.url } as const;

  it('every scenario and variant round-trips through the settings', () => {
    const specs = SCENARIOS.flatMap((s) => [s.spec, ...(s.variants ?? []).map((v) => v.spec)]);
    for (const spec of specs) {
      const built = buildSpec(settingsOf(spec), src, m);
      expect(built.ok).toBe(true);
      if (built.ok) expect(specKey(built.spec)).toBe(specKey(spec));
    }
  });

  it('keeps token prompts, several faults and their order, seeds and unusual values', () => {
    const spec: RunSpec = {
      ...defaultRunSpec(),
      prompt: { tokens: [3, 14, 15, 92] },
      fused: ['gemm', 'layernorm', 'residual_epilogue'],
      faults: [
        { id: 'tile_offset', fromLayer: 2 },
        { id: 'wrong_ln_eps' },
        { id: 'residual_wiring', fromLayer: 1 },
      ],
      seed: 1234,
      k: 3.5,
      metric: 'maxUlp',
      precision: 'bf16',
      generate: 0,
    };
    const settings = settingsOf(spec);
    expect(settings).toMatchObject({
      prompt: '3, 14, 15, 92',
      promptMode: 'ids',
      fault: 'tile_offset',
      faultLayer: 2,
      extraFaults: [{ id: 'wrong_ln_eps' }, { id: 'residual_wiring', fromLayer: 1 }],
    });
    const built = buildSpec(settings, src, m);
    expect(built.ok && built.spec.faults).toEqual(spec.faults);
    expect(built.ok && sameRun(built.spec, spec)).toBe(true);
  });

  it('specKey tells runs apart by every field but the order of the fused kernels', () => {
    const a = defaultRunSpec();
    expect(specKey({ ...a, fused: [...a.fused].reverse() })).toBe(specKey(a));
    expect(sameRun({ ...a, k: 11 }, a)).toBe(false);
    expect(sameRun({ ...a, generate: 1 }, a)).toBe(false);
    expect(sameRun({ ...a, prompt: { text: 'x' } }, a)).toBe(false);
    // URL and file models are the same model when their weights are.
    const url: RunSpec = { ...a, model: { kind: 'url', url: 'https://x/m/', sha256: 'a'.repeat(64) } };
    const file: RunSpec = { ...a, model: { kind: 'file', sha256: 'a'.repeat(64), name: 'm' } };
    expect(sameRun(url, file)).toBe(true);
    expect(sameRun(url, a)).toBe(false);
  });

  it('an extra fault whose kernel is off blocks Run; picking it in the picker makes it the one fault', () => {
    const store = createAppStore();
    store
      .getState()
      .openRun(
        { ...defaultRunSpec(), faults: [{ id: 'gelu_relu' }, { id: 'tile_offset', fromLayer: 1 }] },
        null,
        null,
      );
    store.setState({
      initStatus: 'ready',
      modelStatus: 'ready',
      model: m,
      modelSource: src,
    });
    expect(canRun(st(store))).toBe(true);
    st(store).toggleFused('gemm', false);
    expect(canRun(st(store))).toBe(false);
    st(store).toggleFused('gemm', true);
    st(store).setSettings({ fault: 'tile_offset' });
    expect(st(store).settings.extraFaults).toEqual([]);
  });

  it('modelMatches: the embedded model by its id, others by the weights’ sha256, only when ready', () => {
    const ready = { modelStatus: 'ready', model: m, modelSource: src as ModelSource };
    expect(modelMatches({ kind: 'embedded', id: 'neox-kjv-bytes' }, ready)).toBe(true);
    expect(modelMatches({ kind: 'embedded', id: 'other' }, ready)).toBe(false);
    // The embedded model is the embedded id, even for a spec naming its weights by hash.
    expect(modelMatches({ kind: 'file', sha256: EMBEDDED_SHA }, ready)).toBe(false);
    const files = { ...ready, modelSource: { kind: 'files', name: 'x' } as ModelSource };
    expect(modelMatches({ kind: 'file', sha256: EMBEDDED_SHA }, files)).toBe(true);
    expect(modelMatches({ kind: 'url', url: 'https://x/', sha256: EMBEDDED_SHA }, files)).toBe(true);
    expect(modelMatches({ kind: 'file', sha256: 'f'.repeat(64) }, files)).toBe(false);
    expect(modelMatches({ kind: 'file', sha256: EMBEDDED_SHA }, { ...files, modelStatus: 'loading' })).toBe(
      false,
    );
  });
});

describe('the sharer against the viewer', () => {
  const report = (ratios: number[], first: number | null) => ({
    metric: 'relL2' as const,
    k: 10,
    layers: ratios.map((ratio) => ({ ratio })),
    firstDivergentLayer: first,
  });

  it('agrees: same first layer, ratios within the factor, noise under k free to differ', () => {
    const a = compareWithSharer(
      { metric: 'relL2', ratios: [0.2, 9, 1.4e6, 2e6], firstDivergentLayer: 2 },
      report([3, 0.5, 2e6, 1.9e6], 2),
    );
    expect(a.agree).toBe(true);
    expect(a.layers.map((l) => l.agree)).toEqual([true, true, true, true]);
    expect(agreementSentence(a)).toMatch(/^Your run agrees with the sharer's: first divergent layer 2/);
  });

  it('differs: another first layer, or a ratio off by more than the factor', () => {
    const other = compareWithSharer(
      { metric: 'relL2', ratios: [0.2, 1e3, 1e6, 1e6], firstDivergentLayer: 1 },
      report([0.2, 2, 1e6, 1e6], 2),
    );
    expect(other.sameFirst).toBe(false);
    expect(other.agree).toBe(false);
    expect(agreementSentence(other)).toContain(
      'the sharer saw first divergent layer 1, you see first divergent layer 2',
    );
    const far = compareWithSharer(
      { metric: 'relL2', ratios: [0.2, 1, 1e6 * (AGREE_FACTOR + 1), 1e6], firstDivergentLayer: 2 },
      report([0.2, 1, 1e6, 1e6], 2),
    );
    expect(far.sameFirst).toBe(true);
    expect(far.agree).toBe(false);
    expect(far.layers[2].agree).toBe(false);
    expect(agreementSentence(far)).toContain('at layer 2');
  });

  it('handles missing layers, nulls, zeros and another metric', () => {
    const short = compareWithSharer(
      { metric: 'relL2', ratios: [1, null], firstDivergentLayer: null },
      report([1, 2, 3], null),
    );
    expect(short.sameLayerCount).toBe(false);
    expect(short.agree).toBe(false);
    expect(short.layers[1]).toMatchObject({ sharer: null, agree: false });
    expect(agreementSentence(short)).toContain("the sharer's summary has 2 layers, your report 3");
    const zero = compareWithSharer(
      { metric: 'relL2', ratios: [0, 50], firstDivergentLayer: 1 },
      report([5, 0], 0),
    );
    expect(zero.layers[0]).toMatchObject({ factor: Number.POSITIVE_INFINITY, agree: true }); // both under k
    expect(zero.layers[1]).toMatchObject({ factor: Number.POSITIVE_INFINITY, agree: false });
    const metric = compareWithSharer(
      { metric: 'maxAbs', ratios: [1], firstDivergentLayer: null },
      report([1], null),
    );
    expect(metric.sameMetric).toBe(false);
    expect(metric.agree).toBe(false);
  });

  it('a real report agrees with its own summary', () => {
    const r = fixtureReport();
    expect(compareWithSharer(sharerSummary(r), r).agree).toBe(true);
  });

  it('the headline covers the text: a sharer whose generation diverged differs from a viewer whose text agrees', () => {
    const r = fixtureReport();
    const agree = { ...r, verdict: 'agree' as const };
    const gen = { ...r, verdict: 'generation-diverged' as const };
    const summary = sharerSummary(gen);
    expect(summary.verdict).toBe('generation-diverged');
    // The summary survives the link's codec, and a bad verdict in a link is refused with its field named.
    const link = encodeLink({ v: 1, spec: r.spec, sharer: { adapter: 'x', summary } });
    expect(decodeLink(link).sharer?.summary.verdict).toBe('generation-diverged');
    const bad = { ...summary, verdict: 'green' as 'agree' };
    expect(() => encodeLink({ v: 1, spec: r.spec, sharer: { adapter: 'x', summary: bad } })).toThrow(
      /summary\.verdict is not one of agree, diverged, generation-diverged/,
    );
    const off = compareWithSharer(summary, agree);
    expect(off.sameVerdict).toBe(false);
    expect(off.agree).toBe(false);
    expect(agreementSentence(off)).toContain("the sharer's verdict is generation diverged, yours agree");
    const same = compareWithSharer(summary, gen);
    expect(same.agree).toBe(true);
    expect(agreementSentence(same)).toContain('the generated text diverges on both machines');
    // An older link without a verdict: compared as before, by the first divergent layer.
    const { verdict: _, ...old } = summary;
    expect(compareWithSharer(old, agree).agree).toBe(true);
  });
});

describe('scenario expectations', () => {
  it('every scenario and variant resolves, and a matching report passes its check', () => {
    for (const sc of SCENARIOS) {
      const runs = [null, ...(sc.variants ?? []).map((_, i) => i + 1)];
      for (const v of runs) {
        const sr = scenarioRun(sc.id, v);
        expect(sr?.scenario.id).toBe(sc.id);
        if (!sr) continue;
        const e = sr.expect;
        const ok = checkExpectation(e, {
          verdict: e.verdict,
          firstDivergentLayer: e.firstDivergentLayer,
          bisection: e.kernel
            ? [{ kernel: e.kernel, reproduces: true, firstLayer: 0, value: 1, ratio: 1 }]
            : null,
          determinism: {
            identical: e.deterministic ?? true,
            differences: [],
            runs: [{ schedule: 'x', identical: e.deterministic ?? true }],
          },
          generation: e.decode ? generationWithDecode(e.decode) : undefined,
        });
        expect(ok.ok).toBe(true);
      }
    }
    expect(scenarioRun('fused-add', 9)).toBeNull();
    expect(scenarioRun('nope', null)).toBeNull();
  });

  it('a decode scenario passes only when the decode check finds its path, step and layer', () => {
    const sr = scenarioRun('decode-only', null);
    const d = sr?.expect.decode;
    if (!sr || !d) throw new Error('decode-only names no decode finding');
    // The decode check starts by itself where the generation diverges: the scenario needs no checkbox.
    expect(sr.spec.checkDecode).toBeUndefined();
    const base = {
      verdict: 'generation-diverged' as const,
      firstDivergentLayer: null,
      bisection: null,
      determinism: { identical: true, differences: [], runs: [] },
    };
    expect(checkExpectation(sr.expect, { ...base, generation: generationWithDecode(d) }).ok).toBe(true);
    for (const other of [
      { ...d, step: d.step + 1 },
      { ...d, layer: d.layer + 1 },
      { ...d, path: 'reference' as const },
    ]) {
      expect(checkExpectation(sr.expect, { ...base, generation: generationWithDecode(other) })).toMatchObject(
        {
          ok: false,
          decode: false,
        },
      );
    }
    expect(checkExpectation(sr.expect, base)).toMatchObject({ ok: false, decode: false });
    // A green headline over the wrong text fails the scenario even with the decode finding.
    expect(
      checkExpectation(sr.expect, { ...base, verdict: 'agree', generation: generationWithDecode(d) }),
    ).toMatchObject({ ok: false, verdict: false });
  });

  it('a report with another first layer or another kernel fails the check', () => {
    const sr = scenarioRun('fused-add', null);
    if (!sr) throw new Error('no fused-add');
    const base = {
      verdict: 'diverged' as const,
      bisection: [
        { kernel: 'residual_epilogue' as const, reproduces: true, firstLayer: 1, value: 1, ratio: 1 },
      ],
      determinism: { identical: true, differences: [], runs: [] },
    };
    expect(checkExpectation(sr.expect, { ...base, firstDivergentLayer: 1 }).ok).toBe(true);
    expect(checkExpectation(sr.expect, { ...base, firstDivergentLayer: 2 }).ok).toBe(false);
    expect(
      checkExpectation(sr.expect, {
        ...base,
        firstDivergentLayer: 1,
        bisection: [{ ...base.bisection[0], kernel: 'gemm' }],
      }),
    ).toMatchObject({ ok: false, kernel: false });
  });

  it('steps move within the scenario, and presenter mode needs a scenario', () => {
    const store = createAppStore();
    st(store).setPresenter(true);
    expect(st(store).presenter).toBe(false);
    const sc = SCENARIOS[0];
    st(store).openRun(sc.spec, null, { id: sc.id, variant: null, step: 0 });
    st(store).setPresenter(true);
    expect(st(store).presenter).toBe(true);
    st(store).stepScenario(-1);
    expect(st(store).scenario?.step).toBe(0);
    for (let i = 0; i < 20; i++) st(store).stepScenario(1);
    expect(st(store).scenario?.step).toBe(sc.steps.length - 1);
    st(store).setScenarioStep(1);
    expect(st(store).scenario?.step).toBe(1);
    st(store).openRun(sc.spec, null, null);
    expect(st(store).presenter).toBe(false);
  });
});

describe('controller: links', () => {
  it('a malformed link changes nothing but the one message', async () => {
    const { store, ctl } = await started();
    st(store).setSettings({ prompt: 'mine', k: 25 });
    const before = st(store).settings;
    for (const bad of ['#r1=@@', '#r1=', '#r7=abc', '#s=nope', `#r1=${'A'.repeat(20000)}`, '#hello']) {
      await ctl.openLink(bad);
      expect(st(store).linkError).toMatch(/\.$/);
      expect(st(store).settings).toBe(before);
      expect(st(store).linked).toBeNull();
    }
    await ctl.openLink('');
    await ctl.openLink('#');
    expect(st(store).settings).toBe(before);
  });

  it('a link restores every setting, and a good link clears the last message', async () => {
    const { store, ctl, f } = await started();
    await ctl.openLink('#r1=@@');
    const spec: RunSpec = {
      ...defaultRunSpec(),
      prompt: { text: '<b>x</b>' },
      generate: 3,
      k: 12,
      faults: [{ id: 'gelu_relu', fromLayer: 2 }],
    };
    await ctl.openLink(encodeLink({ v: 1, spec }));
    expect(st(store).linkError).toBeNull();
    expect(st(store).linked).toMatchObject({ origin: 'link', sharer: null, autorunPending: false });
    expect(st(store).settings).toMatchObject({
      prompt: '<b>x</b>',
      generate: 3,
      k: 12,
      fault: 'gelu_relu',
      faultLayer: 2,
    });
    expect(f.calls.filter((c) => c === 'compare')).toHaveLength(0); // offered, not run
    await ctl.run();
    expect(f.calls.filter((c) => c === 'compare')).toHaveLength(1);
    expect(st(store).run.report && sameRun(st(store).run.report!.spec, spec)).toBe(true);
  });

  it('runs at once only when the link asks and autorunAllowed agrees', async () => {
    const { store, ctl, f } = await started();
    await ctl.openLink(encodeLink({ v: 1, spec: { ...defaultRunSpec(), generate: 2 }, autorun: true }));
    await flush();
    await flush();
    expect(f.calls.filter((c) => c === 'compare')).toHaveLength(1);
    expect(st(store).linked?.autorunPending).toBe(false);
    // A long generation asks first.
    await ctl.openLink(encodeLink({ v: 1, spec: { ...defaultRunSpec(), generate: 200 }, autorun: true }));
    await flush();
    expect(st(store).linked?.autorunPending).toBe(false);
    expect(f.calls.filter((c) => c === 'compare')).toHaveLength(1);
  });

  it('a scenario link opens the scenario at its first step, without running', async () => {
    const { store, ctl, f } = await started();
    await ctl.openLink(scenarioLink('no-rescale', 1));
    expect(st(store).scenario).toEqual({ id: 'no-rescale', variant: 1, step: 0 });
    expect(st(store).linked?.origin).toBe('scenario');
    expect(st(store).settings.prompt).toBe('In the beginning God created the heaven');
    expect(f.calls).not.toContain('compare');
  });

  it('refuses an embedded model this site does not have', async () => {
    const { store, ctl } = await started();
    await ctl.openLink(
      encodeLink({ v: 1, spec: { ...defaultRunSpec(), model: { kind: 'embedded', id: 'gpt-9' } } }),
    );
    expect(st(store).linkError).toContain('“gpt-9”');
    expect(st(store).linked).toBeNull();
  });

  it('a URL model waits for consent, is hash-checked, and a refused one leaves the model before', async () => {
    const { store, ctl, f } = await started();
    const url = 'https://models.example/m/';
    const wrong: RunSpec = { ...defaultRunSpec(), model: { kind: 'url', url, sha256: '0'.repeat(64) } };
    await ctl.openLink(encodeLink({ v: 1, spec: wrong, autorun: true }));
    expect(st(store).modelNeed).toEqual({ ref: wrong.model, from: 'link' });
    expect(f.calls.filter((c) => c.startsWith('url https'))).toEqual([]); // nothing fetched yet
    await ctl.fetchNeededModel();
    expect(f.loads.at(-1)?.options).toEqual({ expectSha256: '0'.repeat(64), cache: true });
    expect(st(store).error?.kind).toBe('model-mismatch');
    expect(st(store)).toMatchObject({ modelStatus: 'ready', modelSource: { kind: 'embedded' } });
    expect(st(store).model?.sha256).toBe(EMBEDDED_SHA);
    expect(f.calls).not.toContain('compare');
    // The right hash loads.
    const sha = `${url.length % 10}`.repeat(64);
    await ctl.openLink(encodeLink({ v: 1, spec: { ...wrong, model: { kind: 'url', url, sha256: sha } } }));
    expect(st(store).error).toBeNull();
    await ctl.fetchNeededModel();
    expect(st(store)).toMatchObject({
      modelStatus: 'ready',
      modelSource: { kind: 'url', url },
      modelNeed: null,
    });
  });

  it('a disk model comes from the cache when it is there, else the viewer is asked', async () => {
    const weights = new Uint8Array([1, 2, 3, 4, 5]);
    const sha = await sha256Hex(weights);
    const spec: RunSpec = { ...defaultRunSpec(), model: { kind: 'file', sha256: sha, name: 'mine' } };
    const a = await started();
    await a.ctl.openLink(encodeLink({ v: 1, spec }));
    expect(a.store.getState().modelNeed?.ref).toEqual(spec.model);
    // The viewer picks the files: checked against the hash, cached by the worker (cache: true).
    const files = [new File(['{}'], 'config.json'), new File([weights], 'model.safetensors')];
    await a.ctl.loadFromFiles(files, { expectSha256: sha });
    expect(a.f.loads.at(-1)?.options).toEqual({ expectSha256: sha, cache: true });
    expect(a.store.getState()).toMatchObject({ modelNeed: null, modelSource: { kind: 'files' } });
    // In the page the worker caches; here, as it would.
    await cacheModelFiles(sha, { config: '{}', weights }, 'mine');
    const b = await started();
    await b.ctl.openLink(encodeLink({ v: 1, spec }));
    expect(b.store.getState().modelNeed).toBeNull();
    expect(b.store.getState()).toMatchObject({
      modelStatus: 'ready',
      modelSource: { kind: 'files', name: 'mine' },
    });
    expect(b.f.loads.at(-1)?.options).toEqual({ expectSha256: sha, cache: false });
    expect(modelMatches(spec.model, b.store.getState())).toBe(true);
  });
});

describe('controller: history', () => {
  it('keeps every finished run, re-opens one without running, deletes it', async () => {
    const { store, ctl, f } = await started();
    expect(st(store).history).toMatchObject({ status: 'ready', runs: [] });
    st(store).setSettings({ prompt: 'first', fault: 'gelu_relu', faultLayer: 1 });
    await ctl.run();
    st(store).setSettings({ prompt: 'second', fault: null });
    await ctl.run();
    const runs = st(store).history.runs;
    expect(runs.map((r) => r.prompt)).toEqual(['second', 'first']);
    expect(await listRuns()).toHaveLength(2);
    const compares = f.calls.filter((c) => c === 'compare').length;
    await ctl.openStoredRun(runs[1].id);
    expect(f.calls.filter((c) => c === 'compare').length).toBe(compares);
    expect(st(store).storedRun?.id).toBe(runs[1].id);
    expect(st(store).run.status).toBe('done');
    expect(st(store).settings).toMatchObject({ prompt: 'first', fault: 'gelu_relu', faultLayer: 1 });
    await ctl.deleteStoredRun(runs[1].id);
    expect(st(store).storedRun).toBeNull();
    expect(st(store).history.runs.map((r) => r.prompt)).toEqual(['second']);
    await ctl.openStoredRun('no-such-run');
    expect(st(store).history.notice).toBe('That run is no longer in the history.');
  });
});

/** A generation whose decode check finds an error on `d.path` at decode step `d.step`, layer `d.layer`. */
function generationWithDecode(d: {
  path: 'reference' | 'fused';
  step: number;
  layer: number;
}): Report['generation'] {
  const side = { ids: [1, 2], text: null };
  const born = {
    check: `layers.${d.layer}.layer`,
    module: 'm',
    layer: d.layer,
    ratio: 1e5,
    row: 9,
    step: d.step,
  };
  return {
    reference: side,
    fused: side,
    firstDifference: null,
    parting: null,
    decode: (['reference', 'fused'] as const).map((path) => ({
      path,
      verdict: path === d.path ? ('diverged' as const) : ('agree' as const),
      checks: 9,
      born: path === d.path ? born : null,
      sentence: '',
    })),
  };
}

describe("the banner's 'your settings differ' is about what the viewer changed", () => {
  const spec: RunSpec = {
    ...defaultRunSpec(),
    model: { kind: 'url', url: 'https://example.invalid/m/', sha256: 'a'.repeat(64) },
    prompt: { text: 'And God said' },
    generate: 3,
    k: 12,
    faults: [{ id: 'gelu_relu', fromLayer: 2 }],
  };

  it('a link opened in a fresh profile: another model loaded first is not a changed setting', async () => {
    const { store, ctl } = await started();
    await ctl.openLink(encodeLink({ v: 1, spec }));
    const s = st(store);
    expect(s.linked?.origin).toBe('link');
    // The embedded model is loaded, not the link's: the spec built now differs, the settings do not.
    expect(s.model?.name).toBe('neox-kjv-bytes');
    expect(settingsMatchLink(s.settings, spec, s.customPending, false)).toBe(true);
    // The viewer changes one setting: now they differ; put back, they match again.
    s.setSettings({ k: 13 });
    expect(settingsMatchLink(st(store).settings, spec, null, false)).toBe(false);
    st(store).setSettings({ k: 12 });
    expect(settingsMatchLink(st(store).settings, spec, null, false)).toBe(true);
    st(store).setSettings({ prompt: 'And God saw' });
    expect(settingsMatchLink(st(store).settings, spec, null, false)).toBe(false);
  });

  it('the fused kernels as a set; the prompt mode a tokenizer-less model forced is not a change', () => {
    const settings = settingsOf({ ...spec, fused: [...spec.fused].reverse() });
    expect(settingsMatchLink(settings, spec, null, false)).toBe(true);
    const forced = { ...settingsOf(spec), promptMode: 'ids' as const };
    expect(settingsMatchLink(forced, spec, null, true)).toBe(true);
    expect(settingsMatchLink(forced, spec, null, false)).toBe(false);
    for (const patch of [
      { seed: 7 },
      { fault: null },
      { faultLayer: 3 },
      { checkDecode: true },
      { generate: 4 },
    ])
      expect(
        settingsMatchLink({ ...settingsOf(spec), ...patch }, spec, null, false),
        JSON.stringify(patch),
      ).toBe(false);
  });

  it("a custom kernel waiting for consent is the link's; another kernel is a change", () => {
    const custom = { slot: 'layernorm2' as const, source: 'fn main() {}' };
    const withKernel = { ...spec, custom };
    const s = settingsOf(withKernel);
    expect(settingsMatchLink(s, withKernel, custom, false)).toBe(true);
    expect(settingsMatchLink({ ...s, custom }, withKernel, null, false)).toBe(true);
    expect(
      settingsMatchLink({ ...s, custom: { ...custom, source: 'fn other() {}' } }, withKernel, null, false),
    ).toBe(false);
    expect(settingsMatchLink(s, withKernel, null, false)).toBe(false);
  });
});
