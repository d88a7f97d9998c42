// The comparisons phase of a Llama-family compare (family-compare.ts) reduced on the GPU (gpu-metrics.ts, tested
// against metrics.ts): every layer's floor (reference vs exact), propagated error (fused vs reference, per token),
// fused vs exact, local error and local floor; the logits; every reference tap against the exact forward's and the
// fused path's; and, where asked, the determinism run's dump against the fused path's bit for bit. The paths' tensors
// are buffers on the GPU where their forwards kept them (engine/llama-kept.ts), else f32 arrays uploaded once; the
// exact tensors are the oracle's df buffers (the GPU oracle's own, or the CPU fp64 forward's uploaded as pairs): one
// submit, small summaries read back. The CPU's share grows with the number of tensors, not their size.
import type { DfBuffer } from '../engine/oracle-df';
import type { PipelineCache } from '../gpu/pipelines';
import { uploadBuffer } from '../gpu/readback';
import type { LlamaConfig } from '../numeric/types';
import { familyOf, layerSteps } from '../ops/families';
import type { RunSpec } from '../run/runspec';
import { effectiveFloor, needsScale, nonFiniteIn, ratioOf } from './floor';
import { type BitDiffJob, type CompareJob, GpuMetrics, type Operand } from './gpu-metrics';
import type { FullMetrics } from './metrics';
import type { DeterminismResult, LayerResult, TapResult } from './report';

/** A path's tensor: an f32 array (uploaded for the metrics) or a buffer on the GPU and how many f32 it holds. */
export type F32Tensor = Float32Array | { buf: GPUBuffer; floats: number };

/** A path's dump and taps as the metrics read them. */
export interface PathTensors {
  dump: { embeddings: F32Tensor; layers: readonly F32Tensor[]; finalNorm: F32Tensor; logits: F32Tensor };
  taps: ReadonlyMap<string, F32Tensor>;
}

const lengthOf = (t: F32Tensor) => (t instanceof Float32Array ? t.length : t.floats);

export interface FamilyMetricsInput {
  device: GPUDevice;
  pipelines: PipelineCache;
  cfg: LlamaConfig;
  T: number;
  spec: Pick<RunSpec, 'precision' | 'metric' | 'k'>;
  ref: PathTensors;
  fused: PathTensors;
  /** The local re-runs' outputs of each path ([L] of [T, d]). */
  locals: { fused: readonly F32Tensor[]; ref: readonly F32Tensor[] };
  /** The determinism run: these tensors (named as the report names them) against the fused path's, bit for bit. */
  determinism?: readonly { tensor: string; a: F32Tensor; b: F32Tensor }[];
  /** The exact forward's taps and each exact layer on the reference path's input, as df buffers. */
  exact: { taps: ReadonlyMap<string, DfBuffer>; local: readonly DfBuffer[] };
}

export interface FamilyMetrics {
  layers: LayerResult[];
  taps: TapResult[];
  logits: { propagated: FullMetrics; floor: FullMetrics };
  /** The exact logits' and each exact layer's largest magnitude (0 where the metric needs none). */
  logitsScale: number;
  layerScales: number[];
  /** With `determinism` asked: the two runs bit for bit (as family-taps.ts sameBits). */
  determinism: DeterminismResult | null;
}

