// The plan with split-K GEMMs and the timing of a forward: a policy that splits every fused linear (a K
// partition table for the test model's shapes) against the CPU adapter's policy (no split): the same results
// to fp32 rounding, one extra dispatch per split GEMM (less the reductions folded into the next op) with its taps
// after the reduction, timing labels folded
// into their op's kind, cached generation equal to the no-cache loop (also with decode steps on the GEMV core, whose
// few-row forwards give the tiled core's logits bit for bit); and timing by repetition with a forced timestamp step (SwiftShader's timestamps are not
// quantized), which must not change a single bit of the forward's results.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicMetrics } from '../compare/metrics';
import { nodeGpu } from '../gpu/node';
import { CPU_ADAPTER, type GemmPolicy } from '../kernels/gemm-configs';
import { nodeShaderSource } from '../kernels/shaders-node';
import { randomModelFiles } from '../model/random-model';
import { Engine } from './engine';
import { summarizeTimings } from './timing';

// d 40, ff 136: qkv (N 3·40 = 120 virtual columns, K 40), attn_out (N 40, K 40), dense_h_to_4h (136, 40),
// dense_4h_to_h (40, 136).
const spec = { vocab: 101, d: 40, layers: 2, heads: 2, ff: 136, rotaryPct: 0.5, parallel: true };
const SPLITTING: GemmPolicy = {
  name: 'test: split every fused linear',
  table: {
    measuredOn: 'test',
    date: '',
    tiles: {},
    kChunks: { '120x40': 16, '40x40': 16, '136x40': 32, '40x136': 64 },
  },
  splitK: true,
};
const tokens = [3, 1, 4, 1, 5, 9, 2];

let split: Engine;
let whole: Engine;
let gemv: Engine;
beforeAll(async () => {
  split = await Engine.create(nodeGpu(), nodeShaderSource(), { gemm: SPLITTING });
  whole = await Engine.create(nodeGpu(), nodeShaderSource(), { gemm: CPU_ADAPTER });
  // The same partition, with decode steps (and prompts of up to 4 tokens) on the GEMV core, as on a GPU.
  gemv = await Engine.create(nodeGpu(), nodeShaderSource(), { gemm: { ...SPLITTING, gemvRows: 4 } });
  const files = randomModelFiles(spec, 11);
  await split.loadModel(files);
  await whole.loadModel(files);
  await gemv.loadModel(files);
});
afterAll(() => {
  split?.dispose();
  whole?.dispose();
  gemv?.dispose();
});

describe('split-K in the fused plan', () => {
  it('agrees with the unsplit plan to fp32 rounding, with a partial GEMM before each split reduction', async () => {
    const a = await split.forward(tokens, { path: 'fused', timing: true });
    const b = await whole.forward(tokens, { path: 'fused', timing: true });
    // qkv_rotary, attn_out, linear_gelu, residual_epilogue split in both layers: 4 partial GEMMs per layer. The
    // recorded forward folds reductions into the next op (plan-fold.ts): attention.dense's in every layer, and
    // layer 0's MLP reduction into layer 1's LayerNorm.
    expect(a.dispatches).toBe(b.dispatches + 4 * spec.layers - spec.layers - (spec.layers - 1));
    for (const [x, y] of [
      [a.dump.logits, b.dump.logits],
      ...a.dump.layers.map((l, i) => [l, b.dump.layers[i]]),
    ]) {
      expect(x.every(Number.isFinite)).toBe(true);
      // Both are fp32 forwards differing only in the order of the GEMMs' K sums: ~1e-7 relative.
      expect(basicMetrics(x, y).relL2).toBeLessThan(1e-5);
    }
    const labels = a.timings!.map((t) => t.label);
    for (const op of ['qkv_rotary', 'linear_gelu', 'residual_epilogue'])
      expect(labels.indexOf(`layers.1.${op}/splitk`)).toBe(labels.indexOf(`layers.1.${op}`) - 1);
    expect(labels).toContain('layers.1.attn_out/splitk');
    expect(labels).not.toContain('layers.1.attn_out'); // its reduction runs in layers.1.residual_epilogue
    const s = summarizeTimings(a.timings!, spec.layers);
    expect(Object.keys(s.perKind).some((k) => k.includes('/'))).toBe(false);
    expect(s.ops.find((o) => o.label === 'layers.0.attn_out/splitk')?.kind).toBe('attn_out');
  });

  it('every tap of the split plan is written (read back after the reduction)', async () => {
    const r = await split.forward(tokens, { path: 'fused', taps: 'all' });
    for (const name of [
      'layers.0.q',
      'layers.0.k',
      'layers.1.v',
      'layers.0.attn_out',
      'layers.0.gelu',
      'layers.1.out',
    ])
      expect(r.taps.get(name)?.every(Number.isFinite), name).toBe(true);
  });
});

