// Kept forwards (llama-kept.ts: the slots left on the GPU, read back only where asked) against the forwards that read
// everything back, on random Llama-family models (llama-models.testdata.ts: every feature of the family drawn, sizes
// that are multiples of no tile) in Node on SwiftShader: both paths, with and without every tap, a teaching fault
// drawn, and the local re-runs on the reference path's layer inputs given as the kept buffers themselves — every slot
// the same name, the same order and the same bits. The two-path compare (compare/family-compare.ts) rests on this
// for its report to be what reading everything back gave. Generation in lockstep (llama-generate.ts greedyLockstep:
// both paths' steps submitted, one wait a step) gives each path's ids and logits rows of its generation alone. Seed printed on failure; KERNEL_SEED replays one,
// KERNEL_SWEEP=n draws n (run with 60 before a change here).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { precisionConstants } from '../kernels/precision';
import { createHarness, freshSeed, type Harness } from '../kernels/testing';
import { mulberry32 } from '../numeric/random';
import { type FaultId, faultInfo } from '../run/faults';
import { LlamaFused } from './llama-fused';
import { greedyLockstep, type LockstepPath } from './llama-generate';
import type { KeptRun } from './llama-kept';
import { randomLlamaModel } from './llama-models.testdata';
import { LlamaReference } from './llama-reference';
import { StepCache } from './llama-step-cache';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());

const ROUNDS = Number(process.env.KERNEL_SWEEP ?? 3);

const bitsOf = (a: Float32Array) => new Uint32Array(a.buffer, a.byteOffset, a.length);

/** Every slot of `kept` read back against `want`: the same names in the same order, bit for bit. */
async function expectSame(kept: KeptRun, want: Map<string, Float32Array>, tag: string) {
  expect([...kept.slots.keys()], tag).toEqual([...want.keys()]);
  const got = await kept.read([...kept.slots.keys()]);
  for (const [name, w] of want) {
    const g = got.get(name) as Float32Array;
    expect(g.length, `${tag} ${name}`).toBe(w.length);
    expect(bitsOf(g), `${tag} ${name}`).toEqual(bitsOf(w));
  }
}

