// The typed API between the UI thread and the engine worker (comlink). Only types live here: the worker
// implements WorkerApi (engine.worker.ts), the client wraps it (client.ts). Everything that crosses the
// boundary is structured-cloneable data; errors cross as plain WorkerError objects, never as Error or `any`.

import type { Report } from '../compare/analyze';
import type { RunsReport } from '../compare/runs-report';
import type { RunsWarmup } from '../compare/runs-warmup';
import type { ModelInfo } from '../engine/engine';
import type { TimingSummary } from '../engine/timing';
import type { AdapterSummary, GpuFeatures } from '../gpu/device';
import type { PoolStats } from '../gpu/pool';
import type { KernelCheck, KernelDiagnostic } from '../kernels/custom/check';
import type { IsolatedResult, IsolatedRow } from '../kernels/custom/isolated';
import type { CustomSlotId } from '../kernels/custom/slots';
import type { NetLimits } from '../run/hub-fetch';
import type { RunSpec } from '../run/runspec';

export type {
  AdapterSummary,
  CustomSlotId,
  GpuFeatures,
  IsolatedResult,
  IsolatedRow,
  KernelCheck,
  KernelDiagnostic,
  ModelInfo,
  PoolStats,
  Report,
  RunSpec,
  RunsReport,
  TimingSummary,
};

/** What went wrong, in words the UI can act on. */
export type WorkerErrorKind =
  /** navigator.gpu is missing or no adapter was found. */
  | 'no-webgpu'
  /** The GPU device was lost (driver reset, tab in background too long, destroy()). */
  | 'device-lost'
  /** A model file could not be fetched or was refused (config.json, model.safetensors, tokenizer.json). */
  | 'model'
  /**
   * The weights do not hash to the sha256 the caller expected (a link's model): nothing was loaded, and the
   * model loaded before (if any) is still loaded.
   */
  | 'model-mismatch'
  /** The request itself is wrong: empty prompt, too many tokens, ids out of range, a malformed RunSpec. */
  | 'input'
  /** cancel() stopped a generation or a comparison. */
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

/** A loaded model: the engine's summary plus the sha256 of its weights file (what a RunSpec names). */
export interface LoadedModel extends ModelInfo {
  /** Lower-case hex sha256 of model.safetensors as loaded, or of the shards' manifest (sharded weights). */
  sha256: string;
  /** Size of the weights in bytes (all shards together). */
  weightsBytes: number;
  /** Sharded weights: each shard's sha256, by file name (links carry them). */
  files?: Record<string, string>;
}

/** Model files read from disk on the UI thread. `weights` is transferred (the caller's copy is detached). */
export interface ModelFilesInput {
  /** config.json text. */
  config: string;
  /** model.safetensors bytes. */
  weights: ArrayBuffer;
  /** tokenizer.json text; without it the model takes token ids only. */
  tokenizer?: string;
  /** Display name (folder or file name). */
  name: string;
}

/** Model files as Blobs (a File, a cached download): the worker streams the weights, never holding them whole. */
export interface ModelBlobInput {
  /** config.json text. */
  config: string;
  /** model.safetensors (a Blob is cloned cheaply across the boundary: no copy of its bytes). */
  weights: Blob;
  /** tokenizer.json text; without it the model takes token ids only. */
  tokenizer?: string;
  /** Display name (folder or file name). */
  name: string;
}

/** Sharded weights read by the page: the index's text and each shard as a Blob (streamed, never whole). */
export interface ModelShardsInput {
  config: string;
  /** model.safetensors.index.json text. */
  index: string;
  shards: { file: string; blob: Blob }[];
  tokenizer?: string;
  name: string;
}

/** A Hub repository at a revision, resolved before anything large is downloaded (WorkerApi.resolveHub). */
export interface HubProbe {
  repo: string;
  /** As asked: a branch, a tag or a commit. */
  revision: string;
  /** The commit it names now: the model's folder URL pins it. */
  commit: string;
  /** `<hub>/<repo>/resolve/<commit>/`. */
  url: string;
  /** The family config.json names, and a Llama-family model's flavour (absent in probes made before there were two). */
  family?: 'gpt_neox' | 'llama';
  flavour?: string | null;
  /** The weights files with their sizes and sha256 (the Hub's LFS oids). */
  weights: { path: string; size: number; sha256: string }[];
  /** config.json's size as listed. */
  configBytes: number;
  /** tokenizer.json's size as listed, or null when the repository has none (the model then takes token ids). */
  tokenizerBytes: number | null;
  sharded: boolean;
  /** What the model is known by: the sha256 of model.safetensors, or of the shards' manifest. */
  sha256: string;
  /** Config, tokenizer, index and weights together, from the Hub's listing. */
  totalBytes: number;
  params: number;
  minGpuBytes: number;
  budgetBytes: number | null;
  /** One line refusing the model before download (it cannot fit), or null. */
  refusal: string | null;
}

