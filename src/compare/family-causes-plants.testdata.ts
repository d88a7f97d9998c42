// The Llama family's causes planted in a recorded layer (family-causes.test.ts, family-causes-floor.test.ts): a random
// small model of the family with the features a plant needs, one layer's input drawn at random, the layer recorded as a
// PyTorch run records it (every op's output rounded to fp32, each computed from the recorded outputs before it; q and
// k after the rotary unrecorded), once clean and once with a candidate planted; and the check that the why names the
// planted cause alone.

import { expect } from 'vitest';
import { sharedDims } from '../engine/family-llama';
import { smallLlamaConfig } from '../model/llama-config';
import { randomLlamaTensors } from '../model/llama-random';
import { loadLlamaWeights } from '../model/llama-weights';
import { writeSafetensors } from '../model/safetensors-write';
import { mulberry32 } from '../numeric/random';
import type { LlamaConfig } from '../numeric/types';
import { type Candidate, candidatesFor } from './family-causes';
import { computeGroup, familyChecks, type familyWhy } from './family-why';

export const K = 10;
export const SEEDS = Number(process.env.FAMILY_CAUSE_SEEDS ?? 20);
export const UNRECORDED = new Set(['q_rot', 'k_rot']); // no module in HF: a run never has them

export interface Plant {
  /** The cause id, and which of its candidates is planted (its parameters). */
  id: string;
  pick?: (c: Candidate, cfg: LlamaConfig) => boolean;
  /** The recorded slot whose check holds the changed step. */
  slot: string;
  /** The features the cause needs. */
  cfg?: (r: () => number, T: number) => Partial<LlamaConfig>;
  /** A run of a generation: its first decode row is drawn. */
  decode?: boolean;
}

export const gqa = (r: () => number): Partial<LlamaConfig> => {
  const numKvHeads = 2 + Math.floor(r() * 2);
  return { numKvHeads, numHeads: numKvHeads * (2 + Math.floor(r() * 2)) };
};
export const window = (w: number): Partial<LlamaConfig> => ({ slidingWindow: [w, w] });
export const factor = (f: number) => (c: Candidate, cfg: LlamaConfig) =>
  Math.abs(Number(c.params.eps) / cfg.rmsNormEps - f) < 1e-6 * f;
export const param = (key: string, v: number | string) => (c: Candidate) => c.params[key] === v;

/** A random model of the family with the plant's features; one layer's input; the decode's first row. */
export function draw(seed: number, plant: Plant | null) {
  const r = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const T = 7 + Math.floor(r() * 7);
  const headDim = pick([4, 6, 10]);
  const numKvHeads = pick([1, 2, 3]);
  const cfg = smallLlamaConfig({
    vocabSize: 29,
    hiddenSize: pick([22, 37, 40]),
    numLayers: 2,
    numHeads: numKvHeads * pick([1, 2, 3]),
    numKvHeads,
    headDim,
    rotaryDim: headDim,
    intermediateSize: pick([19, 41, 70]),
    rmsNormEps: pick([1e-6, 1e-5]),
    ropeTheta: pick([100, 10000]),
    ...plant?.cfg?.(r, T),
  });
  const weights = loadLlamaWeights(cfg, writeSafetensors(randomLlamaTensors(cfg, seed)));
  const layer = Math.floor(r() * cfg.numLayers);
  // the layer's input: rows of different scales (a norm's eps matters by the row's RMS)
  const input = new Float32Array(T * cfg.hiddenSize);
  for (let t = 0; t < T; t++) {
    const s = 0.3 + 2 * r();
    for (let e = 0; e < cfg.hiddenSize; e++) input[t * cfg.hiddenSize + e] = s * (2 * r() - 1) * Math.sqrt(3);
  }
  const decodeFrom = plant?.decode ? 3 + Math.floor(r() * (T - 4)) : undefined;
  const tokens = Array.from({ length: T }, () => Math.floor(r() * cfg.vocabSize));
  return { cfg, weights, layer, input, T, tokens, decodeFrom, r };
}

export type Drawn = ReturnType<typeof draw>;

export function whyInput(d: Drawn, fused: Map<string, Float32Array>, ref: Map<string, Float32Array>) {
  return {
    cfg: d.cfg,
    shared: sharedDims(d.cfg),
    weights: d.weights,
    tokens: d.tokens,
    layer: d.layer,
    fusedTaps: fused,
    refTaps: ref,
    metric: 'relL2' as const,
    k: K,
    precision: 'fp32' as const,
    determinism: { identical: true, differences: [], runs: [] },
    decodeFrom: d.decodeFrom,
  };
}

/** The layer recorded as a run records it, with `cand` planted (null: clean). */
export function record(d: Drawn, cand: Candidate | null): Map<string, Float32Array> {
  const i = d.layer;
  const taps = new Map<string, Float32Array>([[i === 0 ? 'embed' : `layers.${i - 1}.out`, d.input]]);
  const has = (s: string) => !UNRECORDED.has(s);
  const x = whyInput(d, taps, taps);
  const recorded = (slot: string) => (slot === 'in' ? d.input : (taps.get(`layers.${i}.${slot}`) ?? null));
  for (const c of familyChecks(d.cfg, i, has, has))
    taps.set(`layers.${i}.${c.slot}`, Float32Array.from(computeGroup(c, x, recorded, cand)));
  return taps;
}

/** The plant's candidate: the one candidatesFor gives for the check of its slot. */
export function candidateOf(d: Drawn, plant: Plant): Candidate {
  const has = (s: string) => !UNRECORDED.has(s);
  const check = familyChecks(d.cfg, d.layer, has, has).find((c) => c.slot === plant.slot);
  if (!check) throw new Error(`no check of '${plant.slot}'`);
  const all = candidatesFor(check, d.cfg, d.layer, { decodeFrom: d.decodeFrom, rows: d.T });
  const c = all.find((x) => x.id === plant.id && (plant.pick?.(x, d.cfg) ?? true));
  if (!c)
    throw new Error(`${plant.id}: no such candidate at '${plant.slot}' (${all.map((x) => x.id).join(', ')})`);
  // planted in this check's steps only (a candidate applies to every step of its op kind in the check it is scored on)
  const slots = new Set(check.steps.map((s) => s.slot));
  return { ...c, applies: (s) => slots.has(s.slot) && c.applies(s) };
}

export type Why = ReturnType<typeof familyWhy>;

/** What a failure prints of the checks: each one's id and ratio, after the seed. */
export const checksLine = (seed: number, why: Why) =>
  `seed ${seed}: ${why.checks.map((c) => `${c.id} ×${c.ratio.toPrecision(3)}`).join(', ')}`;

/**
 * The causes named, held to `id` alone; what a failure prints (`tested`): `head`, then the first four causes tested
 * with their params and residuals.
 */
export function namedAlone(why: Why, id: string, head: string) {
  const tested = `${head}: ${why.cause?.tested
    .slice(0, 4)
    .map((t) => `${t.id} ${JSON.stringify(t.params)} ×${t.residual.toPrecision(3)}`)
    .join(', ')}`;
  const named = why.cause?.named ?? [];
  expect(
    named.map((t) => t.id),
    tested,
  ).toEqual([id]);
  return { named, tested };
}
