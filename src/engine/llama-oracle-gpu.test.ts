// The Llama family's GPU double-float oracle (engine/llama-oracle-gpu.ts) against the CPU fp64 forward of the op
// registry (kernels/cpu/op-forward.ts), tap by tap, on the five fixtures (src/model/testdata/llama: every flavour's
// feature) and on random models of every flavour (GQA/MQA, windows, scalings, biases, q/k norms, tied embeddings;
// seed printed, KERNEL_SEED replays, KERNEL_SWEEP=n draws n models), in Node on SwiftShader (DF_FMA = false: its fma
// is not fused). Also every layer on a given f32 input (the local floor's exact side) and an LM head split over
// storage bindings.
//
// The bound, 1e-10 relative L2 per tap: each df op errs by a few 2^-48 (3.6e-15) of the magnitudes it combines
// (kernels/oracle/llama.test.ts), a sum of K terms by ~8K of them (K <= 72 here: ~2e-12), and the forward
// composes a few dozen such ops whose conditioning on these random models stays within a factor of ~10 (measured
// worst 2.0e-14 over 60 random models, 1.2e-14 … 1.4e-14 on the fixtures, 2026-11-27); any fp32 step (6e-8) is
// 600× over the bound.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BufferPool } from '../gpu/pool';
import { recordReadback, uploadBuffer } from '../gpu/readback';
import { llamaForward } from '../kernels/cpu/llama-forward';
import { opForward, opLayer } from '../kernels/cpu/op-forward';
import { createHarness, freshSeed, type Harness } from '../kernels/testing';
import { parseConfigText } from '../model/config';
import { smallLlamaConfig } from '../model/llama-config';
import { randomLlamaTensors } from '../model/llama-random';
import { loadLlamaWeights } from '../model/llama-weights';
import { parseModelConfigText } from '../model/model-config';
import { randomModelFiles } from '../model/random-model';
import { writeSafetensors } from '../model/safetensors-write';
import { loadWeights } from '../model/weights';
import { mulberry32 } from '../numeric/random';
import type { LlamaConfig, LlamaWeights, Tensor } from '../numeric/types';
import { randomLlamaModel } from './llama-models.testdata';
import { dumpOfTaps, FamilyGpuOracle, recordTapsReadback } from './llama-oracle-gpu';
import { LlamaReference } from './llama-reference';

const BOUND = 1e-10;
const ROUNDS = Number(process.env.KERNEL_SWEEP ?? 3);

let h: Harness;
const worst: string[] = [];
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => {
  h?.destroy();
  if (worst.length)
    console.log(`Llama GPU oracle vs CPU fp64 (worst relative L2 over the taps):\n${worst.join('\n')}`);
});

function relL2(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return Number.POSITIVE_INFINITY;
  let num = 0;
  let den = 0;
  for (let i = 0; i < a.length; i++) {
    num += (a[i] - b[i]) ** 2;
    den += b[i] ** 2;
  }
  const r = Math.sqrt(num) / (den > 0 ? Math.sqrt(den) : 1);
  return Number.isNaN(r) ? Number.POSITIVE_INFINITY : r; // NaN anywhere is never agreement
}

/** The model's reference upload, a pool and the oracle on them; `maxBindingBytes` to force a split LM head. */
function oracleOf(
  cfg: LlamaConfig,
  w: LlamaWeights,
  maxBindingBytes = h.device.limits.maxStorageBufferBindingSize,
) {
  const ref = LlamaReference.create(h, cfg, w);
  const pool = new BufferPool(h.device);
  const oracle = new FamilyGpuOracle(h.device, h.pipelines, pool, cfg, w, (t) => ref.weightBuffer(t), {
    dfFma: false,
    maxBindingBytes,
  });
  const done = () => {
    pool.destroyAll();
    ref.destroy();
  };
  return { oracle, done };
}

/** The whole forward with every tap, read back in the same submit. */
async function gpuForward(oracle: FamilyGpuOracle, tokens: number[]) {
  const enc = h.device.createCommandEncoder();
  const run = oracle.forward(enc, tokens, 'all');
  const read = recordTapsReadback(h.device, enc, run.taps, [...run.taps.keys()]);
  h.device.queue.submit([enc.finish()]);
  try {
    return await read();
  } finally {
    run.release();
  }
}

/** Every CPU tap against the GPU's (the same names: a tap missing on either side fails). */
function expectTaps(tag: string, got: Map<string, Float64Array>, want: Map<string, Float64Array>): number {
  expect([...got.keys()].sort(), `${tag}: tap names`).toEqual([...want.keys()].sort());
  let w = 0;
  let at = '';
  for (const [name, ref] of want) {
    const r = relL2(got.get(name) as Float64Array, ref);
    if (!(r <= w)) [w, at] = [r, name];
  }
  expect(w, `${tag}: worst tap ${at}`).toBeLessThanOrEqual(BOUND);
  return w;
}

