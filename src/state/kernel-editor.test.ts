// The kernel editor's state and effects with a scripted worker: a source is checked once typing stops (the
// latest text only), a link's custom kernel waits for consent (Run disabled, nothing runs), agreeing puts it
// in the editor and in the RunSpec, declining drops it; a run with an untested custom kernel runs its isolated
// test first; specs without a custom kernel keep their identity key.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { shippedSource } from '../kernels/custom/sources-browser';
import { defaultRunSpec, type RunSpec } from '../run/runspec';
import { fixtureReport } from '../ui/report-fixture';
import type { IsolatedResult, KernelCheck, LoadedModel, Report } from '../worker/api';
import type { EngineClient } from '../worker/client';
import { createController } from './controller';
import { CHECK_DELAY_MS } from './controller/kernels';
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

  it('the identity key of a spec without a custom kernel has the same fields as before', () => {
    const spec = defaultRunSpec();
    expect(JSON.parse(specKey(spec))).toHaveLength(10);
    const withKernel = { ...spec, custom: { slot: 'layernorm2' as const, source: 'x' } };
    expect(specKey(withKernel)).not.toBe(specKey(spec));
  });
});
