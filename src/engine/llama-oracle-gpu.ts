// The Llama family's exact forward on the GPU: the one GPU oracle (oracle-gpu.ts GpuOracle: the family's steps off
// the op registry, each by its op's double-float form) on the f32 buffers of the family's weight tensors (for the
// Llama family the reference forward's, LlamaReference.weightBuffer): nothing is uploaded twice. Taps under the steps'
// slots, as the CPU fp64 forward's (`embed`, `layers.{i}.{slot}`, `final_norm`, `logits`), as df buffers
// (oracle-df.ts). Trusted only where the adapter passed the double-float self-test (compare/oracle-source.ts). Also
// here: reading taps back in the submit that computes them, and a dump out of them.
import type { PipelineCache } from '../gpu/pipelines';
import type { BufferPool } from '../gpu/pool';
import { recordReadback } from '../gpu/readback';
import type { RotaryAngles } from '../kernels/cpu/rotary-angles';
import { fromDfPairs } from '../numeric/double-float';
import type { HiddenDump, ModelConfig } from '../numeric/types';
import { DF_BYTES, type DfBuffer, OracleError } from './oracle-df';
import { GpuOracle } from './oracle-gpu';
import { type OracleWeights, tensorWeights, type WeightBuffers } from './oracle-weights';

export type { OracleWeights, WeightBuffers } from './oracle-weights';

/** The GPU oracle of any family on f32 buffers of its weight tensors, its taps under the steps' slots. */
export class FamilyGpuOracle extends GpuOracle {
  constructor(
    device: GPUDevice,
    pipelines: PipelineCache,
    pool: BufferPool,
    readonly cfg: ModelConfig,
    w: OracleWeights,
    weightBuffer: WeightBuffers,
    opts: { dfFma: boolean; maxBindingBytes: number; angles?: RotaryAngles },
  ) {
    super(device, pipelines, pool, tensorWeights(cfg, w, weightBuffer), { ...opts, planNames: false });
  }
}

/**
 * Records the readback of the named df taps into `encoder` (one submit with the work before it); the promise of
 * each as hi + lo in f64 (a tensor split by columns reassembled into [rows, V]). Throws naming a tap not recorded.
 */
export function recordTapsReadback(
  device: GPUDevice,
  encoder: GPUCommandEncoder,
  taps: ReadonlyMap<string, DfBuffer>,
  names: readonly string[],
): () => Promise<Map<string, Float64Array>> {
  const reqs: { src: GPUBuffer; bytes: number }[] = [];
  const layout: { name: string; t: DfBuffer; first: number }[] = [];
  for (const name of names) {
    const t = taps.get(name);
    if (!t) throw new OracleError(`oracle: no tap '${name}' was recorded`);
    layout.push({ name, t, first: reqs.length });
    if (!t.parts) reqs.push({ src: t.buffer, bytes: t.n * DF_BYTES });
    else {
      const cols = t.parts.reduce((s, p) => s + p.cols, 0);
      for (const p of t.parts) reqs.push({ src: p.buffer, bytes: (t.n / cols) * p.cols * DF_BYTES });
    }
  }
  const finish = recordReadback(device, encoder, reqs);
  return async () => {
    const got = await finish();
    const out = new Map<string, Float64Array>();
    for (const { name, t, first } of layout) {
      if (!t.parts) {
        out.set(name, fromDfPairs(got[first], t.n));
        continue;
      }
      const cols = t.parts.reduce((s, p) => s + p.cols, 0);
      const R = t.n / cols;
      const whole = new Float64Array(t.n);
      t.parts.forEach((p, k) => {
        const vals = fromDfPairs(got[first + k], R * p.cols);
        for (let r = 0; r < R; r++) whole.set(vals.subarray(r * p.cols, (r + 1) * p.cols), r * cols + p.col0);
      });
      out.set(name, whole);
    }
    return out;
  };
}

/** The dump (embeddings, layer outputs, final norm, logits) out of a forward's taps read back. */
export function dumpOfTaps(
  cfg: ModelConfig,
  T: number,
  taps: ReadonlyMap<string, Float64Array>,
): HiddenDump<Float64Array> {
  const get = (n: string) => {
    const v = taps.get(n);
    if (!v) throw new OracleError(`oracle: tap '${n}' was not read back`);
    return v;
  };
  return {
    T,
    d: cfg.hiddenSize,
    V: cfg.vocabSize,
    embeddings: get('embed'),
    layers: Array.from({ length: cfg.numLayers }, (_, i) => get(`layers.${i}.out`)),
    finalNorm: get('final_norm'),
    logits: get('logits'),
  };
}
