// Run history and the model-file cache, in IndexedDB (idb-keyval). Pure async functions: the store and the UI
// call them; nothing here touches React or zustand.
//
// Runs live in one idb-keyval store, two keys per run: 's:<id>' holds the small summary the history list
// shows, 'r:<id>' the full record (spec + report). Listing reads only the summaries. The newest RUN_CAP runs
// are kept; a report larger than REPORT_MAX_BYTES (as JSON) is not stored, only its summary.
//
// Models live in their own database: idb-keyval opens each database with exactly one object store, so a
// second store cannot share the 'divergence-explorer' database. Entries are keyed by the sha256 of the
// weights (model.safetensors), the same hash a RunSpec's url/file model names.
import { clear, createStore, delMany, get, getMany, keys, setMany, type UseStore } from 'idb-keyval';
import { ALL_FUSED } from '../engine/fused-kernels';
import type { RunSpec } from './runspec';

export const RUN_CAP = 200;
export const REPORT_MAX_BYTES = 20 * 1024 * 1024;
export const MODEL_CAP = 3;
const PROMPT_EXCERPT = 60;

let runsStore: UseStore | null = null;
let modelsStore: UseStore | null = null;
// Created on first use, so importing this module never touches indexedDB (Node, tests, SSR).
const runs = () => (runsStore ??= createStore('divergence-explorer', 'runs'));
const models = () => (modelsStore ??= createStore('divergence-explorer-models', 'models'));

export type RunVerdict = 'agree' | 'diverged' | 'generation-diverged' | 'unknown';

export interface RunSummary {
  id: string;
  /** ISO 8601. */
  createdAt: string;
  /** The model's display name (report.model.name, else from the spec). */
  model: string;
  /** The prompt's first characters, or its first token ids. */
  prompt: string;
  verdict: RunVerdict;
  firstDivergentLayer: number | null;
  /** false when only the summary was kept (the report was too large or could not be stored). */
  hasReport: boolean;
  /** Precision, fused kernels and faults in a few words (absent in runs stored by older builds). */
  settings?: string;
  /** The report's size as UTF-8 JSON. */
  reportBytes: number;
}

export interface StoredRun {
  id: string;
  createdAt: string;
  spec: RunSpec;
  /** The report as saved, or null when only the summary was kept. */
  report: object | null;
  summary: RunSummary;
}

