// A run file (docs/RUNS.md, the contract): one safetensors file of named tensors from one forward of a known model on
// known tokens, dumped by forward hooks in PyTorch (tools/dump_run.py) or anything that writes the same names. Read as
// a stream, tensor by tensor; everything that can be checked against the model's config is checked as soon as the
// header is in, before any tensor is decoded and before any GPU work: one line naming what is wrong.

import type { DType, ModelConfig } from '../numeric/types';
import { familyOf } from '../ops/families';
import type { FamilySpec } from '../ops/types';
import { ModelLoadError, quoteName } from './errors';
import { parseRunGeneration, partedPair, type RunGeneration } from './run-generation';
import { familyLayerIndexIn, layerIndexIn, slotOfFamilyName, slotOfName } from './run-names';
import { checkShape, familyRef, type NameRef, neoxRef } from './run-shape';
import type { SafetensorsEntry } from './safetensors';
import { streamSafetensors } from './stream';

/** One slot of a run: the tensor that filled it, as f32 [T, width]. */
export interface RunTensor {
  /** The run's own name for it (the first of its aliases in the file). */
  name: string;
  dtype: DType;
  data: Float32Array;
}

/** Two names of one slot whose tensors differ: something changed the tensor between two modules. */
export interface Handoff {
  slot: string;
  kept: string;
  other: string;
  /** Elements whose bits differ. */
  differing: number;
}

export interface RunFile {
  file: string;
  tokens: number[];
  label: string | null;
  device: string | null;
  dtype: string | null;
  /** Slot → tensor ('embed', 'layers.3.ln1', …, 'logits'). */
  slots: Map<string, RunTensor>;
  /** Names in the file the contract does not use (skipped, listed in the report). */
  ignored: string[];
  handoffs: Handoff[];
  /** The widest storage dtype among the slots' tensors (F32 > F16 > BF16 in precision). */
  storage: DType;
  bytes: number;
  /** A run of a generation (run-generation.ts): the prefill's length and the generated ids; null otherwise. */
  generation?: RunGeneration | null;
}

/** What a run file's checked header says of it, before any tensor is read. */
export interface RunHeader {
  tokens: number[];
  /** Slot → the tensor that will fill it (the first of its aliases in the file). */
  slots: Map<string, { name: string; dtype: DType }>;
}

export interface ReadRunOptions {
  file?: string;
  signal?: AbortSignal;
  onProgress?(loaded: number, total: number | null): void;
  /** Once the header is checked, before any tensor is read (an analysis may start on it). */
  onHeader?(header: RunHeader): void;
  /** Each slot's tensor as it arrives, in file order (an analysis may take it up while the rest is read). */
  onSlot?(slot: string, tensor: RunTensor): void;
  /**
   * A native comparison of two byte ranges of equal length (Node: Buffer.compare, a memcmp): a slot's second name
   * whose bytes it finds equal to the first's skips the element loop that counts differing elements.
   */
  sameBytes?(a: Uint8Array, b: Uint8Array): boolean;
}

function bad(file: string, detail: string, key?: string): ModelLoadError {
  return new ModelLoadError(file, detail, key);
}

/** `__metadata__.tokens`: a JSON list of token ids inside the vocabulary, within max_position_embeddings. */
export function parseRunTokens(
  meta: Record<string, string>,
  cfg: Pick<ModelConfig, 'vocabSize' | 'maxPositionEmbeddings'>,
  file: string,
): number[] {
  const raw = meta.tokens;
  if (raw === undefined)
    throw bad(file, "__metadata__ has no 'tokens' (the JSON list of token ids the run was made on)");
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    throw bad(file, "__metadata__.tokens is not JSON (expected a list of token ids, e.g. '[3, 14, 15]')");
  }
  if (!Array.isArray(v) || v.length === 0)
    throw bad(file, '__metadata__.tokens must be a non-empty JSON list of token ids');
  v.forEach((id, t) => {
    if (!Number.isInteger(id) || id < 0 || id >= cfg.vocabSize)
      throw bad(
        file,
        `__metadata__.tokens[${t}] = ${JSON.stringify(id)} is not a token id of this model (vocabulary ${cfg.vocabSize})`,
      );
  });
  if (v.length > cfg.maxPositionEmbeddings)
    throw bad(
      file,
      `__metadata__.tokens holds ${v.length} tokens, past the model's max_position_embeddings ${cfg.maxPositionEmbeddings}`,
    );
  return v as number[];
}