describe('split-K and the KV cache', () => {
  it('a decoded token gets the bits of its row in a whole forward: cached ids equal the no-cache loop', async () => {
    // The K partition is per (N, K), never per M: a one-row decode step sums like that row of the prefill.
    for (const path of ['fused', 'reference'] as const) {
      const cached = await split.generate(tokens, 5, undefined, undefined, { path });
      expect(cached, path).toEqual(await split.generateNoCache(tokens, 5, undefined, undefined, { path }));
    }
  });

  it('decode steps on the GEMV core (every split in one dispatch) keep those bits: the same ids and logits', async () => {
    const cached = await gemv.generate(tokens, 5, undefined, undefined, { path: 'fused' });
    expect(cached).toEqual(await split.generateNoCache(tokens, 5, undefined, undefined, { path: 'fused' }));
    // A 3-token forward runs every fused GEMM on the GEMV core: the logits of the tiled core, bit for bit.
    const a = await gemv.forward(tokens.slice(0, 3), { path: 'fused', timing: true });
    const b = await split.forward(tokens.slice(0, 3), { path: 'fused' });
    expect(a.timings!.some((t) => t.label.endsWith('/splitk'))).toBe(false);
    expect(Array.from(a.dump.logits)).toEqual(Array.from(b.dump.logits));
    for (const [i, l] of a.dump.layers.entries())
      expect(Array.from(l), `layer ${i}`).toEqual(Array.from(b.dump.layers[i]));
  }, 600_000); // SwiftShader compiles the GEMV's pipelines (seconds each)
});

describe('timing by repetition (forced timestamp step)', () => {
  it('re-times short ops by repetition, flags what is still quantized, and leaves the results bit-identical', async () => {
    const quantumNs = 200_000; // 0.2 ms: an op must span 1.6 ms to count as measured
    const plain = await whole.forward(tokens, { path: 'fused' });
    const timed = await whole.forward(tokens, { path: 'fused', timing: true, timingQuantumNs: quantumNs });
    expect(Array.from(timed.dump.logits)).toEqual(Array.from(plain.dump.logits));
    const t = timed.timings!;
    expect(t.length).toBe(timed.dispatches);
    for (const op of t) {
      expect(op.quantumNs).toBe(quantumNs);
      expect(op.ns >= 0 && Number.isFinite(op.ns), op.label).toBe(true);
      // The flag is exactly "the measured span (time × repeats) is under 8 steps".
      expect(op.quantized, op.label).toBe(op.ns * op.repeats! < 8 * quantumNs);
      // Repeated only while quantized, up to the cap.
      expect(op.repeats! >= 1 && op.repeats! <= 256, op.label).toBe(true);
    }
    const s = summarizeTimings(t, spec.layers);
    expect(s.quantumNs).toBe(quantumNs);
    expect(s.repeatedOps).toBeGreaterThan(0); // a 7-token embedding lookup is far below 1.6 ms
    expect(s.quantized).toBe(s.ops.some((o) => o.quantized));
  });

  it('detects no step on SwiftShader (timestamps at ns resolution) and repeats nothing', async () => {
    const r = await whole.forward(tokens, { path: 'fused', timing: true });
    const s = summarizeTimings(r.timings!, spec.layers);
    // Dawn's quantization is off in Node (NODE_DAWN_TOGGLES); SwiftShader's clock then steps by ≤ 1 µs.
    expect(s.quantumNs == null || s.quantumNs <= 1000, `step ${s.quantumNs}`).toBe(true);
    expect(s.repeatedOps).toBe(0);
    expect(s.quantized).toBe(false);
  });
});
