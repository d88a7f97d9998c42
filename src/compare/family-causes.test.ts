// The Llama family's causes (family-causes.ts, family-causes-library.ts), each planted and found: a random small model
// of the family (the features a cause needs switched on, sizes no multiple of any tile), one layer's input drawn at
// random, the layer recorded as a PyTorch run records it (every op's output rounded to fp32, each computed from the
// recorded outputs before it; q and k after the rotary unrecorded) — once clean, once with one candidate of the cause
// planted at its op. familyWhy over the planted run, the clean run its floor, must find the op born there and name
// that cause alone with the planted parameters; the clean run with each value moved by up to one fp32 step (a correct
// kernel's rounding) names nothing. The planted variant is a candidate of the search, so its residual is zero by
// construction and the plants' parameters are taken strong enough to pass k × the floor on any draw.
//
// A cause without a plant fails the coverage test (every id candidatesFor gives on a model with every feature).
// FAMILY_CAUSE_SEEDS=n runs n seeds a plant (20 by default; 300 pass); a failure names its seed.

import { describe, expect, it } from 'vitest';
import { smallLlamaConfig } from '../model/llama-config';
import { candidatesFor } from './family-causes';
import { ACC_WORK, POSITIONS_WORK } from './family-causes-library';
import {
  candidateOf,
  checksLine,
  draw,
  factor,
  gqa,
  namedAlone,
  type Plant,
  param,
  record,
  SEEDS,
  whyInput,
  window,
} from './family-causes-plants.testdata';
import { SAMPLE_ROWS } from './family-causes-rows';
import { familyChecks, familyWhy } from './family-why';

const PLANTS: Plant[] = [
  { id: 'output-bf16', slot: 'attn_out' },
  { id: 'output-fp16', slot: 'gate' },
  { id: 'rms-eps-outside', slot: 'ln1', pick: factor(1e4) },
  { id: 'rms-eps-outside', slot: 'q_norm', pick: factor(1e4), cfg: () => ({ qkNorm: true }) },
  { id: 'rms-eps', slot: 'ln2', pick: factor(100) },
  { id: 'rms-eps', slot: 'k_norm', pick: factor(1e3), cfg: () => ({ qkNorm: true }) },
  { id: 'rms-mean-subtracted', slot: 'ln1' },
  { id: 'rms-no-weight', slot: 'ln2' },
  { id: 'rms-bf16', slot: 'ln1' },
  { id: 'rms-fp16', slot: 'ln2' },
  { id: 'rms-cast-order', slot: 'ln2', pick: param('format', 'bf16') },
  { id: 'rms-cast-order', slot: 'q_norm', pick: param('format', 'fp16'), cfg: () => ({ qkNorm: true }) },
  { id: 'qk-norm-skipped', slot: 'q_norm', cfg: () => ({ qkNorm: true }) },
  // a row of one KV head is one head: per head and whole are the same there
  { id: 'qk-norm-whole', slot: 'k_norm', cfg: (r) => ({ qkNorm: true, ...gqa(r) }) },
  { id: 'swiglu-swapped', slot: 'swiglu' },
  { id: 'swiglu-gelu', slot: 'swiglu' },
  { id: 'swiglu-gelu-tanh', slot: 'swiglu' },
  { id: 'swiglu-relu', slot: 'swiglu' },
  { id: 'kv-interleaved', slot: 'ctx', cfg: gqa },
  { id: 'window-ignored', slot: 'ctx', cfg: (r, T) => window(2 + Math.floor(r() * (T - 4))) },
  {
    id: 'window-off',
    slot: 'ctx',
    cfg: (r, T) => window(3 + Math.floor(r() * (T - 5))),
    pick: (c, cfg) => c.params.window === (cfg.slidingWindow[0] ?? 0) + 1,
  },
  { id: 'rotary-theta', slot: 'ctx', pick: (c, cfg) => c.params.theta === cfg.ropeTheta * 10 },
  {
    id: 'rotary-scaling-skipped',
    slot: 'ctx',
    cfg: (r) => ({
      ropeScaling:
        r() < 0.5
          ? { type: 'linear', factor: 2.5 }
          : {
              type: 'llama3',
              factor: 8,
              lowFreqFactor: 1,
              highFreqFactor: 4,
              originalMaxPositionEmbeddings: 16,
            },
    }),
  },
  { id: 'rotary-gptj', slot: 'ctx' },
  { id: 'acc-fp16', slot: 'mlp_out', pick: param('chunk', 1) },
  { id: 'acc-bf16', slot: 'q', pick: param('chunk', 16), cfg: () => ({ hiddenSize: 37 }) },
  { id: 'bias-dropped', slot: 'k', cfg: () => ({ attentionBias: true }) },
  { id: 'bias-dropped', slot: 'up', cfg: () => ({ mlpBias: true }) },
  { id: 'softmax-scale', slot: 'ctx', pick: param('scale', 1) },
  { id: 'attention-fp16', slot: 'ctx' },
  { id: 'attention-bf16', slot: 'ctx', cfg: gqa },
  { id: 'residual-term-dropped', slot: 'ln2_in', pick: param('term', 'attn_out') },
  { id: 'residual-term-dropped', slot: 'out', pick: param('term', 'ln2_in') },
  { id: 'rotary-offset', slot: 'ctx', decode: true, pick: param('offset', 3) },
  { id: 'rotary-offset', slot: 'ctx', decode: true, pick: (c) => c.params.at === 0 },
  {
    id: 'kv-positions-dropped',
    slot: 'ctx',
    decode: true,
    pick: (c) => c.params.position === Math.max(0, Number(c.params.from) - 3),
  },
];