/** What a run's header shows of the model it was made with: each null where no tensor tells. */
export interface RunModelShape {
  /** The logits' width. */
  vocab: number | null;
  /** The largest token id in `__metadata__.tokens` (the vocabulary is larger). */
  maxTokenId: number | null;
  /** The residual stream's width (a hidden slot's, or a third of the QKV projection's). */
  hidden: number | null;
  /** Layers at least: the highest layer a name mentions, plus one (hidden_states.N: N). */
  minLayers: number | null;
}

/**
 * The model a run's header shows, from its contract tensors' shapes, its names and its tokens (no data read).
 * `spec`: a family of the op registry whose names the run uses (the Llama family's); absent: GPT-NeoX's names.
 */
export function runModelShape(
  entries: Iterable<{ name: string; shape: readonly number[] }>,
  meta: Record<string, string>,
  spec?: FamilySpec,
): RunModelShape {
  const shape: RunModelShape = { vocab: null, maxTokenId: null, hidden: null, minLayers: null };
  const family = spec && spec.family !== 'gpt_neox' ? spec : null;
  for (const { name, shape: s } of entries) {
    const i = family ? familyLayerIndexIn(family, name) : layerIndexIn(name);
    if (i !== null) {
      const n = name.startsWith('hidden_states.') ? i : i + 1;
      shape.minLayers = Math.max(shape.minLayers ?? 0, n);
    }
    const w = s[s.length - 1];
    if (family) {
      const ref = slotOfFamilyName(family, name, Number.MAX_SAFE_INTEGER);
      if (!ref || s.length !== 2 || !Number.isSafeInteger(w)) continue;
      if (ref.width === 'vocab') shape.vocab ??= w;
      else if (ref.width === 'hidden') shape.hidden ??= w;
      continue;
    }
    const ref = slotOfName(name, Number.MAX_SAFE_INTEGER);
    if (!ref || ref.heads || s.length < 2 || !Number.isSafeInteger(w)) continue;
    if (ref.kind === 'vocab') shape.vocab ??= w;
    else if (ref.kind === 'hidden') shape.hidden ??= w;
    else if (ref.kind === 'qkv' && w % 3 === 0) shape.hidden ??= w / 3;
  }
  try {
    const ids: unknown = JSON.parse(meta.tokens ?? 'null');
    if (Array.isArray(ids))
      for (const t of ids)
        if (Number.isSafeInteger(t) && t >= 0) shape.maxTokenId = Math.max(shape.maxTokenId ?? 0, t);
  } catch {
    // Not JSON: parseRunTokens says so.
  }
  return shape;
}

/**
 * How a run's model differs from the loaded one, in words ("vocabulary 350, this one has 256"), or null where
 * nothing in its header says it is another model.
 */
export function otherModelWords(
  shape: RunModelShape,
  cfg: Pick<ModelConfig, 'vocabSize' | 'hiddenSize' | 'numLayers'>,
): string | null {
  const parts: string[] = [];
  if (shape.vocab !== null && shape.vocab !== cfg.vocabSize)
    parts.push(`vocabulary ${shape.vocab}, this one has ${cfg.vocabSize}`);
  else if (shape.vocab === null && shape.maxTokenId !== null && shape.maxTokenId >= cfg.vocabSize)
    parts.push(`token id ${shape.maxTokenId}, past this one's vocabulary of ${cfg.vocabSize}`);
  if (shape.hidden !== null && shape.hidden !== cfg.hiddenSize)
    parts.push(`hidden size ${shape.hidden}, this one has ${cfg.hiddenSize}`);
  if (shape.minLayers !== null && shape.minLayers > cfg.numLayers)
    parts.push(`at least ${shape.minLayers} layers, this one has ${cfg.numLayers}`);
  return parts.length > 0 ? parts.join('; ') : null;
}

