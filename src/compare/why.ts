// Why an op's error is what it is (DESIGN.md, "Why, not only where"): the op's recorded tensors, its exact output and
// its floor gathered from wherever they live (a run's file, the engine's taps, the GPU oracle's buffers), then the
// anatomy of the error and the cause search (causes/). Used by the runs analysis and by the two-path report.
import type { Engine } from '../engine/engine';
import { weightReader } from '../engine/gpu-model';
import type { ProductsKit } from '../engine/oracle-products';
import type { RotaryAngles } from '../kernels/cpu/rotary-angles';
import type { Precision } from '../numeric/precision';
import type { Tensor } from '../numeric/types';
import { OPS } from '../ops/descriptors';
import type { Metric } from '../run/runspec';
import { type Anatomy, anatomy } from './causes/anatomy';
import { ProductCache } from './causes/exact-op';
import { explain, explainWith } from './causes/explain';
import {
  type CauseVerdict,
  type OpKind,
  type OpWeights,
  type RecordedTensor,
  stepOfOp,
} from './causes/types';
import type { FullMetrics } from './metrics';
import { GPU_SEARCH_OPS, gpuProducts } from './why-gpu';

/** The answer at one op: where in the tensor its error lives, and what would explain it. */
export interface OpWhy {
  cause: CauseVerdict;
  anatomy: Anatomy;
  /** Where the time went (ms): the op's weights gathered, the anatomy, the cause search (of which its products on
   * the GPU oracle, operands read and results back, in wall time: the anatomy runs while the GPU multiplies). */
  ms: { weights: number; anatomy: number; cause: number; products: number; productsGpu: number };
}

/**
 * The weights one op reads, from the CPU copy when it exists, else read back from the GPU piece by piece: its
 * registry step's weight field (a fused group: its product's), as a norm, a linear or the LM head by the descriptor.
 */
export async function opWeights(engine: Engine, op: OpKind, layer: number | null): Promise<OpWeights> {
  const step = stepOfOp(op);
  const name = step?.weight;
  if (!step || name === undefined) return {};
  const desc = OPS[step.op];
  const isNorm = !desc.linear && desc.weights.includes('bias');
  if (!desc.linear && !isNorm) return {};
  const cpu = engine.hasCpuWeights ? engine.weights : null;
  const gpu = cpu ? null : weightReader(engine.gpuParts().device, engine.gpuParts().model);
  const held = cpu ? (layer === null ? cpu : cpu.layers[layer])[name as never] : undefined;
  if (layer === null) {
    if (desc.linear) return { lmHead: held ? (held as Tensor).data : (await gpu!.lmHead()).data };
    return { norm: held ?? (await gpu!.finalLayerNorm()) };
  }
  if (desc.linear)
    return { linear: held ?? (await gpu!.linear(layer, name as 'qkv' | 'dense' | 'fc1' | 'fc2')) };
  return { norm: held ?? (await gpu!.layerNorm(layer, name === 'inputLayernorm' ? 'input' : 'post')) };
}

export interface WhyInput {
  engine: Engine;
  op: OpKind;
  layer: number | null;
  tokens: number[];
  inputs: Float32Array[];
  inputSlots: string[];
  recorded: Float32Array;
  exact: Float64Array;
  others: RecordedTensor[];
  floor: FullMetrics;
  metric: Metric;
  k: number;
  precision: Precision;
  scale: number;
  angles: RotaryAngles;
  /** The GPU oracle's products, where the analysis runs its oracle on a GPU: a linear op's variants are multiplied
   * there (why-gpu.ts); else in fp64 on the CPU. */
  products?: ProductsKit | null;
  /** A run of a generation: the prompt's length (a cause found from the decode steps on says so). */
  prefill?: number;
}

/** The anatomy and the cause of one op's error. */
export async function whyAt(w: WhyInput): Promise<OpWhy> {
  const cfg = w.engine.modelInfo!.config;
  const t0 = performance.now();
  const weights = await opWeights(w.engine, w.op, w.layer);
  const t1 = performance.now();
  const data = {
    op: w.op,
    layer: w.layer,
    cfg,
    tokens: w.tokens,
    inputs: w.inputs,
    inputSlots: w.inputSlots,
    recorded: w.recorded,
    exact: w.exact,
    weights,
    angles: w.angles,
    others: w.others,
    floor: w.floor,
    metric: w.metric,
    k: w.k,
    precision: w.precision,
    scale: w.scale,
    prefill: w.prefill,
  };
  const cache = new ProductCache();
  let products = 0;
  let gpu = 0;
  const onGpu = w.products && GPU_SEARCH_OPS.includes(w.op) ? gpuProducts(w.products, data, cache) : null;
  // With the products on the GPU, the search starts first: it asks for its products, screens the candidates that
  // read none while the GPU multiplies (explainWith), and the anatomy runs then too, before the products are read.
  const searching = onGpu
    ? explainWith(data, cache, async (requests) => {
        const p0 = performance.now();
        gpu += await onGpu(requests);
        products += performance.now() - p0;
      })
    : null;
  searching?.catch(() => undefined); // (awaited below, after the anatomy)
  const t2 = performance.now();
  const anat = anatomy(data);
  const t3 = performance.now();
  const cause = searching ? await searching : explain(data);
  return {
    anatomy: anat,
    cause,
    // (cause: from the search's start to its verdict, less the anatomy it waited behind)
    ms: {
      weights: t1 - t0,
      cause: performance.now() - t1 - (t3 - t2),
      products,
      productsGpu: gpu,
      anatomy: t3 - t2,
    },
  };
}

/**
 * The tensors of a layer (and the one before it, and every layer's QKV projection) other than `own`: what a
 * wrong-tensor cause may have read.
 */
export function neighbours(
  slots: Iterable<[string, { name: string; data: Float32Array }]>,
  layer: number | null,
  own: string[],
): RecordedTensor[] {
  const near = (slot: string) => {
    if (layer === null) return /^layers\.\d+\.out$/.test(slot) || slot === 'final_norm';
    const m = /^layers\.(\d+)\./.exec(slot);
    // (every layer's QKV projection: another layer's KV cache may be read from any of them)
    return (
      slot === 'embed' ||
      /^layers\.\d+\.qkv$/.test(slot) ||
      (m !== null && (Number(m[1]) === layer || Number(m[1]) === layer - 1))
    );
  };
  const out: RecordedTensor[] = [];
  for (const [slot, t] of slots)
    if (near(slot) && !own.includes(slot)) out.push({ slot, name: t.name, data: t.data });
  return out;
}
