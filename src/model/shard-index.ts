// Sharded weights: `model.safetensors.index.json` (what `save_pretrained` writes past its shard size) read and
// checked against the shards' own headers before any tensor is read. The index is
// `{ "metadata": { "total_size": N, ... }, "weight_map": { "<tensor>": "<shard file>", ... } }`; a shard is an
// ordinary safetensors file beside it. Everything wrong is one ModelLoadError line naming the file and what is
// wrong: a shard named by the index and not there, a tensor in two shards or in none, a shard holding tensors
// the index does not list (or lists in another shard), a total size that disagrees with the headers.
// Pure: reading the headers is the caller's (src/model/shard-stream.ts).

import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { describeJson, ModelLoadError, quoteName } from './errors';
import { checkJsonDepth, checkNoDuplicateKeys, stripBom } from './json-text';
import type { SafetensorsEntry, SafetensorsHeader } from './safetensors';

export const INDEX_FILE = 'model.safetensors.index.json';

/** More shards than this is not a checkpoint anyone writes (Pythia-12b has 3; 1 TB at 1 GB a shard is 1000). */
export const MAX_SHARDS = 4096;
/** The index file's size limit: a weight map of 100k tensors is a few MB. */
export const MAX_INDEX_BYTES = 32 << 20;

/** A shard's file name: one path segment, ending in .safetensors (no folders, no '..', no control characters). */
const SHARD_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,198}\.safetensors$/;

export interface ShardIndex {
  /** tensor name -> shard file. */
  weightMap: Map<string, string>;
  /** The shard files the index names, in the order of their first tensor in the weight map, sorted by name. */
  shards: string[];
  /** metadata.total_size, or null when the index gives none. */
  totalSize: number | null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The first key that appears twice inside the object at `"weight_map"` (depth 2), or null. Text is valid JSON. */
function duplicateWeightMapKey(text: string): string | null {
  let depth = 0;
  let inMap = false;
  let mapNext = false;
  const seen = new Set<string>();
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const start = i;
      for (i++; i < text.length; i++) {
        const s = text.charCodeAt(i);
        if (s === 0x5c) i++;
        else if (s === 0x22) break;
      }
      let j = i + 1;
      while (j < text.length && /\s/.test(text[j])) j++;
      if (text[j] !== ':') continue; // a value, not a key
      const key = JSON.parse(text.slice(start, i + 1)) as string;
      if (depth === 1) mapNext = key === 'weight_map';
      else if (depth === 2 && inMap) {
        if (seen.has(key)) return key;
        seen.add(key);
      }
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth === 2 && mapNext && c === 0x7b) inMap = true;
    } else if (c === 0x7d || c === 0x5d) {
      if (depth === 2) inMap = false;
      depth--;
    }
  }
  return null;
}

