// A Llama-family model (Llama, Qwen2, Qwen3, Mistral) held by the Engine: its config, its fp32 weights on the CPU
// (the fp64 oracle reads them), the GPU reference forward (llama-reference.ts) made at load and the fused forward
// (llama-fused.ts) made at its first use, and what the page shows of it. The Engine dispatches here on the
// config's family (engine.ts); GPT-NeoX keeps its own slot (model-slot.ts).
//
// Said where it matters: the precision modes are pipeline constants of every kernel of both paths; the fused
// kernels are switched by GPT-NeoX's ids (LLAMA_KERNEL_OF); teaching faults act from a layer on; both paths generate
// with their KV cache, in lockstep (the argmax on the GPU, no wait between steps, each path's decode steps recorded
// once and replayed: llama-step-cache.ts; one after the other where the decode's taps are recorded).
// Past 400 lines: one model's life (install, the forwards, generation, recovery), one class read in order.

import { BufferCount } from '../gpu/buffer-count';
import type { PipelineCache } from '../gpu/pipelines';
import type { PoolStats } from '../gpu/pool';
import { precisionConstants } from '../kernels/precision';
import { llamaModelSummary, readLlamaWeights } from '../model/llama-weights';
import type { Tokenizer } from '../model/tokenizer';
import type { Weights } from '../model/weight-stream';
import type { LlamaConfig, LlamaWeights, NeoXConfig } from '../numeric/types';
import { FUSED } from '../ops/fused';
import type { FusedKernelId } from './fused-kernels';
import { checkTokenizer, type MemoryBudget } from './install';
import { LlamaFused, type LlamaFusedKernel } from './llama-fused';
import { greedyLockstep, type LockstepPath } from './llama-generate';
import type { KeptRun } from './llama-kept';
import { LlamaReference } from './llama-reference';
import { StepCache } from './llama-step-cache';
import {
  EngineError,
  type ForwardOptions,
  type ForwardResult,
  type LlamaFaults,
  type ModelInfo,
  type PathSpec,
} from './types';

/** What a Llama-family model is read from (kept to reload it after a device loss). */
export interface LlamaSource {
  cfg: LlamaConfig;
  config: string;
  weights: Weights;
  tokenizer?: string;
  name?: string;
}

/**
 * The dimensions every family shares, in the NeoX-shaped `ModelInfo.config` that GPT-NeoX's analyses read:
 * vocabulary, hidden size, layers, heads, head width, MLP width and positions are the Llama model's own; the
 * rotary width, base and the norm's eps are its rotaryDim, ropeTheta and rmsNormEps. What only GPT-NeoX has
 * (the parallel residual) is false. Code that needs the family's own config reads `ModelInfo.modelConfig`.
 */
export function sharedDims(c: LlamaConfig): NeoXConfig {
  return {
    vocabSize: c.vocabSize,
    hiddenSize: c.hiddenSize,
    numLayers: c.numLayers,
    numHeads: c.numHeads,
    headDim: c.headDim,
    intermediateSize: c.intermediateSize,
    rotaryNdims: c.rotaryDim,
    rotaryBase: c.ropeTheta,
    layerNormEps: c.rmsNormEps,
    useParallelResidual: false,
    maxPositionEmbeddings: c.maxPositionEmbeddings,
    attentionBias: c.attentionBias,
    tieWordEmbeddings: c.tieWordEmbeddings,
  };
}

/** GPU bytes a Llama-family model takes: fp32 weights for each path (the fused one's gate and up concatenated). */
export function llamaGpuBytes(cfg: LlamaConfig): number {
  return 2 * llamaModelSummary(cfg).bytesF32;
}

/**
 * One line refusing a Llama-family model from its config alone (before any download), or null: the budget
 * (`heldBytes`, the model loaded now, counts), then the largest weight against one storage binding.
 */
