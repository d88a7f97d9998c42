import { describe, expect, it } from 'vitest';
import type { Report } from '../compare/analyze';
import { fixtureReport } from '../ui/report-fixture';
import type {
  AdapterSummary,
  CompareProgress,
  InitResult,
  LoadedModel,
  LoadProgress,
  ModelFilesInput,
  PoolStats,
  RunSpec,
  WorkerError,
} from '../worker/api';
import type { EngineClient } from '../worker/client';
import { createController } from './controller';
import { CANCEL_GRACE_MS } from './controller/runs';
import { defaultSettings, faultBlocker, MAX_GENERATE } from './settings';
import { progressFraction } from './spec';
import { canRun, createAppStore } from './store';

const adapter: AdapterSummary = {
  vendor: 'google',
  architecture: 'swiftshader',
  device: '',
  description: 'SwiftShader device',
  features: ['subgroups', 'timestamp-query'],
  limits: { maxStorageBufferBindingSize: 134217728 },
};
const features = { shaderF16: false, subgroups: true, timestampQuery: true };
const info: LoadedModel = {
  name: 'neox-kjv-bytes',
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
  params: 1234,
  gpuBytes: 4936,
  tokenizer: 'bytes',
  weightsOnGpu: 'fp32',
  sha256: 'b'.repeat(64),
  weightsBytes: 4000,
};
const pool0: PoolStats = { bytesLive: 1024, bytesInUse: 0, buffersLive: 1, buffersInUse: 0 };

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A scripted client: each call is recorded and returns a promise the test settles. */
function fakeClient(initResult: InitResult = { ok: true, adapter, features }) {
  const calls: string[] = [];
  const load = deferred<LoadedModel>();
  const cmp = deferred<Report>();
  const h: {
    onLost: ((e: WorkerError) => void) | null;
    onProgress: ((p: LoadProgress) => void) | null;
    onCompare: ((p: CompareProgress) => void) | null;
    spec: RunSpec | null;
    files: ModelFilesInput | null;
    pool: PoolStats;
  } = { onLost: null, onProgress: null, onCompare: null, spec: null, files: null, pool: pool0 };
  const client: EngineClient = {
    init: async (onLost) => {
      calls.push('init');
      h.onLost = onLost ?? null;
      return initResult;
    },
    loadModelFromUrl: (url, cb) => {
      calls.push(`load ${url}`);
      h.onProgress = cb;
      return load.promise;
    },
    loadModelFromFiles: (files) => {
      calls.push(`files ${files.name}`);
      h.files = files;
      return load.promise;
    },
    generate: () => Promise.reject({ kind: 'internal', message: 'unused' }),
    compare: (spec, cb) => {
      calls.push('compare');
      h.spec = spec;
      h.onCompare = cb;
      return cmp.promise;
    },
    decode: async (ids) => ids.map((i) => String.fromCharCode(i)).join(''),
    cancel: async () => {
      calls.push('cancel');
    },
    poolStats: async () => {
      calls.push('pool');
      return h.pool;
    },
    debugLoseDevice: async () => {
      calls.push('lose');
    },
    terminate: () => {
      calls.push('terminate');
    },
  };
  return { client, calls, load, cmp, h };
}

const flush = () => new Promise((r) => setTimeout(r, 0));
const EMBEDDED = { id: 'neox-kjv-bytes', url: 'http://localhost:4173/sub/models/neox-kjv-bytes/' };

