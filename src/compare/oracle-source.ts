// Where the comparison's fp64-class oracle comes from. On a GPU whose double-float arithmetic passed the
// self-test, the oracle runs there (src/engine/oracle-gpu.ts) inside the comparison's own submit; otherwise the
// fp64 oracle runs in JavaScript (src/kernels/cpu/forward.ts) and its tensors are uploaded as double-float
// pairs, so everything after (the metrics on the GPU) is the same either way. Which one ran, and why, goes into
// every report.

import type { GpuBatch } from '../engine/batch';
import { dfSelfTest } from '../engine/df-selftest';
import type { Engine } from '../engine/engine';
import { isCpuAdapterSummary } from '../engine/install';
import { type DfBuffer, uploadDf } from '../engine/oracle-df';
import { GpuOracle } from '../engine/oracle-gpu';
import type { PipelineCache } from '../gpu/pipelines';
import type { BufferPool } from '../gpu/pool';
import { Program } from '../gpu/program';
import { oracleForward, oracleLayer } from '../kernels/cpu/forward';
import { dfHi } from '../kernels/df-hi';
import type { HiddenDump, ModelWeights } from '../numeric/types';
import type { OracleInfo } from './oracle-info';
import { tinyModelCheck } from './oracle-selftest';

/** 'auto': the GPU oracle where the self-test passed and the adapter is a real GPU; else as asked. */
export type OracleChoice = 'auto' | 'gpu' | 'cpu';

type SelfTest = NonNullable<OracleInfo['selfTest']> & { dfFma: boolean };
const selfTests = new WeakMap<GPUDevice, Promise<SelfTest>>();

/** Test hooks: a deliberately broken double-float library (DF_BREAK), so the fallback can be seen to work. */
export interface SelfTestOptions {
  dfBreak?: number;
}

/**
 * The double-float self-test, run once per device (a recovered device is tested again) and remembered: the
 * error-free transforms and df functions on adversarial inputs (src/engine/df-selftest.ts), then a tiny model
 * through the whole GPU oracle against fp64 on the CPU (src/compare/oracle-selftest.ts).
 */
function selfTestOf(
  gpu: { device: GPUDevice; pipelines: PipelineCache; pool: BufferPool },
  o: SelfTestOptions,
): Promise<SelfTest> {
  const { device, pipelines, pool } = gpu;
  let p = o.dfBreak ? undefined : selfTests.get(device);
  if (!p) {
    const run = async (): Promise<SelfTest> => {
      const ops = await dfSelfTest(device, pipelines, { dfBreak: o.dfBreak });
      if (!ops.ok) return ops;
      const t0 = performance.now();
      const tiny = await tinyModelCheck(device, pipelines, pool, ops.dfFma);
      const ms = ops.ms + performance.now() - t0;
      if (!tiny.ok) return { ...ops, ok: false, failures: [tiny.failure ?? 'tiny model failed'], ms };
      return { ...ops, ms };
    };
    p = run().catch((e: unknown) => ({
      ok: false,
      dfFma: false,
      worstRelErr: Number.NaN,
      failures: [`the self-test could not run: ${e instanceof Error ? e.message : String(e)}`],
      ms: 0,
    }));
    if (!o.dfBreak) selfTests.set(device, p);
  }
  return p;
}

/** A CPU adapter (SwiftShader, a fallback adapter): the JavaScript oracle is faster there than emulated df. */
export function isCpuAdapter(engine: Engine): boolean {
  return isCpuAdapterSummary(engine.adapter);
}

/** Which oracle runs; where it is the CPU one, the fp32 CPU copy of the weights is made first if it was not. */
export async function decideOracle(
  engine: Engine,
  choice: OracleChoice,
  o: SelfTestOptions = {},
): Promise<OracleInfo & { dfFma: boolean }> {
  const info = await chooseOracle(engine, choice, () => selfTestOf(engine.gpuParts(), o));
  if (info.kind === 'cpu') await engine.loadCpuWeights();
  return info;
}

/**
 * The same choice for a Llama-family model (its fp32 CPU weights are always there), the self-test's buffers from
 * the caller's pool: the engine's pool and GPT-NeoX's model are not the family's.
 */
export function decideFamilyOracle(
  engine: Engine,
  choice: OracleChoice,
  pool: BufferPool,
  o: SelfTestOptions = {},
): Promise<OracleInfo & { dfFma: boolean }> {
  return chooseOracle(engine, choice, () => selfTestOf({ ...engine.devicePipelines(), pool }, o));
}