export function llamaRefusal(cfg: LlamaConfig, budget: MemoryBudget, maxBindingBytes: number): string | null {
  const need = llamaGpuBytes(cfg);
  const gib = (b: number) => `${(b / 2 ** 30).toFixed(2)} GiB`;
  if (budget.bytes !== null && need + (budget.heldBytes ?? 0) > budget.bytes)
    return `the model needs ${gib(need)} of GPU memory (fp32 weights for both paths), over the ${gib(budget.bytes)} budget`;
  const { vocabSize: V, hiddenSize: d, intermediateSize: F, numHeads: H, headDim: hd } = cfg;
  const largest = 4 * Math.max(V * d, 2 * F * d, H * hd * d);
  if (largest > maxBindingBytes)
    return `a weight of the model takes ${largest} B, over this adapter's ${maxBindingBytes} B storage binding`;
  return null;
}

/** One line for what the Llama family does not have yet (an EngineError of kind 'input'). */
export function notForLlama(what: string): EngineError {
  return new EngineError(`${what} is not yet supported for the Llama family`, 'input');
}

/**
 * The Llama fused kernel each of GPT-NeoX's fused-kernel ids switches (a RunSpec's `fused` and the page's switches
 * name GPT-NeoX's), as the op registry has it (ops/fused.ts): the add + norm, the QKV projection + rotary, the flash
 * attention, the other GEMMs, the MLP's up GEMM with its epilogue (SwiGLU here). GPT-NeoX's parallel-residual epilogue has no counterpart (the family's
 * residual adds are in add + RMSNorm): switching it changes nothing.
 */
export const LLAMA_KERNEL_OF = Object.fromEntries(FUSED.map((k) => [k.id, k.llama.kernel])) as Readonly<
  Record<FusedKernelId, LlamaFusedKernel | null>
>;

/**
 * The fused kernels a PathSpec switches on in the Llama fused path, or null for the reference path ('reference', or
 * an empty set). 'fused': all of them.
 */
export function llamaKernels(path: PathSpec | undefined): Partial<Record<LlamaFusedKernel, boolean>> | null {
  if (path === undefined || path === 'reference') return null;
  if (path !== 'fused' && path.size === 0) return null;
  const on = (k: LlamaFusedKernel) => path === 'fused' || [...path].some((id) => LLAMA_KERNEL_OF[id] === k);
  const kernels = FUSED.flatMap((k) => (k.llama.kernel ? [k.llama.kernel] : []));
  return Object.fromEntries(kernels.map((k) => [k, on(k)]));
}

/** The fused forward's fault options from the engine's LlamaFaults (constants per kernel, the layers). */
function faultOptions(f: LlamaFaults | undefined) {
  if (!f) return {};
  const { layers, ...faults } = f;
  return { faults, faultLayers: layers };
}

export class LlamaModel {
  private fusedFwd: LlamaFused | null = null;
  /** Generation's decode steps recorded once and replayed (llama-step-cache.ts); false: each step built anew. */
  stepCache = true;
  /** The last lockstep generation's steps per path: built anew and replayed (tests, benches). */
  lastStepCounts: { built: number; replayed: number }[] = [];

  private constructor(
    private readonly gpu: { device: GPUDevice; pipelines: PipelineCache },
    readonly cfg: LlamaConfig,
    readonly weights: LlamaWeights,
    readonly ref: LlamaReference,
    readonly tok: Tokenizer | null,
    readonly info: ModelInfo,
    readonly source: LlamaSource,
    private readonly cpuAdapter: boolean,
    private readonly count: BufferCount,
  ) {}

  /** The GPU buffers the forwards and generations running now hold (made per pass, not from the engine's pool). */
  passStats(): PoolStats {
    return this.count.stats();
  }

