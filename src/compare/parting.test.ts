// Why the texts part: a seeded fault that changes the text is a divergence at the token where the texts part; a
// near tie (two LM-head rows that differ by less than rounding) is benign; a cached choice its own path's full
// forward would not make is put in the decode path; and the classifier on hand-made rows.
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readModelDir } from '../cli/model-dir';
import type { GpuBatch } from '../engine/batch';
import { Engine } from '../engine/engine';
import { ALL_FUSED } from '../engine/fused-kernels';
import { nodeGpu } from '../gpu/node';
import { oracleForward } from '../kernels/cpu/forward';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { type RandomModelSpec, randomConfigJson, randomTensors } from '../model/random-model';
import { writeSafetensors } from '../model/safetensors-write';
import { mulberry32 } from '../numeric/random';
import { faultHooks } from '../run/faults';
import { defaultRunSpec, type RunSpec } from '../run/runspec';
import type { AnalysisContext } from './analysis-phases';
import { analyze } from './analyze';
import { classifyParting, partingOf } from './parting';

describe('classifyParting on hand-made rows', () => {
  const seed = freshSeed();
  const rng = mulberry32(seed);
  const V = 50;
  const exact = Array.from({ length: V }, () => rng() * 4 - 2);
  const a = Math.floor(rng() * V);
  const b = (a + 1 + Math.floor(rng() * (V - 1))) % V;
  const noise = (row: number[], size: number) => row.map((v) => v + (rng() * 2 - 1) * size);
  const base = { step: 3, promptLength: 10, refChose: a, fusedChose: b, precision: 'fp32' as const, k: 10 };
  it('calls a flip between candidates closer than the floor a near tie', () => {
    const tie = [...exact];
    tie[a] = 5;
    tie[b] = 5 + 1e-6 * (rng() - 0.5);
    const ref = noise(tie, 1e-6);
    const fused = noise(tie, 1e-6);
    ref[a] = 5 + 2e-6; // each path leads with its own pick, by less than the floor allows
    ref[b] = 5;
    fused[b] = 5 + 2e-6;
    fused[a] = 5;
    const g = classifyParting({ ...base, refRow: ref, fusedRow: fused, exactRow: tie });
    expect(g.kind, `seed ${seed}: ${g.words}`).toBe('near-tie');
    expect(g.row).toBe(12);
    expect(g.chosenIn).toBe('decode');
    expect(g.reference.top[0].id).toBe(a);
    expect(g.fused.top[0].id).toBe(b);
    expect(g.words).toMatch(/near tie flipped by rounding/);
  });
  it('calls a fused row far from exact a divergence, and a cached pick its full forward disowns the decode path', () => {
    const row = [...exact];
    row[a] = 5;
    row[b] = 4;
    const ref = noise(row, 1e-6);
    const fused = noise(row, 1e-6);
    fused[b] = 6; // the fused forward itself prefers b, by a whole logit: its error is large
    const g = classifyParting({ ...base, refRow: ref, fusedRow: fused, exactRow: row });
    expect(g.kind, `seed ${seed}: ${g.words}`).toBe('divergence');
    expect(g.fused.ratio).toBeGreaterThan(10);
    expect(g.fused.fullAgrees).toBe(true);
    // The same rows, but the fused path's cached decode picked b while its full forward prefers a.
    const decode = classifyParting({ ...base, refRow: ref, fusedRow: noise(row, 1e-6), exactRow: row });
    expect(decode.kind, `seed ${seed}: ${decode.words}`).toBe('decode');
    expect(decode.fused.fullAgrees).toBe(false);
    expect(decode.words).toMatch(/fused path's cached decode/);
  });
  it('names the prompt forward as the chooser of the first generated token', () => {
    const g = classifyParting({ ...base, step: 0, refRow: exact, fusedRow: exact, exactRow: exact });
    expect(g.chosenIn).toBe('prefill');
    expect(g.row).toBe(9);
    expect(g.words).toMatch(/generated token 1 \(position 10, chosen by the prompt's forward\)/);
  });
});

describe('the parting of two generations on the engine', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await Engine.create(nodeGpu(), nodeShaderSource());
  });
  afterAll(() => engine?.dispose());

  it('a seeded fault that changes the text: a divergence where the texts part', async () => {
    await engine.loadModel(readModelDir(resolve('public/models/neox-kjv-bytes')));
    const tokens = [...new TextEncoder().encode('In the beginning God')];
    const spec: RunSpec = {
      ...defaultRunSpec(),
      model: { kind: 'embedded', id: 'neox-kjv-bytes' },
      fused: [...ALL_FUSED],
      faults: [{ id: 'residual_wiring', fromLayer: 1 }],
      generate: 3,
    };
    const r = await analyze(engine, spec, tokens, {
      skip: { bisection: true, determinism: true, taps: true, local: true },
    });
    const g = r.generation!;
    const first = g.reference.ids.findIndex((id, i) => g.fused.ids[i] !== id);
    expect(first, 'the fault changes the text').toBeGreaterThanOrEqual(0);
    expect(g.firstDifference).toBe(first);
    const p = g.parting!;
    expect(p.kind, p.words).toBe('divergence');
    expect(p.step).toBe(first);
    expect(p.row).toBe(tokens.length + first - 1);
    expect(p.reference.chose).toBe(g.reference.ids[first]);
    expect(p.fused.chose).toBe(g.fused.ids[first]);
    expect(p.fused.ratio).toBeGreaterThan(spec.k);
    expect(p.reference.ratio).toBeLessThanOrEqual(1);
    expect(p.words).toMatch(/A divergence/);
  });

  /** A model whose LM head holds twins: rows 2m and 2m+1 differ by far less than one rounding of a logit. */
  function twinModel(shape: RandomModelSpec, seed: number) {
    const tensors = randomTensors(shape, seed);
    const head = tensors.find((t) => t.name === 'embed_out.weight')!;
    const w = head.data as Float32Array;
    const d = shape.d;
    for (let m = 0; m + 1 < shape.vocab; m += 2) {
      w.copyWithin((m + 1) * d, m * d, (m + 1) * d);
      w[(m + 1) * d] *= 1 + 2 ** -23; // one ulp on one weight: the logits differ by ~1e-8 of their size
    }
    return {
      config: JSON.stringify(randomConfigJson(shape), null, 2),
      weights: writeSafetensors(tensors, { format: 'pt' }),
      tensors,
    };
  }

  it.each(['cpu', 'gpu'] as const)('a near tie is benign, a far pick is not (%s oracle)', async (oracle) => {
    const seed = freshSeed();
    const shape = { vocab: 96, d: 48, layers: 2, heads: 4, ff: 80, rotaryPct: 0.5, parallel: true };
    const files = twinModel(shape, seed);
    await engine.loadModel({ config: files.config, weights: files.weights });
    const rng = mulberry32(seed);
    const prompt = Array.from({ length: 9 }, () => Math.floor(rng() * shape.vocab));
    const batches: GpuBatch[] = [];
    const spec: RunSpec = { ...defaultRunSpec(), fused: [...ALL_FUSED], faults: [], generate: 4 };
    const c = {
      engine,
      spec,
      tokens: prompt,
      fusedSet: new Set(ALL_FUSED),
      planted: [],
      hooks: faultHooks([]),
      newBatch: () => {
        const b = engine.batch();
        batches.push(b);
        return b;
      },
    } as unknown as AnalysisContext;
    try {
      await engine.loadCpuWeights();
      // The exact forward's pick after prompt + one shared token, and its twin.
      const shared = Math.floor(rng() * shape.vocab);
      const exact = oracleForward(engine.modelInfo!.config, engine.weights!, [...prompt, shared]).logits;
      const row = exact.slice(prompt.length * shape.vocab);
      const best = row.indexOf(Math.max(...row));
      const twin = best ^ 1;
      const info = { kind: oracle, dfFma: false };
      const tie = await partingOf(c, info, [shared, best], [shared, twin], 1);
      const ctx = `seed ${seed}: ${tie.words}`;
      expect(tie.kind, ctx).toBe('near-tie');
      expect(tie.step).toBe(1);
      expect(tie.row).toBe(prompt.length);
      expect(Math.abs(tie.reference.margin), ctx).toBeLessThanOrEqual(spec.k * tie.floor);
      expect(tie.fused.ratio, ctx).toBeLessThanOrEqual(spec.k);
      // A pick far down the list is no tie, and neither full forward makes it: the decode path is named.
      const far = Array.from(row)
        .map((v, id) => ({ v, id }))
        .sort((x, y) => x.v - y.v)[0].id;
      const decode = await partingOf(c, info, [shared, best], [shared, far], 1);
      expect(decode.kind, `seed ${seed}: ${decode.words}`).toBe('decode');
      expect(decode.fused.fullAgrees).toBe(false);
    } finally {
      for (const b of batches) b.release();
    }
  });
});
