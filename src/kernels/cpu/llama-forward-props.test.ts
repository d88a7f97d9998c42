// Properties of the Llama family's fp64 forward that hold by construction, over random models (odd sizes, every
// flavour's features drawn at random): causality, the sliding window's edges, and grouped-query attention as HF's
// repeat_kv (a GQA model equals the MHA model whose KV heads are repeated in contiguous blocks). Each is exact (the
// same fp64 operations in the same order), so each is asserted bit for bit. 50 seeds; a failure prints its seed.
import { describe, expect, it } from 'vitest';
import { randomLlamaModel } from '../../engine/llama-models.testdata';
import { mulberry32 } from '../../numeric/random';
import type { LinearWeights, LlamaWeights } from '../../numeric/types';
import { llamaForward } from './llama-forward';

const SEEDS = 50;

/** Smaller than the GPU tests' draw: the fp64 forward runs many times per seed. */
const randomModel = (seed: number) =>
  randomLlamaModel(seed, {
    headDims: [2, 4, 6, 10],
    maxT: 9,
    vocabSpan: 20,
    hiddenSizes: [6, 10, 14],
    intermediateSizes: [5, 9, 13],
  });

const rows = (a: Float64Array, n: number, width: number) => a.subarray(0, n * width);

describe('the Llama family fp64 forward: properties over random models', () => {
  it(`is causal: a prefix's forward is the leading rows of the whole one (${SEEDS} seeds)`, () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const { cfg, w, tokens } = randomModel(seed);
      const full = llamaForward(cfg, w, tokens);
      const n = 1 + Math.floor(mulberry32(seed + 1000)() * tokens.length);
      const part = llamaForward(cfg, w, tokens.slice(0, n));
      const msg = `seed ${seed}, prefix ${n} of ${tokens.length}`;
      for (let i = 0; i < cfg.numLayers; i++)
        expect(part.layers[i], msg).toEqual(rows(full.layers[i], n, cfg.hiddenSize));
      expect(part.logits, msg).toEqual(rows(full.logits, n, cfg.vocabSize));
    }
  });

  it(`with a window of 1 each row attends to itself alone: ctx is its own v (${SEEDS} seeds)`, () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const m = randomModel(seed);
      const cfg = { ...m.cfg, slidingWindow: m.cfg.slidingWindow.map(() => 1) };
      const taps = new Map<string, Float64Array>();
      llamaForward(cfg, m.w, m.tokens, taps);
      const { numHeads: H, numKvHeads: KV, headDim: hd } = cfg;
      const T = m.tokens.length;
      const ctx = taps.get('layers.0.ctx')!;
      const v = taps.get('layers.0.v')!;
      for (let t = 0; t < T; t++)
        for (let h = 0; h < H; h++)
          for (let e = 0; e < hd; e++) {
            const kv = Math.floor(h / (H / KV));
            expect(ctx[t * H * hd + h * hd + e], `seed ${seed} t ${t} h ${h}`).toBe(
              v[t * KV * hd + kv * hd + e],
            );
          }
    }
  });

  it(`a window of T or more is no window at all (${SEEDS} seeds)`, () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const m = randomModel(seed);
      const T = m.tokens.length;
      const wide = { ...m.cfg, slidingWindow: m.cfg.slidingWindow.map((_, i) => T + i) };
      const none = { ...m.cfg, slidingWindow: m.cfg.slidingWindow.map(() => null) };
      expect(llamaForward(wide, m.w, m.tokens).logits, `seed ${seed}`).toEqual(
        llamaForward(none, m.w, m.tokens).logits,
      );
    }
  });

  it(`GQA is repeat_kv: the MHA model with each KV head repeated over its block of query heads (${SEEDS} seeds)`, () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const { cfg, w, tokens } = randomModel(seed);
      const { numHeads: H, numKvHeads: KV, headDim: hd } = cfg;
      const g = H / KV;
      // Rows of k/v_proj for MHA head h: those of KV head floor(h / g).
      const repeat = (lin: LinearWeights): LinearWeights => {
        const K = lin.weight.shape[1];
        const weight = new Float32Array(H * hd * K);
        const bias = lin.bias ? new Float32Array(H * hd) : null;
        for (let h = 0; h < H; h++) {
          const j = Math.floor(h / g);
          weight.set(lin.weight.data.subarray(j * hd * K, (j + 1) * hd * K), h * hd * K);
          if (bias && lin.bias) bias.set(lin.bias.data.subarray(j * hd, (j + 1) * hd), h * hd);
        }
        return {
          weight: { shape: [H * hd, K], data: weight },
          bias: bias ? { shape: [H * hd], data: bias } : null,
        };
      };
      const mha: LlamaWeights = {
        ...w,
        layers: w.layers.map((l) => ({ ...l, k: repeat(l.k), v: repeat(l.v) })),
      };
      const got = llamaForward({ ...cfg, numKvHeads: H }, mha, tokens);
      const want = llamaForward(cfg, w, tokens);
      expect(got.layers, `seed ${seed} H ${H} KV ${KV}`).toEqual(want.layers);
      expect(got.logits, `seed ${seed}`).toEqual(want.logits);
    }
  });
});
