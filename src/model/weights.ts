// model.safetensors (HF GPTNeoXForCausalLM names) -> ModelWeights in fp32, every tensor checked against the config.

import type {
  DType,
  LayerWeights,
  LinearWeights,
  ModelWeights,
  NeoXConfig,
  NormWeights,
  Tensor,
} from '../numeric/types';
import { ModelLoadError, quoteName } from './errors';
import { parseSafetensorsHeader, type SafetensorsEntry, type SafetensorsHeader } from './safetensors';
import { readTensorF32 } from './safetensors-read';
import { streamSafetensors } from './stream';

/** Buffers HF checkpoints may carry that are not weights (causal-mask caches, rotary inverse frequencies). */
export const IGNORED_BUFFER =
  /^gpt_neox\.(layers\.\d+\.attention\.(bias|masked_bias|rotary_emb\.inv_freq)|rotary_emb\.inv_freq)$/;
const LAYER_NAME = /^gpt_neox\.layers\.(\d+)\./;

const HEAD_NAMES = ['embed_out.weight', 'lm_head.weight'] as const;

function shapeStr(shape: readonly number[]): string {
  return `[${shape.join(',')}]`;
}

/**
 * Refuses a tensor holding NaN or ±Inf: every output downstream would be non-finite on both paths, which says
 * nothing about the kernels. Names the tensor, the count and the first index.
 */
export function checkFinite(data: Float32Array, name: string, file: string): void {
  let count = 0;
  let first = -1;
  for (let i = 0; i < data.length; i++) {
    const x = data[i];
    if (x - x !== 0) {
      // NaN - NaN and Inf - Inf are NaN; every finite x gives 0
      if (first < 0) first = i;
      count++;
    }
  }
  if (count > 0) {
    const v = data[first];
    throw new ModelLoadError(
      file,
      `tensor ${quoteName(name)} holds ${count} non-finite value${count === 1 ? '' : 's'} (NaN or ±Inf) of ` +
        `${data.length}; the first at index ${first} is ${v}`,
      name,
    );
  }
}

/** Where the Loader gets tensors from: a whole file in memory, or the tensors a stream already delivered. */
export interface TensorSource {
  entries: Map<string, SafetensorsEntry>;
  ignored: string[];
  /** null: a dry run (structure only: shapes and names checked, no data read). */
  read: ((e: SafetensorsEntry) => Float32Array) | null;
}

/** Hands out the tensors of one checkpoint by name, each checked for shape (and finite values); shared by the families' assemblers. */
export class Loader {
  readonly entries: Map<string, SafetensorsEntry>;
  readonly ignored: string[];
  readonly used = new Set<string>();
  /** Every tensor handed out, by name (a dry run fills in the data later). */
  readonly byName = new Map<string, Tensor>();
  /** A tied LM head that the file also stores: compared with embed_in once both hold data (dry run). */
  tiedHead: string | null = null;
  private readonly read: ((e: SafetensorsEntry) => Float32Array) | null;

  constructor(
    src: TensorSource,
    readonly file: string,
  ) {
    this.entries = src.entries;
    this.ignored = src.ignored;
    this.read = src.read;
  }

