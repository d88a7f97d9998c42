// The kernel editor's state and effects with a scripted worker: a source is checked once typing stops (the
// latest text only), a link's custom kernel waits for consent (Run disabled, nothing runs), agreeing puts it
// in the editor and in the RunSpec, declining drops it; a run with an untested custom kernel runs its isolated
// test first; specs without a custom kernel keep their identity key; custom GPU code that never answers ends
// in the device-loss state (worker stopped, source kept), while progress keeps a slow run alive.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { shippedSource } from '../kernels/custom/sources-browser';
import { defaultRunSpec, type RunSpec } from '../run/runspec';
import { fixtureReport } from '../ui/report-fixture';
import type { IsolatedResult, KernelCheck, LoadedModel, Report } from '../worker/api';
import type { EngineClient } from '../worker/client';
import { createController } from './controller';
import { CHECK_DELAY_MS } from './controller/kernels';
import { createWatch, WATCHDOG_MS, watchdogParam } from './controller/watchdog';
import { buildSpec, specKey } from './spec';
import { type AppStore, canRun, createAppStore } from './store';

const EMBEDDED = { id: 'neox-kjv-bytes', url: 'http://x/models/neox-kjv-bytes/' };
const model = {
  name: 'neox-kjv-bytes',
  config: { vocabSize: 256, hiddenSize: 8, numLayers: 2, maxPositionEmbeddings: 64 },
  tokenizer: 'bytes',
  sha256: 'b'.repeat(64),
} as unknown as LoadedModel;

const okCheck: KernelCheck = { diagnostics: [], problems: [], ok: true, ms: 1 };
const passed: IsolatedResult = {
  slot: 'layernorm2',
  rows: [],
  pass: true,
  oracle: 'o',
  tolerance: 't',
  ms: 1,
};

function fake() {
  const calls: string[] = [];
  const client = {
    checkKernel: async (slot: string, source: string) => {
      calls.push(`check ${slot} ${source.length}`);
      return okCheck;
    },
    testKernel: async (slot: string) => {
      calls.push(`test ${slot}`);
      return { ...passed, slot };
    },
    compare: async (spec: RunSpec) => {
      calls.push(`compare ${spec.custom ? spec.custom.slot : 'shipped'}`);
      return { ...fixtureReport(), spec } as Report;
    },
    decode: async () => '',
    poolStats: async () => ({ bytesLive: 0, bytesInUse: 0, buffersLive: 0, buffersInUse: 0 }),
    cancel: async () => undefined,
    terminate: () => undefined,
  } as unknown as EngineClient;
  return { client, calls };
}

