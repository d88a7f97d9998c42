// The Llama compare's GPU comparisons (family-metrics.ts) on random tensors: each result is metrics.ts on the
// tensors it names (which side is the baseline, which rows), the scales are the exact layers' and logits' largest
// magnitudes where the metric needs them (maxAbs) and 0 where it does not, a tap the fused path keeps to itself is
// fused away; the determinism run's tensors (some changed in a few drawn words, as arrays and as buffers on the GPU)
// against the fused path's bit for bit are family-taps.ts sameBits. Fresh seed per run (KERNEL_SEED replays; KERNEL_SWEEP=n runs n seeds).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uploadDf } from '../engine/oracle-df';
import { createHarness, freshSeed, type Harness } from '../kernels/testing';
import { smallLlamaConfig } from '../model/llama-config';
import { mulberry32, randn } from '../numeric/random';
import { familyMetrics } from './family-metrics';
import { sameBits } from './family-taps';
import { type FullMetrics, fullMetrics, perTokenRelL2 } from './metrics';

const ROUNDS = Number(process.env.KERNEL_SWEEP ?? 1);

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());

// Against an exact (df) baseline the pairs hold the doubles to ~2^-48 of each value, so a distance of ~1e-7 of the
// values moves by ~1e-8 of itself and an ulp count may move by one: 1e-6 and ±1 there; between f32 tensors 1e-9
// (the GPU's extended sums) and the same ulps. The exact tensors sit ~1e-3 from the paths' so that a baseline
// swapped for its operand (relL2's denominator) moves a result by ~1e-3 of itself: over either bound.
const close = (got: FullMetrics, want: FullMetrics, what: string, vsExact = false) => {
  expect(Math.abs(got.maxUlp - want.maxUlp), what).toBeLessThanOrEqual(vsExact ? 1 : 0);
  const rel = vsExact ? 1e-6 : 1e-9;
  for (const k of ['relL2', 'maxAbs', 'meanAbs'] as const)
    expect(Math.abs(got[k] - want[k]), `${what} ${k}`).toBeLessThanOrEqual(rel * Math.abs(want[k]));
};