  /**
   * Reads the weights (one file or an index and its shards; F32, F16, BF16 as fp32) after the tokenizer and the
   * budget are checked, then uploads them for the reference forward. A failure leaves nothing on the GPU.
   */
  static async install(
    gpu: { device: GPUDevice; pipelines: PipelineCache },
    cpuAdapter: boolean,
    source: LlamaSource,
    o: {
      budget: MemoryBudget;
      onProgress?: (loaded: number, total: number | null) => void;
      signal?: AbortSignal;
    },
  ): Promise<LlamaModel> {
    const { cfg } = source;
    const tok = checkTokenizer(sharedDims(cfg), source.tokenizer);
    const { params } = llamaModelSummary(cfg);
    const gpuBytes = llamaGpuBytes(cfg);
    const refusal = llamaRefusal(cfg, o.budget, gpu.device.limits.maxStorageBufferBindingSize);
    if (refusal) throw new EngineError(refusal, 'model');
    const weights = await readLlamaWeights(cfg, source.weights, {
      onProgress: o.onProgress,
      signal: o.signal,
    });
    if (o.signal?.aborted) throw new EngineError('loading cancelled', 'cancelled');
    // Both paths make their buffers through `count`'s device: what a pass holds is counted (passStats).
    const count = new BufferCount(gpu.device);
    const counted = { device: count.device, pipelines: gpu.pipelines };
    let ref: LlamaReference;
    try {
      ref = LlamaReference.create(counted, cfg, weights);
    } catch (e) {
      throw new EngineError((e as Error).message, 'model');
    }
    const info: ModelInfo = {
      name: source.name ?? 'model',
      config: sharedDims(cfg),
      family: 'llama',
      flavour: cfg.flavour,
      modelConfig: cfg,
      params,
      gpuBytes,
      tokenizer: tok?.kind ?? 'token ids only',
      weightsOnGpu: 'fp32',
    };
    return new LlamaModel(counted, cfg, weights, ref, tok, info, source, cpuAdapter, count);
  }

  /** The fused forward's weights, uploaded at its first use. */
  private fused(): LlamaFused {
    if (!this.fusedFwd) {
      try {
        this.fusedFwd = LlamaFused.create(this.gpu, this.cfg, this.weights);
      } catch (e) {
        throw new EngineError((e as Error).message, 'model');
      }
    }
    return this.fusedFwd;
  }

  /**
   * One forward of either path in a precision mode: the dump, and with `taps` every slot the path computes (the
   * reference path every step's; the fused path those its kernels write out) under the registry's names.
   */
  async forward(tokens: readonly number[], opts: ForwardOptions = {}): Promise<ForwardResult> {
    if (llamaKernels(opts.path)) this.fused(); // its weights are the model's, not the pass's
    return this.count.during(() => this.forwardPass(tokens, opts));
  }

  private async forwardPass(tokens: readonly number[], opts: ForwardOptions): Promise<ForwardResult> {
    if (opts.layers) throw notForLlama('a forward over some layers (local re-runs)');
    if (opts.timing) throw notForLlama('per-op timing');
    const kernels = llamaKernels(opts.path);
    const constants = { ...precisionConstants(opts.precision ?? 'fp32') };
    if (kernels === null && opts.llamaFaults && Object.keys(opts.llamaFaults).length > 0)
      throw new EngineError('teaching faults live in the fused path: the reference path has none', 'input');
    const t0 = performance.now();
    let result: ForwardResult;
    if (kernels === null) {
      const r = await this.ref.forward(tokens, {
        cpu: this.cpuAdapter,
        constants,
        taps: opts.taps !== undefined,
      });
      result = { dump: r.dump, taps: r.taps, timings: null, dispatches: 0 };
    } else {
      const o = { cpu: this.cpuAdapter, kernels, constants, ...faultOptions(opts.llamaFaults) };
      if (opts.taps !== undefined) {
        const r = await this.fused().forwardTaps(tokens, o);
        result = { dump: r.dump, taps: r.taps, timings: null, dispatches: 0 };
      } else
        result = {
          dump: await this.fused().forward(tokens, o),
          taps: new Map(),
          timings: null,
          dispatches: 0,
        };
    }
    if (opts.logits === 'last') {
      const { T, V } = result.dump;
      result.dump = { ...result.dump, logits: result.dump.logits.slice((T - 1) * V) };
    }
    result.wall = { gpu: performance.now() - t0 };
    return result;
  }