function readyStore(): AppStore {
  const store = createAppStore();
  store.setState({
    initStatus: 'ready',
    modelStatus: 'ready',
    model,
    modelSource: { kind: 'embedded', ...EMBEDDED },
  });
  return store;
}

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('kernel editor', () => {
  it('checks the source once typing stops, and only the latest text', async () => {
    const store = readyStore();
    const f = fake();
    const c = createController(store, () => f.client, { embedded: EMBEDDED });
    const base = shippedSource('layernorm2');
    c.kernels.edit(`${base}\n//a`);
    await vi.advanceTimersByTimeAsync(CHECK_DELAY_MS / 2);
    c.kernels.edit(`${base}\n//ab`);
    await vi.advanceTimersByTimeAsync(CHECK_DELAY_MS / 2);
    expect(f.calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(CHECK_DELAY_MS);
    expect(f.calls).toEqual([`check layernorm2 ${base.length + 5}`]);
    expect(c.kernels.editor.getState().check).toMatchObject({ status: 'done', source: `${base}\n//ab` });
  });

  it('a linked custom kernel waits for consent; agreeing puts it in the editor and the RunSpec', async () => {
    const store = readyStore();
    const f = fake();
    const c = createController(store, () => f.client, { embedded: EMBEDDED });
    const source = shippedSource('layernorm2').replace('let r = wid.x;', 'let r = wid.x; // edited');
    const spec: RunSpec = { ...defaultRunSpec(), generate: 0, custom: { slot: 'layernorm2', source } };
    store.getState().openRun(spec, { spec, origin: 'link', sharer: null, autorunPending: false }, null);
    expect(store.getState().customPending).toEqual(spec.custom);
    expect(store.getState().settings.custom).toBeNull();
    expect(canRun(store.getState())).toBe(false);
    await c.run();
    expect(f.calls).toEqual([]); // nothing ran: no test, no compare

    c.kernels.acceptPending();
    expect(store.getState().customPending).toBeNull();
    expect(store.getState().settings.custom).toEqual(spec.custom);
    expect(c.kernels.editor.getState()).toMatchObject({ slot: 'layernorm2', source, startedFrom: 'link' });
    expect(canRun(store.getState())).toBe(true);
    const st = store.getState();
    const built = buildSpec(st.settings, st.modelSource!, st.model!);
    expect(built.ok && built.spec.custom).toEqual(spec.custom);

    // The run tests the kernel alone first, then compares; a second run does not test again.
    await c.run();
    expect(f.calls.filter((x) => !x.startsWith('check'))).toEqual(['test layernorm2', 'compare layernorm2']);
    // The report keeps how the kernel fared alone (history and export carry it).
    const done = store.getState().run;
    expect(done.status === 'done' && done.report?.isolated).toEqual({ ...passed, slot: 'layernorm2' });
    await c.run();
    expect(f.calls.filter((x) => x.startsWith('test'))).toHaveLength(1);
  });

  it('declining drops the kernel: Run uses the shipped kernels', async () => {
    const store = readyStore();
    const f = fake();
    const c = createController(store, () => f.client, { embedded: EMBEDDED });
    const spec: RunSpec = {
      ...defaultRunSpec(),
      generate: 0,
      custom: { slot: 'flash_attention', source: shippedSource('flash_attention') },
    };
    store.getState().openRun(spec, { spec, origin: 'link', sharer: null, autorunPending: false }, null);
    c.kernels.declinePending();
    expect(store.getState()).toMatchObject({ customPending: null });
    expect(store.getState().settings.custom).toBeNull();
    await c.run();
    expect(f.calls).toEqual(['compare shipped']);
  });

  it('a custom kernel that never answers: the worker is stopped, the device-loss state, the source kept', async () => {
    const store = readyStore();
    const f = fake();
    const never = new Promise<never>(() => {});
    let made = 0;
    (f.client as { testKernel: unknown }).testKernel = () => never;
    (f.client as { terminate: unknown }).terminate = () => f.calls.push('terminate');
    const c = createController(
      store,
      () => {
        made++;
        return f.client;
      },
      { embedded: EMBEDDED, watchdogMs: 5000 },
    );
    const source = shippedSource('layernorm2').replace('let r = wid.x;', 'let r = wid.x; // spins');
    c.kernels.edit(source);
    c.kernels.setUse(true);
    const run = c.run();
    await vi.advanceTimersByTimeAsync(4900);
    expect(store.getState().initStatus).toBe('ready');
    expect(f.calls).not.toContain('terminate');
    await vi.advanceTimersByTimeAsync(200);
    await run;
    expect(f.calls).toContain('terminate');
    expect(store.getState().initStatus).toBe('lost');
    expect(store.getState().error?.kind).toBe('device-lost');
    expect(store.getState().error?.message).toMatch(
      /No answer from the GPU for 5 s while the kernel's isolated test/,
    );
    expect(c.kernels.editor.getState().source).toBe(source);
    expect(store.getState().settings.custom).toEqual({ slot: 'layernorm2', source });
    expect(f.calls.filter((x) => x.startsWith('compare'))).toEqual([]); // the run did not go on
    expect(made).toBe(1); // no new worker until the user restarts
  });

  it('a run with a custom kernel is watched, and progress keeps it alive; a run of the shipped kernels is not', async () => {
    const store = readyStore();
    const f = fake();
    const beat = { progress: () => {} };
    (f.client as { compare: unknown }).compare = (spec: RunSpec, onProgress: (p: unknown) => void) => {
      f.calls.push(`compare ${spec.custom ? 'custom' : 'shipped'}`);
      beat.progress = () => onProgress({ phase: 'analysis', done: 0, total: 1 });
      return new Promise<never>(() => {});
    };
    (f.client as { terminate: unknown }).terminate = () => f.calls.push('terminate');
    const c = createController(store, () => f.client, { embedded: EMBEDDED, watchdogMs: 5000 });
    // Shipped kernels: a long silence is not a hang.
    void c.run();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(f.calls).toEqual(['compare shipped']);
    expect(store.getState().run.status).toBe('running');
    store.setState({ run: { ...store.getState().run, status: 'idle' } as never });

    // A custom kernel (tested alone already): progress every 4 s keeps it alive, then silence ends it.
    c.kernels.edit(`${shippedSource('layernorm2')}\n// mine`);
    c.kernels.setUse(true);
    await c.kernels.test();
    void c.run();
    await vi.advanceTimersByTimeAsync(0);
    expect(f.calls.at(-1)).toBe('compare custom');
    for (let i = 0; i < 4; i++) {
      await vi.advanceTimersByTimeAsync(4000);
      beat.progress();
    }
    expect(f.calls).not.toContain('terminate');
    await vi.advanceTimersByTimeAsync(5001);
    expect(f.calls).toContain('terminate');
    expect(store.getState().initStatus).toBe('lost');
    expect(store.getState().run.status).toBe('error');
    expect(store.getState().error?.message).toContain('while the run with your custom kernel ran');
  });

  it('the watchdog restarts its wait on every sign of life and is quiet once the call answers', async () => {
    const hangs: string[] = [];
    const watch = createWatch(1000, (e) => hangs.push(e.message));
    let beat = () => {};
    let answer: (v: number) => void = () => {};
    const slow = watch('slow', (b) => {
      beat = b;
      return new Promise<number>((r) => {
        answer = r;
      });
    });
    for (let i = 0; i < 5; i++) {
      await vi.advanceTimersByTimeAsync(900);
      beat();
    }
    expect(hangs).toEqual([]);
    answer(7);
    await expect(slow).resolves.toBe(7);
    await vi.advanceTimersByTimeAsync(5000);
    expect(hangs).toEqual([]);
    const stuck = watch('stuck', () => new Promise<number>(() => {}));
    const caught = stuck.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(1001);
    expect(await caught).toMatchObject({ kind: 'device-lost' });
    expect(hangs).toHaveLength(1);
    expect(hangs[0]).toContain('while stuck ran');
    expect(WATCHDOG_MS).toBeGreaterThanOrEqual(30_000);
    expect([watchdogParam('?watchdog=2.5'), watchdogParam('?watchdog=-1'), watchdogParam('?x')]).toEqual([
      2500,
      null,
      null,
    ]);
  });

  it('the identity key of a spec without a custom kernel has the same fields as before', () => {
    const spec = defaultRunSpec();
    expect(JSON.parse(specKey(spec))).toHaveLength(10);
    const withKernel = { ...spec, custom: { slot: 'layernorm2' as const, source: 'x' } };
    expect(specKey(withKernel)).not.toBe(specKey(spec));
  });
});
