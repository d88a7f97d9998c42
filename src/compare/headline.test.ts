// The headline matches what the text does, for every teaching fault on a small seeded model (every classroom
// scenario: headline-scenarios.test.ts): texts that part other than on a near tie, or a cached decode off its uncached
// forward, never leave the verdict at AGREE; a green verdict means the same text (or a benign near tie). The
// decode-only fault gets the verdict 'generation-diverged' and its decode check starts by itself, naming the step
// and layer where it is born.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../engine/engine';
import { ALL_FUSED } from '../engine/fused-kernels';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { randomModelFiles } from '../model/random-model';
import { mulberry32 } from '../numeric/random';
import { FAULTS } from '../run/faults';
import { defaultRunSpec, type RunSpec } from '../run/runspec';
import { analyze } from './analyze';
import { decodeChecker } from './decode-runs';
import { expectHeadlineMatchesText, SKIP } from './headline.testdata';

describe('every teaching fault: the headline matches the text', () => {
  const seed = freshSeed();
  const L = 3;
  const shape = { vocab: 97, d: 48, layers: L, heads: 4, ff: 96, rotaryPct: 0.5, parallel: true };
  let engine: Engine;
  beforeAll(async () => {
    engine = await Engine.create(nodeGpu(), nodeShaderSource());
    await engine.loadModel(randomModelFiles(shape, seed));
  });
  afterAll(() => engine?.dispose());

  const spec = (faults: RunSpec['faults']): RunSpec => ({
    ...defaultRunSpec(),
    model: { kind: 'embedded', id: 'test' },
    fused: [...ALL_FUSED],
    faults,
    seed,
    generate: 4,
  });
  // 11 tokens: past one key tile of flash attention (8), so the long-prompt fault shows.
  const prompt = () => {
    const rng = mulberry32(seed);
    return Array.from({ length: 11 }, () => Math.floor(rng() * shape.vocab));
  };

  it.each([null, ...FAULTS.map((f) => f.id)])('%s', async (id) => {
    const fromLayer = 1 + (seed % (L - 1));
    const r = await analyze(engine, spec(id ? [{ id, fromLayer }] : []), prompt(), {
      skip: SKIP,
      decodeChecker: decodeChecker(engine),
    });
    const ctx = `${id ?? 'no fault'} from layer ${fromLayer} (seed ${seed})`;
    expectHeadlineMatchesText(r, ctx);
    if (id === null) {
      expect(r.verdict, ctx).toBe('agree');
      // Our cached decode is the uncached forward bit for bit.
      for (const c of r.generation?.cached ?? []) expect(c.relL2, ctx).toBe(0);
      expect(r.generation?.decode, ctx).toBeUndefined();
    }
    if (id === 'decode_rotary') {
      const g = r.generation!;
      expect(r.verdict, `${ctx}: ${g.words}`).toBe('generation-diverged');
      expect(g.decodeStarted, ctx).toBe('auto');
      // The cached decode leaves its uncached forward from the first decode step on; the reference's does not.
      const cached = Object.fromEntries((g.cached ?? []).map((c) => [c.path, c]));
      expect(cached.fused?.firstStep, ctx).toBe(1);
      expect(cached.reference?.relL2, ctx).toBe(0);
      const fused = g.decode?.find((d) => d.path === 'fused');
      expect(fused?.born?.step, `${ctx}: ${fused?.sentence}`).toBe(1);
      expect(fused?.born?.layer, `${ctx}: ${fused?.sentence}`).toBe(fromLayer);
      expect(g.decode?.find((d) => d.path === 'reference')?.verdict, ctx).toBe('agree');
      expect(g.words, ctx).toContain(
        `born at decode step 1 (position ${prompt().length}), layer ${fromLayer}, `,
      );
    }
    if (id === 'reordered_sum') expect(r.verdict, ctx).toBe('agree');
  });
});