/** Every comparison of the phase in one submit; the exact logits split by columns must not be (one line if so). */
export async function familyMetrics(x: FamilyMetricsInput): Promise<FamilyMetrics> {
  const { device, cfg, T, spec, ref, fused, locals, exact } = x;
  const { precision, metric, k } = spec;
  const d = cfg.hiddenSize;
  const L = cfg.numLayers;
  const made: GPUBuffer[] = [];
  const f32Bufs = new Map<Float32Array, GPUBuffer>();
  const bufOf = (a: F32Tensor): GPUBuffer => {
    if (!(a instanceof Float32Array)) return a.buf;
    let b = f32Bufs.get(a);
    if (!b) {
      b = uploadBuffer(device, a, 'family metrics');
      made.push(b);
      f32Bufs.set(a, b);
    }
    return b;
  };
  const f32 = (a: F32Tensor): Operand => ({ kind: 'f32', buffer: bufOf(a) });
  const df = (t: DfBuffer | undefined, name: string): Operand => {
    if (!t) throw new Error(`family metrics: the exact forward has no '${name}'`);
    if (t.parts)
      throw new Error(
        `family metrics: the exact '${name}' is split over storage bindings: use a shorter prompt`,
      );
    return { kind: 'df', buffer: t.buffer };
  };
  const scaled = needsScale(metric);
  const zero = scaled
    ? device.createBuffer({ size: 4 * T * Math.max(d, cfg.vocabSize), usage: GPUBufferUsage.STORAGE })
    : null;
  if (zero) made.push(zero);
  const jobs: CompareJob[] = [];
  const job = (a: Operand, b: Operand, n: number, more: Partial<CompareJob> = {}) => {
    jobs.push({ a, b, n, precision, ...more });
    return jobs.length - 1;
  };
  const scaleJob = (b: Operand, n: number) => (zero ? job({ kind: 'f32', buffer: zero }, b, n) : -1);

  const n = T * d;
  const layerJobs = ref.dump.layers.map((r, i) => {
    const e = df(exact.taps.get(`layers.${i}.out`), `layers.${i}.out`);
    const f = fused.dump.layers[i];
    return {
      floor: job(f32(r), e, n),
      propagated: job(f32(f), f32(r), n, { rows: T }),
      fusedVsOracle: job(f32(f), e, n),
      // Cut by rows as the propagated job is: where the inputs are the same (layer 0) so are the two results' bits.
      local: job(f32(locals.fused[i]), f32(r), n, { rows: T }),
      localFloor: job(f32(locals.ref[i]), df(exact.local[i], `local ${i}`), n),
      scale: scaleJob(e, n),
    };
  });
  const V = cfg.vocabSize;
  const exactLogits = df(exact.taps.get('logits'), 'logits');
  const logitJobs = {
    propagated: job(f32(fused.dump.logits), f32(ref.dump.logits), T * V),
    floor: job(f32(ref.dump.logits), exactLogits, T * V),
    scale: scaleJob(exactLogits, T * V),
  };
  // Every reference tap against the exact forward's, and the fused path's where it writes that slot out.
  const opOf = new Map(layerSteps(familyOf(cfg), cfg).map((s) => [s.slot, s.op as string]));
  const fusedOf = (name: string): F32Tensor | null => {
    const t = fused.taps.get(name);
    if (t) return t;
    if (name === 'embed') return fused.dump.embeddings;
    if (name === 'final_norm') return fused.dump.finalNorm;
    if (name === 'logits') return fused.dump.logits;
    const out = /^layers\.(\d+)\.out$/.exec(name);
    return out ? fused.dump.layers[Number(out[1])] : null;
  };
  const tapJobs = [...ref.taps].map(([name, r]) => {
    const parts = /^layers\.(\d+)\.(.+)$/.exec(name);
    const f = fusedOf(name);
    const n = lengthOf(r);
    const same = f !== null && lengthOf(f) === n;
    const e = exact.taps.get(name);
    return {
      name,
      layer: parts ? Number(parts[1]) : null,
      op: parts ? (opOf.get(parts[2]) ?? parts[2]) : name === 'embed' ? 'embedding' : name,
      shape: n,
      same,
      vsReference: same ? job(f32(f), f32(r), n, { histogram: true }) : -1,
      refVsOracle: e ? job(f32(r), df(e, name), n) : -1,
    };
  });
  const bitJobs: BitDiffJob[] = (x.determinism ?? []).map(({ tensor, a, b }) => {
    if (lengthOf(a) !== lengthOf(b))
      throw new Error(`family metrics: determinism '${tensor}' has ${lengthOf(a)} and ${lengthOf(b)} values`);
    return { a: bufOf(a), b: bufOf(b), n: lengthOf(a) };
  });

  const metrics = new GpuMetrics(device, x.pipelines);
  const enc = device.createCommandEncoder({ label: 'family metrics' });
  const pending = metrics.record(enc, jobs, bitJobs);
  try {
    device.queue.submit([enc.finish()]);
    const { compare, bitDiff } = await pending.read();
    const got = (j: number) => compare[j].metrics;
    const scaleOf = (j: number) => (j < 0 ? 0 : got(j).maxAbs);
    const layerScales = layerJobs.map((j) => scaleOf(j.scale));
    const layers: LayerResult[] = layerJobs.map((j, i) => {
      const floor = got(j.floor);
      const propagated = got(j.propagated);
      const local = got(j.local);
      const scale = layerScales[i];
      const ratio = ratioOf(propagated, floor, metric, precision, scale);
      const floorValue = effectiveFloor(floor, metric, precision, scale);
      const localRatio = ratioOf(local, got(j.localFloor), metric, precision, scale);
      return {
        layer: i,
        floorValue,
        threshold: k * floorValue,
        floor,
        propagated,
        fusedVsOracle: got(j.fusedVsOracle),
        local,
        localFloor: got(j.localFloor),
        ratio,
        localRatio,
        diverged: ratio > k || nonFiniteIn(propagated) > 0,
        born: localRatio > k || nonFiniteIn(local) > 0,
        perToken: Array.from(compare[j.propagated].perRow ?? []),
      };
    });
    const taps: TapResult[] = tapJobs.map((t) => ({
      name: t.name,
      layer: t.layer,
      op: t.op,
      status: t.same ? 'compared' : 'fused-away',
      shape: t.shape,
      vsReference: t.vsReference < 0 ? null : got(t.vsReference),
      refVsOracle: t.refVsOracle < 0 ? null : got(t.refVsOracle),
      histogram: t.vsReference < 0 ? null : compare[t.vsReference].histogram,
    }));
    const logits = { propagated: got(logitJobs.propagated), floor: got(logitJobs.floor) };
    if (L !== layers.length) throw new Error(`family metrics: ${layers.length} layers for numLayers ${L}`);
    let determinism: DeterminismResult | null = null;
    if (x.determinism) {
      const schedule = 'the same, run again';
      const differences = x.determinism.flatMap(({ tensor }, j) =>
        bitDiff[j].count > 0
          ? [{ tensor, count: bitDiff[j].count, firstIndex: bitDiff[j].firstIndex, schedule }]
          : [],
      );
      const identical = differences.length === 0;
      determinism = { identical, differences, runs: [{ schedule, identical }] };
    }
    return { layers, taps, logits, logitsScale: scaleOf(logitJobs.scale), layerScales, determinism };
  } finally {
    pending.release();
    for (const b of made) b.destroy();
  }
}
