// The GPU route of a Llama-family runs analysis (family-runs.ts): each check's group of registry steps re-run in
// double-float (the registry's df forms, kernels/oracle/df-forms.ts, as engine/llama-oracle-gpu.ts FamilyGpuOracle
// runs them in its forward) from the run's own recorded inputs, promoted exactly from f32, and read back in fp64 for
// the comparisons and the why. Taken only where the family's oracle self-test chose the GPU (family-selftest.ts
// familyOracle); the CPU fp64 forms elsewhere. A check whose output does not fit one storage binding (the LM head
// of a big vocabulary) is left to the CPU and counted (`cpuChecks`).
//
// The checks go to the GPU in chunks of at most CHUNK_BYTES of df buffers (each chunk one submit and one readback),
// so a big model's analysis holds a bounded slice of the work on the GPU at a time.
import { type Engine, EngineError } from '../engine/engine';
import { FamilyGpuOracle, recordTapsReadback } from '../engine/llama-oracle-gpu';
import { DF_BYTES, type DfBuffer, OracleError, Recording } from '../engine/oracle-df';
import type { PipelineCache } from '../gpu/pipelines';
import type { BufferPool } from '../gpu/pool';
import { llamaInvFreq, ropeTablesF64 } from '../kernels/ops/rotary';
import { DF_FORMS } from '../kernels/oracle/df-forms';
import { dfPromote } from '../kernels/oracle/promote';
import { inputSlot } from '../model/run-names';
import { toDfPairs } from '../numeric/double-float';
import type { LinearWeights, Tensor } from '../numeric/types';
import { OPS } from '../ops/descriptors';
import type { OpStep } from '../ops/types';
import { slotWidth } from '../ops/widths';
import type { FamilyRunCheck, GroupContext } from './family-runs-ops';

/** The df buffers one submit may hold (inputs promoted, each step's output, the attention's scratch). */
const CHUNK_BYTES = 256 << 20;

/** What the GPU route needs of the engine: its device, pipelines, a pool, the reference forward's weight buffers. */
export interface FamilyGpuRerun {
  device: GPUDevice;
  pipelines: PipelineCache;
  pool: BufferPool;
  dfFma: boolean;
  maxBindingBytes: number;
  weightBuffer: (t: Tensor) => GPUBuffer | null;
}

/** The GPU route on an engine's loaded Llama-family model, its buffers from `pool` (the caller's to destroy). */
export function gpuRerunOf(engine: Engine, pool: BufferPool, dfFma: boolean): FamilyGpuRerun {
  const m = engine.llamaModel;
  if (!m) throw new Error('no Llama-family model is loaded');
  const { device, pipelines } = engine.devicePipelines();
  return {
    device,
    pipelines,
    pool,
    dfFma,
    maxBindingBytes: engine.maxBindingBytes,
    weightBuffer: (t) => m.ref.weightBuffer(t),
  };
}

/** One check to re-run: the check and the run's recorded slots (the registry's full names). */
export interface RerunItem {
  check: FamilyRunCheck;
  recorded: (slot: string) => Float32Array | null;
}

/** The df bytes a check's group holds on the GPU (its inputs and every step's output, and attention's scratch). */
function bytesOf(it: RerunItem, x: GroupContext): number {
  const c = it.check;
  const T = x.tokens.length;
  let n = 0;
  for (const s of c.steps) n += T * slotWidth(x.cfg, s.width);
  for (const s of c.inputs) n += 1.5 * (it.recorded(s)?.length ?? 0); // promoted, and its f32 upload
  if (c.steps.some((s) => OPS[s.op].scores)) n += (2 * x.cfg.numHeads * T + slotWidth(x.cfg, 'kv')) * T;
  return n * DF_BYTES;
}

/** Whether a check's every buffer fits one storage binding (else it is the CPU's). */
export function fitsGpu(c: FamilyRunCheck, x: GroupContext, maxBindingBytes: number): boolean {
  const T = x.tokens.length;
  const widest = Math.max(
    ...c.steps.map((s) => slotWidth(x.cfg, s.width)),
    c.steps.some((s) => OPS[s.op].scores) ? x.cfg.numHeads * T : 0,
  );
  return T * widest * DF_BYTES <= maxBindingBytes;
}

/**
 * Each item's check re-run exactly on the GPU from its run's recorded inputs, in fp64 (hi + lo of the df result),
 * in the items' order; chunks of at most CHUNK_BYTES each go in one submit. Items must fit (fitsGpu).
 */
export async function rerunOnGpu(
  g: FamilyGpuRerun,
  x: GroupContext,
  items: readonly RerunItem[],
  signal?: AbortSignal,
): Promise<Float64Array[]> {
  const out: Float64Array[] = [];
  let chunk: RerunItem[] = [];
  let bytes = 0;
  const flush = async () => {
    if (chunk.length === 0) return;
    if (signal?.aborted) throw new EngineError('run analysis cancelled', 'cancelled');
    out.push(...(await rerunChunk(g, x, chunk)));
    chunk = [];
    bytes = 0;
  };
  for (const it of items) {
    const b = bytesOf(it, x);
    if (bytes > 0 && bytes + b > CHUNK_BYTES) await flush();
    chunk.push(it);
    bytes += b;
  }
  await flush();
  return out;
}