/** The suffixes of a model's parameters (a weights file), never of a run's tensors. */
const PARAMETER = /\.(weight|bias)$/;

/**
 * A model's weights file picked as a run: no `__metadata__.tokens` and its tensors named as parameters
 * (`gpt_neox.embed_in.weight`). The words, or null for anything else (which the run checks judge).
 */
export function weightsNotRunWords(names: readonly string[], meta: Record<string, string>): string | null {
  if (meta.tokens !== undefined || names.length === 0) return null;
  const params = names.filter((n) => PARAMETER.test(n));
  if (params.length * 2 < names.length) return null;
  return `a model's weights (${params.length} parameters such as ${quoteName(params[0])}), not a run: a run holds the tensors of one forward and its __metadata__.tokens (docs/RUNS.md); weights are loaded in the model panel`;
}

const RANK: Record<DType, number> = { F32: 2, F16: 1, BF16: 0 };

/**
 * Elements whose bits differ (NaN payloads included). Where both arrays start at the same offset mod 8, pairs of
 * elements are compared as one double: two doubles that are equal and not zero have the same bits (±0 and NaN
 * take the exact comparison of their halves), which halves the loop's trips over the usual, identical, aliases.
 */
export function bitDiff(a: Float32Array, b: Float32Array): number {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  const len = Math.min(x.length, y.length);
  if (len === 0) return 0;
  let n = 0;
  let i = 0;
  if (a.byteOffset % 8 === b.byteOffset % 8) {
    if (a.byteOffset % 8 !== 0) {
      if (x[0] !== y[0]) n++;
      i = 1;
    }
    const pairs = (len - i) >> 1;
    const p = new Float64Array(a.buffer, a.byteOffset + 4 * i, pairs);
    const q = new Float64Array(b.buffer, b.byteOffset + 4 * i, pairs);
    for (let k = 0; k < pairs; k++) {
      const v = p[k];
      if (v === q[k] && v !== 0) continue;
      const j = i + 2 * k;
      n += (x[j] !== y[j] ? 1 : 0) + (x[j + 1] !== y[j + 1] ? 1 : 0);
    }
    i += 2 * pairs;
  }
  for (; i < len; i++) if (x[i] !== y[i]) n++;
  return n;
}

/**
 * Reads a run file from a stream of chunks for the model `cfg`. The header, the metadata and every used tensor's
 * name, dtype and shape are checked before any tensor is read; then each tensor is decoded as it arrives and kept
 * once per slot (a second name of the same slot is compared bit for bit with the first and dropped).
 */