describe('each of the family’s causes, planted in a recorded layer, is found at its op and named alone', () => {
  it.each(PLANTS.map((p, n) => [`${p.id} at ${p.slot}`, p, n] as const))('%s', (_, plant, n) => {
    for (let s = 0; s < SEEDS; s++) {
      const seed = 7919 * (n + 1) + s;
      const d = draw(seed, plant);
      const cand = candidateOf(d, plant);
      const why = familyWhy(whyInput(d, record(d, cand), record(d, null)));
      const line = checksLine(seed, why);
      expect(
        why.born
          ?.split('+')
          .at(-1)
          ?.replace(/^layers\.\d+\./, ''),
        line,
      ).toBe(plant.slot);
      const { named, tested } = namedAlone(why, plant.id, `seed ${seed}`);
      expect(named[0].params, tested).toEqual(cand.params);
    }
  });

  it('an eps or a rope theta between the grid’s values is solved from the data and named with its value', () => {
    const plants: Plant[] = [
      { id: 'rms-eps', slot: 'ln2', pick: factor(100) },
      { id: 'rms-eps-outside', slot: 'ln1', pick: factor(1e4) },
      { id: 'rotary-theta', slot: 'ctx', pick: (c, cfg) => c.params.theta === cfg.ropeTheta * 10 },
    ];
    let n = 0;
    for (let s = 0; n < 3 * SEEDS; s++) {
      const plant = plants[s % 3];
      const d = draw(31337 + s, plant);
      // an eps is solved on the sampled rows: a run of more rows than the sample (a theta on every row: any run)
      if (plant.id !== 'rotary-theta' && d.T <= SAMPLE_ROWS) continue;
      n++;
      const grid = candidateOf(d, plant);
      const key = grid.tune!.key;
      // between the grid's value and the next one up (10× for an eps, 100× the config's theta after 10×)
      const value = Number(grid.params[key]) * (2 + 5 * d.r());
      const cand = { ...grid.tune!.make(value), applies: grid.applies };
      const why = familyWhy(whyInput(d, record(d, cand), record(d, null)));
      const { named, tested } = namedAlone(why, plant.id, `seed ${31337 + s}, ${key} ${value}`);
      expect(Math.abs(Number(named[0].params[key]) / value - 1), tested).toBeLessThan(1e-3);
      const range = [named[0].params[`${key}Low`], named[0].params[`${key}High`]].map(Number);
      // named with the range the run allows, which holds the planted value
      expect(range[0] <= value && value <= range[1], tested).toBe(true);
    }
  });

  it('a clean layer, each value within one fp32 step of the exact op, is born nowhere and names nothing', () => {
    for (let s = 0; s < 5 * SEEDS; s++) {
      const d = draw(104729 + s, null);
      const clean = record(d, null);
      const moved = new Map<string, Float32Array>();
      for (const [name, v] of clean)
        moved.set(
          name,
          v.map((u) => {
            const step = Math.abs(u) * 2 ** -23;
            return Math.fround(u + (Math.floor(d.r() * 3) - 1) * step);
          }),
        );
      const why = familyWhy(whyInput(d, moved, clean));
      const line = checksLine(104729 + s, why);
      expect(why.born, line).toBeNull();
      expect(why.cause, line).toBeNull();
    }
  });

  it('a running sum in half is tried up to ACC_WORK multiply-adds of the group, not past it', () => {
    const cfg = smallLlamaConfig({ hiddenSize: 576, intermediateSize: 1536 });
    const check = familyChecks(
      cfg,
      0,
      () => true,
      () => true,
    ).find((c) => c.slot === 'mlp_out');
    const ids = (rows: number) =>
      candidatesFor(check as never, cfg, 0, { rows }).filter((c) => c.id.startsWith('acc-')).length;
    expect(576 * 1536 * 4).toBeLessThanOrEqual(ACC_WORK);
    expect(ids(4)).toBe(6); // chunks 1, 16, 64 in fp16 and bf16
    expect(576 * 1536 * 5).toBeGreaterThan(ACC_WORK);
    expect(ids(5)).toBe(0);
    expect(candidatesFor(check as never, cfg, 0).filter((c) => c.id.startsWith('acc-'))).toEqual([]);
  });

  it('a dropped cached position is tried at every position of the prompt, or past POSITIONS_WORK at its ends', () => {
    const cfg = smallLlamaConfig({ numHeads: 4, headDim: 16 });
    const check = familyChecks(
      cfg,
      0,
      (s) => s !== 'q_rot' && s !== 'k_rot',
      () => true,
    ).find((c) => c.slot === 'ctx');
    const positions = (rows: number, P: number) =>
      candidatesFor(check as never, cfg, 0, { rows, decodeFrom: P })
        .filter((c) => c.id === 'kv-positions-dropped')
        .map((c) => c.params.position);
    expect(positions(12, 9)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(9 * 2 * 4 * 12 ** 2 * 16).toBeLessThanOrEqual(POSITIONS_WORK);
    expect(300 * 2 * 4 * 400 ** 2 * 16).toBeGreaterThan(POSITIONS_WORK);
    expect(positions(400, 300)).toEqual([0, 1, 298, 299]);
  });

  it('every cause the family can name has a plant', () => {
    const cfg = smallLlamaConfig({
      numHeads: 4,
      numKvHeads: 2,
      qkNorm: true,
      attentionBias: true,
      oProjBias: true,
      mlpBias: true,
      slidingWindow: [4, null],
      ropeScaling: { type: 'linear', factor: 2 },
    });
    const whole = familyChecks(
      cfg,
      0,
      (s) => s === 'out',
      () => true,
    ).find((c) => c.slot === 'out');
    const ids = new Set(candidatesFor(whole as never, cfg, 0, { decodeFrom: 3, rows: 5 }).map((c) => c.id));
    const planted = new Set(PLANTS.map((p) => p.id));
    expect([...ids].filter((id) => !planted.has(id))).toEqual([]);
    expect([...planted].filter((id) => !ids.has(id))).toEqual([]);
  });
});
