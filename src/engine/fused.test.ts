// The fused path against the reference path and the fp64 oracle: whole forward in fp32 (relative L2 < 1e-5
// per layer), each fused kernel switched on alone (bisection), dispatch counts and one submit per forward,
// and the precision modes on both paths.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicMetrics } from '../compare/metrics';
import { nodeGpu } from '../gpu/node';
import { oracleForward } from '../kernels/cpu/forward';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { parseConfigText } from '../model/config';
import { type RandomModelSpec, randomModelFiles } from '../model/random-model';
import { loadWeights } from '../model/weights';
import { type Precision, roundStorageArray, storageUnitRoundoff } from '../numeric/precision';
import { mulberry32 } from '../numeric/random';
import { Engine } from './engine';
import { FUSED_KERNELS } from './fused-kernels';

let engine: Engine;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
});
afterAll(() => engine?.dispose());

const parallel: RandomModelSpec = {
  vocab: 300,
  d: 90,
  layers: 3,
  heads: 3,
  ff: 200,
  rotaryPct: 0.2,
  parallel: true,
};
const sequential: RandomModelSpec = {
  vocab: 257,
  d: 96,
  layers: 2,
  heads: 4,
  ff: 170,
  rotaryPct: 0.5,
  rotaryBase: 500,
  eps: 1e-6,
  parallel: false,
  keys: 'rope_parameters',
};

async function setup(spec: RandomModelSpec, seed: number) {
  const files = randomModelFiles(spec, seed);
  await engine.loadModel(files);
  const cfg = parseConfigText(files.config);
  return { cfg, w: loadWeights(cfg, files.weights) };
}

function tokensFor(seed: number, T: number, V: number) {
  const rng = mulberry32(seed ^ 0x2545f491);
  return Array.from({ length: T }, () => Math.floor(rng() * V));
}

