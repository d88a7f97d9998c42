// Weights as a stream of tensors: a model.safetensors source (or an index and its shards, src/model/shard-stream.ts)
// (bytes in memory, a file read chunk by chunk, a Blob, a download) read by the streaming parser (stream.ts), its
// header checked against the config before any tensor's bytes arrive (the family's plan: weights.ts planWeights,
// llama-weights.ts planLlamaWeights), then each tensor handed out — checked finite — as soon as its bytes are
// complete. Nothing here holds the whole file; whoever receives the tensors decides what to keep.

import type { ModelWeights, NeoXConfig, Tensor } from '../numeric/types';
import { ModelLoadError } from './errors';
import type { SafetensorsHeader } from './safetensors';
import { INDEX_FILE } from './shard-index';
import { isShardedSource, mergeHeaders, planShards, type ShardedSource, sameHeader } from './shard-stream';
import { streamSafetensors } from './stream';
import { checkFinite, checkTiedHead, IGNORED_BUFFER, planWeights, type WeightsPlan } from './weights';

/** A model.safetensors that can be read from its start as often as needed (a reload after a device loss). */
export interface WeightsSource {
  /** A fresh stream of the file's bytes from byte 0. */
  open(): ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;
  /** The file's length in bytes, when known (checked against the header). */
  bytes: number | null;
}

/** Chunks of bytes already in memory (views, no copies). */
async function* chunksOf(bytes: Uint8Array, chunkBytes: number): AsyncGenerator<Uint8Array, void> {
  for (let at = 0; at < bytes.length; at += chunkBytes) yield bytes.subarray(at, at + chunkBytes);
}

/** A file already in memory as a source (read in 64 MiB views). */
export function bytesSource(bytes: Uint8Array, chunkBytes = 64 << 20): WeightsSource {
  return { open: () => chunksOf(bytes, chunkBytes), bytes: bytes.length };
}

/** A Blob (a File, a cached download) as a source. */
export function blobSource(blob: Blob): WeightsSource {
  return { open: () => blob.stream(), bytes: blob.size };
}

/** Weights to stream: one safetensors file, or an index and its shards. */
export type Weights = WeightsSource | ShardedSource;

/** A source (one file or sharded), not bytes in memory. */
export function isWeightsSource(w: unknown): w is Weights {
  return (
    isShardedSource(w) ||
    (typeof w === 'object' && w !== null && typeof (w as WeightsSource).open === 'function')
  );
}

export interface StreamWeightsOptions {
  /** The header checked against the config, before any tensor: the place to refuse or allocate. Awaited. */
  onPlan?(plan: WeightsPlan): void | Promise<void>;
  /**
   * Each tensor of plan.skeleton (the same object) with its fp32 values [numel], finite, in file order; awaited.
   * The data is not stored in the tensor: the receiver does that if it keeps the values.
   */
  onTensor(t: Tensor, name: string, data: Float32Array): void | Promise<void>;
  onProgress?(loaded: number, total: number | null): void;
  signal?: AbortSignal;
  file?: string;
}

/** What a family's streamed plan holds that the streamer reads (weights.ts WeightsPlan, llama-weights.ts's). */
export interface StreamPlan {
  /** Each tensor of the file that is read, by name. */
  byName: Map<string, Tensor>;
  /** A tied LM head the file stores too: it must equal the embedding (checked once both have arrived). */
  tiedHead: string | null;
}

/** What a family's weights are streamed with: its plan of a header, the names it ignores, its embedding. */
export interface StreamFamily<P extends StreamPlan> {
  /** The header checked against the config (refusing what does not fit), before any tensor. */
  plan(header: SafetensorsHeader, file: string): P;
  /** Tensors that are not weights (buffers a checkpoint carries), skipped unread. */
  ignore(name: string): boolean;
  /** Whether an arriving tensor is the embedding a stored tied head must equal. */
  isEmbed(name: string, t: Tensor, plan: P): boolean;
  /** The embedding's name in the line refusing a tied head that differs (checkTiedHead's default if absent). */
  embedName?: string;
}

/** StreamWeightsOptions for any family's plan. */
export interface StreamPlanOptions<P> extends Omit<StreamWeightsOptions, 'onPlan'> {
  onPlan?(plan: P): void | Promise<void>;
}

