// The UI thread's handle on the engine worker: typed methods over comlink, callbacks passed as proxies, and
// every failure (including a worker that crashed or was terminated) turned into a WorkerError.
import * as Comlink from 'comlink';
import type { InitResult, WorkerApi, WorkerError, WorkerErrorKind } from './api';

/** What the worker answers, as the page calls it: every method of the worker's API (api.ts) returns a promise. */
type Remote<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never;
};

/**
 * Methods a test double may leave out: the page falls back without them (sizes it knows without asking the
 * server, the ArrayBuffer load, no runs mode, no kernel editor, no memory cap).
 */
type OptionalMethods =
  | 'probeModelUrl'
  | 'loadModelFromBlob'
  | 'loadModelFromShards'
  | 'resolveHub'
  | 'compareRuns'
  | 'warmRuns'
  | 'checkKernel'
  | 'testKernel'
  | 'setMemoryBudget';

/**
 * The page's handle on the worker: its API (every failure a WorkerError, { kind: 'cancelled' } after cancel();
 * a missing WebGPU is init's result, not a rejection; the weights' ArrayBuffer of loadModelFromFiles is
 * transferred), and terminate(), after which pending and later calls reject with kind 'internal'.
 */
export type EngineClient = Omit<Remote<WorkerApi>, OptionalMethods> &
  Partial<Pick<Remote<WorkerApi>, OptionalMethods>> & { terminate(): void };

const KINDS: readonly WorkerErrorKind[] = [
  'no-webgpu',
  'device-lost',
  'model',
  'model-mismatch',
  'input',
  'cancelled',
  'internal',
];

export function isWorkerError(v: unknown): v is WorkerError {
  if (typeof v !== 'object' || v === null) return false;
  const r = v as Record<string, unknown>;
  return (
    typeof r.message === 'string' && typeof r.kind === 'string' && KINDS.includes(r.kind as WorkerErrorKind)
  );
}

/** Any rejection reason as a WorkerError (unknown shapes become 'internal'). */
export function asWorkerError(e: unknown): WorkerError {
  if (isWorkerError(e)) return { kind: e.kind, message: e.message };
  if (e instanceof Error) return { kind: 'internal', message: e.message || e.name };
  return { kind: 'internal', message: `unexpected failure: ${String(e)}` };
}

/** The `memory` parameter of a page's query string: a positive number of GiB, or null (absent or not a number). */
export function memoryParam(search: string): number | null {
  const v = new URLSearchParams(search).get('memory');
  if (v === null || v.trim() === '') return null;
  const gib = Number(v);
  return Number.isFinite(gib) && gib > 0 ? gib : null;
}

/** Wraps a started engine worker. */
export function wrapEngineEndpoint(worker: Worker): EngineClient {
  const remote = Comlink.wrap<WorkerApi>(worker);
  let dead: WorkerError | null = null;
  const waiters = new Set<(e: WorkerError) => void>();
  const die = (e: WorkerError) => {
    if (dead) return;
    dead = e;
    for (const w of waiters) w(e);
    waiters.clear();
  };
  worker.addEventListener('error', (ev: ErrorEvent) => {
    ev.preventDefault();
    die({ kind: 'internal', message: `the engine worker crashed: ${ev.message || 'no message'}` });
  });
  worker.addEventListener('messageerror', () => {
    die({ kind: 'internal', message: 'the engine worker sent a message that could not be read' });
  });

  /** Runs a remote call; rejects with a WorkerError, also when the worker dies while it runs. */
  const call = <T>(fn: () => Promise<T>): Promise<T> => {
    if (dead) return Promise.reject(dead);
    return new Promise<T>((resolve, reject) => {
      const onDeath = (e: WorkerError) => reject(e);
      waiters.add(onDeath);
      fn().then(
        (v) => {
          waiters.delete(onDeath);
          resolve(v);
        },
        (e: unknown) => {
          waiters.delete(onDeath);
          reject(asWorkerError(e));
        },
      );
    });
  };

  return {
    init: (onDeviceLost) =>
      call(async (): Promise<InitResult> => {
        const r = await remote.init(onDeviceLost ? Comlink.proxy(onDeviceLost) : undefined);
        // The page's ?memory=GiB caps the GPU memory for weights (a bad value is ignored, not half-applied).
        const gib = memoryParam(globalThis.location?.search ?? '');
        if (r.ok && gib !== null) await remote.setMemoryBudget(gib).catch(() => undefined);
        return r;
      }).catch((e: unknown): InitResult => ({ ok: false, error: asWorkerError(e) })),
    loadModelFromUrl: (baseUrl, onProgress, options) =>
      call(() => remote.loadModelFromUrl(baseUrl, Comlink.proxy(onProgress), options)),
    loadModelFromFiles: (files, options) =>
      call(() => remote.loadModelFromFiles(Comlink.transfer(files, [files.weights]), options)),
    loadModelFromBlob: (files, options) => call(() => remote.loadModelFromBlob(files, options)),
    probeModelUrl: (baseUrl, net) => call(() => remote.probeModelUrl(baseUrl, net)),
    loadModelFromShards: (files, options) => call(() => remote.loadModelFromShards(files, options)),
    resolveHub: (repo, revision, hubUrl, net) => call(() => remote.resolveHub(repo, revision, hubUrl, net)),
    generate: (prompt, n, onToken) => call(() => remote.generate(prompt, n, Comlink.proxy(onToken))),
    compare: (spec, onProgress, onPartial, options) =>
      call(() =>
        remote.compare(
          spec,
          Comlink.proxy(onProgress),
          onPartial ? Comlink.proxy(onPartial) : undefined,
          options,
        ),
      ),
    compareRuns: (runs, onLoad, onProgress) =>
      call(() => remote.compareRuns(runs, Comlink.proxy(onLoad), Comlink.proxy(onProgress))),
    warmRuns: () => call(() => remote.warmRuns()),
    decode: (ids) => call(() => remote.decode(ids)),
    checkKernel: (slot, source) => call(() => remote.checkKernel(slot, source)),
    testKernel: (slot, source, seed) => call(() => remote.testKernel(slot, source, seed)),
    cancel: () => call(() => remote.cancel()).catch(() => undefined),
    poolStats: () => call(() => remote.poolStats()),
    debugLoseDevice: () => call(() => remote.debugLoseDevice()).catch(() => undefined),
    setMemoryBudget: (gib) => call(() => remote.setMemoryBudget(gib)),
    terminate: () => {
      worker.terminate();
      die({ kind: 'internal', message: 'the engine worker was stopped' });
    },
  };
}

export function createEngineClient(): EngineClient {
  const worker = new Worker(new URL('./engine.worker.ts', import.meta.url), {
    type: 'module',
    name: 'engine',
  });
  return wrapEngineEndpoint(worker);
}