  /**
   * Either path's forward submitted and not waited for, its slots kept on the GPU (compare/family-compare.ts): with
   * `taps` every slot the path computes, else the dump's; with `layerInputs` the local re-runs (as forwardLayers,
   * the inputs may be buffers on the GPU). The same dispatches as `forward`, so the same bits. Call it inside
   * `holding` so that the kept buffers count until released.
   */
  async forwardKept(
    tokens: readonly number[],
    opts: Pick<ForwardOptions, 'path' | 'precision' | 'llamaFaults'> & {
      taps?: boolean;
      layerInputs?: readonly (Float32Array | GPUBuffer)[];
    } = {},
  ): Promise<KeptRun> {
    const kernels = llamaKernels(opts.path);
    if (kernels) this.fused();
    if (kernels === null && opts.llamaFaults && Object.keys(opts.llamaFaults).length > 0)
      throw new EngineError('teaching faults live in the fused path: the reference path has none', 'input');
    const constants = { ...precisionConstants(opts.precision ?? 'fp32') };
    const o = { cpu: this.cpuAdapter, constants, taps: opts.taps ?? false, layerInputs: opts.layerInputs };
    return this.count.during(() =>
      kernels === null
        ? this.ref.forwardKept(tokens, o)
        : this.fused().forwardKept(tokens, { ...o, kernels, ...faultOptions(opts.llamaFaults) }),
    );
  }

  /** Runs `f` as one pass: the buffers made meanwhile (kept forwards' too) count until destroyed. */
  holding<T>(f: () => Promise<T>): Promise<T> {
    return this.count.during(f);
  }

  /**
   * The local re-runs of either path, all layers in one submit: layer i on `inputs[i]` ([T, d], positions 0..T-1)
   * instead of the previous layer's output. Returns each layer's output (the reference path's on the exact forward's
   * inputs is the local floor's; the fused path's on the reference path's inputs, the local error's).
   */
  async forwardLayers(
    tokens: readonly number[],
    inputs: readonly Float32Array[],
    opts: Pick<ForwardOptions, 'path' | 'precision' | 'llamaFaults'> = {},
  ): Promise<Float32Array[]> {
    if (llamaKernels(opts.path)) this.fused();
    return this.count.during(() => this.layersPass(tokens, inputs, opts));
  }

  private async layersPass(
    tokens: readonly number[],
    inputs: readonly Float32Array[],
    opts: Pick<ForwardOptions, 'path' | 'precision' | 'llamaFaults'>,
  ): Promise<Float32Array[]> {
    const kernels = llamaKernels(opts.path);
    const constants = { ...precisionConstants(opts.precision ?? 'fp32') };
    const cpu = this.cpuAdapter;
    if (kernels === null)
      return (await this.ref.forward(tokens, { cpu, constants, layerInputs: inputs })).dump.layers;
    const o = { cpu, kernels, constants, layerInputs: inputs, ...faultOptions(opts.llamaFaults) };
    return (await this.fused().forward(tokens, o)).layers;
  }