export interface NewRun {
  spec: RunSpec;
  report: object;
  createdAt: string | number | Date;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

function isoOf(t: string | number | Date): string {
  const d = t instanceof Date ? t : new Date(t);
  return Number.isFinite(d.getTime()) ? d.toISOString() : new Date().toISOString();
}

/** Ids sort by creation time (ms since 1970, base 36, fixed width), then by a random tail. */
function newId(createdAt: string): string {
  const ms = Math.max(0, Date.parse(createdAt));
  const rnd = new Uint32Array(1);
  crypto.getRandomValues(rnd);
  return `${ms.toString(36).padStart(9, '0')}-${rnd[0].toString(36).padStart(7, '0')}`;
}

function modelName(spec: RunSpec, report: object): string {
  const m = isObj(report) && isObj(report.model) ? report.model.name : undefined;
  if (typeof m === 'string' && m) return m.slice(0, 200);
  const ref = spec.model;
  switch (ref.kind) {
    case 'embedded':
      return ref.id;
    case 'url': {
      try {
        const u = new URL(ref.url);
        return (u.pathname.split('/').filter(Boolean).pop() ?? u.host).slice(0, 200) || u.host;
      } catch {
        return ref.url.slice(0, 200);
      }
    }
    case 'file':
      return ref.name?.slice(0, 200) ?? `file ${ref.sha256.slice(0, 12)}`;
  }
}

function promptExcerpt(spec: RunSpec): string {
  if ('text' in spec.prompt) {
    const t = spec.prompt.text.replace(/\s+/g, ' ').trim();
    return t.length > PROMPT_EXCERPT ? `${t.slice(0, PROMPT_EXCERPT - 1).trimEnd()}…` : t;
  }
  const ids = spec.prompt.tokens;
  const head = ids.slice(0, 12).join(', ');
  return `tokens: ${head}${ids.length > 12 ? ', …' : ''}`;
}

function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** The report's JSON size in bytes, or Infinity when it cannot be serialized (cycles, BigInt). */
function reportSize(report: object): number {
  try {
    const json = JSON.stringify(report);
    return typeof json === 'string' ? utf8Length(json) : Number.POSITIVE_INFINITY;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/**
 * What tells runs on one prompt apart: "fp32 · all 6 fused kernels · fault gptj_rotary from layer 2".
 */
export function settingsLine(spec: RunSpec): string {
  const n = spec.fused.length;
  const kernels =
    n === 0
      ? 'no fused kernels'
      : n === ALL_FUSED.size
        ? `all ${n} fused kernels`
        : `fused: ${spec.fused.join(', ')}`;
  const faults =
    spec.faults.length === 0
      ? 'no fault'
      : `fault ${spec.faults.map((f) => (f.fromLayer === undefined ? `${f.id} (seed ${spec.seed})` : `${f.id} from layer ${f.fromLayer}`)).join(', ')}`;
  const custom = spec.custom ? ` · custom ${spec.custom.slot} kernel` : '';
  return `${spec.precision} · ${kernels} · ${faults}${custom}`;
}

/** Saves a run (and prunes the oldest past RUN_CAP). Returns its id. */
export async function saveRun(run: NewRun): Promise<string> {
  const createdAt = isoOf(run.createdAt);
  const id = newId(createdAt);
  const r = run.report as Record<string, unknown>;
  const bytes = reportSize(run.report);
  const summary: RunSummary = {
    id,
    createdAt,
    model: modelName(run.spec, run.report),
    prompt: promptExcerpt(run.spec),
    verdict:
      r.verdict === 'agree' || r.verdict === 'diverged' || r.verdict === 'generation-diverged'
        ? r.verdict
        : 'unknown',
    firstDivergentLayer:
      typeof r.firstDivergentLayer === 'number' && Number.isInteger(r.firstDivergentLayer)
        ? r.firstDivergentLayer
        : null,
    hasReport: bytes <= REPORT_MAX_BYTES,
    reportBytes: Number.isFinite(bytes) ? bytes : 0,
    settings: settingsLine(run.spec),
  };
  const record = (report: object | null, s: RunSummary): StoredRun => ({
    id,
    createdAt,
    spec: run.spec,
    report,
    summary: s,
  });
  if (summary.hasReport) {
    try {
      await setMany(
        [
          [`s:${id}`, summary],
          [`r:${id}`, record(run.report, summary)],
        ],
        runs(),
      );
    } catch (e) {
      // A report the structured clone refuses (a function, a class instance): keep the summary.
      if (!(e instanceof Error) || e.name !== 'DataCloneError') throw e;
      summary.hasReport = false;
    }
  }
  if (!summary.hasReport) {
    await setMany(
      [
        [`s:${id}`, summary],
        [`r:${id}`, record(null, summary)],
      ],
      runs(),
    );
  }
  await pruneRuns();
  return id;
}

async function pruneRuns(): Promise<void> {
  const ids = (await keys(runs()))
    .filter((k): k is string => typeof k === 'string' && k.startsWith('s:'))
    .map((k) => k.slice(2))
    .sort();
  if (ids.length <= RUN_CAP) return;
  const old = ids.slice(0, ids.length - RUN_CAP);
  await delMany(
    old.flatMap((id) => [`s:${id}`, `r:${id}`]),
    runs(),
  );
}

/** Summaries of every stored run, newest first. */
export async function listRuns(): Promise<RunSummary[]> {
  const summaryKeys = (await keys(runs())).filter((k) => typeof k === 'string' && k.startsWith('s:'));
  const all = (await getMany<RunSummary>(summaryKeys, runs())).filter((s): s is RunSummary => !!s);
  return all.sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id));
}

export async function getRun(id: string): Promise<StoredRun | undefined> {
  return get<StoredRun>(`r:${id}`, runs());
}

export async function deleteRun(id: string): Promise<void> {
  await delMany([`s:${id}`, `r:${id}`], runs());
}

export async function clearRuns(): Promise<void> {
  await clear(runs());
}

// ------------------------------------------------------------------------------------------- model cache

export interface ModelFilesToCache {
  /** config.json text. */
  config: string;
  /** model.safetensors bytes (its sha256 is the cache key); a Blob is stored as one (browsers may keep it on disk). */
  weights: ArrayBuffer | ArrayBufferView | Blob;
  /** tokenizer.json text, if any. */
  tokenizer?: string;
}

export interface CachedModelInfo {
  sha256: string;
  name: string;
  /** ISO 8601. */
  cachedAt: string;
  bytes: number;
}

export interface CachedModel extends CachedModelInfo {
  config: string;
  weights: ArrayBuffer;
  tokenizer?: string;
}

const SHA256 = /^[0-9a-f]{64}$/;

function bytesOf(b: ArrayBuffer | ArrayBufferView): Uint8Array {
  return b instanceof ArrayBuffer ? new Uint8Array(b) : new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

/** Lower-case hex SHA-256 of the bytes (WebCrypto). */
export async function sha256Hex(bytes: ArrayBuffer | ArrayBufferView): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', bytesOf(bytes) as Uint8Array<ArrayBuffer>);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * Caches a model's files under the sha256 of its weights (checked: a mismatch throws, nothing is stored;
 * `hashed`: the caller computed `sha256` from these very bytes as they streamed in, so they are not hashed
 * again). Keeps the MODEL_CAP most recently cached models. Rejects with the browser's error when over quota.
 */
export async function cacheModelFiles(
  sha256: string,
  files: ModelFilesToCache,
  name: string,
  opts: { hashed?: boolean } = {},
): Promise<void> {
  if (!SHA256.test(sha256))
    throw new Error(`cacheModelFiles: '${sha256.slice(0, 80)}' is not a sha256 hex digest`);
  const blob = files.weights instanceof Blob ? files.weights : null;
  if (!(blob && opts.hashed)) {
    const actual = await sha256Hex(
      blob ? await blob.arrayBuffer() : (files.weights as ArrayBuffer | ArrayBufferView),
    );
    if (actual !== sha256) throw new Error(`cacheModelFiles: the weights hash to ${actual}, not ${sha256}`);
  }
  // An own copy: the caller's buffer may be transferred or reused (a Blob is immutable).
  const weights = blob ?? bytesOf(files.weights as ArrayBuffer | ArrayBufferView).slice().buffer;
  const info: CachedModelInfo = {
    sha256,
    name: name.slice(0, 200),
    cachedAt: new Date().toISOString(),
    bytes: blob ? blob.size : (weights as ArrayBuffer).byteLength,
  };
  const payload: { config: string; weights: ArrayBuffer | Blob; tokenizer?: string } = {
    config: files.config,
    weights,
  };
  if (files.tokenizer !== undefined) payload.tokenizer = files.tokenizer;
  await setMany(
    [
      [`m:${sha256}`, info],
      [`f:${sha256}`, payload],
    ],
    models(),
  );
  const others = (await listCachedModels()).filter((m) => m.sha256 !== sha256);
  const old = others.slice(MODEL_CAP - 1);
  if (old.length)
    await delMany(
      old.flatMap((m) => [`m:${m.sha256}`, `f:${m.sha256}`]),
      models(),
    );
}

export async function getCachedModel(sha256: string): Promise<CachedModel | undefined> {
  const m = await getCachedModelBlob(sha256);
  if (!m) return undefined;
  return { ...m, weights: m.weights instanceof Blob ? await m.weights.arrayBuffer() : m.weights };
}

/** A cached model with its weights as stored: a Blob for a streamed download (never read whole here). */
export async function getCachedModelBlob(
  sha256: string,
): Promise<(Omit<CachedModel, 'weights'> & { weights: ArrayBuffer | Blob }) | undefined> {
  if (!SHA256.test(sha256)) return undefined;
  const [info, files] = await getMany([`m:${sha256}`, `f:${sha256}`], models());
  if (!info || !files) return undefined;
  const f = files as { config: string; weights: ArrayBuffer | Blob; tokenizer?: string };
  return { ...(info as CachedModelInfo), ...f };
}

/** The cached models, most recently cached first (metadata only). */
export async function listCachedModels(): Promise<CachedModelInfo[]> {
  const metaKeys = (await keys(models())).filter((k) => typeof k === 'string' && k.startsWith('m:'));
  const all = (await getMany<CachedModelInfo>(metaKeys, models())).filter((m): m is CachedModelInfo => !!m);
  return all.sort((a, b) => b.cachedAt.localeCompare(a.cachedAt) || a.sha256.localeCompare(b.sha256));
}

export async function deleteCachedModel(sha256: string): Promise<void> {
  await delMany([`m:${sha256}`, `f:${sha256}`], models());
}

export async function clearModelCache(): Promise<void> {
  await clear(models());
}