  get dryRun(): boolean {
    return this.read === null;
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  tensor(name: string, shape: number[]): Tensor {
    const e = this.entries.get(name);
    if (e === undefined) throw new ModelLoadError(this.file, `missing tensor '${name}'`, name);
    if (e.shape.length !== shape.length || e.shape.some((s, i) => s !== shape[i])) {
      throw new ModelLoadError(
        this.file,
        `tensor '${name}' has shape ${shapeStr(e.shape)}, expected ${shapeStr(shape)}`,
        name,
      );
    }
    this.used.add(name);
    if (this.read === null) {
      const t = { shape: shape.slice(), data: new Float32Array(0) };
      this.byName.set(name, t);
      return t;
    }
    const data = this.read(e);
    checkFinite(data, name, this.file);
    const t = { shape: shape.slice(), data };
    this.byName.set(name, t);
    return t;
  }

  norm(prefix: string, d: number): NormWeights {
    return { weight: this.tensor(`${prefix}.weight`, [d]), bias: this.tensor(`${prefix}.bias`, [d]) };
  }

  linear(prefix: string, out: number, inp: number, bias: boolean): LinearWeights {
    return {
      weight: this.tensor(`${prefix}.weight`, [out, inp]),
      bias: bias ? this.tensor(`${prefix}.bias`, [out]) : null,
    };
  }
}

/**
 * Loads GPT-NeoX weights with Hugging Face names, converting F16 / BF16 to fp32. Missing tensors, wrong shapes,
 * layers beyond the config and any other unexpected tensor raise ModelLoadError naming the tensor.
 */
export function loadWeights(cfg: NeoXConfig, bytes: Uint8Array, file = 'model.safetensors'): ModelWeights {
  const h = parseSafetensorsHeader(bytes, file, { ignore: (name) => IGNORED_BUFFER.test(name) });
  const read = (e: SafetensorsEntry) => readTensorF32(bytes, h.dataOffset, e, file);
  return assemble(cfg, new Loader({ entries: h.entries, ignored: h.ignored, read }, file), file);
}

/**
 * Streams model.safetensors (a fetch body, File.stream(), or a Node file stream) chunk by chunk — the file is
 * never held whole in memory — converting each tensor as its bytes complete, then checks them against the
 * config exactly as loadWeights does. Progress in bytes; an aborted signal rejects with an AbortError.
 */
export async function loadWeightsStream(
  cfg: NeoXConfig,
  source: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  totalBytes: number | null,
  opts: {
    onProgress?: (loaded: number, total: number | null) => void;
    signal?: AbortSignal;
    file?: string;
  } = {},
): Promise<ModelWeights> {
  const file = opts.file ?? 'model.safetensors';
  const tensors = new Map<string, Float32Array>();
  const { header } = await streamSafetensors(source, totalBytes, {
    file,
    signal: opts.signal,
    onProgress: opts.onProgress,
    ignore: (name) => IGNORED_BUFFER.test(name),
    onTensor: (name, _e, data) => {
      tensors.set(name, data);
    },
  });
  const read = (e: SafetensorsEntry) => tensors.get(e.name)!;
  return assemble(cfg, new Loader({ entries: header.entries, ignored: header.ignored, read }, file), file);
}

function assemble(cfg: NeoXConfig, ld: Loader, file: string): ModelWeights {
  const { vocabSize: V, hiddenSize: d, intermediateSize: ff, numLayers: L } = cfg;

  // Layer-shaped names past the config first: the clearest message for a config/weights mismatch.
  for (const name of [...ld.entries.keys(), ...ld.ignored]) {
    const m = LAYER_NAME.exec(name);
    if (m !== null && Number(m[1]) >= L) {
      throw new ModelLoadError(
        file,
        `tensor ${quoteName(name)} belongs to layer ${m[1]} but config.json has num_hidden_layers ${L} ` +
          '(config and weights do not match)',
        name,
      );
    }
  }

  const embedIn = ld.tensor('gpt_neox.embed_in.weight', [V, d]); // [V, d]
  const layers: LayerWeights[] = [];
  for (let i = 0; i < L; i++) {
    const p = `gpt_neox.layers.${i}`;
    layers.push({
      inputLayernorm: ld.norm(`${p}.input_layernorm`, d),
      postAttentionLayernorm: ld.norm(`${p}.post_attention_layernorm`, d),
      qkv: ld.linear(`${p}.attention.query_key_value`, 3 * d, d, cfg.attentionBias), // [3d, d]
      dense: ld.linear(`${p}.attention.dense`, d, d, cfg.attentionBias), // [d, d]
      fc1: ld.linear(`${p}.mlp.dense_h_to_4h`, ff, d, true), // [ff, d]
      fc2: ld.linear(`${p}.mlp.dense_4h_to_h`, d, ff, true), // [d, ff]
    });
  }
  const finalLayerNorm = ld.norm('gpt_neox.final_layer_norm', d);

  const heads = HEAD_NAMES.filter((n) => ld.has(n));
  if (heads.length > 1) {
    throw new ModelLoadError(
      file,
      `both 'embed_out.weight' and 'lm_head.weight' are present (ambiguous LM head)`,
      heads[1],
    );
  }
  let lmHead: Tensor; // [V, d]
  if (cfg.tieWordEmbeddings) {
    lmHead = embedIn;
    if (heads.length === 1) {
      const h = ld.tensor(heads[0], [V, d]);
      if (ld.dryRun) ld.tiedHead = heads[0];
      else checkTiedHead(h.data, embedIn.data, heads[0], file);
    }
  } else {
    if (heads.length === 0) {
      throw new ModelLoadError(
        file,
        `missing tensor 'embed_out.weight' (or 'lm_head.weight'); config.json has tie_word_embeddings false`,
        'embed_out.weight',
      );
    }
    lmHead = ld.tensor(heads[0], [V, d]);
  }

  for (const name of ld.entries.keys()) {
    if (ld.used.has(name)) continue;
    const why =
      !cfg.attentionBias && /^gpt_neox\.layers\.\d+\.attention\.(query_key_value|dense)\.bias$/.test(name)
        ? 'but config.json has attention_bias false'
        : '(not part of a GPT-NeoX causal LM)';
    throw new ModelLoadError(file, `unexpected tensor ${quoteName(name)} ${why}`, name);
  }
  return { embedIn, layers, finalLayerNorm, lmHead };
}

/** Refuses a stored LM head that differs from embed_in where config.json ties them. */
export function checkTiedHead(
  head: Float32Array,
  embed: Float32Array,
  name: string,
  file: string,
  embedName = 'gpt_neox.embed_in.weight',
): void {
  if (head.some((x, i) => !Object.is(x, embed[i]))) {
    throw new ModelLoadError(
      file,
      `tensor '${name}' differs from '${embedName}' but config.json has tie_word_embeddings true`,
      name,
    );
  }
}

/** The weights `W` a header describes, checked against the config before any tensor's bytes are read. */
export interface WeightsPlanOf<W> {
  /** The weights with every tensor's shape and empty data, filled as tensors arrive (the same objects). */
  skeleton: W;
  /** Each tensor of the file that is read, by name (a tied head stored in the file is read only to compare). */
  byName: Map<string, Tensor>;
  /** A tied LM head the file stores too: it must equal the embedding (checked once both have arrived). */
  tiedHead: string | null;
  /** Each read tensor's dtype in the file. */
  dtypes: Map<string, DType>;
}

/** GPT-NeoX's plan: its tied head must equal embed_in. */
export type WeightsPlan = WeightsPlanOf<ModelWeights>;

/** A family's plan of a header: its weights assembled by a Loader that reads nothing (shapes and names checked). */
export function planOf<W>(
  header: SafetensorsHeader,
  file: string,
  assemble: (ld: Loader) => W,
): WeightsPlanOf<W> {
  const ld = new Loader({ entries: header.entries, ignored: header.ignored, read: null }, file);
  const skeleton = assemble(ld);
  const dtypes = new Map<string, DType>();
  for (const name of ld.byName.keys()) dtypes.set(name, header.entries.get(name)!.dtype);
  return { skeleton, byName: ld.byName, tiedHead: ld.tiedHead, dtypes };
}

/**
 * Checks a parsed safetensors header against the config — names, shapes, layers, LM head, unexpected tensors,
 * with loadWeights' messages — without reading any data (the streaming loaders' first step).
 */
export function planWeights(
  cfg: NeoXConfig,
  header: SafetensorsHeader,
  file = 'model.safetensors',
): WeightsPlan {
  return planOf(header, file, (ld) => assemble(cfg, ld, file));
}

/** A model's weights with every shape the config gives and empty data (to lay out buffers before any data). */
export function emptyWeights(cfg: NeoXConfig): ModelWeights {
  const { vocabSize: V, hiddenSize: d, intermediateSize: ff } = cfg;
  const t = (shape: number[]): Tensor => ({ shape, data: new Float32Array(0) });
  const norm = (): NormWeights => ({ weight: t([d]), bias: t([d]) });
  const lin = (out: number, inp: number, bias: boolean): LinearWeights => ({
    weight: t([out, inp]),
    bias: bias ? t([out]) : null,
  });
  const embedIn = t([V, d]);
  return {
    embedIn,
    layers: Array.from({ length: cfg.numLayers }, () => ({
      inputLayernorm: norm(),
      postAttentionLayernorm: norm(),
      qkv: lin(3 * d, d, cfg.attentionBias),
      dense: lin(d, d, cfg.attentionBias),
      fc1: lin(ff, d, true),
      fc2: lin(d, ff, true),
    })),
    finalLayerNorm: norm(),
    lmHead: cfg.tieWordEmbeddings ? embedIn : t([V, d]),
  };
}

/** Parameter count and fp32 footprint of the weights loadWeights returns (a tied head counted once). */
export function modelSummary(cfg: NeoXConfig): { params: number; bytesF32: number } {
  const { vocabSize: V, hiddenSize: d, intermediateSize: ff, numLayers: L } = cfg;
  const attnBias = cfg.attentionBias ? 4 * d : 0; // qkv [3d] + dense [d]
  const perLayer = 4 * d + 3 * d * d + d * d + attnBias + ff * d + ff + d * ff + d;
  const params = V * d + L * perLayer + 2 * d + (cfg.tieWordEmbeddings ? 0 : V * d);
  return { params, bytesF32: 4 * params };
}