/** How a model is loaded: checked against an expected hash, and kept in the IndexedDB model cache. */
export interface LoadOptions {
  /** Refuse (kind 'model-mismatch') unless the weights hash to this sha256 (sharded: of the shards' manifest). */
  expectSha256?: string;
  /** Sharded weights: refuse a shard unless it hashes to the sha256 named for it (checked as it ends). */
  expectFiles?: Record<string, string>;
  /** Keep the files in the model cache (src/run/history.ts) under their sha256 after a good load. */
  cache?: boolean;
  /**
   * A URL model: the size of each file the viewer agreed to (a Hub listing, by file name: config.json,
   * tokenizer.json, the weights); a file whose server sends more, or fewer, bytes is refused (src/run/hub-fetch.ts).
   */
  expectBytes?: Record<string, number>;
  /** A URL model: the network's bounds (timeouts; tests shorten them). */
  net?: Partial<NetLimits>;
}

/** What a URL model costs, known before its download (WorkerApi.probeModelUrl). */
export interface UrlProbe {
  /**
   * config.json, tokenizer.json (when there), then model.safetensors or the index and its shards: Content-Length
   * of a HEAD, or null.
   */
  files: { file: string; bytes: number | null }[];
  /** The three together, or null when a server did not say. */
  totalBytes: number | null;
  /** Parameters, from config.json. */
  params: number;
  /** The least GPU memory its weights can take (matrices in fp16). */
  minGpuBytes: number;
  /** The user's cap on the engine's GPU memory for weights, or null (none: the adapter decides by allocating). */
  budgetBytes: number | null;
  /** One line refusing the model before download (it cannot fit the budget), or null. */
  refusal: string | null;
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

/** How a comparison runs (not part of the RunSpec: the same run, measured another way). */
export interface CompareOptions {
  /** The fp64-class oracle: 'auto' (default) lets the engine choose for the adapter. */
  oracle?: 'auto' | 'gpu' | 'cpu';
}

/** Progress of a comparison, as analyze() reports it. */
export interface CompareProgress {
  /** 'reference', 'fused', 'oracle', 'local', 'local layer 2', 'bisection', 'determinism', 'generation'. */
  phase: string;
  done: number;
  total: number;
}

/**
 * A piece of the report sent while the comparison runs (analyze's onPartial), so the page shows results as
 * they exist: first the analysis (layers, verdict, taps, timing; bisection, determinism and generation not
 * yet known), then each of those as it finishes, and every generated token on each path.
 */
export type ComparePartial =
  | { kind: 'analysis'; report: Report }
  | { kind: 'bisection'; bisection: Report['bisection'] }
  | { kind: 'determinism'; determinism: Report['determinism'] }
  | { kind: 'why'; why: NonNullable<Report['why']> }
  | {
      kind: 'token';
      path: 'reference' | 'fused';
      /** The ids generated so far on this path. */
      ids: number[];
      /** Those ids decoded (null without a tokenizer). */
      text: string | null;
      /** How many tokens are asked for. */
      total: number;
    };

/** A run file the page read (picker or drag-and-drop), and the sha256 a link names for it, if any. */
export interface RunFileInput {
  name: string;
  blob: Blob;
  expectedSha256?: string;
}

/** Bytes of a run file read so far. */
export interface RunLoadProgress {
  file: string;
  loadedBytes: number;
  totalBytes: number | null;
}

/** Where the runs warm-up of this worker stands (src/worker/runs.ts RunsWarmer.warm's answer). */
export interface RunsWarmupStatus {
  /**
   * 'done': it ran to its end, now or earlier in this worker; 'paid': an import ran first and paid what it would have;
   * 'skipped': not run now (`why`), asked again the next time the runs panel opens.
   */
  state: 'done' | 'paid' | 'skipped';
  /** Warm-ups started in this worker, and run to their end (never more than one). */
  started: number;
  finished: number;
  /** Its tokens, time and phases (as bench/runs.ts logs them) once done. */
  warmup: RunsWarmup | null;
  why?: string;
}

export interface WorkerApi {
  /**
   * Creates the one Engine of this worker. Never throws: a missing WebGPU is a result, not an exception.
   * `onDeviceLost` (optional) is called once if the GPU device is lost later, even while nothing runs.
   */
  init(onDeviceLost?: (e: WorkerError) => void): Promise<InitResult>;
  /**
   * Fetches config.json, tokenizer.json and model.safetensors under baseUrl (an absolute URL ending in '/'):
   * the weights are streamed into the engine and hashed as they arrive (never held whole); a model that cannot
   * fit the memory budget is refused from its config.json, before the weights are asked for. cancel() stops
   * the download (kind 'cancelled'); the model loaded before stays loaded.
   */
  loadModelFromUrl(
    baseUrl: string,
    onProgress: (p: LoadProgress) => void,
    options?: LoadOptions,
  ): Promise<LoadedModel>;
  /**
   * Sizes and memory need of the model under baseUrl before downloading it: HEAD of the three files and
   * config.json (small). Rejects with a WorkerError (kind 'model' or 'input') when a file cannot be reached.
   */
  probeModelUrl(baseUrl: string, net?: Partial<NetLimits>): Promise<UrlProbe>;
  /**
   * A Hub repository at a revision (branch, tag or commit) through the Hub's API: its commit, the weights'
   * sizes and sha256, config.json read for the parameters and the GPU memory needed, and the refusal when it
   * cannot fit. Downloads no weights; reads nothing unbounded. `hubUrl` is the Hub's origin (a mirror, a stand-in
   * in tests). A newer lookup stops the one before (kind 'cancelled'), its requests with it.
   */
  resolveHub(repo: string, revision: string, hubUrl: string, net?: Partial<NetLimits>): Promise<HubProbe>;
  /** Loads sharded weights the page read (index + shard Blobs), checked against the index before any upload. */
  loadModelFromShards(files: ModelShardsInput, options?: LoadOptions): Promise<LoadedModel>;
  /** Loads a model from files the page read (picker or drag-and-drop). */
  loadModelFromFiles(files: ModelFilesInput, options?: LoadOptions): Promise<LoadedModel>;
  /** Loads a model whose weights are a Blob, streaming and hashing them (cancel() stops it). */
  loadModelFromBlob(files: ModelBlobInput, options?: LoadOptions): Promise<LoadedModel>;
  /** Greedy generation of n new tokens after the encoded prompt. */
  generate(prompt: string, n: number, onToken: (ev: TokenEvent) => void): Promise<GenerateResult>;
  /**
   * The whole comparison of one RunSpec on the loaded model (src/compare/analyze.ts). Tokens come from the
   * model's tokenizer for prompt.text, or are prompt.tokens. Rejects with kind 'cancelled' after cancel().
   */
  compare(
    spec: RunSpec,
    onProgress: (p: CompareProgress) => void,
    onPartial?: (p: ComparePartial) => void,
    options?: CompareOptions,
  ): Promise<Report>;
  /**
   * The analysis of one or two runs made elsewhere (docs/RUNS.md) on the loaded model: each file streamed tensor
   * by tensor and hashed, every name, shape and token checked against the model before any GPU work (kind
   * 'model' with one line), a sha256 the link names checked (kind 'model-mismatch'). The loaded model stays as
   * it was whatever the files hold. Rejects with kind 'cancelled' after cancel().
   */
  compareRuns(
    runs: RunFileInput[],
    onLoad: (p: RunLoadProgress) => void,
    onProgress: (p: CompareProgress) => void,
  ): Promise<RunsReport>;
  /**
   * The runs analysis's warm-up (src/worker/runs.ts RunsWarmer): run once per worker on the loaded model, yielded
   * to any job that arrives meanwhile; says what it cost, or why it did not run now.
   */
  warmRuns(): Promise<RunsWarmupStatus>;
  /**
   * Compiles a kernel written in the page for a fused-kernel slot (its WGSL file replaced by `source`) and
   * checks its binding interface against the shipped kernel's: compiler messages at their line and column in
   * `source`, interface problems naming the binding. Runs nothing.
   */
  checkKernel(slot: CustomSlotId, source: string): Promise<KernelCheck>;
  /**
   * The slot's isolated test (src/kernels/custom/recipes.ts) with `source` as its file (null: the shipped
   * file): seeded random inputs at a few shapes, NaN-poisoned outputs, the fp64 oracle chain. A source that
   * does not pass checkKernel is refused (kind 'input').
   */
  testKernel(slot: CustomSlotId, source: string | null, seed: number): Promise<IsolatedResult>;
  /** Decodes ids with the loaded model's tokenizer (null when the model has none). */
  decode(ids: number[]): Promise<string | null>;
  /** Stops a running generation, comparison or model download; it then rejects with kind 'cancelled'. */
  cancel(): void;
  /** The engine's buffer pool: bytes handed out to a running pass (bytesInUse) and kept for reuse. */
  poolStats(): PoolStats;
  /** Test hook: destroys the GPU device as a driver reset would (the page shows the device-lost message). */
  debugLoseDevice(): void;
  /**
   * Caps the GPU memory a model's weights may take at `gib` GiB (null: no cap; the adapter's limits and a failed
   * allocation still refuse a model). Later loads and probes use it. Rejects (kind 'input') on a bad value.
   */
  setMemoryBudget(gib: number | null): Promise<void>;
}