async function chooseOracle(
  engine: Engine,
  choice: OracleChoice,
  runSelfTest: () => Promise<SelfTest>,
): Promise<OracleInfo & { dfFma: boolean }> {
  if (choice === 'cpu')
    return { kind: 'cpu', reason: 'asked for the CPU oracle', selfTest: null, dfFma: false };
  // On a CPU adapter the CPU oracle is the faster one: no self-test (its shaders alone take seconds to compile there).
  if (choice === 'auto' && isCpuAdapter(engine)) {
    return {
      kind: 'cpu',
      reason:
        'this adapter is itself a CPU (emulated double-float would be slower): the fp64 oracle ran on the CPU',
      selfTest: null,
      dfFma: false,
    };
  }
  const st = await runSelfTest();
  const selfTest = { ok: st.ok, worstRelErr: st.worstRelErr, failures: st.failures, ms: st.ms };
  if (!st.ok) {
    const why = st.failures[0] ?? 'unknown failure';
    return {
      kind: 'cpu',
      reason: `double-float arithmetic failed its self-test on this adapter (${why}); the fp64 oracle ran on the CPU`,
      selfTest,
      dfFma: false,
    };
  }
  return {
    kind: 'gpu',
    reason: `double-float self-test passed on this adapter (worst relative error ${st.worstRelErr.toExponential(1)})`,
    selfTest,
    dfFma: st.dfFma,
  };
}

/** The oracle's tensors for one comparison, on the GPU as double-float pairs, named like the plan's taps. */
export interface OracleTensors {
  taps: Map<string, DfBuffer>;
  /**
   * The local floor's pair for layer i: the oracle's input to layer i rounded to f32 ([T, d], for the reference
   * layer to run on), and the oracle's layer i on exactly that input (double-float).
   */
  local(i: number): { input: GPUBuffer; exact: DfBuffer };
}

const CPU_CACHE_ENTRIES = 4;
const cpuCache = new WeakMap<
  ModelWeights,
  Map<string, { dump: HiddenDump<Float64Array>; taps: Map<string, Float64Array> }>
>();

/** The CPU oracle's forward for (weights, tokens), computed once and reused by later compares of that prompt. */
function cpuForward(engine: Engine, w: ModelWeights, tokens: number[]) {
  const key = tokens.join(',');
  const hit = cpuCache.get(w)?.get(key);
  if (hit) return hit;
  const cfg = engine.modelInfo!.config;
  const taps = new Map<string, Float64Array>();
  const entry = { dump: oracleForward(cfg, w, tokens, taps), taps };
  let perModel = cpuCache.get(w);
  if (!perModel) cpuCache.set(w, (perModel = new Map()));
  if (perModel.size >= CPU_CACHE_ENTRIES) perModel.delete(perModel.keys().next().value as string);
  perModel.set(key, entry);
  return entry;
}

/**
 * Records (GPU) or computes and uploads (CPU) the oracle for `tokens` into `batch`; `local` lists the layers whose
 * local floor is wanted. Buffers live as long as the batch.
 */
export function oracleTensors(
  engine: Engine,
  batch: GpuBatch,
  info: OracleInfo & { dfFma: boolean },
  tokens: number[],
  local: number[],
): OracleTensors {
  const { device, pipelines, pool, model } = engine.gpuParts();
  const cfg = model.cfg;
  const T = tokens.length;
  const d = cfg.hiddenSize;
  const locals = new Map<number, { input: GPUBuffer; exact: DfBuffer }>();
  if (info.kind === 'gpu') {
    const oracle = new GpuOracle(device, pipelines, pool, model, {
      dfFma: info.dfFma,
      maxBindingBytes: engine.maxBindingBytes,
    });
    const run = oracle.forward(batch.encoder, tokens, 'all');
    batch.onRelease(() => run.release());
    if (local.length > 0) {
      const program = new Program(device, pipelines);
      batch.onRelease(() => program.dispose());
      const inputs = local.map((i) => {
        const src = run.taps.get(i === 0 ? 'embed' : `layers.${i - 1}.out`)!;
        const input = batch.buffer(T * d * 4, `oracle-input:${i}`);
        program.add(dfHi(`oracle-input.${i}`, { x: src.buffer, y: input }, T * d));
        return input;
      });
      program.encode(batch.encoder);
      local.forEach((i, j) => {
        const one = oracle.layer(batch.encoder, i, { f32: inputs[j] }, T, 'dump');
        batch.onRelease(() => one.release());
        locals.set(i, { input: inputs[j], exact: one.taps.get(`layers.${i}.out`)! });
      });
    }
    return { taps: run.taps, local: (i) => locals.get(i)! };
  }
  const w = engine.weights!;
  const { dump, taps } = cpuForward(engine, w, tokens);
  const uploaded = new Map<string, DfBuffer>();
  const up = (data: Float64Array): DfBuffer => {
    const buffer = uploadDf(device, data);
    batch.onRelease(() => buffer.destroy());
    return { buffer, n: data.length };
  };
  for (const [name, data] of taps) uploaded.set(name, up(data));
  for (const i of local) {
    const input = Float32Array.from(i === 0 ? dump.embeddings : dump.layers[i - 1]);
    const buf = batch.buffer(T * d * 4, `oracle-input:${i}`);
    device.queue.writeBuffer(buf, 0, input.buffer, input.byteOffset, input.byteLength);
    locals.set(i, { input: buf, exact: up(oracleLayer(cfg, w.layers[i], input, T, i)) });
  }
  return { taps: uploaded, local: (i) => locals.get(i)! };
}
