// Model files from the network (and large files from disk) without ever holding model.safetensors whole: the
// size before the download (HEAD), the memory budget checked from config.json before the weights are asked
// for, and the weights hashed chunk by chunk (incremental sha256) on their way into the streaming loader, kept
// as a Blob for the IndexedDB cache. Used by the engine worker; nothing here touches the GPU.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { estimateWeightBytes } from '../engine/engine';
import { llamaGpuBytes } from '../engine/family-llama';
import { ModelLoadError } from '../model/errors';
import { llamaModelSummary } from '../model/llama-weights';
import { parseModelConfigText } from '../model/model-config';
import { modelSummary } from '../model/weights';
import type { ModelConfig } from '../numeric/types';
import { type NetLimits, netLimits } from '../run/hub-fetch';
import type { UrlProbe, WorkerError } from './api';
import {
  contentLength,
  decodeText,
  fail,
  fetchFile,
  folderUrl,
  MODEL_FILES,
  openFile,
  readBody,
  why,
} from './url-fetch';
import { probeWeights } from './url-shards';

/** The least GPU memory the model's weights can take: matrices in fp16 (what the engine picks when lossless). */
export function minWeightBytes(cfg: ModelConfig): number {
  return cfg.family === 'llama' ? llamaGpuBytes(cfg) : estimateWeightBytes(cfg, true);
}

/** The parameter count of either family (a tied head counted once). */
export function paramsOf(cfg: ModelConfig): number {
  return cfg.family === 'llama' ? llamaModelSummary(cfg).params : modelSummary(cfg).params;
}

const gib = (b: number) => `${(b / 2 ** 30).toFixed(2)} GiB`;

/** One line refusing a model that cannot fit the budget even with fp16 weights (a Llama-family model: fp32 for
 * both paths), or null when it may fit. */
export function budgetRefusal(cfg: ModelConfig, budgetBytes: number): string | null {
  const need = minWeightBytes(cfg);
  if (need <= budgetBytes) return null;
  return (
    `the model needs at least ${gib(need)} of GPU memory for its weights (${cfg.family === 'llama' ? 'fp32, both paths' : 'in fp16'}), more than the ` +
    `${gib(budgetBytes)} budget for this adapter; nothing was downloaded`
  );
}

function parseConfigOrFail(text: string): ModelConfig {
  try {
    return parseModelConfigText(text);
  } catch (e) {
    if (e instanceof ModelLoadError) throw fail('model', e.message);
    throw fail('model', `config.json: ${why(e)}`);
  }
}

/**
 * What a URL model costs before it is downloaded (before the viewer consents): each file's size (HEAD, redirects
 * followed; null where the server does not say), config.json read within its cap (1 MiB) for the parameter count
 * and the GPU memory it needs, and the shard index within its. Nothing else is read; a missing tokenizer.json is
 * left out (the model takes token ids).
 */
export async function probeModelUrl(
  baseUrl: string,
  budgetBytes: number | null,
  refusalFor: (cfg: ModelConfig) => Promise<string | null> = async (cfg) =>
    budgetBytes === null ? null : budgetRefusal(cfg, budgetBytes),
  limits?: Partial<NetLimits>,
): Promise<UrlProbe> {
  const base = folderUrl(baseUrl);
  const net = { limits };
  const head = { method: 'HEAD' as const, limits };
  const [cfgHead, tokHead] = await Promise.all([
    openFile(base, MODEL_FILES.config, head),
    fetchFile(base, MODEL_FILES.tokenizer, head),
  ]);
  const files = [
    { file: MODEL_FILES.config, bytes: contentLength(cfgHead) },
    ...('res' in tokHead ? [{ file: MODEL_FILES.tokenizer, bytes: contentLength(tokHead.res) }] : []),
    ...(await probeWeights(base, net)),
  ];
  const cfgRes = await openFile(base, MODEL_FILES.config, net);
  const max = netLimits(limits).configBytes;
  const cfg = parseConfigOrFail(
    decodeText(MODEL_FILES.config, await readBody(cfgRes, MODEL_FILES.config, max, () => undefined)),
  );
  const total = files.every((f) => f.bytes !== null) ? files.reduce((a, f) => a + (f.bytes ?? 0), 0) : null;
  return {
    files,
    totalBytes: total,
    params: paramsOf(cfg),
    minGpuBytes: minWeightBytes(cfg),
    budgetBytes,
    refusal: await refusalFor(cfg),
  };
}

/** Collects chunks into a Blob as they pass (the browser may keep a large Blob on disk, not in memory). */
export class BlobCollector {
  private blob = new Blob([]);
  private pending: Uint8Array<ArrayBuffer>[] = [];
  private pendingBytes = 0;
  constructor(private readonly flushBytes = 16 << 20) {}
  add(chunk: Uint8Array): void {
    this.pending.push(chunk.slice()); // an own copy: the reader may reuse its buffer
    this.pendingBytes += chunk.length;
    if (this.pendingBytes >= this.flushBytes) this.flush();
  }
  private flush(): void {
    this.blob = new Blob([this.blob, ...this.pending]);
    this.pending = [];
    this.pendingBytes = 0;
  }
  finish(): Blob {
    this.flush();
    return this.blob;
  }
}

/**
 * Passes a stream's chunks through unchanged while hashing them (sha256, incrementally) and handing each to
 * `keep`; at the end calls `onEnd(hex)`, which may throw (a mismatch): the consumer then sees that error
 * instead of the end, before it can use what it read. Stopping early (return()) cancels the source.
 */
export async function* hashChunks(
  source: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  onEnd: (sha256Hex: string, bytes: number) => void,
  keep?: (chunk: Uint8Array) => void,
): AsyncGenerator<Uint8Array, void, undefined> {
  const h = sha256.create();
  let bytes = 0;
  if (typeof (source as ReadableStream<Uint8Array>).getReader === 'function') {
    const reader = (source as ReadableStream<Uint8Array>).getReader();
    let done = false;
    try {
      for (;;) {
        const r = await reader.read();
        if (r.done) break;
        h.update(r.value);
        bytes += r.value.length;
        keep?.(r.value);
        yield r.value;
      }
      done = true;
    } finally {
      if (!done) reader.cancel().catch(() => undefined);
      try {
        reader.releaseLock();
      } catch {
        // a read still pending on an errored stream: the stream is finished either way
      }
    }
  } else {
    for await (const c of source as AsyncIterable<Uint8Array>) {
      h.update(c);
      bytes += c.length;
      keep?.(c);
      yield c;
    }
  }
  onEnd(bytesToHex(h.digest()), bytes);
}

/** The 'model-mismatch' error: the weights are not the ones a run (or a preset) names. */
export function mismatchError(actual: string, expected: string): WorkerError {
  return fail(
    'model-mismatch',
    `model.safetensors hashes to sha256 ${actual.slice(0, 16)}…, but the run names ${expected.slice(0, 16)}…: ` +
      'these are not the weights it was made with, so nothing was loaded.',
  );
}
