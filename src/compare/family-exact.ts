// The exact side of a Llama-family compare (family-compare.ts): the exact forward with every tap and every exact
// layer on the reference path's input to it (the local floor's), as df buffers on the GPU for the metrics
// (family-metrics.ts) — the GPU double-float oracle's own (engine/llama-oracle-gpu.ts, one submit), or the CPU fp64
// forward of the op registry uploaded as pairs where the adapter has no trusted double-float.
import type { Engine } from '../engine/engine';
import type { LlamaModel } from '../engine/family-llama';
import { FamilyGpuOracle, recordTapsReadback } from '../engine/llama-oracle-gpu';
import { DF_BYTES, type DfBuffer, OracleError, type OracleRun, uploadDf } from '../engine/oracle-df';
import type { BufferPool } from '../gpu/pool';
import { uploadBuffer } from '../gpu/readback';
import { llamaForward } from '../kernels/cpu/llama-forward';
import { opLayer } from '../kernels/cpu/op-forward';
import type { OracleInfo } from './oracle-info';

/** The exact tensors of a compare as df buffers on the GPU (the metrics' baselines), released together. */
export interface ExactTensors {
  taps: Map<string, DfBuffer>;
  local: DfBuffer[];
  release(): void;
}

/** The family's GPU double-float oracle over `model`'s own weights (its reference path's buffers). */
export function familyOracleOf(
  engine: Engine,
  model: LlamaModel,
  pool: BufferPool,
  dfFma: boolean,
): FamilyGpuOracle {
  const { device, pipelines } = engine.devicePipelines();
  return new FamilyGpuOracle(
    device,
    pipelines,
    pool,
    model.cfg,
    model.weights,
    (t) => model.ref.weightBuffer(t),
    {
      dfFma,
      maxBindingBytes: engine.maxBindingBytes,
    },
  );
}

/**
 * The exact forward with every tap and each layer on the reference path's input to it (the local floor's exact
 * side): on the GPU in double-float (one submit, the buffers kept for the metrics), or on the CPU in fp64 and
 * uploaded as df pairs.
 */
export function exactOf(
  engine: Engine,
  model: LlamaModel,
  pool: BufferPool,
  info: OracleInfo & { dfFma: boolean },
  tokens: number[],
  /** Each layer's input on the reference path: arrays (uploaded for the GPU oracle), or buffers where they lie. */
  refIn: readonly (Float32Array | GPUBuffer)[],
): ExactTensors {
  const { device } = engine.devicePipelines();
  if (info.kind === 'cpu') {
    const cpuTaps = new Map<string, Float64Array>();
    llamaForward(model.cfg, model.weights, tokens, cpuTaps);
    const made: GPUBuffer[] = [];
    const up = (v: Float64Array, name: string): DfBuffer => {
      if (v.length * DF_BYTES > engine.maxBindingBytes)
        throw new OracleError(
          `oracle ${name} needs ${v.length * DF_BYTES} bytes, more than one storage binding on this adapter (${engine.maxBindingBytes}): use a shorter prompt`,
        );
      const buffer = uploadDf(device, v);
      made.push(buffer);
      return { buffer, n: v.length };
    };
    const release = once(() => {
      for (const b of made) b.destroy();
    });
    try {
      const taps = new Map([...cpuTaps].map(([name, v]) => [name, up(v, name)] as const));
      const local = refIn.map((x, i) => {
        if (!(x instanceof Float32Array))
          throw new Error(
            'exact side: the CPU oracle takes the layer inputs as arrays (read them back first)',
          );
        return up(
          opLayer(model.cfg, model.weights.layers[i], Float64Array.from(x), tokens, i),
          `layers.${i}.out`,
        );
      });
      return { taps, local, release };
    } catch (e) {
      release();
      throw e;
    }
  }
  const oracle = familyOracleOf(engine, model, pool, info.dfFma);
  const uploaded: GPUBuffer[] = [];
  const inputs = refIn.map((x, i) => {
    if (!(x instanceof Float32Array)) return x;
    const b = uploadBuffer(device, x, `oracle input ${i}`);
    uploaded.push(b);
    return b;
  });
  const runs: OracleRun[] = [];
  const release = once(() => {
    for (const r of runs) r.release();
    for (const b of uploaded) b.destroy();
  });
  try {
    const enc = device.createCommandEncoder({ label: 'llama oracle' });
    const whole = oracle.forward(enc, tokens, 'all');
    runs.push(whole);
    const layers = oracle.layersOn(enc, tokens, inputs);
    runs.push(layers);
    device.queue.submit([enc.finish()]);
    const local = refIn.map((_, i) => layers.taps.get(`layers.${i}.out`) as DfBuffer);
    return { taps: whole.taps, local, release };
  } catch (e) {
    release();
    throw e;
  }
}

/** f, callable any number of times, run once. */
function once(f: () => void): () => void {
  let done = false;
  return () => {
    if (!done) f();
    done = true;
  };
}

/**
 * The exact logits of the last row of `seq` (a parting's row, parting.ts): the GPU oracle's whole forward with only
 * the dump kept, its logits read back; or the CPU fp64 forward.
 */
export async function exactLastRow(
  engine: Engine,
  model: LlamaModel,
  pool: BufferPool,
  info: OracleInfo & { dfFma: boolean },
  seq: number[],
): Promise<Float64Array> {
  const V = model.cfg.vocabSize;
  if (info.kind === 'cpu') {
    const exact = llamaForward(model.cfg, model.weights, seq);
    return exact.logits.slice((exact.T - 1) * V);
  }
  const { device } = engine.devicePipelines();
  const oracle = familyOracleOf(engine, model, pool, info.dfFma);
  const enc = device.createCommandEncoder({ label: 'llama oracle row' });
  const run = oracle.forward(enc, seq, 'dump');
  try {
    const read = recordTapsReadback(device, enc, run.taps, ['logits']);
    device.queue.submit([enc.finish()]);
    const logits = (await read()).get('logits') as Float64Array;
    return logits.slice((seq.length - 1) * V);
  } finally {
    run.release();
  }
}