async function checkModel(tag: string, cfg: LlamaConfig, w: LlamaWeights, tokens: number[]) {
  const { oracle, done } = oracleOf(cfg, w);
  try {
    const want = new Map<string, Float64Array>();
    const exact = llamaForward(cfg, w, tokens, want);
    const got = await gpuForward(oracle, tokens);
    const r = expectTaps(tag, got, want);
    // The dump read out of the taps is the fp64 forward's dump.
    const dump = dumpOfTaps(cfg, tokens.length, got);
    expect(relL2(dump.logits, exact.logits), `${tag}: logits`).toBeLessThanOrEqual(BOUND);
    worst.push(`  ${tag}: ${r.toExponential(2)}`);
  } finally {
    done();
  }
}

/** Every layer of a random model on a given f32 input against the fp64 layer on that input. */
async function layersOnGiven(seed: number): Promise<void> {
  const { cfg, w, tokens } = randomLlamaModel(seed);
  const want = llamaForward(cfg, w, tokens);
  // Each layer's input: the exact one rounded to f32 and nudged (a reference path's input is not the exact one).
  const inputs = want.layers.map((_, i) =>
    Float32Array.from(
      i === 0 ? want.embeddings : want.layers[i - 1],
      (v, j) => v * (1 + 1e-3 * Math.sin(j + i)),
    ),
  );
  const { oracle, done } = oracleOf(cfg, w);
  try {
    const bufs = inputs.map((x) => uploadBuffer(h.device, x, 'input'));
    const enc = h.device.createCommandEncoder();
    const run = oracle.layersOn(enc, tokens, bufs);
    const names = inputs.map((_, i) => `layers.${i}.out`);
    const read = recordTapsReadback(h.device, enc, run.taps, names);
    h.device.queue.submit([enc.finish()]);
    const got = await read();
    run.release();
    for (const b of bufs) b.destroy();
    inputs.forEach((x, i) => {
      const exact = opLayer(cfg, w.layers[i], Float64Array.from(x), tokens, i);
      expect(
        relL2(got.get(`layers.${i}.out`) as Float64Array, exact),
        `seed ${seed}, layer ${i}`,
      ).toBeLessThanOrEqual(BOUND);
    });
  } finally {
    done();
  }
}

const FIXTURES = 'src/model/testdata/llama';
const fixtures = readdirSync(FIXTURES).map((name) => [name, join(FIXTURES, name)] as const);

