// The store's actions and the controller's sequencing, against a fake EngineClient (no worker, no GPU).
import { describe, expect, it } from 'vitest';
import type { ModelInfo } from '../engine/engine';
import type {
  AdapterSummary,
  GenerateResult,
  InitResult,
  LoadProgress,
  TokenEvent,
  WorkerError,
} from '../worker/api';
import type { EngineClient } from '../worker/client';
import { createController } from './controller';
import { canGenerate, clampN, createAppStore, DEFAULT_N, DEFAULT_PROMPT, MAX_N, MIN_N } from './store';

const adapter: AdapterSummary = {
  vendor: 'google',
  architecture: 'swiftshader',
  device: '',
  description: 'SwiftShader device',
  features: ['subgroups', 'timestamp-query'],
  limits: { maxStorageBufferBindingSize: 134217728 },
};
const features = { shaderF16: false, subgroups: true, timestampQuery: true };
const info: ModelInfo = {
  name: 'tiny',
  config: {
    vocabSize: 256,
    hiddenSize: 8,
    numLayers: 1,
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
};

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A scripted client: each call records its arguments and returns a promise the test settles. */
function fakeClient(initResult: InitResult) {
  const calls: string[] = [];
  const load = deferred<ModelInfo>();
  const gen = deferred<GenerateResult>();
  let onProgress: ((p: LoadProgress) => void) | null = null;
  let onToken: ((ev: TokenEvent) => void) | null = null;
  let generateArgs: [string, number] | null = null;
  const client: EngineClient = {
    init: async () => {
      calls.push('init');
      return initResult;
    },
    loadModelFromUrl: (url, cb) => {
      calls.push(`load ${url}`);
      onProgress = cb;
      return load.promise;
    },
    generate: (prompt, n, cb) => {
      calls.push('generate');
      generateArgs = [prompt, n];
      onToken = cb;
      return gen.promise;
    },
    cancel: async () => {
      calls.push('cancel');
    },
    terminate: () => {
      calls.push('terminate');
    },
  };
  return {
    client,
    calls,
    load,
    gen,
    progress: (p: LoadProgress) => onProgress!(p),
    token: (ev: TokenEvent) => onToken!(ev),
    generateArgs: () => generateArgs,
  };
}

const flush = () => new Promise((r) => setTimeout(r, 0));

describe('store', () => {
  it('starts with the default prompt and n', () => {
    const s = createAppStore().getState();
    expect(s.prompt).toBe(DEFAULT_PROMPT);
    expect(s.prompt).toBe('And God said unto Moses, ');
    expect(s.n).toBe(DEFAULT_N);
    expect(s.n).toBe(40);
    expect(s.run.status).toBe('idle');
    expect(s.error).toBeNull();
  });

  it('clamps n to 1..200, rounds it, and ignores non-numbers', () => {
    expect([MIN_N, MAX_N]).toEqual([1, 200]);
    const store = createAppStore();
    const { setN } = store.getState();
    setN(0);
    expect(store.getState().n).toBe(1);
    setN(-5);
    expect(store.getState().n).toBe(1);
    setN(1000);
    expect(store.getState().n).toBe(200);
    setN(16.4);
    expect(store.getState().n).toBe(16);
    setN(Number.NaN);
    expect(store.getState().n).toBe(16);
    setN(Number.POSITIVE_INFINITY);
    expect(store.getState().n).toBe(16);
    expect(clampN(Number.NaN)).toBe(DEFAULT_N);
  });

  it('can generate only with a device, a model, a prompt and no run in flight', () => {
    const store = createAppStore();
    expect(canGenerate(store.getState())).toBe(false);
    store.getState().initSucceeded(adapter, features);
    expect(canGenerate(store.getState())).toBe(false);
    store.getState().modelLoadStarted();
    expect(canGenerate(store.getState())).toBe(false);
    store.getState().modelLoaded(info);
    expect(canGenerate(store.getState())).toBe(true);
    store.getState().setPrompt('');
    expect(canGenerate(store.getState())).toBe(false);
    store.getState().setPrompt('x');
    store.getState().runStarted();
    expect(canGenerate(store.getState())).toBe(false);
    store.getState().runFinished({ promptIds: [120], newIds: [1], text: '\u0001' });
    expect(canGenerate(store.getState())).toBe(true);
  });

  it('a run snapshots prompt and n, collects tokens, and the result replaces them', () => {
    const store = createAppStore();
    const a = store.getState();
    a.setPrompt('In the');
    a.setN(3);
    a.runStarted();
    a.setPrompt('changed while running');
    a.tokenArrived(32, ' ');
    a.tokenArrived(98, ' b');
    let run = store.getState().run;
    expect(run).toMatchObject({ status: 'running', prompt: 'In the', n: 3, newIds: [32, 98], text: ' b' });
    a.runFinished({ promptIds: [73, 110], newIds: [32, 98, 99], text: ' bc' });
    // A token event that arrives after the result (other port) must not change the finished run.
    a.tokenArrived(100, 'late');
    run = store.getState().run;
    expect(run).toMatchObject({
      status: 'done',
      prompt: 'In the',
      promptIds: [73, 110],
      newIds: [32, 98, 99],
      text: ' bc',
    });
  });

  it('cancellation is not an error; other failures are', () => {
    const store = createAppStore();
    store.getState().runStarted();
    store.getState().runFailed({ kind: 'cancelled', message: 'generation cancelled' });
    expect(store.getState().run.status).toBe('cancelled');
    expect(store.getState().error).toBeNull();
    store.getState().runStarted();
    const err: WorkerError = { kind: 'device-lost', message: 'GPU device lost (unknown): gone' };
    store.getState().runFailed(err);
    expect(store.getState().run.status).toBe('error');
    expect(store.getState().error).toEqual(err);
    store.getState().runStarted();
    expect(store.getState().error).toBeNull();
  });

  it('no-webgpu is its own init status; other init failures are errors', () => {
    const a = createAppStore();
    a.getState().initFailed({ kind: 'no-webgpu', message: 'no adapter' });
    expect(a.getState().initStatus).toBe('no-webgpu');
    const b = createAppStore();
    b.getState().initFailed({ kind: 'internal', message: 'boom' });
    expect(b.getState().initStatus).toBe('error');
    expect(b.getState().error?.message).toBe('boom');
  });

  it('progress is kept only while a model loads', () => {
    const store = createAppStore();
    store.getState().setModelProgress({ file: 'model.safetensors', loadedBytes: 5, totalBytes: 10 });
    expect(store.getState().modelProgress).toBeNull();
    store.getState().modelLoadStarted();
    store.getState().setModelProgress({ file: 'model.safetensors', loadedBytes: 5, totalBytes: 10 });
    expect(store.getState().modelProgress).toEqual({
      file: 'model.safetensors',
      loadedBytes: 5,
      totalBytes: 10,
    });
  });
});

describe('controller', () => {
  const url = 'http://localhost:4173/sub/models/neox-kjv-bytes/';

  it('inits, loads the model from the given URL with progress, then generates', async () => {
    const store = createAppStore();
    const f = fakeClient({ ok: true, adapter, features });
    const c = createController(store, f.client);
    const started = c.start(url);
    await flush();
    expect(f.calls).toEqual(['init', `load ${url}`]);
    expect(store.getState()).toMatchObject({
      initStatus: 'ready',
      adapter,
      features,
      modelStatus: 'loading',
    });
    f.progress({ file: 'model.safetensors', loadedBytes: 100, totalBytes: 400 });
    expect(store.getState().modelProgress).toMatchObject({ loadedBytes: 100, totalBytes: 400 });
    f.load.resolve(info);
    await started;
    expect(store.getState()).toMatchObject({ modelStatus: 'ready', model: info });

    store.getState().setPrompt('And');
    store.getState().setN(2);
    const run = c.generate();
    // A second click while running starts nothing.
    await c.generate();
    expect(f.calls.filter((x) => x === 'generate')).toHaveLength(1);
    expect(f.generateArgs()).toEqual(['And', 2]);
    f.token({ id: 32, step: 0, total: 2, text: ' ' });
    expect(store.getState().run).toMatchObject({ status: 'running', newIds: [32] });
    f.gen.resolve({ promptIds: [65, 110, 100], newIds: [32, 71], text: ' G' });
    await run;
    expect(store.getState().run).toMatchObject({
      status: 'done',
      newIds: [32, 71],
      text: ' G',
      promptIds: [65, 110, 100],
    });
  });

  it('shows the no-WebGPU state and frees the worker when there is no adapter', async () => {
    const store = createAppStore();
    const f = fakeClient({ ok: false, error: { kind: 'no-webgpu', message: 'no adapter was found' } });
    await createController(store, f.client).start(url);
    expect(store.getState().initStatus).toBe('no-webgpu');
    expect(f.calls).toEqual(['init', 'terminate']);
  });

  it('turns a model load failure into one error message', async () => {
    const store = createAppStore();
    const f = fakeClient({ ok: true, adapter, features });
    const started = createController(store, f.client).start(url);
    await flush();
    f.load.reject({ kind: 'model', message: 'config.json: HTTP 404 Not Found' });
    await started;
    expect(store.getState()).toMatchObject({
      modelStatus: 'error',
      error: { kind: 'model', message: 'config.json: HTTP 404 Not Found' },
    });
    expect(canGenerate(store.getState())).toBe(false);
  });

  it('cancel asks the worker only while a run is in flight', async () => {
    const store = createAppStore();
    const f = fakeClient({ ok: true, adapter, features });
    const c = createController(store, f.client);
    const started = c.start(url);
    await flush();
    f.load.resolve(info);
    await started;
    c.cancel();
    expect(f.calls).not.toContain('cancel');
    const run = c.generate();
    c.cancel();
    expect(f.calls).toContain('cancel');
    f.gen.reject({ kind: 'cancelled', message: 'generation cancelled' });
    await run;
    expect(store.getState().run.status).toBe('cancelled');
    expect(store.getState().error).toBeNull();
  });

  it('an unexpected rejection (not a WorkerError) becomes an internal error', async () => {
    const store = createAppStore();
    const f = fakeClient({ ok: true, adapter, features });
    const c = createController(store, f.client);
    const started = c.start(url);
    await flush();
    f.load.resolve(info);
    await started;
    const run = c.generate();
    f.gen.reject(new TypeError('x is undefined'));
    await run;
    expect(store.getState().error).toEqual({ kind: 'internal', message: 'x is undefined' });
  });
});
