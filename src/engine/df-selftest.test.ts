// The double-float self-test on this adapter (Dawn on SwiftShader in CI): it passes with the real library, picks
// DF_FMA = false where fma is not fused (SwiftShader), and fails — naming each op and input in one line — with a
// deliberately broken library (a TwoSum without its error term; a df_mul without its cross terms).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../kernels/testing';
import { dfSelfTest, SELF_TEST_REL } from './df-selftest';

let h: Harness;
let swiftShader = false;
beforeAll(async () => {
  h = await createHarness();
  const a = h.ctx.adapter;
  swiftShader = /swiftshader/i.test(`${a.vendor} ${a.architecture} ${a.description}`);
});
afterAll(() => h?.destroy());

describe('dfSelfTest', () => {
  it('passes on this adapter with the real library', async () => {
    const r = await dfSelfTest(h.device, h.pipelines);
    console.log(
      `self-test: ok ${r.ok}, DF_FMA ${r.dfFma}, worst relative error ${r.worstRelErr.toExponential(2)}, ${r.ms.toFixed(0)} ms`,
    );
    expect(r.failures, r.failures.join('\n')).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.worstRelErr).toBeLessThanOrEqual(SELF_TEST_REL);
    // SwiftShader lowers fma to a multiply and an add: TwoProd through fma is not exact there.
    if (swiftShader) expect(r.dfFma).toBe(false);
    // A second run reuses the compiled pipelines.
    const again = await dfSelfTest(h.device, h.pipelines);
    console.log(`self-test again: ${again.ms.toFixed(0)} ms`);
    expect(again.ok).toBe(true);
  });

  it('fails with a TwoSum that drops its error term (DF_BREAK = 1)', async () => {
    const r = await dfSelfTest(h.device, h.pipelines, { dfBreak: 1 });
    console.log(`broken TwoSum: ${r.failures.length} failures, e.g.\n${r.failures.slice(0, 3).join('\n')}`);
    expect(r.ok).toBe(false);
    expect(r.failures.length).toBeGreaterThan(0);
    for (const line of r.failures) {
      expect(line).not.toContain('\n');
      expect(line).toMatch(
        /^(two_sum|fast_two_sum|two_prod|add|sub|mul|div|sqrt|rsqrt|exp|erf|erfc|gelu|add_f|mul_f)\(/,
      );
    }
    expect(r.failures.some((l) => l.startsWith('two_sum('))).toBe(true);
  });

  it('fails with a df_mul that drops its cross terms (DF_BREAK = 2), the transforms still exact', async () => {
    const r = await dfSelfTest(h.device, h.pipelines, { dfBreak: 2 });
    const ops = new Set(r.failures.map((l) => l.slice(0, l.indexOf('('))));
    console.log(`broken df_mul: ${r.failures.length} failures in ${[...ops].join(', ')}`);
    expect(r.ok).toBe(false);
    expect(ops.has('mul')).toBe(true);
    expect(ops.has('two_prod') || ops.has('two_sum')).toBe(false);
  });
});