describe('Llama GPU double-float oracle vs the CPU fp64 forward', () => {
  it.each(fixtures)('fixture %s: every tap within 1e-10', async (name, dir) => {
    const hf = JSON.parse(readFileSync(join(dir, 'hf_outputs.json'), 'utf8')) as { tokens: number[] };
    const cfg = parseModelConfigText(readFileSync(join(dir, 'config.json'), 'utf8'));
    if (cfg.family !== 'llama') throw new Error(`${name}: not the Llama family`);
    const w = loadLlamaWeights(cfg, new Uint8Array(readFileSync(join(dir, 'model.safetensors'))));
    await checkModel(name, cfg, w, hf.tokens);
  });

  it(`random models of every flavour (${ROUNDS}): every tap within 1e-10`, async () => {
    const first = freshSeed();
    for (let s = 0; s < ROUNDS; s++) {
      const seed = (first + s) >>> 0;
      const { cfg, w, tokens } = randomLlamaModel(seed);
      const tag = `seed ${seed} (${cfg.flavour}, H ${cfg.numHeads}/${cfg.numKvHeads}, hd ${cfg.headDim}, T ${tokens.length})`;
      await checkModel(tag, cfg, w, tokens);
    }
  });

  it(`every layer on a given f32 input is the fp64 layer on that input (${ROUNDS} models); the LM head split in pieces`, async () => {
    const first = freshSeed();
    for (let s = 0; s < ROUNDS; s++) await layersOnGiven((first + s) >>> 0);
    const seed = first;
    // A vocabulary over one binding's rows at this T: 300 columns in pieces of 64 (4 of 64 and one of 44).
    const big = smallLlamaConfig({ vocabSize: 300, hiddenSize: 22, numHeads: 2, numKvHeads: 1, headDim: 10 });
    const bw = loadLlamaWeights(big, writeSafetensors(randomLlamaTensors(big, seed)));
    const toks = [1, 299, 17, 0, 150, 42, 7, 9, 288];
    const split = oracleOf(big, bw, 8 * toks.length * 64);
    try {
      const got = await gpuForward(split.oracle, toks);
      const exact = llamaForward(big, bw, toks);
      expect(
        relL2(got.get('logits') as Float64Array, exact.logits),
        `seed ${seed}: split logits`,
      ).toBeLessThanOrEqual(BOUND);
    } finally {
      split.done();
    }
  });

  // GPT-NeoX through the same steps and df forms (its fused QKV packed by the rotary, parallel and sequential
  // residuals, partial rotary): every tap of the registry's fp64 forward (opForward) within the same bound.
  it(`GPT-NeoX random models (${ROUNDS}) through the registry's df forms: every tap within 1e-10`, async () => {
    const first = freshSeed();
    for (let s = 0; s < ROUNDS; s++) {
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
      const bufs = new Map<Tensor, GPUBuffer>();
      const up = (t: Tensor | null) => t && bufs.set(t, uploadBuffer(h.device, t.data, 'neox weight'));
      for (const t of [w.embedIn, w.lmHead, w.finalLayerNorm.weight, w.finalLayerNorm.bias]) up(t);
      for (const l of w.layers)
        for (const x of [l.inputLayernorm, l.postAttentionLayernorm, l.qkv, l.dense, l.fc1, l.fc2]) {
          up(x.weight);
          up(x.bias);
        }
      const pool = new BufferPool(h.device);
      const oracle = new FamilyGpuOracle(h.device, h.pipelines, pool, cfg, w, (t) => bufs.get(t) ?? null, {
        dfFma: false,
        maxBindingBytes: h.device.limits.maxStorageBufferBindingSize,
      });
      try {
        const want = new Map<string, Float64Array>();
        opForward(cfg, w, tokens, want);
        const tag = `seed ${seed} (GPT-NeoX ${JSON.stringify(spec)}, T ${tokens.length})`;
        worst.push(`  ${tag}: ${expectTaps(tag, await gpuForward(oracle, tokens), want).toExponential(2)}`);
      } finally {
        pool.destroyAll();
        for (const b of bufs.values()) b.destroy();
      }
    }
  });

  // A decode's rows after its prompt (GpuOracle.forwardFrom): each layer's q (or q_norm), k (or k_norm) and v rows of
  // the prompt, from the prompt's own forward, copied in before the new rows; rows from..T−1 of every dump tap equal
  // the whole forward's, hi and lo words alike (the whole forward is held to the fp64 one above).
  it(`a decode's rows after its prompt's forward equal the whole forward's rows, bit for bit (${ROUNDS} models)`, async () => {
    const first = freshSeed();
    for (let s = 0; s < ROUNDS; s++) {
      const seed = (first + s) >>> 0;
      const { cfg, w, tokens } = randomLlamaModel(seed);
      const T = Math.max(2, tokens.length);
      const toks = tokens.length >= 2 ? tokens : [tokens[0], (tokens[0] + 1) % cfg.vocabSize];
      const from = 1 + (seed % (T - 1));
      const tag = `seed ${seed} (${cfg.flavour}, T ${T}, from ${from})`;
      const { oracle, done } = oracleOf(cfg, w);
      try {
        const enc = h.device.createCommandEncoder();
        const whole = oracle.forward(enc, toks, 'dump');
        const prompt = oracle.forward(enc, toks.slice(0, from), 'all');
        const rows = oracle.forwardFrom(
          enc,
          toks,
          from,
          (i, slot) => prompt.taps.get(`layers.${i}.${slot}`)!,
        );
        const names = [
          'embed',
          ...Array.from({ length: cfg.numLayers }, (_, i) => `layers.${i}.out`),
          'final_norm',
          'logits',
        ];
        const width = (n: string) => (n === 'logits' ? cfg.vocabSize : cfg.hiddenSize);
        const all = names.map((n) => whole.taps.get(n)!);
        const got = names.map((n) => rows.taps.get(n)!);
        const read = recordReadback(h.device, enc, [
          ...all.map((t, k) => ({ src: t.buffer, bytes: T * width(names[k]) * 8 })),
          ...got.map((t, k) => ({ src: t.buffer, bytes: (T - from) * width(names[k]) * 8 })),
        ]);
        h.device.queue.submit([enc.finish()]);
        const words = (await read()).map((f) => new Uint32Array(f.buffer, f.byteOffset, f.length));
        names.forEach((n, k) => {
          expect(got[k].n, `${tag} ${n} size`).toBe((T - from) * width(n));
          const want = words[k].subarray(2 * from * width(n));
          const at = words[names.length + k].findIndex((x, i) => x !== want[i]);
          expect(at, `${tag} ${n}: differs at word ${at}`).toBe(-1);
        });
        for (const r of [whole, prompt, rows]) r.release();
      } finally {
        done();
      }
    }
  });

  it('refuses a tensor past one storage binding in one line, naming it (7 × 40 df values: 2240 bytes)', () => {
    const cfg = smallLlamaConfig();
    const w = loadLlamaWeights(cfg, writeSafetensors(randomLlamaTensors(cfg, 6)));
    const { oracle, done } = oracleOf(cfg, w, 2048);
    try {
      const enc = h.device.createCommandEncoder();
      expect(() => oracle.forward(enc, [1, 2, 3, 4, 5, 6, 7], 'dump')).toThrow(
        /^oracle embed needs 2240 bytes, more than one storage binding on this adapter \(2048\): use a shorter prompt$/,
      );
    } finally {
      done();
    }
  });

  it('refuses a token outside the vocabulary in one line, before any work', () => {
    const cfg = smallLlamaConfig();
    const w = loadLlamaWeights(cfg, writeSafetensors(randomLlamaTensors(cfg, 5)));
    const { oracle, done } = oracleOf(cfg, w);
    try {
      const enc = h.device.createCommandEncoder();
      expect(() => oracle.forward(enc, [1, cfg.vocabSize], 'dump')).toThrow(
        /token 97 at position 1 is outside/,
      );
    } finally {
      done();
    }
  });
});
