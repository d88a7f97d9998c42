// A model onto the GPU, checked first: the tokenizer against the vocabulary, the header against the config,
// fp16 or fp32 storage of the large matrices, the memory budget (the user's cap, the adapter's buffer limits,
// and every buffer made under the out-of-memory scope before a byte of weights is read); then the weights
// streamed in tensor by tensor (an error becomes one EngineError and frees what was made). Engine.loadModel*
// install its result.

import type { AdapterSummary } from '../gpu/device';
import type { PipelineCache } from '../gpu/pipelines';
import { Program } from '../gpu/program';
import { headDimProblem } from '../kernels/flash-attention';
import { seededWeights } from '../kernels/seeded-weights';
import { parseConfigText } from '../model/config';
import { ModelLoadError } from '../model/errors';
import { type RandomModelSpec, randomConfigJson } from '../model/random-model';
import { seededPlan } from '../model/seeded-weights';
import { parseTokenizerText, type Tokenizer } from '../model/tokenizer';
import { streamWeights, type Weights } from '../model/weight-stream';
import { emptyWeights, modelSummary } from '../model/weights';
import { f16BitsToF32, f32ToF16Bits } from '../numeric/bits';
import type { DType, ModelWeights, NeoXConfig, Tensor } from '../numeric/types';
import {
  type AllocatedModel,
  allocateModel,
  type GpuModel,
  readModelWeights,
  writeWeights,
} from './gpu-model';
import { EngineError, type EngineOptions, type ModelInfo } from './types';

/** Weight bytes of the model on the GPU (matrices in fp16 or fp32; LayerNorms and biases in fp32). */
export function estimateWeightBytes(cfg: NeoXConfig, weightsF16: boolean): number {
  const { vocabSize: V, hiddenSize: d, intermediateSize: ff, numLayers: L } = cfg;
  const matrices = 2 * V * d + L * (4 * d * d + 2 * d * ff);
  const vectors = L * (3 * d + d + ff + d + 4 * d) + 2 * d;
  return matrices * (weightsF16 ? 2 : 4) + vectors * 4;
}

const AUTO_F16_BYTES = 512 * 2 ** 20;
const gib = (b: number) => (b / 2 ** 30).toFixed(2);

/** The default cap on a CPU adapter (SwiftShader, llvmpipe): WebGPU cannot tell how much host memory there is. */
export const CPU_ADAPTER_BUDGET = 4 * 2 ** 30;

/**
 * The GPU memory a model may take. WebGPU says nothing of an adapter's total memory: what it does say are the
 * limits of one buffer and one storage binding (every weight buffer must fit both), and whether an allocation
 * succeeded (the out-of-memory error scope). So a model's buffers are all made — under that scope, before any
 * byte is read or downloaded — and a failure refuses it; a user's override (`bytes`) refuses earlier.
 */
export interface MemoryBudget {
  /**
   * The cap in bytes, or null (none: whatever allocates): the user's (CLI --memory-budget, the page's
   * ?memory=GiB), else CPU_ADAPTER_BUDGET on a CPU adapter, whose buffers come out of the host's memory (a trial
   * allocation there could swap the machine rather than fail).
   */
  bytes: number | null;
  /** Where the cap comes from. */
  source: 'user' | 'cpu-adapter' | null;
  /** GPU bytes of the model loaded now (it stays until a new one is complete, so both are held for a moment). */
  heldBytes?: number;
  /** The device's maxBufferSize and (capped) maxStorageBufferBindingSize. */
  maxBufferSize: number;
  maxBindingBytes: number;
}

/** A model this adapter cannot hold (the user's cap, a buffer limit, an allocation that failed): bad input. */
export class ModelTooLargeError extends EngineError {
  override name = 'ModelTooLargeError';
  constructor(message: string) {
    super(message, 'model');
  }
}

/** Refuses (one line, ModelTooLargeError) a need over the user's cap. */
function checkCap(need: number, budget: MemoryBudget, what: string): void {
  if (budget.bytes !== null && need > budget.bytes) {
    throw new ModelTooLargeError(
      `the model needs ${gib(need)} GiB of GPU memory for its weights${what}, more than the ` +
        `${gib(budget.bytes)} GiB budget ` +
        (budget.source === 'cpu-adapter'
          ? 'of a CPU adapter (its memory is the host’s; --memory-budget or ?memory=GiB raises it)'
          : 'set for this run') +
        '; nothing was allocated',
    );
  }
}

