// The typed API between the UI thread and the engine worker (comlink). Only types live here: the worker
// implements WorkerApi (engine.worker.ts), the client wraps it (client.ts). Everything that crosses the
// boundary is structured-cloneable data; errors cross as plain WorkerError objects, never as Error or `any`.

import type { ModelInfo } from '../engine/engine';
import type { AdapterSummary, GpuFeatures } from '../gpu/device';

export type { AdapterSummary, GpuFeatures, ModelInfo };

/** What went wrong, in words the UI can act on. */
export type WorkerErrorKind =
  /** navigator.gpu is missing or no adapter was found. */
  | 'no-webgpu'
  /** The GPU device was lost (driver reset, tab in background too long, destroy()). */
  | 'device-lost'
  /** A model file could not be fetched or was refused (config.json, model.safetensors, tokenizer.json). */
  | 'model'
  /** The request itself is wrong: empty prompt, too many tokens, ids out of range. */
  | 'input'
  /** cancel() stopped a generation. */
  | 'cancelled'
  /** Anything else: a bug. */
  | 'internal';

export interface WorkerError {
  kind: WorkerErrorKind;
  /** One line, ready to show to a person. */
  message: string;
}

export type InitResult =
  | { ok: true; adapter: AdapterSummary; features: GpuFeatures }
  | { ok: false; error: WorkerError };

/** Download progress of a model, in bytes over all of its files. */
export interface LoadProgress {
  /** The file being fetched now ('config.json', 'model.safetensors', 'tokenizer.json'), or 'gpu' while uploading. */
  file: string;
  loadedBytes: number;
  /** Sum of the Content-Length headers seen so far; null when a server did not send one. */
  totalBytes: number | null;
}

/** One new token of a generation. */
export interface TokenEvent {
  id: number;
  /** 0-based index of this token among the new ones. */
  step: number;
  /** How many new tokens were asked for. */
  total: number;
  /** The continuation decoded so far (a partial UTF-8 sequence shows as U+FFFD until it completes). */
  text: string;
}

export interface GenerateResult {
  promptIds: number[];
  newIds: number[];
  /** The new ids decoded (the continuation only, without the prompt). */
  text: string;
}

export interface WorkerApi {
  /** Creates the one Engine of this worker. Never throws: a missing WebGPU is a result, not an exception. */
  init(): Promise<InitResult>;
  /** Fetches config.json, model.safetensors and tokenizer.json under baseUrl (an absolute URL ending in '/'). */
  loadModelFromUrl(baseUrl: string, onProgress: (p: LoadProgress) => void): Promise<ModelInfo>;
  /** Greedy generation of n new tokens after the encoded prompt. */
  generate(prompt: string, n: number, onToken: (ev: TokenEvent) => void): Promise<GenerateResult>;
  /** Stops a running generation between steps; it then rejects with kind 'cancelled'. */
  cancel(): void;
}