/** One submit: every item's group recorded, each output read back. */
async function rerunChunk(
  g: FamilyGpuRerun,
  x: GroupContext,
  items: readonly RerunItem[],
): Promise<Float64Array[]> {
  const { cfg, tokens } = x;
  const T = tokens.length;
  const rec = new Recording(g.device, g.pipelines, g.pool, g.maxBindingBytes);
  try {
    const t = ropeTablesF64(T, llamaInvFreq(cfg, x.angles), x.angles);
    const scratch = new Map<string, { buffer: GPUBuffer; n: number }>();
    const env = {
      ids: rec.upload(new Uint32Array(tokens), 'ids'),
      rope: { cos: rec.upload(toDfPairs(t.cos), 'cos'), sin: rec.upload(toDfPairs(t.sin), 'sin') },
      dummy: rec.upload(new Float32Array(4), 'dummy'),
      scratch: (name: string, n: number) => {
        const s = scratch.get(name);
        if (s && s.n >= n) return s.buffer;
        const buffer = rec.df(n, `scratch.${name}`);
        scratch.set(name, { buffer, n });
        return buffer;
      },
    };
    const df = { DF_FMA: g.dfFma };
    const dfW = { DF_FMA: g.dfFma, W_F16: false };
    const names: string[] = [];
    items.forEach((it, k) => {
      const c = it.check;
      const layer = c.layer;
      const full = (s: string) =>
        layer === null ? s : s === 'in' ? inputSlot(layer) : `layers.${layer}.${s}`;
      const owner = (layer === null ? x.weights : x.weights.layers[layer]) as unknown as Record<
        string,
        unknown
      >;
      const values = new Map<string, GPUBuffer>();
      const get = (slot: string): GPUBuffer => {
        const v = values.get(slot);
        if (v) return v;
        const r = it.recorded(full(slot));
        if (!r) throw new OracleError(`${c.id} reads '${full(slot)}', which the run did not record`);
        const f32 = rec.upload(r, `${k}:${slot}:f32`);
        const b = rec.df(r.length, `${k}:${slot}`);
        rec.program.add(dfPromote(`${k}:${slot}:promote`, { x: f32, out: b }, r.length));
        values.set(slot, b);
        return b;
      };
      let last: { buffer: GPUBuffer; n: number } | null = null;
      for (const s of c.steps) {
        // A top step reads the slots its check names (the final norm's input is the last layer's output).
        const inputs = (layer === null ? c.inputs : s.inputs).map(get);
        const n = T * slotWidth(cfg, s.width);
        const out = rec.df(n, `${k}:${s.slot}`);
        const specs = DF_FORMS[s.op]({
          cfg,
          T,
          layer: layer ?? -1,
          step: s,
          label: `${c.id}:${s.slot}`,
          inputs,
          out,
          ...weightsOf(g, owner, s),
          ids: env.ids,
          rope: env.rope,
          scratch: env.scratch,
          dummy: env.dummy,
          df,
          dfW,
        });
        for (const d of specs) rec.program.add(d);
        values.set(s.slot, out);
        last = { buffer: out, n };
      }
      if (!last) throw new OracleError(`${c.id}: a check of no steps`);
      const name = `${k}`;
      rec.taps.set(name, last as DfBuffer);
      names.push(name);
    });
    const enc = g.device.createCommandEncoder({ label: 'family runs oracle' });
    rec.program.encode(enc);
    const read = recordTapsReadback(g.device, enc, rec.taps, names);
    g.device.queue.submit([enc.finish()]);
    const got = await read();
    return names.map((n) => got.get(n) as Float64Array);
  } finally {
    rec.release();
  }
}

/** A step's weight and bias buffers, from its owner's (a layer's or the model's) weight field. */
function weightsOf(
  g: FamilyGpuRerun,
  owner: Record<string, unknown>,
  s: OpStep,
): { weight: GPUBuffer | null; bias: GPUBuffer | null } {
  if (!s.weight) return { weight: null, bias: null };
  const v = owner[s.weight] as Tensor | LinearWeights | null | undefined;
  if (!v) throw new OracleError(`oracle ${s.slot}: the weights have no '${s.weight}'`);
  const buf = (t: Tensor) => {
    const b = g.weightBuffer(t);
    if (!b) throw new OracleError(`oracle ${s.slot}: weight '${s.weight}' is not on the GPU`);
    return b;
  };
  if ('weight' in v) return { weight: buf(v.weight), bias: v.bias ? buf(v.bias) : null };
  return { weight: buf(v), bias: null };
}

/**
 * The exact forward's dump (`embed`, `layers.{i}.out`, `final_norm`, `logits`) on the GPU oracle (FamilyGpuOracle,
 * its LM head in pieces where it does not fit one binding), read back in fp64: the curves' exact side.
 */
export async function exactDumpOnGpu(g: FamilyGpuRerun, x: GroupContext): Promise<Map<string, Float64Array>> {
  const oracle = new FamilyGpuOracle(g.device, g.pipelines, g.pool, x.cfg, x.weights, g.weightBuffer, {
    dfFma: g.dfFma,
    maxBindingBytes: g.maxBindingBytes,
    angles: x.angles,
  });
  const enc = g.device.createCommandEncoder({ label: 'family runs exact forward' });
  const run = oracle.forward(enc, x.tokens, 'dump');
  try {
    const names = [
      'embed',
      ...Array.from({ length: x.cfg.numLayers }, (_, i) => `layers.${i}.out`),
      'final_norm',
      'logits',
    ];
    const read = recordTapsReadback(g.device, enc, run.taps, names);
    g.device.queue.submit([enc.finish()]);
    return await read();
  } finally {
    run.release();
  }
}