/**
 * Makes the model's buffers under the out-of-memory and validation error scopes; a failure destroys what was
 * made and refuses the model in one line with what it needs and what the adapter allows.
 */
export async function allocateChecked(
  device: GPUDevice,
  cfg: NeoXConfig,
  skeleton: ModelWeights,
  weightsF16: boolean,
  budget: MemoryBudget,
): Promise<AllocatedModel> {
  const headDim = headDimProblem(cfg.headDim); // the widest head the attention kernels take
  if (headDim) throw new EngineError(`${headDim}; nothing was allocated`, 'model');
  const need = estimateWeightBytes(cfg, weightsF16);
  const what = weightsF16 ? ' (in fp16)' : '';
  checkCap(need, budget, what);
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  let made: AllocatedModel | null = null;
  let thrown: unknown = null;
  try {
    made = allocateModel(
      device,
      cfg,
      skeleton,
      Math.min(budget.maxBindingBytes, budget.maxBufferSize),
      weightsF16,
    );
  } catch (e) {
    thrown = e;
  }
  const validation = await device.popErrorScope();
  const oom = await device.popErrorScope();
  if (thrown === null && validation === null && oom === null && made !== null) return made;
  made?.model.destroy();
  const limits =
    `one buffer may hold ${gib(budget.maxBufferSize)} GiB, one binding ${gib(budget.maxBindingBytes)} GiB` +
    (budget.bytes === null ? '' : `, the budget is ${gib(budget.bytes)} GiB`) +
    (budget.heldBytes ? `, the model loaded now holds ${gib(budget.heldBytes)} GiB` : '');
  if (thrown) {
    throw new ModelTooLargeError(
      `the model does not fit this adapter: ${(thrown as Error).message} (${limits}); nothing was allocated`,
    );
  }
  if (oom) {
    throw new ModelTooLargeError(
      `the model needs ${gib(need)} GiB of GPU memory for its weights${what}, but this adapter ran out of ` +
        `memory allocating them (${oom.message.split('\n')[0]}; ${limits}); nothing was kept`,
    );
  }
  throw new EngineError(`allocating the weights failed: ${validation?.message ?? 'unknown error'}`);
}

/**
 * fp16 weights on the GPU: when asked for ('fp16'), or ('auto') when the model is large (over 512 MB in fp32)
 * and every matrix is stored F16 in the file (an fp16 checkpoint), so that halving the memory loses nothing.
 * When matrices that are not fp16 are forced to fp16, they are rounded (ties to even) on the way to the GPU,
 * and the CPU copy (the oracle's input) is rounded the same way, so both sides compute with the same weights.
 */
export function chooseF16Weights(
  asked: EngineOptions['weights'],
  cfg: NeoXConfig,
  matrixDtypes: readonly DType[],
): boolean {
  const mode = asked ?? 'auto';
  if (mode === 'fp32') return false;
  if (mode === 'fp16') return true;
  return estimateWeightBytes(cfg, false) > AUTO_F16_BYTES && matrixDtypes.every((t) => t === 'F16');
}

/** The large matrices of a model (what fp16 storage applies to). */
function matricesOf(w: ModelWeights): Tensor[] {
  return [
    w.embedIn,
    w.lmHead,
    ...w.layers.flatMap((l) => [l.qkv.weight, l.dense.weight, l.fc1.weight, l.fc2.weight]),
  ];
}

/** `data` rounded to the nearest f16 values (ties to even), in place. */
function roundToF16(data: Float32Array): void {
  for (let i = 0; i < data.length; i++) data[i] = f16BitsToF32(f32ToF16Bits(data[i]));
}

/** The tokenizer text parsed and checked against the vocabulary (null: the model takes token ids only). */
export function checkTokenizer(cfg: NeoXConfig, text: string | undefined): Tokenizer | null {
  if (text === undefined) return null;
  const tok = parseTokenizerText(text);
  if (tok.vocabSize > cfg.vocabSize) {
    throw new ModelLoadError(
      'tokenizer.json',
      `the tokenizer has ${tok.vocabSize} ids but the model's vocab_size is ${cfg.vocabSize}`,
    );
  }
  return tok;
}

