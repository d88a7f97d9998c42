// Each teaching fault is caught by the analysis as the catalog says: the right first divergent layer, the
// right kernel from bisection, the race flagged by the determinism check, the long-prompt fault exact on a
// one-tile prompt, and the benign reordering under the noise floor.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../engine/engine';
import { ALL_FUSED } from '../engine/fused-kernels';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { randomModelFiles } from '../model/random-model';
import { FAULTS, type FaultId } from '../run/faults';
import { defaultRunSpec, type RunSpec } from '../run/runspec';
import { analyze, type Report } from './analyze';

let engine: Engine;
const L = 4;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
  // Parallel residual (so the wiring fault applies), rotary on 8 of 16 dims (GPT-J pairs differ from rotate-half).
  await engine.loadModel(
    randomModelFiles({ vocab: 211, d: 64, layers: L, heads: 4, ff: 150, rotaryPct: 0.5, parallel: true }, 99),
  );
});
afterAll(() => engine?.dispose());

function spec(faults: RunSpec['faults'], seed: number): RunSpec {
  return {
    ...defaultRunSpec(),
    model: { kind: 'embedded', id: 'test' },
    fused: [...ALL_FUSED],
    faults,
    seed,
    generate: 0,
  };
}

/** The checks below that do not read the determinism check leave it out (two fused forwards each). */
const NO_DETERMINISM = { skip: { determinism: true } };

const tokens = (T: number) => Array.from({ length: T }, (_, i) => (i * 37 + 11) % 211);

function summary(r: Report): string {
  return r.layers
    .map((l) => `L${l.layer}: ratio ${l.ratio.toExponential(2)} local ${l.localRatio.toExponential(2)}`)
    .join('; ');
}

describe('the analysis on a clean fused path', () => {
  it('agrees, is deterministic, and reports fused-away taps as such', async () => {
    const r = await analyze(engine, spec([], 1), tokens(20));
    expect(r.verdict, summary(r)).toBe('agree');
    expect(r.firstDivergentLayer).toBeNull();
    expect(r.determinism.identical).toBe(true);
    expect(r.bisection).toBeNull();
    const away = r.taps.filter((t) => t.status === 'fused-away').map((t) => t.op);
    expect(new Set(away)).toEqual(new Set(['qkv', 'scores', 'probs', 'fc1', 'mlp_out']));
    expect(r.taps.find((t) => t.name === 'layers.0.ctx')?.status).toBe('compared');
  });
});

const diverging = FAULTS.filter((f) => f.expect === 'diverges').map((f) => f.id);

/** The cause the report's "why" must name for each diverging fault (docs/CAUSES.md). */
const CAUSE: Partial<Record<FaultId, string>> = {
  tile_offset: 'input-shifted',
  fp16_accumulation: 'acc-fp16',
  alias_residual: 'residual-wrong-tensor',
  stale_buffer: 'input-wrong-tensor',
  wrong_ln_eps: 'ln-eps',
  gptj_rotary: 'rotary-gptj',
  gelu_relu: 'relu',
  dropped_bias: 'bias-dropped',
  residual_wiring: 'residual-wrong-tensor',
  no_rescale: 'softmax-no-rescale',
};

describe('faults', () => {
  it.each(diverging)('%s: first divergent layer and blamed kernel are right', async (id: FaultId) => {
    const seed = freshSeed();
    const fromLayer = 1 + (seed % (L - 1)); // layers 1..L-1, so "clean before, wrong from" is visible
    const r = await analyze(engine, spec([{ id, fromLayer }], seed), tokens(20), NO_DETERMINISM);
    const ctx = `${id} from layer ${fromLayer} (seed ${seed}): ${summary(r)}`;
    expect(r.verdict, ctx).toBe('diverged');
    expect(r.firstDivergentLayer, ctx).toBe(fromLayer);
    expect(r.firstBornLayer, ctx).toBe(fromLayer);
    const kernel = FAULTS.find((f) => f.id === id)!.kernel;
    const blamed = r.bisection!.filter((b) => b.reproduces);
    expect(
      blamed.map((b) => b.kernel),
      ctx,
    ).toEqual([kernel]);
    expect(blamed[0].firstLayer, ctx).toBe(fromLayer);
    // Layers before the fault agree with the reference within the floor.
    for (const l of r.layers.slice(0, fromLayer)) expect(l.diverged, ctx).toBe(false);
    // Why: the fault's op in that layer, and its cause named first.
    expect(r.why?.layer, ctx).toBe(fromLayer);
    expect(r.why?.cause?.named[0]?.id, `${ctx}; ${r.why?.sentence}`).toBe(CAUSE[id]);
    expect(r.why?.sentence).toContain(`probable cause: ${r.why!.cause!.words}`);
  });

  it('reordered_sum (benign) changes bits but stays under the noise floor', async () => {
    const r = await analyze(
      engine,
      spec([{ id: 'reordered_sum', fromLayer: 0 }], 5),
      tokens(20),
      NO_DETERMINISM,
    );
    expect(r.verdict, summary(r)).toBe('agree');
    expect(Math.max(...r.layers.map((l) => l.ratio))).toBeLessThan(r.k);
    const clean = await analyze(engine, spec([], 5), tokens(20), NO_DETERMINISM);
    // Not a no-op: the fused path's bits differ from the clean fused path's somewhere.
    const moved = r.layers.some((l, i) => l.propagated.maxAbs !== clean.layers[i].propagated.maxAbs);
    expect(moved).toBe(true);
  });

  it('no_rescale is exact on a one-tile prompt and diverges on a longer one', async () => {
    const short = await analyze(
      engine,
      spec([{ id: 'no_rescale', fromLayer: 0 }], 3),
      tokens(8),
      NO_DETERMINISM,
    );
    expect(short.verdict, summary(short)).toBe('agree');
    const long = await analyze(
      engine,
      spec([{ id: 'no_rescale', fromLayer: 2 }], 3),
      tokens(40),
      NO_DETERMINISM,
    );
    expect(long.verdict, summary(long)).toBe('diverged');
    expect(long.firstDivergentLayer).toBe(2);
    expect(long.bisection!.filter((b) => b.reproduces).map((b) => b.kernel)).toEqual(['flash_attention']);
    expect(long.why?.cause?.named[0]?.id, long.why?.sentence).toBe(CAUSE.no_rescale);
    expect(long.why?.cause?.named[0]?.params.block, long.why?.sentence).toBe(8);
  });

  it('missing_barrier: the determinism check flags the race', async () => {
    const r = await analyze(engine, spec([{ id: 'missing_barrier', fromLayer: 1 }], 4), tokens(40), {
      skip: { bisection: true },
    });
    expect(r.determinism.identical, JSON.stringify(r.determinism.differences.slice(0, 3))).toBe(false);
    expect(r.determinism.differences[0].tensor).toMatch(/layers/);
    // Why: a race is said as such, not dressed up as a fixed variant.
    expect(r.why?.race, r.why?.sentence).not.toBeNull();
    expect(r.why?.sentence).toMatch(/probable cause: a race/);
  });
});
