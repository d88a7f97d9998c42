// GPT-NeoX through the GPU oracle's two weight sources and name sets (oracle-gpu.ts GpuOracle): the model's own
// upload under the engine's tap names (GpuOracle, what its compare uses) and f32 buffers of its tensors under the
// steps' slots (FamilyGpuOracle, what the Llama family uses): every tap both record, bit for bit (the slot of an
// engine tap from neoxSlotOfTap, q, k, v from the rotary's packed slot), on random models of both residual styles
// with partial rotary; and the oracle's launches: one per op of the reference plan (planOpsOf: the rotary, scores,
// probs and ctx each one), one a chunk of the embedding table, one for the final norm, one a piece of the LM head —
// as many as the layer recorded op by op launched before it iterated the steps. Outputs are poisoned before the
// kernels run (PoisonPool).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireGpu, type GpuContext } from '../gpu/device';
import { nodeGpu } from '../gpu/node';
import { PipelineCache } from '../gpu/pipelines';
import { PoisonPool } from '../gpu/poison-pool.testdata';
import { uploadBuffer } from '../gpu/readback';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { parseConfigText } from '../model/config';
import { randomModelFiles } from '../model/random-model';
import { loadWeights } from '../model/weights';
import { mulberry32 } from '../numeric/random';
import type { Tensor } from '../numeric/types';
import { familyOf, NEOX_SEQUENTIAL, neoxSlotOfTap, planOpsOf } from '../ops/families';
import { uploadModel } from './gpu-model';
import { FamilyGpuOracle, recordTapsReadback } from './llama-oracle-gpu';
import { GpuOracle } from './oracle-gpu';

let gpu: GpuContext;
let device: GPUDevice;
let pipelines: PipelineCache;
let pool: PoisonPool;
beforeAll(async () => {
  gpu = await acquireGpu(nodeGpu());
  device = gpu.device;
  pipelines = new PipelineCache(device, nodeShaderSource());
  pool = new PoisonPool(device);
});
afterAll(() => {
  pool?.destroyAll();
  device?.destroy();
});

const BIG = 1 << 30;
const MODELS = 12;

/** The rotary step's packed output is the oracle's taps q, k, v, in that order. */
const ROTARY = NEOX_SEQUENTIAL.layer.find((s) => s.taps)!;

/** The registry forward's value of one of the oracle's taps (under the engine's tap names). */
function registryTap(taps: Map<string, Float64Array>, name: string): Float64Array | undefined {
  const m = /^layers\.(\d+)\.(.+)$/.exec(name);
  const j = m ? (ROTARY.taps ?? []).indexOf(m[2]) : -1;
  if (!m || j < 0) return taps.get(neoxSlotOfTap(name));
  const packed = taps.get(`layers.${m[1]}.${ROTARY.slot}`);
  const n = (packed?.length ?? 0) / 3;
  return packed?.slice(j * n, (j + 1) * n);
}

describe("GPT-NeoX's GPU oracle and the registry's df steps", () => {
  it(`give the same bits on every tap both record (${MODELS} random models)`, async () => {
    const first = freshSeed();
    for (let s = 0; s < MODELS; s++) {
      const seed = (first + s) >>> 0;
      const r = mulberry32(seed);
      const heads = 2 + Math.floor(r() * 3);
      const spec = {
        vocab: 37 + Math.floor(r() * 40),
        d: heads * 4 * (1 + Math.floor(r() * 4)), // head dims 4 … 16: even rotary dims at 50 %
        layers: 1 + Math.floor(r() * 2),
        heads,
        ff: 20 + Math.floor(r() * 30),
        rotaryPct: r() < 0.5 ? 0.5 : 1,
        parallel: r() < 0.5,
      };
      const files = randomModelFiles(spec, seed);
      const cfg = parseConfigText(files.config);
      const w = loadWeights(cfg, files.weights);
      const tokens = Array.from({ length: 1 + Math.floor(r() * 17) }, () => Math.floor(r() * spec.vocab));
      const tag = `seed ${seed} (${JSON.stringify(spec)}, T ${tokens.length})`;
      const gm = uploadModel(device, cfg, w, BIG, false);
      const bufs = new Map<Tensor, GPUBuffer>();
      const up = (t: Tensor | null) => t && bufs.set(t, uploadBuffer(device, t.data, 'neox weight'));
      for (const t of [w.embedIn, w.lmHead, w.finalLayerNorm.weight, w.finalLayerNorm.bias]) up(t);
      for (const l of w.layers)
        for (const x of [l.inputLayernorm, l.postAttentionLayernorm, l.qkv, l.dense, l.fc1, l.fc2]) {
          up(x.weight);
          up(x.bias);
        }
      try {
        const oracle = new GpuOracle(device, pipelines, pool, gm, { dfFma: false, maxBindingBytes: BIG });
        const steps = new FamilyGpuOracle(device, pipelines, pool, cfg, w, (t) => bufs.get(t) ?? null, {
          dfFma: false,
          maxBindingBytes: BIG,
        });
        const enc = device.createCommandEncoder();
        const a = oracle.forward(enc, tokens, 'all');
        const b = steps.forward(enc, tokens, 'all');
        const readA = recordTapsReadback(device, enc, a.taps, [...a.taps.keys()]);
        const readB = recordTapsReadback(device, enc, b.taps, [...b.taps.keys()]);
        device.queue.submit([enc.finish()]);
        const [want, got] = [await readA(), await readB()];
        a.release();
        b.release();
        let compared = 0;
        for (const [name, v] of want) {
          // The attention core's scores and probs are the df form's scratch, kept by the oracle alone.
          if (/\.(scores|probs)$/.test(name)) continue;
          const g = registryTap(got, name);
          expect(g, `${tag}: ${name} has no registry tap`).toBeDefined();
          expect(
            Buffer.from(g!.buffer, g!.byteOffset, g!.byteLength).equals(Buffer.from(v.buffer)),
            `${tag} ${name}`,
          ).toBe(true);
          compared++;
        }
        // Every layer's taps but scores and probs (q, k, v and nine or ten more), and the three at the top.
        expect(compared, tag).toBe(3 + cfg.numLayers * (cfg.useParallelResidual ? 12 : 13));
        const launches = 1 + cfg.numLayers * planOpsOf(familyOf(cfg)).length + 1 + 1; // one chunk, one piece here
        expect(a.dispatches, `${tag}: dispatches`).toBe(launches);
        expect(b.dispatches, `${tag}: dispatches`).toBe(launches);
      } finally {
        for (const x of bufs.values()) x.destroy();
        gm.destroy();
      }
    }
    expect(pool.stats().bytesInUse).toBe(0);
  });
});