export interface StreamInstallOptions {
  weights?: EngineOptions['weights'];
  budget: MemoryBudget;
  /** Keep the fp32 CPU copy of the weights (the CPU oracle's input). */
  keepCpu: boolean;
  onProgress?: (loaded: number, total: number | null) => void;
  signal?: AbortSignal;
}

export interface Installed {
  model: GpuModel;
  tok: Tokenizer | null;
  info: ModelInfo;
  /** The fp32 CPU copy, when asked for. */
  cpu: ModelWeights | null;
}

/** Bytes written to the queue between flushes: bounds the staging memory the driver holds for them. */
const FLUSH_BYTES = 256 * 2 ** 20;

/**
 * Streams a model.safetensors onto the GPU tensor by tensor: the header checked against the config, the
 * storage chosen, the buffers made (or the model refused: budget, limits, out of memory) before any tensor's
 * bytes are read; then each tensor written to its buffers as it arrives and dropped, unless `keepCpu`.
 * On any failure what was made is freed.
 */
export async function installStream(
  device: GPUDevice,
  cfg: NeoXConfig,
  source: Weights,
  files: { tokenizer: string | undefined; name: string | undefined },
  opts: StreamInstallOptions,
): Promise<Installed> {
  const tok = checkTokenizer(cfg, files.tokenizer);
  let made: AllocatedModel | null = null;
  let skeleton: ModelWeights | null = null;
  let weightsF16 = false;
  let forceRound: Set<Tensor> | null = null;
  let pending = 0;
  device.pushErrorScope('validation');
  let thrown: unknown = null;
  try {
    await streamWeights(cfg, source, {
      signal: opts.signal,
      onProgress: opts.onProgress,
      onPlan: async (plan) => {
        const matrices = matricesOf(plan.skeleton);
        const dtypes = [...plan.byName]
          .filter(([, t]) => matrices.includes(t))
          .map(([n]) => plan.dtypes.get(n)!);
        weightsF16 = chooseF16Weights(opts.weights, cfg, dtypes);
        if (weightsF16 && opts.keepCpu) {
          forceRound = new Set(
            [...plan.byName]
              .filter(([n, t]) => matrices.includes(t) && plan.dtypes.get(n) !== 'F16')
              .map(([, t]) => t),
          );
        }
        skeleton = plan.skeleton;
        made = await allocateChecked(device, cfg, plan.skeleton, weightsF16, opts.budget);
      },
      onTensor: async (t, _name, data) => {
        const m = made as AllocatedModel | null;
        if (!m) throw new EngineError('a tensor arrived before the model was allocated');
        if ((forceRound as Set<Tensor> | null)?.has(t)) roundToF16(data);
        writeWeights(device, m.targets.get(t)!, data);
        if (opts.keepCpu) t.data = data;
        pending += data.byteLength;
        if (pending >= FLUSH_BYTES) {
          pending = 0;
          device.queue.submit([]);
          await device.queue.onSubmittedWorkDone();
        }
      },
    });
  } catch (e) {
    thrown = e;
  }
  const validation = await device.popErrorScope();
  const m = made as AllocatedModel | null;
  if (thrown || validation || !m) {
    m?.model.destroy();
    if (thrown) throw thrown;
    throw new EngineError(
      `uploading the weights failed: ${validation?.message ?? 'no tensors arrived'}`,
      'model',
    );
  }
  const info: ModelInfo = {
    name: files.name ?? 'model',
    config: cfg,
    params: modelSummary(cfg).params,
    gpuBytes: m.model.bytes,
    tokenizer: tok?.kind ?? 'token ids only',
    weightsOnGpu: weightsF16 ? 'fp16' : 'fp32',
  };
  const cpu = opts.keepCpu ? skeleton : null;
  return { model: m.model, tok, info, cpu };
}

