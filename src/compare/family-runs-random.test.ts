// The analysis of Llama-family runs (family-runs.ts) on random models (engine/llama-models.testdata.ts: every feature
// of the family drawn — GQA and MQA ratios, head dims that are multiples of no tile, windows, rope scaling, biases,
// q/k norms, tied embeddings), in Node on SwiftShader below the Engine: the floors from the Llama reference path's
// own taps (LlamaReference, as the engine makes them). Per seed, a run with one of the causes that act on the model
// planted at a drawn layer (family-runs-synth.testdata.ts) is born at that layer and op with its cause named, and the run
// with nothing planted agrees. Seed printed on failure; KERNEL_SEED replays one, KERNEL_SWEEP=n draws n.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedDims } from '../engine/family-llama';
import { randomLlamaModel } from '../engine/llama-models.testdata';
import { LlamaReference } from '../engine/llama-reference';
import { precisionConstants } from '../kernels/precision';
import { createHarness, freshSeed, type Harness } from '../kernels/testing';
import { readRunFile } from '../model/run-file';
import { mulberry32 } from '../numeric/random';
import type { LlamaConfig } from '../numeric/types';
import { analyzeFamilyRuns, type FamilyRunsModel } from './family-runs';
import { plantsFor, synthFamilyRun } from './family-runs-synth.testdata';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());

const ROUNDS = Number(process.env.KERNEL_SWEEP ?? 50);

async function read(bytes: Uint8Array, cfg: LlamaConfig) {
  const chunks = (async function* () {
    yield bytes;
  })();
  return { file: await readRunFile(chunks, bytes.length, cfg, { file: 'run.safetensors' }), sha256: null };
}

describe('the analysis of Llama-family runs on random models', () => {
  it(`finds a planted cause at its layer and op, and a clean run agrees (${ROUNDS} seeds)`, async () => {
    const wrong: string[] = [];
    const first = freshSeed();
    for (let i = 0; i < ROUNDS; i++) {
      const seed = (first + i) >>> 0;
      const { cfg, w, tokens } = randomLlamaModel(seed);
      const r = mulberry32(seed ^ 0x7a11);
      const ref = LlamaReference.create(h, cfg, w);
      const model: FamilyRunsModel = {
        name: 'random',
        cfg,
        shared: sharedDims(cfg),
        weights: w,
        adapter: {
          vendor: 'test',
          architecture: '',
          device: '',
          description: '',
        } as FamilyRunsModel['adapter'],
        reference: async (t, precision) =>
          (await ref.forward(t, { cpu: true, taps: true, constants: { ...precisionConstants(precision) } }))
            .taps,
      };
      try {
        const layer = Math.floor(r() * cfg.numLayers);
        const plants = plantsFor(cfg, layer, tokens.length);
        const [plant, check] = plants[Math.floor(r() * plants.length)];
        const tag = `seed ${seed} (${cfg.flavour}, L ${cfg.numLayers}, H ${cfg.numHeads}/${cfg.numKvHeads}, hd ${cfg.headDim}, T ${tokens.length}, window ${cfg.slidingWindow}, ${cfg.ropeScaling.type}; ${plant.id} at layer ${layer})`;
        const clean = await analyzeFamilyRuns(model, await read(synthFamilyRun(cfg, w, tokens), cfg), null);
        if (clean.verdict !== 'agree') wrong.push(`${tag}, clean: ${clean.sentence}`);
        const planted = await analyzeFamilyRuns(
          model,
          await read(synthFamilyRun(cfg, w, tokens, { plant }), cfg),
          null,
        );
        const f = planted.findings[0];
        const named = f.cause?.named.map((c) => c.id) ?? [];
        if (f.check !== check || !named.includes(plant.id)) wrong.push(`${tag}: ${planted.sentence}`);
      } catch (e) {
        wrong.push(`seed ${seed}: threw ${(e as Error).message}`);
      } finally {
        ref.destroy();
      }
    }
    expect(wrong).toEqual([]);
  });
});