/** Parses and checks `model.safetensors.index.json` text (the shards themselves are checked by checkShards). */
export function parseShardIndex(text: string, file = INDEX_FILE): ShardIndex {
  if (text.length > MAX_INDEX_BYTES)
    throw new ModelLoadError(file, `is ${text.length} characters, too large`);
  const t = stripBom(text);
  checkJsonDepth(t, 8, file);
  let v: unknown;
  try {
    v = JSON.parse(t);
  } catch (e) {
    throw new ModelLoadError(file, `not JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  if (!isObject(v)) throw new ModelLoadError(file, `must be a JSON object, found ${describeJson(v)}`);
  checkNoDuplicateKeys(t, file, 'key');
  const dup = duplicateWeightMapKey(t);
  if (dup !== null)
    throw new ModelLoadError(
      file,
      `tensor ${quoteName(dup)} is in the weight map twice (in two shards)`,
      dup,
    );
  const map = v.weight_map;
  if (!isObject(map)) throw new ModelLoadError(file, `has no weight_map object (found ${describeJson(map)})`);
  const weightMap = new Map<string, string>();
  const shards = new Set<string>();
  for (const [name, shard] of Object.entries(map)) {
    if (typeof shard !== 'string')
      throw new ModelLoadError(
        file,
        `tensor ${quoteName(name)} maps to ${describeJson(shard)}, not a file`,
        name,
      );
    if (!SHARD_NAME.test(shard))
      throw new ModelLoadError(
        file,
        `tensor ${quoteName(name)} maps to ${quoteName(shard)}: a shard is a *.safetensors file beside the index`,
        name,
      );
    weightMap.set(name, shard);
    shards.add(shard);
    if (shards.size > MAX_SHARDS) throw new ModelLoadError(file, `names more than ${MAX_SHARDS} shards`);
  }
  if (weightMap.size === 0) throw new ModelLoadError(file, 'has an empty weight_map');
  let totalSize: number | null = null;
  const meta = v.metadata;
  if (meta !== undefined && meta !== null) {
    if (!isObject(meta))
      throw new ModelLoadError(file, `metadata must be an object, found ${describeJson(meta)}`);
    const ts = meta.total_size;
    if (ts !== undefined) {
      // transformers counts a bool element as 1/8 byte: the total may have a fraction.
      if (typeof ts !== 'number' || !Number.isFinite(ts) || ts < 0)
        throw new ModelLoadError(
          file,
          `metadata.total_size must be a number of bytes, found ${describeJson(ts)}`,
        );
      totalSize = ts;
    }
  }
  return { weightMap, shards: [...shards].sort(), totalSize };
}

/** One shard's header as read before its data: every tensor (ignored buffers too) with its dtype and bytes. */
export interface ShardHeader {
  file: string;
  header: SafetensorsHeader;
  /** Every tensor in the header, ignored ones included: name -> dtype and byte length. */
  all: Map<string, { dtype: string; bytes: number }>;
  /** The shard file's size in bytes (8 + header + data). */
  bytes: number;
}

/**
 * Checks the shards' headers against the index, before any tensor is read: every shard the index names is
 * there (and no other), each tensor of the index is in the shard it names and in no other, each shard holds
 * only tensors the index puts in it, and metadata.total_size agrees with the tensors' bytes (counted as the
 * format stores them, or with U8/BOOL elements at 1/8 byte as transformers' dtype_byte_size does for the
 * bool causal-mask buffers of older checkpoints). Throws ModelLoadError, one line.
 */
export function checkShards(index: ShardIndex, heads: readonly ShardHeader[], file = INDEX_FILE): void {
  const byFile = new Map<string, ShardHeader>();
  for (const h of heads) {
    if (byFile.has(h.file)) throw new ModelLoadError(file, `shard ${quoteName(h.file)} was given twice`);
    byFile.set(h.file, h);
  }
  for (const s of index.shards)
    if (!byFile.has(s)) throw new ModelLoadError(file, `shard ${quoteName(s)} is missing`, s);
  for (const h of heads)
    if (!index.shards.includes(h.file))
      throw new ModelLoadError(file, `${quoteName(h.file)} is not a shard of this index`, h.file);
  const holder = new Map<string, string>();
  let stored = 0;
  let eighths = 0;
  for (const s of index.shards) {
    const h = byFile.get(s)!;
    for (const [name, e] of h.all) {
      const other = holder.get(name);
      if (other !== undefined)
        throw new ModelLoadError(file, `tensor ${quoteName(name)} is in two shards: ${other} and ${s}`, name);
      holder.set(name, s);
      const listed = index.weightMap.get(name);
      if (listed === undefined)
        throw new ModelLoadError(
          file,
          `shard ${s} holds tensor ${quoteName(name)}, which the index does not list`,
          name,
        );
      if (listed !== s)
        throw new ModelLoadError(
          file,
          `tensor ${quoteName(name)} is in shard ${s}, but the index puts it in ${listed}`,
          name,
        );
      stored += e.bytes;
      eighths += e.dtype === 'U8' || e.dtype === 'BOOL' ? e.bytes / 8 : e.bytes;
    }
  }
  for (const [name, s] of index.weightMap)
    if (!holder.has(name))
      throw new ModelLoadError(
        file,
        `tensor ${quoteName(name)} is in no shard (the index puts it in ${s})`,
        name,
      );
  const ts = index.totalSize;
  if (ts !== null && ts !== stored && ts !== eighths)
    throw new ModelLoadError(
      file,
      `metadata.total_size is ${ts} bytes, but the shards' tensors hold ${stored} bytes`,
    );
}

/** The shards' headers as one header (every tensor, ignored names too): what the model plan is checked on. */
export function mergeHeaders(heads: readonly ShardHeader[]): SafetensorsHeader {
  const entries = new Map<string, SafetensorsEntry>();
  const ignored: string[] = [];
  for (const h of heads) {
    for (const [n, e] of h.header.entries) entries.set(n, e);
    ignored.push(...h.header.ignored);
  }
  return { entries, dataOffset: 0, metadata: {}, ignored };
}

/**
 * The digest a sharded model is known by (where a single file's sha256 would be): sha256-manifest lines
 * `<sha256>  <shard>` sorted by shard name, one per shard, each ending in '\n' — what `sha256sum` prints —
 * hashed by the caller. The index itself is not in it: what it says is checked against the shards' headers.
 */
export function shardManifest(shas: ReadonlyMap<string, string>): string {
  return [...shas]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([f, h]) => `${h}  ${f}\n`)
    .join('');
}

/** The sha256 (hex) a sharded model is known by: of its shard manifest (shardManifest). */
export function manifestSha256(shas: ReadonlyMap<string, string>): string {
  return bytesToHex(sha256(utf8ToBytes(shardManifest(shas))));
}