describe('store', () => {
  it('starts from the default RunSpec: all fused kernels, no fault, k = 10, relL2', () => {
    const s = createAppStore().getState();
    expect(s.settings).toEqual(defaultSettings());
    expect(s.settings.fused).toHaveLength(6);
    expect(s.settings.fault).toBeNull();
    expect(s.settings.k).toBe(10);
    expect(s.settings.metric).toBe('relL2');
    expect(s.run.status).toBe('idle');
    expect(s.prefs).toEqual({ theme: 'system', largeType: false });
  });

  it('clamps numbers and ignores non-numbers', () => {
    const store = createAppStore();
    const set = store.getState().setSettings;
    set({ generate: 1000 });
    expect(store.getState().settings.generate).toBe(MAX_GENERATE);
    set({ generate: -3 });
    expect(store.getState().settings.generate).toBe(0);
    set({ generate: 4.4 });
    expect(store.getState().settings.generate).toBe(4);
    set({ generate: Number.NaN });
    expect(store.getState().settings.generate).toBe(4);
    set({ k: 0.5 });
    expect(store.getState().settings.k).toBe(1);
    set({ k: Number.POSITIVE_INFINITY });
    expect(store.getState().settings.k).toBe(1);
    set({ k: 2.5 });
    expect(store.getState().settings.k).toBe(2.5);
    set({ faultLayer: -2 });
    expect(store.getState().settings.faultLayer).toBe(0);
  });

  it('fused kernels keep the catalog order whatever order they are switched in', () => {
    const store = createAppStore();
    const { toggleFused } = store.getState();
    toggleFused('layernorm', false);
    toggleFused('gemm', false);
    expect(store.getState().settings.fused).toEqual([
      'qkv_rotary',
      'flash_attention',
      'linear_gelu',
      'residual_epilogue',
    ]);
    toggleFused('layernorm', true);
    toggleFused('layernorm', true);
    expect(store.getState().settings.fused[0]).toBe('layernorm');
    expect(new Set(store.getState().settings.fused).size).toBe(store.getState().settings.fused.length);
  });

  it('Run waits while something it needs runs; a refused run is forgotten when the settings change', () => {
    const store = createAppStore();
    const s = store.getState();
    s.initSucceeded(adapter, features);
    s.modelLoadStarted({ kind: 'embedded', id: 'x', url: 'http://x/' });
    s.modelLoaded(info);
    s.setWaitingFor("your kernel's isolated test");
    expect(canRun(store.getState())).toBe(false);
    s.setWaitingFor(null);
    expect(canRun(store.getState())).toBe(true);
    store.setState({ error: { kind: 'input', message: 'Prompt: token id 99999 is past the vocabulary' } });
    s.setSettings({ k: 12 });
    expect(store.getState().error).toBeNull();
    // A model's error is about the model, not the settings: it stays.
    store.setState({ error: { kind: 'model', message: 'config.json: not JSON' } });
    s.setSettings({ k: 11 });
    expect(store.getState().error?.kind).toBe('model');
  });

  it('a fault whose kernel is off blocks Run with a note', () => {
    const store = createAppStore();
    const s = store.getState();
    s.initSucceeded(adapter, features);
    s.modelLoadStarted({ kind: 'embedded', id: 'x', url: 'http://x/' });
    s.modelLoaded(info);
    expect(canRun(store.getState())).toBe(true);
    s.setSettings({ fault: 'gptj_rotary' });
    expect(canRun(store.getState())).toBe(true);
    s.toggleFused('qkv_rotary', false);
    expect(faultBlocker(store.getState().settings)).toMatch(/QKV projection/);
    expect(canRun(store.getState())).toBe(false);
    s.toggleFused('qkv_rotary', true);
    expect(canRun(store.getState())).toBe(true);
    s.setSettings({ prompt: '   ' });
    expect(canRun(store.getState())).toBe(false);
  });

  it('a run goes running -> done; late progress does not touch the finished run', () => {
    const store = createAppStore();
    const s = store.getState();
    const spec = { version: 1 } as RunSpec;
    s.runStarted(spec, 1000);
    s.runProgress({ phase: 'fused', done: 1, total: 6 });
    expect(store.getState().run).toMatchObject({
      status: 'running',
      progress: { phase: 'fused' },
      startedAt: 1000,
    });
    const report = fixtureReport();
    report.metric = 'maxAbs';
    s.runFinished(report, 4500);
    s.runProgress({ phase: 'generation', done: 6, total: 6 });
    expect(store.getState().run).toMatchObject({ status: 'done', progress: null, elapsedMs: 3500 });
    expect(store.getState().run.report).toBe(report);
    expect(store.getState().viewMetric).toBe('maxAbs');
  });

  it('partial results: the analysis at once, then bisection, determinism and each token; done clears pending', () => {
    const store = createAppStore();
    const s = () => store.getState();
    const spec = { ...fixtureReport().spec, generate: 3 };
    s().runStarted(spec, 0);
    const analysis = { ...fixtureReport(), spec, verdict: 'diverged' as const, bisection: null };
    analysis.determinism = { identical: true, differences: [], runs: [] };
    s().runPartial({ kind: 'analysis', report: analysis });
    expect(s().run.status).toBe('running');
    expect(s().run.report).toBe(analysis);
    expect(s().run.pending).toEqual(['generation', 'bisection', 'determinism']);
    s().runPartial({ kind: 'bisection', bisection: [] });
    expect(s().run.report?.bisection).toEqual([]);
    expect(s().run.pending).toEqual(['generation', 'determinism']);
    s().runPartial({ kind: 'token', path: 'reference', ids: [5], text: 'a', total: 3 });
    s().runPartial({ kind: 'token', path: 'fused', ids: [5, 6], text: 'ab', total: 3 });
    expect(s().run.stream).toEqual({
      reference: { ids: [5], text: 'a' },
      fused: { ids: [5, 6], text: 'ab' },
      total: 3,
    });
    // Progress moves with every token.
    const p = { phase: 'generation', done: 0, total: 1 };
    const before = progressFraction(p, { ...s().run.stream!, fused: { ids: [] } });
    expect(progressFraction(p, s().run.stream)).toBeGreaterThan(before);
    s().runFinished(fixtureReport(), 10);
    expect(s().run).toMatchObject({ status: 'done', pending: [], stream: null });
    // Pieces after the end are ignored.
    s().runPartial({ kind: 'bisection', bisection: null });
    expect(s().run.report?.bisection).toEqual(fixtureReport().bisection);
  });

  it('opening a link or a scenario clears the report of other settings (never a stale answer)', () => {
    const store = createAppStore();
    const s = store.getState();
    s.runStarted({ version: 1 } as RunSpec, 0);
    s.runFinished(fixtureReport(), 10);
    s.selectLayer(1);
    expect(store.getState().run.report).not.toBeNull();
    const spec = fixtureReport().spec;
    store.getState().openRun(spec, null, { id: 'fast-but-wrong', variant: null, step: 0 });
    expect(store.getState().run).toMatchObject({ status: 'idle', report: null });
    expect(store.getState().selectedLayer).toBeNull();
    // While a run is in flight, opening is refused by the controller; the store leaves the run alone.
    store.getState().runStarted(spec, 20);
    store.getState().openRun(spec, null, null);
    expect(store.getState().run.status).toBe('running');
  });

  it('cancellation is not an error; other failures are', () => {
    const store = createAppStore();
    const spec = { version: 1 } as RunSpec;
    store.getState().runStarted(spec, 0);
    store.getState().runFailed({ kind: 'cancelled', message: 'run cancelled' }, 10);
    expect(store.getState().run.status).toBe('cancelled');
    expect(store.getState().error).toBeNull();
    store.getState().runStarted(spec, 0);
    store.getState().runFailed({ kind: 'internal', message: 'boom' }, 10);
    expect(store.getState().run.status).toBe('error');
    expect(store.getState().error?.message).toBe('boom');
  });

  it('one message about what was done last: a bad link replaces an older error, a run or load replaces the link error', () => {
    const store = createAppStore();
    const spec = { version: 1 } as RunSpec;
    store.getState().initSucceeded(adapter, features);
    store.getState().runStarted(spec, 0);
    store.getState().runFailed({ kind: 'internal', message: 'boom' }, 10);
    store.getState().setLinkError('this link is not a permalink of this page.');
    expect(store.getState().error).toBeNull();
    expect(store.getState().linkError).toMatch(/permalink/);
    store.getState().runStarted(spec, 20);
    expect(store.getState().linkError).toBeNull();
    store.getState().setLinkError('bad link.');
    store.getState().modelLoadStarted({ kind: 'embedded', id: 'neox-kjv-bytes' } as never);
    expect(store.getState().linkError).toBeNull();
    // An error about the GPU, with its restart button, stays beside a bad link.
    store.getState().deviceLost({ kind: 'device-lost', message: 'GPU device lost (destroyed)' });
    store.getState().setLinkError('bad link.');
    expect(store.getState().error?.kind).toBe('device-lost');
    expect(store.getState().linkError).toBe('bad link.');
  });

  it('device loss keeps the settings and ends a run in flight', () => {
    const store = createAppStore();
    store.getState().initSucceeded(adapter, features);
    store.getState().setSettings({ prompt: 'keep me', k: 42, fault: 'gelu_relu' });
    store.getState().runStarted({ version: 1 } as RunSpec, 0);
    store.getState().deviceLost({ kind: 'device-lost', message: 'GPU device lost (destroyed)' });
    const st = store.getState();
    expect(st.initStatus).toBe('lost');
    expect(st.run.status).toBe('error');
    expect(st.settings).toMatchObject({ prompt: 'keep me', k: 42, fault: 'gelu_relu' });
    expect(canRun(st)).toBe(false);
  });

  it('selecting another layer clears the selected tap', () => {
    const store = createAppStore();
    store.getState().selectLayer(2);
    store.getState().selectTap('layers.2.k');
    store.getState().selectLayer(2);
    expect(store.getState().selectedTap).toBe('layers.2.k');
    store.getState().selectLayer(1);
    expect(store.getState().selectedTap).toBeNull();
  });

  it('no-webgpu is its own init status; other init failures are errors', () => {
    const a = createAppStore();
    a.getState().initFailed({ kind: 'no-webgpu', message: 'no adapter' });
    expect(a.getState().initStatus).toBe('no-webgpu');
    const b = createAppStore();
    b.getState().initFailed({ kind: 'internal', message: 'boom' });
    expect(b.getState().initStatus).toBe('error');
  });
});

