// The engine's options, results and error, and how a path resolves to the fused kernels it switches on:
// shared by engine.ts and the modules it runs on (batch, forward, generate), so that imports run one way,
// from the engine down. engine.ts re-exports all of it; callers import from there.
import type { AcquireOptions } from '../gpu/device';
import type { OverrideConstants } from '../gpu/pipelines';
import type { PassTiming } from '../gpu/timestamps';
import type { GemmPolicy } from '../kernels/gemm-configs';
import type { ShardedSource } from '../model/shard-stream';
import type { Weights } from '../model/weight-stream';
import type { Precision } from '../numeric/precision';
import type { HiddenDump, LlamaFlavour, ModelConfig, NeoXConfig } from '../numeric/types';
import type { LlamaFusedKernel } from '../ops/fused';
import { ALL_FUSED, type FusedKernelId } from './fused-kernels';
import type { PlanHooks } from './plan';

export interface EngineOptions extends AcquireOptions {
  /** GPU storage of the large weight matrices (default 'auto', see chooseF16Weights). */
  weights?: 'auto' | 'fp32' | 'fp16';
  /**
   * Refuse models whose weights need more than this many bytes of GPU memory (default: no cap of the user's;
   * the adapter's buffer limits and a failed allocation still refuse, see MemoryBudget).
   */
  memoryBudgetBytes?: number;
  /**
   * The fp32 CPU copy of the weights (the CPU oracle's input): 'keep' it from load, 'lazy' (made by
   * Engine.loadCpuWeights when needed), or 'auto' (default): kept on a CPU adapter, where the CPU oracle runs.
   */
  cpuWeights?: 'auto' | 'keep' | 'lazy';
  /** Cap on one storage binding (below the device's limit): large tensors are then split across buffers. */
  maxBindingBytes?: number;
  /** How the fused GEMMs pick tiles and split-K (default: gemmPolicyFor this adapter; tests force split-K). */
  gemm?: GemmPolicy;
  /**
   * Run the fused GEMMs on the subgroup core (shaders/common/gemm_subgroup.wgsl) where the device has subgroups of
   * one fixed size and the core passes its self-check there (src/kernels/gemm-subgroup-check.ts, run when the
   * engine starts); false: never. Default: the policy's subgroupCore (false on every adapter measured so far).
   */
  subgroupGemm?: boolean;
}

export interface ModelFiles {
  /** config.json text. */
  config: string;
  /** model.safetensors: its bytes, or a source read tensor by tensor (a file on disk, or an index and shards). */
  weights: Uint8Array | Weights;
  /** tokenizer description text (optional; byte-level when absent). */
  tokenizer?: string;
  /** A display name (folder or file name). */
  name?: string;
}

/** A model whose safetensors arrive as a stream (fetch body, File.stream(), a Node file): Engine.loadModelStream. */
export interface ModelStreamFiles {
  config: string;
  weights: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | ShardedSource;
  totalBytes: number | null;
  tokenizer?: string;
  name?: string;
  onProgress?: (loaded: number, total: number | null) => void;
  signal?: AbortSignal;
  /** The same bytes again from the start (a reload after a device loss); without it, no reload. */
  reopen?: () => ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;
}

export interface ModelInfo {
  name: string;
  /**
   * GPT-NeoX: its config. A Llama-family model: the dimensions every family shares in this shape
   * (family-llama.ts sharedDims); its own config is `modelConfig`.
   */
  config: NeoXConfig;
  /** The model family ('gpt_neox' or 'llama'); absent in infos made before there were two. */
  family?: 'gpt_neox' | 'llama';
  /** The Llama family's flavour (llama, qwen2, qwen3, mistral); null or absent for GPT-NeoX. */
  flavour?: LlamaFlavour | null;
  /** The config as read, of either family. */
  modelConfig?: ModelConfig;
  params: number;
  gpuBytes: number;
  tokenizer: string;
  /** How the large weight matrices are stored on the GPU. */
  weightsOnGpu: 'fp32' | 'fp16';
}

/**
 * A Llama-family model's teaching faults (src/run/faults.ts LLAMA_FAULTS): pipeline constants of the fused kernels
 * of engine/llama-fused.ts by the registry's names for them (ops/fused.ts), in the layers named (every layer when
 * none are).
 */
export interface LlamaFaults extends Partial<Record<LlamaFusedKernel, OverrideConstants>> {
  /** The layers the faults act in (absent: every layer). */
  layers?: readonly number[];
}

export type PathSpec = 'reference' | 'fused' | ReadonlySet<FusedKernelId>;

export interface ForwardOptions {
  /** 'reference' (no fused kernel), 'fused' (all), or the set of fused kernels switched on. */
  path?: PathSpec;
  precision?: Precision;
  /** Fault switches and wiring faults (src/run/faults.ts). */
  hooks?: PlanHooks;
  /** Run only layers [from, to) on the given residual input [T, d] (local error). */
  layers?: { from: number; to: number; input?: Float32Array };
  /** Per-op intermediates to read back: 'all', or a list of stable tap names. */
  taps?: 'all' | string[];
  /**
   * Time each op with timestamp queries (when the adapter has them); where the adapter's timestamps come in
   * steps, ops shorter than a few steps are re-timed by repetition (src/gpu/timestamp-refine.ts).
   */
  timing?: boolean;
  /** The logits rows to read back: 'all' (default: dump.logits is [T, V]) or 'last' (dump.logits is the last
   * row alone, [V]: what a caller that wants the next token needs). */
  logits?: 'all' | 'last';
  /** Force the timestamp step (ns) instead of detecting it (tests exercise repetition on SwiftShader). */
  timingQuantumNs?: number;
  /** GPT-NeoX: the command buffers a forward goes in (default: gpu/submit-chunks.ts's rule; 1 = one; one with timing). */
  submitChunks?: number;
  /** A Llama-family model's teaching faults in its fused kernels (engine/family-llama.ts; every layer). */
  llamaFaults?: LlamaFaults;
}

/** The options a generation takes (a forward's path, precision and fault hooks). */
export type GenerateOptions = Pick<ForwardOptions, 'path' | 'precision' | 'hooks' | 'llamaFaults'>;

export interface ForwardResult {
  dump: HiddenDump;
  taps: Map<string, Float32Array>;
  /** Per-op GPU time, or null when timing was not asked for or is unavailable. */
  timings: PassTiming[] | null;
  dispatches: number;
  /** Wall time of the call's parts, ms: plan (build and bind), record (encode and submit), gpu (submit to mapped),
   * read (copies out of the mapped staging buffer). */
  wall?: Record<string, number>;
}

/** What an engine failure is, for code that decides (the CLI's exit status, the worker's error kind). */
export type EngineErrorKind = 'input' | 'model' | 'cancelled' | 'internal';

export class EngineError extends Error {
  override name = 'EngineError';
  readonly kind: EngineErrorKind;
  constructor(message: string, kind: EngineErrorKind = 'internal') {
    super(message);
    this.kind = kind;
  }
}

export function resolvePath(path: PathSpec | undefined): ReadonlySet<FusedKernelId> {
  if (path === undefined || path === 'reference') return new Set();
  if (path === 'fused') return ALL_FUSED;
  return path;
}
