// The Llama fused forward's split-K GEMMs (one shared workspace, engine/llama-fused.ts) on SwiftShader. Under a
// policy that splits every projection's K (the heuristic with no split longer than 64, so each K of the fixtures,
// 72..192, is cut in two or more), each fixture stays within 1e-5 of Hugging Face's fp64 hidden states (relative
// L2, the unsplit path's target), the per-op timings name the partial GEMMs (the splits ran), and each of three greedy
// steps' logits rows equals that row of one whole forward bit for bit: the K partition is per (N, K) whatever M is.
// And the o and down projections' reductions folded into the add + RMSNorm after them change no tap's bits, nor does
// submitting the forward in several command buffers.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PassTiming } from '../gpu/timestamps';
import { type GemmPolicy, UNKNOWN_ADAPTER } from '../kernels/gemm-configs';
import { createHarness, type Harness } from '../kernels/testing';
import { loadLlamaWeights } from '../model/llama-weights';
import { parseModelConfigText } from '../model/model-config';
import { LlamaFused } from './llama-fused';

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());

/** Every projection split: no K per split longer than 64 (the granule), at most 16 splits. */
const SPLIT: GemmPolicy = { ...UNKNOWN_ADAPTER, name: 'split every K (test)', maxKChunk: 64 };

function relL2(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < a.length; i++) {
    num += (a[i] - b[i]) ** 2;
    den += b[i] ** 2;
  }
  const r = Math.sqrt(num) / (den > 0 ? Math.sqrt(den) : 1);
  return Number.isNaN(r) ? Number.POSITIVE_INFINITY : r;
}

const FIXTURES = 'src/model/testdata/llama';
const fixtures = readdirSync(FIXTURES).map((name) => [name, join(FIXTURES, name)] as const);

function load(dir: string) {
  const hf = JSON.parse(readFileSync(join(dir, 'hf_outputs.json'), 'utf8')) as {
    tokens: number[];
    fp64: { layers: number[][][]; logits: number[][] };
    greedy: { prompt: number[]; new_ids: number[] };
  };
  const cfg = parseModelConfigText(readFileSync(join(dir, 'config.json'), 'utf8'));
  if (cfg.family !== 'llama') throw new Error(`${dir}: not the Llama family`);
  return { cfg, w: loadLlamaWeights(cfg, new Uint8Array(readFileSync(join(dir, 'model.safetensors')))), hf };
}

const bits = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

describe('Llama fused forward, split-K reductions folded into the add + RMSNorm (fixtures)', () => {
  it.each(fixtures)(
    "%s: every tap the unfolded forward's bit for bit, one reduction dispatch fewer per projection",
    async (name, dir) => {
      const { cfg, w, hf } = load(dir);
      const fused = LlamaFused.create(h, cfg, w);
      try {
        const run = async (foldSplitK: boolean, submitChunks?: number) => {
          const time = { reps: 1, ms: [] as number[], ops: [] as PassTiming[] | null };
          const o = { gemmPolicy: SPLIT, time, foldSplitK, submitChunks };
          const got = await fused.forwardTaps(hf.tokens, o);
          return { ...got, labels: (time.ops ?? []).map((p) => p.label) };
        };
        // The folded forward also in 5 command buffers (submitChunks): the same dispatches, the same bits.
        const [folded, apart, chunked] = [await run(true), await run(false), await run(true, 5)];
        expect(chunked.labels, `${name}: the same dispatches in 5 submits`).toEqual(folded.labels);
        for (const [key, v] of folded.taps) {
          const c = chunked.taps.get(key) as Float32Array;
          expect(bits(c).equals(bits(v)), `${name}: ${key} bit for bit in 5 submits`).toBe(true);
        }
        expect([...folded.taps.keys()].sort(), `${name}: the same taps`).toEqual(
          [...apart.taps.keys()].sort(),
        );
        for (const [key, v] of apart.taps) {
          const f = folded.taps.get(key) as Float32Array;
          expect(v.every(Number.isFinite), `${name}: ${key} finite`).toBe(true);
          expect(bits(f).equals(bits(v)), `${name}: ${key} bit for bit`).toBe(true);
        }
        expect(bits(folded.dump.logits).equals(bits(apart.dump.logits)), `${name}: logits`).toBe(true);
        if (h.ctx.device.features.has('timestamp-query')) {
          // Unfolded, each o and down projection is its partial GEMM and a reduction labelled as the projection.
          const reductions = (labels: string[]) =>
            labels.filter((l) => /\.(attn_out|mlp_out)$/.test(l)).length;
          expect(reductions(apart.labels), `${name}: reductions unfolded`).toBe(2 * cfg.numLayers);
          expect(reductions(folded.labels), `${name}: reductions folded`).toBe(0);
          expect(folded.labels.length, `${name}: dispatches`).toBe(apart.labels.length - 2 * cfg.numLayers);
        }
      } finally {
        fused.destroy();
      }
    },
  );
});

describe('Llama fused forward, split-K GEMMs (fixtures)', () => {
  it.each(fixtures)(
    '%s: every K split, within 1e-5 of HF fp64; three greedy steps the whole forward rows bit for bit',
    async (name, dir) => {
      const { cfg, w, hf } = load(dir);
      expect(cfg.hiddenSize, `${name}: a K the cap splits`).toBeGreaterThan(64);
      const fused = LlamaFused.create(h, cfg, w);
      try {
        const time = { reps: 0, ms: [] as number[], ops: [] as PassTiming[] | null };
        const dump = await fused.forward(hf.tokens, { gemmPolicy: SPLIT, time });
        // HF's fp32 steps ~1e-7 and ours ~1e-7 .. 1e-6 (llama-fused.test.ts); a split only reorders a sum's terms.
        const logits = relL2(dump.logits, hf.fp64.logits.flat());
        expect(logits, `${name}: logits`).toBeLessThan(1e-5);
        hf.fp64.layers.forEach((l, i) => {
          expect(relL2(dump.layers[i], l.flat()), `${name}: layers[${i}]`).toBeLessThan(1e-5);
        });
        if (h.ctx.device.features.has('timestamp-query')) {
          const labels = (time.ops ?? []).map((p) => p.label);
          const split = labels.filter((l) => l.endsWith('/splitk'));
          // Per layer at least the o projection and the down projection (their K: the heads' and F, both > 64).
          expect(split.length, `${name}: partial GEMMs in ${labels.join(' ')}`).toBeGreaterThanOrEqual(
            2 * cfg.numLayers,
          );
        }
        // Three greedy steps (the tiled core is slow on SwiftShader): the cache's prompt forward and two decode rows.
        const { prompt } = hf.greedy;
        const new_ids = hf.greedy.new_ids.slice(0, 3);
        const gen = await fused.generate(prompt, new_ids.length, { gemmPolicy: SPLIT });
        const whole = await fused.forward([...prompt, ...gen.ids.slice(0, -1)], { gemmPolicy: SPLIT });
        gen.logits.forEach((row, s) => {
          const t = prompt.length - 1 + s;
          const want = whole.logits.slice(t * whole.V, (t + 1) * whole.V);
          expect(Buffer.from(row.buffer).equals(Buffer.from(want.buffer)), `${name}: step ${s}`).toBe(true);
        });
        expect(gen.ids, `${name}: greedy ids`).toEqual(new_ids);
      } finally {
        fused.destroy();
      }
    },
  );
});