describe('kept Llama-family forwards', () => {
  it.each(Array.from({ length: ROUNDS }, (_, i) => i))('random model %i', async () => {
    const seed = freshSeed();
    const { cfg, w, tokens } = randomLlamaModel(seed);
    const r = mulberry32(seed ^ 0x4b3e);
    const drawn = [null, 'rms_eps_outside', 'swap_gate_up'][Math.floor(r() * 3)] as FaultId | null;
    const faults = drawn
      ? { [faultInfo(drawn).llama?.kernel as 'addRmsNorm' | 'swiglu']: faultInfo(drawn).constants }
      : {};
    const from = Math.floor(r() * cfg.numLayers);
    const faultLayers = Array.from({ length: cfg.numLayers - from }, (_, i) => from + i);
    const tag = `seed ${seed} (${cfg.flavour}, L ${cfg.numLayers}, T ${tokens.length}, faults ${JSON.stringify(faults)} from ${from})`;
    const ref = LlamaReference.create(h, cfg, w);
    const fused = LlamaFused.create(h, cfg, w);
    const kept: KeptRun[] = [];
    const keep = (k: KeptRun) => {
      kept.push(k);
      return k;
    };
    try {
      const fo = { cpu: true, faults, faultLayers };
      // every tap of each path
      const refRun = await ref.forward(tokens, { cpu: true, taps: true });
      const refKept = keep(await ref.forwardKept(tokens, { cpu: true, taps: true }));
      await expectSame(refKept, refRun.taps, `${tag} reference taps`);
      const fusedRun = await fused.forwardTaps(tokens, fo);
      await expectSame(
        keep(await fused.forwardKept(tokens, { ...fo, taps: true })),
        fusedRun.taps,
        `${tag} fused taps`,
      );
      // the dump alone
      const fusedDump = await fused.forward(tokens, fo);
      const dumpKept = keep(await fused.forwardKept(tokens, fo));
      const d = await dumpKept.readDump();
      expect(bitsOf(d.logits), tag).toEqual(bitsOf(fusedDump.logits));
      d.layers.forEach((l, i) => {
        expect(bitsOf(l), `${tag} layer ${i}`).toEqual(bitsOf(fusedDump.layers[i]));
      });
      expect(bitsOf(d.embeddings), tag).toEqual(bitsOf(fusedDump.embeddings));
      expect(bitsOf(d.finalNorm), tag).toEqual(bitsOf(fusedDump.finalNorm));
      // the local re-runs: the inputs as arrays, and as the kept reference forward's own buffers
      const refIn = refRun.dump.layers.map((_, i) =>
        i === 0 ? refRun.dump.embeddings : refRun.dump.layers[i - 1],
      );
      const inBufs = refIn.map((_, i) => refKept.layerInput(i).buf);
      const refLocal = await ref.forward(tokens, { cpu: true, layerInputs: refIn });
      const refLocalKept = keep(await ref.forwardKept(tokens, { cpu: true, layerInputs: inBufs }));
      await expectSame(refLocalKept, refLocal.taps, `${tag} reference local`);
      // each reference layer on the reference forward's own input to it is that forward's layer, bit for bit (the
      // compare takes its reference local re-runs from the forward: family-compare.ts), in every precision mode
      const prec = (['fp32', 'bf16', 'fp16', 'fp16acc'] as const)[Math.floor(r() * 4)];
      const pc = { cpu: true, constants: { ...precisionConstants(prec) } };
      const whole = keep(await ref.forwardKept(tokens, { ...pc, taps: true }));
      const wholeIn = refIn.map((_, i) => whole.layerInput(i).buf);
      const local = keep(await ref.forwardKept(tokens, { ...pc, layerInputs: wholeIn }));
      const outs = refIn.map((_, i) => `layers.${i}.out`);
      const [a, b] = [await whole.read(outs), await local.read(outs)];
      for (const name of outs)
        expect(bitsOf(b.get(name) as Float32Array), `${tag} ${prec} reference local ${name}`).toEqual(
          bitsOf(a.get(name) as Float32Array),
        );
      const fusedLocal = await fused.forward(tokens, { ...fo, layerInputs: refIn });
      const fusedLocalKept = await keep(
        await fused.forwardKept(tokens, { ...fo, layerInputs: inBufs }),
      ).readDump();
      fusedLocal.layers.forEach((l, i) => {
        expect(bitsOf(fusedLocalKept.layers[i]), `${tag} fused local ${i}`).toEqual(bitsOf(l));
      });
      // generation: both paths in lockstep against each alone, ids and rows bit for bit
      const n = 1 + Math.floor(r() * 5);
      const prompt = tokens.slice(0, 1 + Math.floor(r() * tokens.length));
      const alone = [await ref.generate(prompt, n, { cpu: true }), await fused.generate(prompt, n, fo)];
      // the rows read back at the end, or every step or two (chunks)
      const rowsBytes = [2 ** 26, 4 * cfg.vocabSize, 8 * cfg.vocabSize][Math.floor(r() * 3)];
      const lock = [
        { who: 'reference', run: (t, kv, ids) => ref.forwardKeptAt(t, { cpu: true, ids }, kv) },
        { who: 'fused', run: (t, kv, ids) => fused.forwardKeptAt(t, { ...fo, ids }, kv) },
      ] satisfies LockstepPath[];
      const together = await greedyLockstep(h, cfg, prompt, n, lock, undefined, undefined, rowsBytes);
      // and with each path's decode steps recorded once and replayed (llama-step-cache.ts)
      const caches = [new StepCache(h.device, h.pipelines), new StepCache(h.device, h.pipelines)];
      const cached = [
        {
          who: 'reference',
          run: (t, kv, ids) => ref.forwardKeptAt(t, { cpu: true, ids, cache: ids && caches[0] }, kv),
        },
        {
          who: 'fused',
          run: (t, kv, ids) => fused.forwardKeptAt(t, { ...fo, ids, cache: ids && caches[1] }, kv),
        },
      ] satisfies LockstepPath[];
      let replayed: { built: number; replayed: number }[] = [];
      try {
        const got = await greedyLockstep(h, cfg, prompt, n, cached, undefined, undefined, rowsBytes);
        replayed = caches.map((c) => ({ ...c.counts }));
        together.push(...got);
      } finally {
        for (const c of caches) c.destroy();
      }
      together.forEach((g, k) => {
        const j = k % 2;
        expect(g.ids, `${tag} path ${j} n ${n} ${k > 1 ? 'steps cached' : ''}`).toEqual(alone[j].ids);
        g.logits.forEach((row, s) => {
          expect(bitsOf(row), `${tag} path ${j} step ${s} ${k > 1 ? 'cached' : ''}`).toEqual(
            bitsOf(alone[j].logits[s]),
          );
        });
      });
      // the decode steps (n − 1) built anew only where a buffer grew (the reference path's scores and probs, by
      // doubling: at most 1 + log2 of their growth), the rest replayed
      replayed.forEach((c, j) => {
        expect(c.built + c.replayed, `${tag} n ${n} path ${j}: decode steps`).toBe(n - 1);
        const most = j === 1 ? 1 : 1 + Math.ceil(Math.log2(1 + n));
        expect(c.built, `${tag} n ${n} path ${j}: steps built`).toBeLessThanOrEqual(Math.min(n - 1, most));
      });
      // a given input too small is one line
      const small = h.device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE });
      try {
        const layerInputs = inBufs.map((b, i) => (i === 0 ? small : b));
        await expect(ref.forwardKept(tokens, { cpu: true, layerInputs })).rejects.toThrow(
          /layer 0's input has 4 values/,
        );
      } finally {
        small.destroy();
      }
    } finally {
      for (const k of kept) k.release();
      ref.destroy();
      fused.destroy();
    }
  });
});
