// A forward submitted in several command buffers (gpu/submit-chunks.ts) gives the bits of one buffer: GPT-NeoX's
// reference and fused forwards (Engine.forward, every tap and the dump) and the Llama fused forward (every slot), on
// random models whose sizes are multiples of no tile, in a random count of buffers (more than the dispatches
// included, which is one a dispatch); the submits counted are the buffers asked for, the default rule's where none
// is named, and Engine.timeForward submits the same buffers. Seed printed on failure; KERNEL_SEED replays one,
// KERNEL_SWEEP=n draws n.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeGpu } from '../gpu/node';
import { chunkRanges } from '../gpu/submit-chunks';
import { nodeShaderSource } from '../kernels/shaders-node';
import { createHarness, freshSeed, type Harness } from '../kernels/testing';
import { type RandomModelSpec, randomModelFiles } from '../model/random-model';
import { mulberry32 } from '../numeric/random';
import { Engine } from './engine';
import { LlamaFused } from './llama-fused';
import { randomLlamaModel } from './llama-models.testdata';

let engine: Engine;
let h: Harness;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
  h = await createHarness();
});
afterAll(() => {
  engine?.dispose();
  h?.destroy();
});

const ROUNDS = Number(process.env.KERNEL_SWEEP ?? 1);

/** Counts queue.submit calls on `device` while `f` runs. */
async function countSubmits<T>(
  device: GPUDevice,
  f: () => Promise<T>,
): Promise<{ value: T; submits: number }> {
  const queue = device.queue;
  const submit = queue.submit.bind(queue);
  let submits = 0;
  queue.submit = (bufs: Iterable<GPUCommandBuffer>) => {
    submits++;
    submit(bufs);
  };
  try {
    return { value: await f(), submits };
  } finally {
    queue.submit = submit;
  }
}

const same = (a: Float32Array, b: Float32Array) =>
  a.length === b.length &&
  Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));

describe('forwards in several command buffers', () => {
  it.each(Array.from({ length: ROUNDS }, (_, i) => i))(
    'GPT-NeoX random model %i: both paths, every tap the bits of one buffer',
    async () => {
      const seed = freshSeed();
      const r = mulberry32(seed);
      const int = (lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
      const heads = int(1, 3);
      // Head dims of no tile multiple whose rotary dims, floor(head dim × pct), are even (the config asks it).
      const [headDim, rotaryPct] = [
        [4, 0.5],
        [12, 0.5],
        [20, 1],
        [28, 0.5],
        [24, 0.25],
        [40, 0.25],
        [10, 1],
      ][int(0, 6)];
      const spec: RandomModelSpec = {
        vocab: int(20, 150),
        d: heads * headDim,
        layers: int(1, 4),
        heads,
        ff: int(5, 70),
        rotaryPct,
        parallel: r() < 0.5,
      };
      const tokens = Array.from({ length: int(1, 30) }, () => int(0, spec.vocab - 1));
      const tag = `seed ${seed} (${JSON.stringify(spec)}, T ${tokens.length})`;
      const other = tokens.map((t) => (t + 1) % spec.vocab);
      await engine.loadModel(randomModelFiles(spec, seed));
      const device = engine.ctx.device;
      for (const path of ['reference', 'fused'] as const) {
        const one = await countSubmits(device, () =>
          engine.forward(tokens, { path, taps: 'all', submitChunks: 1 }),
        );
        const n = one.value.dispatches;
        const chunks = int(2, n + 2);
        // Before each chunked forward, one on other ids (the same recording, the same buffers): a dispatch the
        // chunks left out would leave those ids' values behind, not the ones compared.
        const scramble = () => engine.forward(other, { path, taps: 'all', submitChunks: 1 });
        await scramble();
        const many = await countSubmits(device, () =>
          engine.forward(tokens, { path, taps: 'all', submitChunks: chunks }),
        );
        await scramble();
        const byRule = await countSubmits(device, () => engine.forward(tokens, { path, taps: 'all' }));
        expect(one.submits, `${tag} ${path}: one buffer`).toBe(1);
        expect(many.submits, `${tag} ${path}: ${chunks} buffers asked, ${n} dispatches`).toBe(
          Math.min(chunks, n),
        );
        expect(byRule.submits, `${tag} ${path}: the rule's buffers`).toBe(chunkRanges(n).length);
        for (const run of [many.value, byRule.value]) {
          expect(run.dispatches, `${tag} ${path}`).toBe(n);
          expect([...run.taps.keys()].sort(), `${tag} ${path}: the same taps`).toEqual(
            [...one.value.taps.keys()].sort(),
          );
          for (const [name, v] of one.value.taps) {
            expect(v.every(Number.isFinite), `${tag} ${path}: ${name} finite`).toBe(true);
            expect(same(run.taps.get(name) as Float32Array, v), `${tag} ${path}: ${name} bit for bit`).toBe(
              true,
            );
          }
          expect(same(run.dump.logits, one.value.dump.logits), `${tag} ${path}: logits`).toBe(true);
        }
        // The benchmark's timing submits the same buffers, each rep.
        const timed = await countSubmits(device, () =>
          engine.timeForward(tokens, { path, submitChunks: chunks }, 2),
        );
        expect(timed.value.buffers, `${tag} ${path}: timed buffers`).toBe(Math.min(chunks, n));
        expect(timed.submits, `${tag} ${path}: timed submits`).toBe(2 * Math.min(chunks, n));
      }
      await expect(engine.forward(tokens, { submitChunks: 0 }), tag).rejects.toThrow(/0 command buffers/);
    },
  );

  it.each(Array.from({ length: ROUNDS }, (_, i) => i))(
    'Llama random model %i: the fused forward, every slot the bits of one buffer',
    async () => {
      const seed = freshSeed();
      const { cfg, w, tokens } = randomLlamaModel(seed);
      const tag = `seed ${seed} (${cfg.flavour}, ${cfg.numLayers} layers, hd ${cfg.headDim}, T ${tokens.length})`;
      const other = tokens.map((t) => (t + 1) % cfg.vocabSize);
      const fused = LlamaFused.create(h, cfg, w);
      try {
        const run = (submitChunks: number) =>
          countSubmits(h.device, () => fused.forwardTaps(tokens, { submitChunks }));
        const one = await run(1);
        const chunks = 2 + Math.floor(mulberry32(seed ^ 0x5bd1e995)() * 40);
        await fused.forwardTaps(other, { submitChunks: 1 }); // as above: other values in any buffer it reuses
        const many = await run(chunks);
        expect(one.submits, `${tag}: one buffer`).toBe(1);
        expect(many.submits, `${tag}: ${chunks} buffers asked`).toBeGreaterThan(1);
        expect(many.submits, `${tag}: ${chunks} buffers asked`).toBeLessThanOrEqual(chunks);
        expect([...many.value.taps.keys()].sort(), tag).toEqual([...one.value.taps.keys()].sort());
        for (const [name, v] of one.value.taps) {
          expect(v.every(Number.isFinite), `${tag}: ${name} finite`).toBe(true);
          expect(same(many.value.taps.get(name) as Float32Array, v), `${tag}: ${name} bit for bit`).toBe(
            true,
          );
        }
      } finally {
        fused.destroy();
      }
    },
  );
});
