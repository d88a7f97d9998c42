// A decode-only fault of our own (decode_rotary: the single-row decode step rotated as position 0): every check of
// the prompt agrees, and only the decode is wrong — found by checking the decode as a run, at its first decode step
// and its layer; the cached path no longer equals its own whole forward; where the texts part, the parting puts the
// error in the decode path.
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readModelDir } from '../cli/model-dir';
import { Engine } from '../engine/engine';
import { ALL_FUSED } from '../engine/fused-kernels';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { randomModelFiles } from '../model/random-model';
import { mulberry32 } from '../numeric/random';
import { defaultRunSpec, type RunSpec } from '../run/runspec';
import { scenarioById } from '../run/scenarios';
import { analyze } from './analyze';
import { decodeChecker } from './decode-runs';

const seed = freshSeed();
const shape = { vocab: 89, d: 48, layers: 3, heads: 4, ff: 96, rotaryPct: 0.5, parallel: true };
let engine: Engine;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
  await engine.loadModel(randomModelFiles(shape, seed));
});
afterAll(() => engine?.dispose());

describe('a decode-only fault', () => {
  it('leaves the prompt exact and is found at the first decode step of its layer', async () => {
    const rng = mulberry32(seed);
    const prompt = Array.from({ length: 6 }, () => Math.floor(rng() * shape.vocab));
    const fromLayer = Math.floor(rng() * shape.layers);
    const spec: RunSpec = {
      ...defaultRunSpec(),
      model: { kind: 'embedded', id: 'test' },
      fused: [...ALL_FUSED],
      faults: [{ id: 'decode_rotary', fromLayer }],
      seed,
      generate: 4,
    };
    const r = await analyze(engine, spec, prompt, {
      skip: { bisection: true, determinism: true, taps: true },
      checkDecode: decodeChecker(engine),
    });
    const ctx = `seed ${seed}, layer ${fromLayer}`;
    expect(r.firstDivergentLayer, `${ctx}: the prompt agrees`).toBeNull();
    // The verdict covers the text: the decode is wrong, so the headline is not AGREE.
    expect(r.verdict, `${ctx}: ${r.generation?.words}`).toBe('generation-diverged');
    expect(r.generation?.verdict).toBe('diverged');
    expect(r.generation?.decodeStarted).toBe('asked');
    const [ref, fused] = r.generation!.decode!;
    expect(ref.verdict, `${ctx}: ${ref.sentence}`).toBe('agree');
    expect(ref.vsFull?.within).toBe(true);
    expect(fused.verdict, `${ctx}: ${fused.sentence}`).toBe('diverged');
    expect(fused.born?.layer, `${ctx}: ${fused.sentence}`).toBe(fromLayer);
    expect(fused.born?.step, `${ctx}: ${fused.sentence}`).toBe(1);
    expect(fused.born?.row, ctx).toBe(prompt.length);
    // The op, not the layer: the fused path's decode names the fused QKV projection and attention core, where the
    // decode step's rotary lives, with the layer's ops checked one by one (none left out for lack of taps).
    expect(fused.born?.check, `${ctx}: ${fused.sentence}`).toBe(`layers.${fromLayer}.attn_block`);
    expect(fused.sentence, ctx).toContain('the QKV projection and the attention core (fused)');
    expect(fused.sentence, ctx).not.toContain('could not run');
    expect(fused.ops?.checks.find((x) => x.op === 'ln1')?.ratio, ctx).toBeLessThan(spec.k);
    expect(r.generation?.words, ctx).toContain(
      `born at decode step 1 (position ${prompt.length}), layer ${fromLayer}, the QKV projection and the attention core (fused), on the fused path`,
    );
    // The path is said beside the sentence: it starts at the step, not with the runs analysis's "run A (…)".
    expect(
      fused.sentence.startsWith(`decode step 1 (position ${prompt.length}), layer ${fromLayer}: `),
      ctx,
    ).toBe(true);
    expect(ref.sentence.startsWith('agrees with the exact forward'), ref.sentence).toBe(true);
    expect(fused.vsFull?.within, `${ctx}: ×${fused.vsFull?.ratio}`).toBe(false);
    const p = r.generation!.parting;
    if (p) expect(p.kind, `${ctx}: ${p.words}`).toMatch(/^(decode|near-tie)$/);
  });
});

describe('the classroom scenario "decode-only" on the embedded model', () => {
  it('agrees on the prompt and parts at the second token, in the decode path', async () => {
    const sc = scenarioById('decode-only')!;
    const kjv = await Engine.create(nodeGpu(), nodeShaderSource());
    try {
      await kjv.loadModel(readModelDir(resolve('public/models/neox-kjv-bytes')));
      const text = 'text' in sc.spec.prompt ? sc.spec.prompt.text : '';
      const tokens = [...new TextEncoder().encode(text)];
      // Two tokens reach the parting (the decode check itself is tested on the small model above: it is slow here).
      const r = await analyze(kjv, { ...sc.spec, generate: 2 }, tokens, {
        skip: { bisection: true, determinism: true, taps: true },
      });
      expect(r.firstDivergentLayer).toBe(sc.expect.firstDivergentLayer);
      expect(r.verdict, r.generation?.words).toBe('generation-diverged');
      const g = r.generation!;
      expect(g.firstDifference).toBe(1);
      expect(g.parting?.kind, g.parting?.words).toBe('decode');
      expect(g.parting?.fused.fullAgrees).toBe(false);
    } finally {
      kjv.dispose();
    }
  });
});