/** What the streamer does with each tensor: checked finite, a stored tied head compared, then handed out. */
function tensorSink<P extends StreamPlan>(fam: StreamFamily<P>, opts: StreamPlanOptions<P>) {
  let plan: P | null = null;
  // A tied head stored in the file: held until the embedding is there too (whichever comes first), then compared.
  let tied: { head: Float32Array | null; embed: Float32Array | null } | null = null;
  let refused: unknown = null;
  return {
    async setPlan(p: P) {
      plan = p;
      if (p.tiedHead !== null) tied = { head: null, embed: null };
      await opts.onPlan?.(p);
    },
    onTensor: async (name: string, data: Float32Array, file: string) => {
      const p = plan as P | null;
      const t = p?.byName.get(name);
      if (!p || !t) throw new ModelLoadError(file, `tensor '${name}' arrived before its header entry`, name);
      if (refused) return;
      try {
        checkFinite(data, name, file);
        const pair = tied as { head: Float32Array | null; embed: Float32Array | null } | null;
        if (pair !== null) {
          if (name === p.tiedHead) pair.head = data;
          else if (fam.isEmbed(name, t, p)) pair.embed = data;
          if (pair.head && pair.embed) {
            checkTiedHead(pair.head, pair.embed, p.tiedHead!, file, fam.embedName);
            tied = null;
          }
          if (name === p.tiedHead) return; // compared only: the model uses the embedding
        }
      } catch (e) {
        refused = e;
        return;
      }
      await opts.onTensor(t, name, data);
    },
    // A refused value is reported once the file has been read to its end: a file that is malformed (truncated,
    // trailing or misplaced bytes, which can also turn values into NaN) is refused for that first.
    finish(file: string): P {
      if (refused !== null) throw refused;
      if (plan === null) throw new ModelLoadError(file, 'the file ended before its header');
      return plan;
    },
  };
}

/**
 * Streams `source` as tensors of a family's weights (see the module header). Malformed files, tensors that do not
 * match the config, non-finite values, and a stored tied head that differs from the embedding raise ModelLoadError
 * naming the tensor (values once the file has been read to its end; no tensor is handed out after a refused one).
 * Resolves to the plan once every tensor has been handed out. A sharded source has every shard's header read and
 * checked against its index before the plan (src/model/shard-index.ts), then its shards streamed one after another.
 */
export async function streamFamilyWeights<P extends StreamPlan>(
  source: Weights,
  fam: StreamFamily<P>,
  opts: StreamPlanOptions<P>,
): Promise<P> {
  const sink = tensorSink(fam, opts);
  const ignore = (name: string) => fam.ignore(name);
  if (!isShardedSource(source)) {
    const file = opts.file ?? 'model.safetensors';
    await streamSafetensors(source.open(), source.bytes, {
      file,
      signal: opts.signal,
      onProgress: opts.onProgress,
      ignore,
      onHeader: (header) => sink.setPlan(fam.plan(header, file)),
      onTensor: (name, _e, data) => sink.onTensor(name, data, file),
    });
    return sink.finish(file);
  }
  const { heads, shards } = await planShards(source, opts.signal);
  await sink.setPlan(fam.plan(mergeHeaders(heads), INDEX_FILE));
  const total = heads.reduce((a, h) => a + h.bytes, 0);
  let before = 0;
  for (let i = 0; i < shards.length; i++) {
    const s = shards[i];
    await streamSafetensors(s.open(), heads[i].bytes, {
      file: s.file,
      signal: opts.signal,
      onProgress: (loaded) => opts.onProgress?.(before + loaded, total),
      ignore,
      onHeader: (header) => sameHeader(heads[i], header),
      onTensor: (name, _e, data) => sink.onTensor(name, data, s.file),
    });
    before += heads[i].bytes;
  }
  return sink.finish(INDEX_FILE);
}

/** GPT-NeoX's weights streamed (streamFamilyWeights): embed_in is the embedding a tied head must equal. */
export function streamWeights(
  cfg: NeoXConfig,
  source: Weights,
  opts: StreamWeightsOptions,
): Promise<WeightsPlan> {
  return streamFamilyWeights(
    source,
    {
      plan: (header, file) => planWeights(cfg, header, file),
      ignore: (name) => IGNORED_BUFFER.test(name),
      isEmbed: (_name, t, p) => t === p.skeleton.embedIn,
    },
    opts,
  );
}

/** The whole model in fp32 on the CPU, read from a source tensor by tensor (the CPU oracle's copy). */
export async function readWeights(
  cfg: NeoXConfig,
  source: Weights,
  opts: ReadOptions = {},
): Promise<ModelWeights> {
  return (await streamWeights(cfg, source, keepingAll(opts))).skeleton;
}

/** A whole read's options: a stream's but the receivers. */
export type ReadOptions = Omit<StreamWeightsOptions, 'onTensor' | 'onPlan'>;

/** A stream's options that keep each tensor's data in it (a whole read: the plan's skeleton is the model). */
export function keepingAll(opts: ReadOptions): Omit<StreamWeightsOptions, 'onPlan'> {
  return {
    ...opts,
    onTensor: (t, _name, data) => {
      t.data = data;
    },
  };
}