/** A CPU adapter (SwiftShader, llvmpipe, a fallback adapter): the CPU oracle runs there. */
export function isCpuAdapterSummary(a: {
  vendor: string;
  architecture: string;
  description: string;
}): boolean {
  return /swiftshader|llvmpipe|lavapipe|cpu/i.test(`${a.vendor} ${a.architecture} ${a.description}`);
}

/** What a loaded model was read from (kept to reload it after a device loss). */
export type ModelSource =
  | { kind: 'file'; config: string; weights: Weights; tokenizer?: string; name?: string }
  | { kind: 'seeded'; spec: RandomModelSpec; seed: number; name?: string };

/** Engine.weights where no CPU copy was made: any use says so (never silently empty weights). */
export function deferredWeights(): ModelWeights {
  const fail = (): never => {
    throw new EngineError(
      'the CPU copy of the weights was not made (the CPU oracle was not expected to run on this adapter): ' +
        'await engine.loadCpuWeights() first',
    );
  };
  return {
    get embedIn() {
      return fail();
    },
    get layers() {
      return fail();
    },
    get finalLayerNorm() {
      return fail();
    },
    get lmHead() {
      return fail();
    },
  };
}

/**
 * A seeded model made on the GPU (src/model/seeded-weights.ts): its config from the spec, its buffers made as
 * for a file (budget, limits, allocation), then every buffer filled by the generator in one submit. The CPU
 * copy, when kept, is read back (the exact values the kernels use).
 */
export async function installSeeded(
  device: GPUDevice,
  pipelines: PipelineCache,
  source: Extract<ModelSource, { kind: 'seeded' }>,
  opts: Omit<StreamInstallOptions, 'onProgress' | 'signal'>,
): Promise<Installed> {
  const dtype = source.spec.dtype ?? 'F32';
  if (dtype === 'BF16') throw new EngineError('seeded models are F32 or F16, not BF16', 'input');
  if (!Number.isInteger(source.seed) || source.seed < 0 || source.seed > 0xffffffff)
    throw new EngineError(`a seed is an integer in [0, 2^32), got ${source.seed}`, 'input');
  const cfg = parseConfigText(JSON.stringify(randomConfigJson(source.spec)));
  const skeleton = emptyWeights(cfg);
  const weightsF16 = chooseF16Weights(opts.weights, cfg, [dtype]);
  const made = await allocateChecked(device, cfg, skeleton, weightsF16, opts.budget);
  const plan = seededPlan(cfg, skeleton);
  const program = new Program(device, pipelines);
  device.pushErrorScope('validation');
  let thrown: unknown = null;
  try {
    for (const [t, targets] of made.targets) {
      const s = plan.get(t)!;
      for (const g of targets) {
        const store = g.f16 ? 'f16' : dtype === 'F16' ? 'f16-in-f32' : 'f32';
        program.add(seededWeights(g.label, g.buffer, source.seed, s, g.from, g.count, store));
      }
    }
    const encoder = device.createCommandEncoder({ label: 'seeded-weights' });
    program.encode(encoder);
    device.queue.submit([encoder.finish()]);
    await device.queue.onSubmittedWorkDone();
  } catch (e) {
    thrown = e;
  } finally {
    program.dispose();
  }
  const validation = await device.popErrorScope();
  if (thrown || validation) {
    made.model.destroy();
    if (thrown) throw thrown;
    throw new EngineError(`generating the seeded weights failed: ${validation?.message}`);
  }
  const info: ModelInfo = {
    name: source.name ?? `seeded-${source.seed}`,
    config: cfg,
    params: modelSummary(cfg).params,
    gpuBytes: made.model.bytes,
    tokenizer: 'token ids only',
    weightsOnGpu: weightsF16 ? 'fp16' : 'fp32',
  };
  const cpu = opts.keepCpu ? await readModelWeights(device, made.model) : null;
  return { model: made.model, tok: null, info, cpu };
}

/** Whether a load keeps the fp32 CPU copy: asked for, or (auto) where the CPU oracle will run (a CPU adapter). */
export function keepCpuByDefault(opts: EngineOptions, adapter: AdapterSummary): boolean {
  const mode = opts.cpuWeights ?? 'auto';
  return mode === 'keep' || (mode === 'auto' && isCpuAdapterSummary(adapter));
}