  /**
   * Greedy decoding of `n` new tokens on each path (argmax, lowest id on ties), each with its KV cache
   * (LlamaReference.generate, LlamaFused.generate: a decoded row is that path's whole-forward row bit for bit). The
   * paths run in lockstep with the argmax on the GPU, no wait between steps (one after the other where `onTaps`
   * records each forward's taps); `onStep` sees each step's ids of every path, in the order of `paths`, once all
   * have finished (not streamed yet).
   */
  async generate(
    prompt: readonly number[],
    n: number,
    paths: readonly ForwardOptions[],
    onStep?: (step: number, ids: number[]) => void,
    signal?: AbortSignal,
    /** Path j's forwards' taps, each with its first position (compare/family-runs-decode.ts records the decode). */
    onTaps?: (path: number, p0: number, taps: Map<string, Float32Array>) => void,
  ): Promise<number[][]> {
    if (n === 0) return paths.map(() => []);
    if (paths.some((p) => llamaKernels(p.path))) this.fused();
    return this.count.during(() => this.generatePass(prompt, n, paths, onStep, signal, onTaps));
  }

  private async generatePass(
    ...[prompt, n, paths, onStep, signal, onTaps]: Parameters<LlamaModel['generate']>
  ): Promise<number[][]> {
    const out: number[][] = onTaps ? [] : await this.lockstep(prompt, n, paths, signal);
    for (const p of onTaps ? paths : []) {
      if (signal?.aborted) throw new EngineError('generation cancelled', 'cancelled');
      const cpu = this.cpuAdapter;
      const constants = { ...precisionConstants(p.precision ?? 'fp32') };
      try {
        const kernels = llamaKernels(p.path);
        const taps = onTaps && ((p0: number, t: Map<string, Float32Array>) => onTaps(out.length, p0, t));
        const r =
          kernels === null
            ? await this.ref.generate(prompt, n, { cpu, constants }, taps)
            : await this.fused().generate(
                prompt,
                n,
                { cpu, kernels, constants, ...faultOptions(p.llamaFaults) },
                taps,
              );
        out.push(r.ids);
      } catch (e) {
        if (e instanceof EngineError) throw e;
        throw new EngineError((e as Error).message, 'internal');
      }
    }
    for (let s = 0; s < n; s++)
      onStep?.(
        s,
        out.map((ids) => ids[s]),
      );
    return out;
  }

  /** Every path's greedy ids at once, no wait between steps (llama-generate.ts greedyLockstep). */
  private async lockstep(
    prompt: readonly number[],
    n: number,
    paths: readonly ForwardOptions[],
    signal?: AbortSignal,
  ): Promise<number[][]> {
    const cpu = this.cpuAdapter;
    // Each path's decode steps (those fed an id on the GPU) recorded once and replayed (llama-step-cache.ts).
    const caches = paths.map(() => new StepCache(this.gpu.device, this.gpu.pipelines));
    const steps: LockstepPath[] = paths.map((p, j) => {
      const constants = { ...precisionConstants(p.precision ?? 'fp32') };
      const kernels = llamaKernels(p.path);
      const cacheOf = (ids: GPUBuffer | undefined) => (ids && this.stepCache ? caches[j] : undefined);
      return kernels === null
        ? {
            who: 'Llama reference',
            run: (t, kv, ids) => this.ref.forwardKeptAt(t, { cpu, constants, ids, cache: cacheOf(ids) }, kv),
          }
        : {
            who: 'Llama fused',
            run: (t, kv, ids) =>
              this.fused().forwardKeptAt(
                t,
                { cpu, kernels, constants, ids, cache: cacheOf(ids), ...faultOptions(p.llamaFaults) },
                kv,
              ),
          };
    });
    try {
      const cancelled = () => new EngineError('generation cancelled', 'cancelled');
      const got = await greedyLockstep(this.gpu, this.cfg, prompt, n, steps, signal, cancelled);
      this.lastStepCounts = caches.map((c) => ({ ...c.counts }));
      return got.map((g) => g.ids);
    } catch (e) {
      if (e instanceof EngineError) throw e;
      throw new EngineError((e as Error).message, 'internal');
    } finally {
      for (const c of caches) c.destroy();
    }
  }

  destroy(): void {
    this.ref.destroy();
    this.fusedFwd?.destroy();
    this.fusedFwd = null;
  }
}