export async function readRunFile(
  source: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>,
  totalBytes: number | null,
  cfg: ModelConfig,
  opts: ReadRunOptions = {},
): Promise<RunFile> {
  const file = opts.file ?? 'run.safetensors';
  const L = cfg.numLayers;
  // A Llama-family model's runs use its names (run-names.ts slotOfFamilyName); GPT-NeoX's keep theirs.
  const llama = cfg.family === 'llama' ? cfg : null;
  const neox = cfg.family === 'llama' ? null : cfg;
  const spec = llama ? familyOf(llama) : null;
  const refOf = (name: string): NameRef | null => {
    if (llama && spec) return familyRef(name, spec, llama);
    const ref = slotOfName(name, L);
    return ref && neox && neoxRef(ref, neox);
  };
  const indexOf = (name: string) => (spec ? familyLayerIndexIn(spec, name) : layerIndexIn(name));
  const refs = new Map<string, NameRef>();
  const ignored: string[] = [];
  const slots = new Map<string, RunTensor>();
  /** The names whose arrays are kept: each slot's first in the file (tensors come in offset order). */
  const kept = new Set<string>();
  const handoffs: Handoff[] = [];
  let tokens: number[] = [];
  let generation: RunGeneration | null = null;
  let meta: Record<string, string> = {};
  const used = (name: string) => {
    const ref = refOf(name);
    if (ref) refs.set(name, ref);
    else ignored.push(name);
    return ref !== null;
  };
  const { bytes } = await streamSafetensors(source, totalBytes, {
    file,
    views: true,
    keeps: (e) => kept.has(e.name),
    signal: opts.signal,
    onProgress: opts.onProgress,
    ignore: (name) => !used(name),
    onHeader(header) {
      meta = header.metadata;
      const names = [...ignored, ...header.entries.keys()];
      const weights = weightsNotRunWords(names, meta);
      if (weights) throw bad(file, weights);
      const other = otherModelWords(runModelShape(header.entries.values(), meta, spec ?? undefined), cfg);
      if (other) throw bad(file, `this run comes from another model (${other}): load theirs`);
      tokens = parseRunTokens(meta, cfg, file);
      generation = parseRunGeneration(meta, tokens, cfg, file);
      for (const name of names) {
        const i = indexOf(name);
        const last = name.startsWith('hidden_states.') ? L : L - 1;
        if (i !== null && i > last)
          throw bad(
            file,
            `tensor ${quoteName(name)} names layer ${i}, but the model has ${L} layers (a run of another model?)`,
            name,
          );
      }
      if (header.entries.size === 0)
        throw bad(
          file,
          `no tensor of the run-file contract (module paths with ':in'/':out', 'hidden_states.N', 'logits'; docs/RUNS.md) among its ${ignored.length} tensors`,
        );
      const first = new Map<string, SafetensorsEntry>();
      for (const e of header.entries.values()) {
        checkShape(e, refs.get(e.name)!, tokens.length, file);
        const slot = refs.get(e.name)!.slot;
        const f = first.get(slot);
        if (!f || e.begin < f.begin || (e.begin === f.begin && e.end < f.end)) first.set(slot, e);
      }
      for (const e of first.values()) kept.add(e.name);
      const planned = new Map([...first].map(([slot, e]) => [slot, { name: e.name, dtype: e.dtype }]));
      opts.onHeader?.({ tokens: [...tokens], slots: planned });
    },
    onTensor(name, e, data, view) {
      const ref = refs.get(name)!;
      const held = slots.get(ref.slot);
      if (!held) {
        // A view on the chunk is copied once (its chunk may hold aliases and ignored tensors: not kept whole).
        const t = { name, dtype: e.dtype, data: view ? data.slice() : data };
        slots.set(ref.slot, t);
        opts.onSlot?.(ref.slot, t);
        return;
      }
      // A second name of the slot: compared where it lies (a view on its chunk or on the scratch array) and dropped.
      const bytes = (v: Float32Array) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
      const same =
        opts.sameBytes && held.data.length === data.length && opts.sameBytes(bytes(held.data), bytes(data));
      const differing = same ? 0 : bitDiff(held.data, data);
      if (differing > 0) handoffs.push({ slot: ref.slot, kept: held.name, other: name, differing });
    },
  });
  let storage: DType = 'BF16';
  for (const t of slots.values()) if (RANK[t.dtype] > RANK[storage]) storage = t.dtype;
  const str = (k: string) => (typeof meta[k] === 'string' && meta[k] !== '' ? meta[k] : null);
  return {
    file,
    tokens,
    label: str('label'),
    device: str('device'),
    dtype: str('dtype'),
    slots,
    ignored,
    handoffs,
    storage,
    bytes,
    generation,
  };
}

/** Two runs must be of the same tokens to be compared with each other. */
export function checkSameTokens(a: RunFile, b: RunFile): void {
  // Two generations of one prompt whose texts part are compared on the rows they share (run-generation.ts).
  if (partedPair(a, b)) return;
  const same = a.tokens.length === b.tokens.length && a.tokens.every((t, i) => t === b.tokens[i]);
  if (same) return;
  const at = a.tokens.findIndex((t, i) => t !== b.tokens[i]);
  const where =
    a.tokens.length !== b.tokens.length
      ? `${a.tokens.length} tokens against ${b.tokens.length}`
      : `they differ first at position ${at} (${a.tokens[at]} against ${b.tokens[at]})`;
  throw bad(b.file, `run B is of other tokens than run A (${a.file}): ${where}`);
}
