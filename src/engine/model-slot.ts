// The model the engine holds: its weights on the GPU, the fp32 CPU copy where one is kept, the tokenizer, what
// the page shows of it, and where it came from (a device loss reloads it from there). A new model is installed
// whole (src/engine/install.ts) before the old one is let go, so a failed load leaves the old one in place.
import { parseConfigText } from '../model/config';
import type { Tokenizer } from '../model/tokenizer';
import type { WeightsSource } from '../model/weight-stream';
import type { ModelWeights } from '../numeric/types';
import type { GpuModel } from './gpu-model';
import type { GpuSession } from './gpu-session';
import { type Installed, installSeeded, installStream, type MemoryBudget, type ModelSource } from './install';
import { EngineError, type EngineOptions, type ModelInfo } from './types';

/** How one install reads and checks: the user's budget, the weights' precision, progress and cancellation. */
export interface InstallOptions {
  budget: MemoryBudget;
  weights: EngineOptions['weights'];
  keepCpu: boolean;
  onProgress?: (loaded: number, total: number | null) => void;
  signal?: AbortSignal;
}

export class ModelSlot {
  model: GpuModel | null = null;
  cpu: ModelWeights | null = null;
  info: ModelInfo | null = null;
  tok: Tokenizer | null = null;
  source: ModelSource | null = null;

  /** Installs the model of `source` on the session's device; the previous one goes only once it is complete. */
  async install(session: GpuSession, source: ModelSource, o: InstallOptions): Promise<ModelInfo> {
    const opts = { weights: o.weights, budget: o.budget, keepCpu: o.keepCpu };
    let done: Installed;
    if (source.kind === 'seeded') {
      done = await installSeeded(session.device, session.pipelines, source, opts);
    } else {
      const cfg = parseConfigText(source.config);
      const files = { tokenizer: source.tokenizer, name: source.name };
      const streaming = { ...opts, onProgress: o.onProgress, signal: o.signal };
      done = await installStream(session.device, cfg, source.weights, files, streaming);
    }
    this.clear();
    this.model = done.model;
    this.cpu = done.cpu;
    this.tok = done.tok;
    this.info = done.info;
    this.source = source;
    return done.info;
  }

  /** Lets the model go (its GPU buffers are destroyed; the tokenizer stays until the next model's replaces it). */
  clear(): void {
    this.model?.destroy();
    this.forget();
  }

  /** Forgets the model without touching its buffers (they died with a lost device). */
  forget(): void {
    this.model = null;
    this.cpu = null;
    this.info = null;
    this.source = null;
  }
}

/**
 * A weights source over a stream that arrives once: the first open() gets it, later ones (a reload after a
 * device loss) `reopen()`, or an error naming the model when the bytes cannot be read again.
 */
export function streamedWeights(files: {
  weights: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;
  totalBytes: number | null;
  name?: string;
  reopen?: () => ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;
}): WeightsSource {
  let first: typeof files.weights | null = files.weights;
  return {
    bytes: files.totalBytes,
    open: () => {
      const s = first;
      first = null;
      if (s) return s;
      if (!files.reopen)
        throw new EngineError(`the weights of ${files.name ?? 'the model'} cannot be read again`);
      return files.reopen();
    },
  };
}
