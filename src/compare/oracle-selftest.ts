// The second half of the double-float self-test: a tiny model through the whole GPU oracle on this adapter,
// against the fp64 oracle computed on the CPU (milliseconds at this size). The error-free transforms and the df
// functions can each pass while a kernel's composition of them does not survive a compiler; this catches that.

import { uploadModel } from '../engine/gpu-model';
import { readDf } from '../engine/oracle-df';
import { GpuOracle } from '../engine/oracle-gpu';
import type { PipelineCache } from '../gpu/pipelines';
import type { BufferPool } from '../gpu/pool';
import { oracleForward } from '../kernels/cpu/forward';
import { parseConfigText } from '../model/config';
import { randomModelFiles } from '../model/random-model';
import { loadWeights } from '../model/weights';

/** Relative L2 each dump tensor must meet: 1e-12, four orders under the fp32 rounding (6e-8) the oracle judges. */
export const TINY_MODEL_REL_L2 = 1e-12;

export interface TinyModelCheck {
  ok: boolean;
  worstRelL2: number;
  /** One line naming the first tensor over the bound, or null. */
  failure: string | null;
}

function relL2(a: Float64Array, b: Float64Array): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < a.length; i++) {
    num += (a[i] - b[i]) ** 2;
    den += b[i] ** 2;
  }
  return den === 0 ? (num === 0 ? 0 : Number.POSITIVE_INFINITY) : Math.sqrt(num / den);
}

/** Runs a fixed tiny model (both residual wirings are exercised elsewhere; this one is sequential) through both oracles. */
export async function tinyModelCheck(
  device: GPUDevice,
  pipelines: PipelineCache,
  pool: BufferPool,
  dfFma: boolean,
): Promise<TinyModelCheck> {
  const files = randomModelFiles(
    { vocab: 41, d: 24, layers: 2, heads: 2, ff: 36, rotaryPct: 0.5, parallel: false },
    20261123,
  );
  const cfg = parseConfigText(files.config);
  const w = loadWeights(cfg, files.weights);
  const tokens = [3, 17, 40, 0, 22, 9, 31];
  const want = oracleForward(cfg, w, tokens);
  const model = uploadModel(device, cfg, w, device.limits.maxStorageBufferBindingSize);
  const oracle = new GpuOracle(device, pipelines, pool, model, {
    dfFma,
    maxBindingBytes: device.limits.maxStorageBufferBindingSize,
  });
  const encoder = device.createCommandEncoder({ label: 'oracle self-test' });
  const run = oracle.forward(encoder, tokens, 'dump');
  device.queue.submit([encoder.finish()]);
  try {
    const pairs: [string, Float64Array][] = [
      ['embed', want.embeddings],
      ...want.layers.map((l, i): [string, Float64Array] => [`layers.${i}.out`, l]),
      ['final_norm', want.finalNorm],
      ['logits', want.logits],
    ];
    let worst = 0;
    for (const [name, exact] of pairs) {
      const got = await readDf(device, run.taps.get(name)!, tokens.length);
      const r = relL2(got, exact);
      if (!(r <= TINY_MODEL_REL_L2)) {
        return {
          ok: false,
          worstRelL2: r,
          failure: `tiny model: ${name} is ${r.toExponential(2)} from fp64 (relative L2), over ${TINY_MODEL_REL_L2}`,
        };
      }
      worst = Math.max(worst, r);
    }
    return { ok: true, worstRelL2: worst, failure: null };
  } finally {
    run.release();
    model.destroy();
  }
}