/** One seed's tensors, their GPU comparisons and metrics.ts on them. */
async function oneSeed(seed: number, metric: 'relL2' | 'maxAbs'): Promise<void> {
  const rng = mulberry32(seed);
  const cfg = smallLlamaConfig({ numLayers: 2, vocabSize: 53, hiddenSize: 13 });
  const T = 5;
  const d = cfg.hiddenSize;
  const V = cfg.vocabSize;
  const f32 = (n: number, std = 1) => Float32Array.from(randn(rng, n, std));
  const near = (x: ArrayLike<number>, rel: number) =>
    Float32Array.from(x, (v) => v * (1 + rel * (2 * rng() - 1)));
  const exactLayers = [0, 1].map(() => Float64Array.from(randn(rng, T * d, 3)));
  const exactLogits = Float64Array.from(randn(rng, T * V, 5));
  const refLayers = exactLayers.map((x) => near(x, 1e-3));
  const fusedLayers = refLayers.map((x) => near(x, 1e-5));
  const ref = {
    dump: {
      T,
      d,
      V,
      embeddings: f32(T * d),
      layers: refLayers,
      finalNorm: f32(T * d),
      logits: near(exactLogits, 1e-6),
    },
    taps: new Map<string, Float32Array>(),
  };
  ref.taps.set('layers.0.out', refLayers[0]);
  ref.taps.set('layers.1.out', refLayers[1]);
  ref.taps.set('layers.0.gate', f32(T * cfg.intermediateSize));
  ref.taps.set('layers.0.swiglu', f32(T * cfg.intermediateSize));
  const fused = {
    dump: { ...ref.dump, layers: fusedLayers, logits: near(ref.dump.logits, 1e-5) },
    taps: new Map([['layers.0.gate', near(ref.taps.get('layers.0.gate') as Float32Array, 1e-4)]]),
  };
  const exactGate = Float64Array.from(
    ref.taps.get('layers.0.gate') as Float32Array,
    (v) => v * (1 + 1e-3 * (2 * rng() - 1)),
  );
  const locals = {
    fused: fusedLayers.map((x) => near(x, 1e-6)),
    ref: refLayers.map((x) => near(x, 1e-7)),
  };
  const exactLocal = exactLayers.map((x) => Float64Array.from(x, (v) => v * (1 + 1e-3 * (2 * rng() - 1))));
  // The determinism run: the fused dump again, each tensor changed in 0..3 drawn words (a bit flipped: -0 for 0, a
  // NaN's payload count as well) or not at all.
  const changed = (x: Float32Array) => {
    const y = x.slice();
    const bits = new Uint32Array(y.buffer);
    const n = rng() < 0.5 ? 0 : 1 + Math.floor(rng() * 3);
    for (let j = 0; j < n; j++) bits[Math.floor(rng() * bits.length)] ^= 1 << Math.floor(rng() * 32);
    return y;
  };
  const again = {
    T,
    d,
    V,
    embeddings: changed(fused.dump.embeddings),
    layers: fused.dump.layers.map(changed),
    finalNorm: changed(fused.dump.finalNorm),
    logits: changed(fused.dump.logits),
  };
  const made: GPUBuffer[] = [];
  const onGpu = (x: Float32Array) => {
    const buf = h.device.createBuffer({
      size: x.byteLength,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
    });
    h.device.queue.writeBuffer(buf, 0, x);
    made.push(buf);
    return { buf, floats: x.length };
  };
  const determinism = [
    { tensor: 'embeddings', a: fused.dump.embeddings, b: again.embeddings },
    ...fused.dump.layers.map((l, i) => ({ tensor: `layers.${i}`, a: l, b: onGpu(again.layers[i]) })),
    { tensor: 'final_norm', a: fused.dump.finalNorm, b: again.finalNorm },
    { tensor: 'logits', a: onGpu(fused.dump.logits), b: again.logits },
  ];
  const df = (v: Float64Array) => {
    const buffer = uploadDf(h.device, v);
    made.push(buffer);
    return { buffer, n: v.length };
  };
  const exact = {
    taps: new Map([
      ['layers.0.out', df(exactLayers[0])],
      ['layers.1.out', df(exactLayers[1])],
      ['logits', df(exactLogits)],
      ['layers.0.gate', df(exactGate)],
    ]),
    local: exactLocal.map(df),
  };
  try {
    const spec = { precision: 'fp32' as const, metric, k: 4 };
    const m = await familyMetrics({
      device: h.device,
      pipelines: h.pipelines,
      cfg,
      T,
      spec,
      ref,
      fused,
      locals,
      exact,
      determinism,
    });
    const tag = `seed ${seed}`;
    expect(m.determinism, tag).toEqual(sameBits(fused.dump, again));
    m.layers.forEach((l, i) => {
      close(l.floor, fullMetrics(refLayers[i], exactLayers[i], 'fp32'), `${tag} floor ${i}`, true);
      close(l.propagated, fullMetrics(fusedLayers[i], refLayers[i], 'fp32'), `${tag} propagated ${i}`);
      close(
        l.fusedVsOracle,
        fullMetrics(fusedLayers[i], exactLayers[i], 'fp32'),
        `${tag} fused vs exact ${i}`,
        true,
      );
      close(l.local, fullMetrics(locals.fused[i], refLayers[i], 'fp32'), `${tag} local ${i}`);
      close(l.localFloor, fullMetrics(locals.ref[i], exactLocal[i], 'fp32'), `${tag} local floor ${i}`, true);
      const perToken = perTokenRelL2(fusedLayers[i], refLayers[i], T, d);
      for (const [t, v] of l.perToken.entries())
        expect(Math.abs(v - perToken[t]), `${tag} token ${t}`).toBeLessThanOrEqual(1e-9 * perToken[t]);
    });
    close(m.logits.floor, fullMetrics(ref.dump.logits, exactLogits, 'fp32'), `${tag} logits floor`, true);
    close(m.logits.propagated, fullMetrics(fused.dump.logits, ref.dump.logits, 'fp32'), `${tag} logits`);
    const maxAbs = (x: Float64Array) => x.reduce((a, v) => Math.max(a, Math.abs(v)), 0);
    const scales = metric === 'maxAbs' ? exactLayers.map(maxAbs) : [0, 0];
    expect(m.layerScales).toHaveLength(2);
    for (const [i, s] of m.layerScales.entries())
      expect(Math.abs(s - scales[i]), `${tag} scale ${i}`).toBeLessThanOrEqual(1e-12 * scales[i]);
    const logitsScale = metric === 'maxAbs' ? maxAbs(exactLogits) : 0;
    expect(Math.abs(m.logitsScale - logitsScale), tag).toBeLessThanOrEqual(1e-12 * logitsScale);
    // The taps: the gate compared both ways; the swiglu fused away (the fused path keeps it), with no exact.
    const gate = m.taps.find((t) => t.name === 'layers.0.gate');
    const g = fused.taps.get('layers.0.gate') as Float32Array;
    const r = ref.taps.get('layers.0.gate') as Float32Array;
    expect(gate?.status).toBe('compared');
    close(gate?.vsReference as FullMetrics, fullMetrics(g, r, 'fp32'), `${tag} gate vs reference`);
    close(gate?.refVsOracle as FullMetrics, fullMetrics(r, exactGate, 'fp32'), `${tag} gate vs exact`, true);
    expect(gate?.op).toBe('gate_up');
    const swiglu = m.taps.find((t) => t.name === 'layers.0.swiglu');
    expect([swiglu?.status, swiglu?.vsReference, swiglu?.refVsOracle]).toEqual(['fused-away', null, null]);
  } finally {
    for (const b of made) b.destroy();
  }
}

describe('family metrics on the GPU', () => {
  it.each(['relL2', 'maxAbs'] as const)(
    'metric %s: every result is metrics.ts on its tensors',
    async (metric) => {
      const first = freshSeed();
      for (let round = 0; round < ROUNDS; round++) await oneSeed((first + round) >>> 0, metric);
    },
  );
});
