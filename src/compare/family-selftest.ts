// The Llama family's half of the double-float self-test: a tiny Llama-family model with every feature of the family
// (GQA, a sliding window, llama3 scaling, q/k norms, biases) through the family's GPU oracle on this adapter, against
// the CPU fp64 forward (milliseconds at this size). The df library can pass its own checks (df-selftest.ts) and
// GPT-NeoX's tiny model (oracle-selftest.ts) while a kernel only this family runs (RMSNorm, SwiGLU, the rotary over
// heads, GQA attention) does not survive a compiler: this catches that. Run once per device.
import type { Engine } from '../engine/engine';
import { FamilyGpuOracle, recordTapsReadback } from '../engine/llama-oracle-gpu';
import type { PipelineCache } from '../gpu/pipelines';
import type { BufferPool } from '../gpu/pool';
import { uploadBuffer } from '../gpu/readback';
import { llamaForward } from '../kernels/cpu/llama-forward';
import { everyFeatureLlamaConfig } from '../model/llama-config';
import { randomLlamaTensors } from '../model/llama-random';
import { loadLlamaWeights } from '../model/llama-weights';
import { writeSafetensors } from '../model/safetensors-write';
import { relL2 } from '../numeric/double-float';
import type { Tensor } from '../numeric/types';
import { LLAMA_FAMILY, layerSteps } from '../ops/families';
import { heldTensors } from '../ops/weights';
import type { OracleInfo } from './oracle-info';
import { TINY_MODEL_REL_L2, type TinyModelCheck } from './oracle-selftest';
import { decideFamilyOracle, type OracleChoice, type SelfTestOptions } from './oracle-source';

/** One fixed tiny model of the family with every feature (llama-config.ts everyFeatureLlamaConfig), random weights. */
function tinyLlama() {
  const cfg = everyFeatureLlamaConfig();
  return { cfg, w: loadLlamaWeights(cfg, writeSafetensors(randomLlamaTensors(cfg, 20261127))) };
}

/** Every tap of the tiny model within TINY_MODEL_REL_L2 of fp64, or one line naming the first over it. */
export async function tinyLlamaCheck(
  device: GPUDevice,
  pipelines: PipelineCache,
  pool: BufferPool,
  dfFma: boolean,
): Promise<TinyModelCheck> {
  const { cfg, w } = tinyLlama();
  const tokens = [3, 17, 40, 0, 22, 9, 31];
  const want = new Map<string, Float64Array>();
  llamaForward(cfg, w, tokens, want);
  const bufs = new Map<Tensor, GPUBuffer>();
  const up = (t: Tensor) => bufs.set(t, uploadBuffer(device, t.data, 'tiny llama weight'));
  // Every weight the family's steps read (ops/families.ts OpStep.weight), the model's and each layer's.
  const spec = LLAMA_FAMILY;
  for (const t of heldTensors(w, [spec.embed, spec.finalNorm, spec.lmHead])) up(t);
  for (const l of w.layers) for (const t of heldTensors(l, layerSteps(spec, cfg))) up(t);
  const max = device.limits.maxStorageBufferBindingSize;
  const oracle = new FamilyGpuOracle(device, pipelines, pool, cfg, w, (t) => bufs.get(t) ?? null, {
    dfFma,
    maxBindingBytes: max,
  });
  const enc = device.createCommandEncoder({ label: 'family oracle self-test' });
  const run = oracle.forward(enc, tokens, 'all');
  try {
    const read = recordTapsReadback(device, enc, run.taps, [...want.keys()]);
    device.queue.submit([enc.finish()]);
    const got = await read();
    let worst = 0;
    for (const [name, exact] of want) {
      const r = relL2(got.get(name) as Float64Array, exact);
      if (!(r <= TINY_MODEL_REL_L2))
        return {
          ok: false,
          worstRelL2: r,
          failure: `tiny Llama-family model: ${name} is ${r.toExponential(2)} from fp64 (relative L2), over ${TINY_MODEL_REL_L2}`,
        };
      worst = Math.max(worst, r);
    }
    return { ok: true, worstRelL2: worst, failure: null };
  } finally {
    run.release();
    for (const b of bufs.values()) b.destroy();
  }
}

const checks = new WeakMap<GPUDevice, Map<boolean, Promise<TinyModelCheck>>>();

/**
 * The oracle of a Llama-family compare: GPT-NeoX's choice (decideFamilyOracle: a CPU adapter takes the CPU oracle
 * unless asked, else the df self-test), and where that chose the GPU, the tiny Llama-family model through the
 * family's kernels (once per device and DF_FMA); where that fails, the CPU oracle, saying why.
 */
export async function familyOracle(
  engine: Engine,
  choice: OracleChoice,
  pool: BufferPool,
  o: SelfTestOptions = {},
): Promise<OracleInfo & { dfFma: boolean }> {
  const info = await decideFamilyOracle(engine, choice, pool, o);
  if (info.kind !== 'gpu') return info;
  const { device, pipelines } = engine.devicePipelines();
  let perDevice = checks.get(device);
  if (!perDevice) checks.set(device, (perDevice = new Map()));
  let p = perDevice.get(info.dfFma);
  if (!p) {
    p = tinyLlamaCheck(device, pipelines, pool, info.dfFma).catch((e: unknown) => ({
      ok: false,
      worstRelL2: Number.NaN,
      failure: `the family's check could not run: ${e instanceof Error ? e.message : String(e)}`,
    }));
    perDevice.set(info.dfFma, p);
  }
  const tiny = await p;
  if (tiny.ok) return info;
  const failure = tiny.failure ?? 'tiny Llama-family model failed';
  return {
    kind: 'cpu',
    reason: `the family's double-float kernels failed their check on this adapter (${failure}); the fp64 oracle ran on the CPU`,
    selfTest: info.selfTest && {
      ...info.selfTest,
      ok: false,
      failures: [...info.selfTest.failures, failure],
    },
    dfFma: false,
  };
}