async function ready() {
  const store = createAppStore();
  const clients = [fakeClient(), fakeClient()];
  let made = 0;
  const c = createController(store, () => clients[made++].client, { embedded: EMBEDDED, pollMs: 5 });
  const started = c.start();
  await flush();
  clients[0].load.resolve(info);
  await started;
  return { store, c, f: clients[0], next: clients[1], made: () => made };
}

describe('controller', () => {
  it('inits, loads the embedded model with progress, and reads the pool', async () => {
    const store = createAppStore();
    const f = fakeClient();
    const c = createController(store, () => f.client, { embedded: EMBEDDED });
    const started = c.start();
    await flush();
    expect(f.calls).toEqual(['init', `load ${EMBEDDED.url}`]);
    expect(store.getState()).toMatchObject({ initStatus: 'ready', modelStatus: 'loading' });
    f.h.onProgress?.({ file: 'model.safetensors', loadedBytes: 100, totalBytes: 400 });
    expect(store.getState().modelProgress).toMatchObject({ loadedBytes: 100, totalBytes: 400 });
    f.load.resolve(info);
    await started;
    await flush();
    expect(store.getState()).toMatchObject({ modelStatus: 'ready', model: info, pool: pool0 });
    expect(store.getState().modelSource).toEqual({ kind: 'embedded', ...EMBEDDED });
  });

  it('runs the settings as a RunSpec, shows progress, then the report and the cut texts', async () => {
    const { store, c, f } = await ready();
    store
      .getState()
      .setSettings({ prompt: 'And God said', generate: 4, fault: 'gptj_rotary', faultLayer: 2 });
    const run = c.run();
    await c.run(); // a second press while running starts nothing
    expect(f.calls.filter((x) => x === 'compare')).toHaveLength(1);
    expect(f.h.spec).toMatchObject({
      model: { kind: 'embedded', id: 'neox-kjv-bytes' },
      prompt: { text: 'And God said' },
      generate: 4,
      faults: [{ id: 'gptj_rotary', fromLayer: 2 }],
    });
    f.h.onCompare?.({ phase: 'local layer 1', done: 1, total: 4 });
    expect(store.getState().run.progress).toEqual({ phase: 'local layer 1', done: 1, total: 4 });
    await new Promise((r) => setTimeout(r, 20));
    expect(f.calls.filter((x) => x === 'pool').length).toBeGreaterThan(1);
    const report = fixtureReport();
    f.cmp.resolve(report);
    await run;
    const st = store.getState();
    expect(st.run.status).toBe('done');
    expect(st.run.report).toBe(report);
    // reference 'de', fused 'df', first difference at 1
    expect(st.run.segments).toEqual({
      reference: { before: 'd', at: 'e', after: '' },
      fused: { before: 'd', at: 'f', after: '' },
    });
  });

  it('an invalid spec is an input error and nothing is sent', async () => {
    const { store, c, f } = await ready();
    store.getState().setSettings({ promptMode: 'ids', prompt: '1, 2, 999' });
    await c.run();
    expect(f.calls).not.toContain('compare');
    expect(store.getState().error).toMatchObject({ kind: 'input' });
    expect(store.getState().run.status).toBe('idle');
  });

  it('cancel asks the worker only while a run is in flight; a cancelled run is no error', async () => {
    const { store, c, f } = await ready();
    c.cancel();
    expect(f.calls).not.toContain('cancel');
    const run = c.run();
    c.cancel();
    expect(f.calls).toContain('cancel');
    f.h.pool = { ...pool0, bytesInUse: 0 };
    f.cmp.reject({ kind: 'cancelled', message: 'run cancelled' });
    await run;
    expect(store.getState().run.status).toBe('cancelled');
    expect(store.getState().error).toBeNull();
    expect(store.getState().pool?.bytesInUse).toBe(0);
  });

  it('a run that does not stop within the grace time is ended at once: a fresh worker loads the model', async () => {
    const { store, c, f, next, made } = await ready();
    const run = c.run();
    c.cancel(); // this worker ignores it (a long GPU pass)
    expect(store.getState().run.status).toBe('running');
    await new Promise((r) => setTimeout(r, CANCEL_GRACE_MS + 50));
    expect(store.getState().run.status).toBe('cancelled');
    expect(store.getState().error).toBeNull();
    expect(f.calls).toContain('terminate');
    expect(made()).toBe(2);
    await flush();
    expect(next.calls).toEqual(['init', `load ${EMBEDDED.url}`]);
    next.load.resolve(info);
    await flush();
    expect(store.getState().modelStatus).toBe('ready');
    f.cmp.reject({ kind: 'internal', message: 'the engine worker was stopped' });
    await run;
    expect(store.getState().run.status).toBe('cancelled'); // the old worker's last word is ignored
  });

  it('an unexpected rejection (not a WorkerError) becomes an internal error', async () => {
    const { store, c, f } = await ready();
    const run = c.run();
    f.cmp.reject(new TypeError('x is undefined'));
    await run;
    expect(store.getState().error).toEqual({ kind: 'internal', message: 'x is undefined' });
  });

  it('device loss, then retry: a new worker, the same model source, the settings kept', async () => {
    const { store, c, f, next, made } = await ready();
    store.getState().setSettings({ prompt: 'keep', k: 33 });
    f.h.onLost?.({ kind: 'device-lost', message: 'GPU device lost (destroyed): gone' });
    expect(store.getState().initStatus).toBe('lost');
    expect(store.getState().error?.kind).toBe('device-lost');
    const retried = c.retry();
    await flush();
    expect(f.calls).toContain('terminate');
    expect(made()).toBe(2);
    expect(next.calls).toEqual(['init', `load ${EMBEDDED.url}`]);
    next.load.resolve(info);
    await retried;
    expect(store.getState()).toMatchObject({ initStatus: 'ready', modelStatus: 'ready', error: null });
    expect(store.getState().settings).toMatchObject({ prompt: 'keep', k: 33 });
    // The old worker's late loss report is ignored.
    f.h.onLost?.({ kind: 'device-lost', message: 'late' });
    expect(store.getState().initStatus).toBe('ready');
  });

  it('files: picks the three files, transfers the weights, names the model by its folder', async () => {
    const { store, c, f } = await ready();
    const file = (name: string, body: string, rel: string) => {
      const fl = new File([body], name);
      Object.defineProperty(fl, 'webkitRelativePath', { value: rel });
      return fl;
    };
    const loading = c.loadFromFiles([
      file('config.json', '{}', 'm/tiny/config.json'),
      file('model.safetensors', 'WEIGHTS', 'm/tiny/model.safetensors'),
    ]);
    await new Promise((r) => setTimeout(r, 10));
    expect(f.h.files).toMatchObject({ config: '{}', name: 'tiny', tokenizer: undefined });
    expect(f.h.files?.weights.byteLength).toBe(7);
    f.load.resolve({ ...info, name: 'tiny' });
    await loading;
    expect(store.getState().modelSource).toEqual({ kind: 'files', name: 'tiny' });
  });

  it('files without weights give one model error and no load', async () => {
    const { store, c, f } = await ready();
    await c.loadFromFiles([new File(['{}'], 'config.json')]);
    expect(f.calls.some((x) => x.startsWith('files'))).toBe(false);
    expect(store.getState()).toMatchObject({ modelStatus: 'ready', model: info, error: { kind: 'model' } });
  });

  it('shows the no-WebGPU state and frees the worker when there is no adapter', async () => {
    const store = createAppStore();
    const f = fakeClient({ ok: false, error: { kind: 'no-webgpu', message: 'no adapter was found' } });
    await createController(store, () => f.client, { embedded: EMBEDDED }).start();
    expect(store.getState().initStatus).toBe('no-webgpu');
    expect(f.calls).toEqual(['init', 'terminate']);
  });

  it('turns a model load failure into one error message', async () => {
    const store = createAppStore();
    const f = fakeClient();
    const started = createController(store, () => f.client, { embedded: EMBEDDED }).start();
    await flush();
    f.load.reject({ kind: 'model', message: 'config.json: HTTP 404 Not Found' });
    await started;
    expect(store.getState()).toMatchObject({
      modelStatus: 'error',
      error: { kind: 'model', message: 'config.json: HTTP 404 Not Found' },
    });
    expect(canRun(store.getState())).toBe(false);
  });
});