describe('fused path', () => {
  it.each([
    ['parallel', parallel],
    ['sequential', sequential],
  ])('%s residual: fused fp32 matches the reference path and the oracle per layer', async (_n, spec) => {
    const seed = freshSeed();
    const { cfg, w } = await setup(spec, seed);
    for (const T of [1, 24, 77]) {
      const tokens = tokensFor(seed, T, spec.vocab);
      const ref = await engine.forward(tokens, { path: 'reference' });
      const fused = await engine.forward(tokens, { path: 'fused' });
      const exact = oracleForward(cfg, w, tokens);
      fused.dump.layers.forEach((l, i) => {
        const vsRef = basicMetrics(l, ref.dump.layers[i]).relL2;
        const vsOracle = basicMetrics(l, exact.layers[i]).relL2;
        expect(vsRef, `layer ${i} T=${T} seed ${seed}`).toBeLessThan(1e-5);
        expect(vsOracle, `layer ${i} T=${T} seed ${seed}`).toBeLessThan(1e-5);
      });
      expect(basicMetrics(fused.dump.logits, exact.logits).relL2, `logits seed ${seed}`).toBeLessThan(1e-5);
    }
  });

  it.each(FUSED_KERNELS.map((k) => k.id))('%s alone matches the reference path', async (id) => {
    const seed = freshSeed();
    for (const spec of [parallel, sequential]) {
      await setup(spec, seed);
      const tokens = tokensFor(seed, 19, spec.vocab);
      const ref = await engine.forward(tokens, { path: 'reference', taps: 'all' });
      const one = await engine.forward(tokens, { path: new Set([id]), taps: 'all' });
      expect(basicMetrics(one.dump.logits, ref.dump.logits).relL2, `${id} seed ${seed}`).toBeLessThan(1e-5);
      // Taps the kernel fuses away are absent, everything else is present and close.
      const info = FUSED_KERNELS.find((k) => k.id === id)!;
      for (const [name, data] of ref.taps) {
        const short = name.replace(/^layers\.\d+\./, '');
        if (info.fusedAway.includes(short)) expect(one.taps.has(name), name).toBe(false);
        else
          expect(basicMetrics(one.taps.get(name)!, data).relL2, `${id}: ${name} seed ${seed}`).toBeLessThan(
            1e-5,
          );
      }
    }
  });

  it('dispatch counts: 6 per layer all fused (parallel), 7 (sequential); one submit per forward', async () => {
    const queue = engine.ctx.device.queue;
    const submit = queue.submit.bind(queue);
    let submits = 0;
    queue.submit = (bufs: Iterable<GPUCommandBuffer>) => {
      submits++;
      submit(bufs);
    };
    try {
      for (const [spec, perLayer, refPerLayer] of [
        [parallel, 6, 12],
        [sequential, 7, 13],
      ] as const) {
        await setup(spec, 1);
        submits = 0;
        const f = await engine.forward([1, 2, 3], { path: 'fused' });
        expect(f.dispatches).toBe(spec.layers * perLayer + 3); // + embed, final_norm, logits
        expect(submits).toBe(1);
        const r = await engine.forward([1, 2, 3], { path: 'reference' });
        expect(r.dispatches).toBe(spec.layers * refPerLayer + 3);
      }
    } finally {
      queue.submit = submit;
    }
  });

  it.each(['fp16', 'bf16'] as Precision[])(
    '%s storage on both paths: equal to the oracle with the same rounding',
    async (p) => {
      const seed = freshSeed();
      const { cfg, w } = await setup(parallel, seed);
      const tokens = tokensFor(seed, 24, parallel.vocab);
      // The oracle rounds every op output to the storage precision as the kernels' st() does; what is left is
      // fp32 arithmetic plus one-ulp flips of values that sit on a rounding boundary, which propagate: allow a
      // few storage ulps, far below the gap to fp32 (checked too).
      const rounded = oracleForward(cfg, w, tokens, undefined, { round: (a) => roundStorageArray(p, a) });
      const exact = oracleForward(cfg, w, tokens);
      const u = storageUnitRoundoff(p);
      for (const path of ['reference', 'fused'] as const) {
        const got = await engine.forward(tokens, { path, precision: p });
        got.dump.layers.forEach((l, i) => {
          const vsRounded = basicMetrics(l, rounded.layers[i]).relL2;
          const vsExact = basicMetrics(l, exact.layers[i]).relL2;
          expect(vsRounded, `${path} layer ${i} seed ${seed}`).toBeLessThan(4 * u);
          expect(vsExact, `${path} layer ${i} seed ${seed}: storage rounding must show`).toBeGreaterThan(
            u / 20,
          );
        });
        // Every stored value is representable in the storage precision.
        const last = got.dump.layers[got.dump.layers.length - 1];
        expect(Array.from(roundStorageArray(p, last))).toEqual(Array.from(last));
      }
    },
  );

  it('fp16 accumulation: larger error than fp16 storage alone, bounded', async () => {
    const seed = freshSeed();
    const { cfg, w } = await setup(parallel, seed);
    const tokens = tokensFor(seed, 24, parallel.vocab);
    const exact = oracleForward(cfg, w, tokens);
    for (const path of ['reference', 'fused'] as const) {
      const st = await engine.forward(tokens, { path, precision: 'fp16' });
      const acc = await engine.forward(tokens, { path, precision: 'fp16acc' });
      const eSt = basicMetrics(st.dump.logits, exact.logits).relL2;
      const eAcc = basicMetrics(acc.dump.logits, exact.logits).relL2;
      expect(eAcc, `${path} seed ${seed}: ${eAcc} vs ${eSt}`).toBeGreaterThan(eSt);
      // K ≤ 200 fp16 roundings of partial sums: ≲ sqrt(K)·2^-11 relative per GEMM, a few GEMMs deep.
      expect(eAcc, `${path} seed ${seed}`).toBeLessThan(0.1);
    }
  });

  it('local error: one layer run on a given input equals that layer of the whole forward', async () => {
    const seed = freshSeed();
    await setup(parallel, seed);
    const tokens = tokensFor(seed, 13, parallel.vocab);
    const whole = await engine.forward(tokens, { path: 'fused' });
    const one = await engine.forward(tokens, {
      path: 'fused',
      layers: { from: 2, to: 3, input: whole.dump.layers[1] },
    });
    expect(one.dump.layers).toHaveLength(1);
    expect(Array.from(one.dump.layers[0])).toEqual(Array.from(whole.dump.layers[2]));
  });
});
