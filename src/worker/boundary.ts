// What crosses the worker boundary: every failure leaves the worker as a plain WorkerError ({ kind, message },
// which comlink clones as-is), and callbacks from the page (comlink proxies) are called without letting their
// failures in and released once done.
import * as Comlink from 'comlink';
import { AnalysisCancelled } from '../compare/analyze';
import { EngineError } from '../engine/engine';
import { DeviceLostError, GpuUnavailableError } from '../gpu/device';
import { InputError, ModelLoadError, oneLine } from '../model/errors';
import { HubError } from '../run/hub-api';
import { RunSpecError } from '../run/runspec';
import type { WorkerError, WorkerErrorKind } from './api';

export function workerError(kind: WorkerErrorKind, message: string): WorkerError {
  return { kind, message: oneLine(message) };
}

/** A plain { kind, message } (our Error classes carry a kind too, and are mapped by class below). */
function isWorkerError(e: unknown): e is WorkerError {
  return (
    !(e instanceof Error) &&
    typeof e === 'object' &&
    e !== null &&
    typeof (e as Record<string, unknown>).kind === 'string' &&
    typeof (e as Record<string, unknown>).message === 'string'
  );
}

/** Maps anything thrown inside the worker to the WorkerError that crosses the boundary. */
export function toWorkerError(e: unknown): WorkerError {
  if (isWorkerError(e)) return { kind: e.kind, message: e.message };
  if (e instanceof GpuUnavailableError) return workerError('no-webgpu', e.message);
  if (e instanceof DeviceLostError) return workerError('device-lost', e.message);
  if (e instanceof ModelLoadError) return workerError('model', e.message);
  if (e instanceof InputError) return workerError('input', e.message);
  if (e instanceof AnalysisCancelled) return workerError('cancelled', 'run cancelled');
  if (e instanceof RunSpecError) return workerError('input', e.message);
  if (e instanceof HubError) return workerError(e.kind === 'input' ? 'input' : 'model', e.message);
  if (e instanceof EngineError) {
    // The engine says what kind of failure it is; the words are for people only.
    if (e.kind === 'cancelled') return workerError('cancelled', 'generation cancelled');
    return workerError(e.kind, e.message);
  }
  if (e instanceof Error) return workerError('internal', `${e.name}: ${e.message}`);
  return workerError('internal', `unexpected failure: ${String(e)}`);
}

/** Calls a callback that may be a comlink proxy (returns a promise) without letting a rejection escape. */
export function notify<T>(cb: (v: T) => void, v: T): void {
  try {
    const r: unknown = cb(v);
    if (r instanceof Promise) r.catch(() => undefined);
  } catch {
    // A broken progress listener must not break the work it listens to.
  }
}

/** Drops the MessagePort behind a proxied callback once it is no longer needed. */
export function release(cb: unknown): void {
  const fn = (cb as Partial<Record<typeof Comlink.releaseProxy, unknown>>)[Comlink.releaseProxy];
  if (typeof fn === 'function') notify(() => fn.call(cb), undefined);
}
