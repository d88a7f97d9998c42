// The why of a Llama-family compare (family-why.ts, run by family-compare.ts at the first born layer) on the committed
// HF fixtures in Node on SwiftShader: each teaching fault of the family's fused kernels, planted from layer 1 (and
// from layer 0), is found at its op — the fused group where its kernel keeps ops inside it — and its cause is named
// alone; every other op of the layer stays within k × its floor; a clean compare has no born layer and no why.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../engine/engine';
import type { FaultId } from '../run/faults';
import { analyze } from './analyze';
import { verdictOf } from './family-causes';
import { fixtureEngine, fixtureSpec, fixtureTokens, loadFixture } from './family-fixtures.testdata';

let engine: Engine;
beforeAll(async () => {
  engine = await fixtureEngine();
});
afterAll(() => engine?.dispose());

async function load(name: string) {
  await loadFixture(engine, name);
  return fixtureTokens(name);
}

const spec = fixtureSpec;

describe('why, for a Llama-family compare', () => {
  // [fault, fixture, from layer, the op (slot or fused group) it is born at, the cause named]. The add + RMSNorm
  // kernel that ends layer i − 1 computes layer i's input norm: planted from layer 1, the fault first acts in layer
  // 1's second norm; from layer 0, in layer 0's input norm.
  const cases: [FaultId, string, number, string, string][] = [
    ['rms_eps_outside', 'mistral-window', 1, 'ln2', 'rms-eps-outside'],
    ['swap_gate_up', 'llama-gqa-llama3', 1, 'gate+up+swiglu', 'swiglu-swapped'],
    ['kv_interleaved', 'qwen2-bias', 1, 'ctx', 'kv-interleaved'],
    ['rms_eps_outside', 'mistral-window', 0, 'ln1', 'rms-eps-outside'],
    ['swap_gate_up', 'llama-gqa-llama3', 0, 'gate+up+swiglu', 'swiglu-swapped'],
    ['kv_interleaved', 'qwen2-bias', 0, 'ctx', 'kv-interleaved'],
  ];
  it.each(cases)(
    '%s on %s from layer %i: born at %s, the cause %s named alone',
    async (id, name, from, op, cause) => {
      const tokens = await load(name);
      const r = await analyze(engine, spec(tokens, [{ id, fromLayer: from }]), tokens);
      const why = r.why;
      const line = why?.checks.map((c) => `${c.id} ×${c.ratio.toPrecision(3)}`).join(', ');
      expect(why?.layer).toBe(from);
      expect(why?.born, line).toBe(`layers.${from}.${op}`);
      // every op before the born one within k × its floor (the first past it is the born one)
      const at = why?.checks.findIndex((c) => c.id === why.born) ?? -1;
      for (const c of why?.checks.slice(0, at) ?? [])
        expect(c.ratio, `${c.id}: ${line}`).toBeLessThanOrEqual(r.k);
      const v = why?.cause;
      const tested = v?.tested.map((t) => `${t.id} ×${t.residual.toPrecision(3)}`).join(', ');
      expect(
        v?.named.map((t) => t.id),
        tested,
      ).toEqual([cause]);
      expect(v?.named[0].residual).toBeLessThanOrEqual(r.k);
      // the named cause explains clearly better than the next: 2× its residual or one floor, whichever is more
      const next = v?.runnerUp?.residual ?? Number.POSITIVE_INFINITY;
      const best = v?.named[0].residual ?? 0;
      expect(next, tested).toBeGreaterThan(Math.max(2 * best, best + 1));
      expect(v?.error).toBeGreaterThan(r.k);
      expect(why?.sentence).toMatch(/probable cause: /);
      expect(why?.anatomy?.rows.count).toBeGreaterThan(0);
    },
  );

  it('the eps found is the fault kernel’s (1e4 × the config’s, outside the root)', async () => {
    const tokens = await load('mistral-window');
    const r = await analyze(engine, spec(tokens, [{ id: 'rms_eps_outside', fromLayer: 1 }]), tokens);
    const named = r.why?.cause?.named[0];
    const eps = engine.llamaModel?.cfg.rmsNormEps ?? 0;
    expect(named?.params.eps).toBeCloseTo(1e4 * eps, 12);
  });

  it.each(['llama-gqa-llama3', 'qwen3-qknorm', 'mistral-window'])(
    '%s: a clean compare has no born layer and no why',
    async (name) => {
      const tokens = await load(name);
      const r = await analyze(engine, spec(tokens), tokens);
      expect(r.firstBornLayer).toBeNull();
      expect(r.why).toBeNull();
    },
  );

  it('a cause is named only within k × floor and not clearly beaten; else none', () => {
    const t = (id: string, residual: number) => ({
      id,
      family: 'layout' as const,
      words: id,
      params: {},
      residual,
    });
    expect(verdictOf([t('a', 1.2), t('b', 40)], 500, 10, 0).named.map((c) => c.id)).toEqual(['a']);
    // two that explain about equally are both named (docs/CAUSES.md)
    expect(verdictOf([t('a', 1.2), t('b', 2)], 500, 10, 0).named.map((c) => c.id)).toEqual(['a', 'b']);
    const none = verdictOf([t('a', 11), t('b', 40)], 500, 10, 0);
    expect(none.named).toEqual([]);
    expect(none.words).toMatch(/^no known cause explains it \(the closest: a/);
    expect(none.runnerUp?.id).toBe('a');
  });
});
