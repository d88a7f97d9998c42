// The family's half of the double-float self-test (family-selftest.ts) on SwiftShader: the tiny Llama-family model
// through the family's kernels passes with the TwoProd the adapter needs (DF_FMA = false: its fma is not fused) and
// fails, naming the first tap over the bound, with the one it cannot do exactly (DF_FMA = true); a compare that asks
// for the GPU oracle gets it, with the family's check passed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BufferPool } from '../gpu/pool';
import { createHarness, type Harness } from '../kernels/testing';
import { tinyLlamaCheck } from './family-selftest';
import { TINY_MODEL_REL_L2 } from './oracle-selftest';

let h: Harness;
let pool: BufferPool;
beforeAll(async () => {
  h = await createHarness();
  pool = new BufferPool(h.device);
});
afterAll(() => {
  pool?.destroyAll();
  h?.destroy();
});

describe('the Llama family oracle self-test', () => {
  it('passes with an exact TwoProd', async () => {
    const r = await tinyLlamaCheck(h.device, h.pipelines, pool, false);
    expect(r.failure).toBeNull();
    expect(r.ok).toBe(true);
    expect(r.worstRelL2).toBeLessThan(TINY_MODEL_REL_L2); // measured 1.5e-14
  });

  it('fails in one line naming a tap where the TwoProd is not exact (a non-fused fma)', async () => {
    const r = await tinyLlamaCheck(h.device, h.pipelines, pool, true);
    expect(r.ok).toBe(false);
    expect(r.failure).toMatch(/^tiny Llama-family model: \S+ is \S+ from fp64 \(relative L2\), over 1e-12$/);
    expect(r.worstRelL2).toBeGreaterThan(1e-10);
  });
});
