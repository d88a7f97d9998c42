// The cause search's products on the GPU oracle (why-gpu.ts, engine/oracle-products.ts) against the fp64 product on
// the CPU (causes/exact-op.ts): every operand variant of a linear op, random shapes off the tiles, outputs poisoned
// with NaN before the kernel writes them; and the search itself, names and residuals, the same either way.
//
// Bound: a double-float product errs by at most ~K × 2^-47 of Σ|x_k w_k| (+ |b|) (each df multiply-add ~2^-48
// relative, K of them; SwiftShader's fma is not fused, DF_FMA off); the fp64 product by K × 2^-53 of the same sum.
// The test allows (K + 2) × 2^-44, eight times that: a single f32 rounding (2^-24 relative) misses it by 10^6.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireGpu, type GpuContext } from '../gpu/device';
import { nodeGpu } from '../gpu/node';
import { PipelineCache } from '../gpu/pipelines';
import { PoisonPool } from '../gpu/poison-pool.testdata';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { mulberry32 } from '../numeric/random';
import { evalVariant, isOperandProduct, ProductCache, productOperands, widthOf } from './causes/exact-op';
import { explain, explainWith } from './causes/explain';
import { plantOp } from './causes/plant.testdata';
import { forgetProducts, heldProduct } from './causes/search-products';
import type { OpData, OpKind, Variant } from './causes/types';
import { gpuProducts } from './why-gpu';

/** The fp64 output of a variant on the CPU, whatever the GPU's products left held for the search. */
function fp64Of(d: OpData, v: Variant, cols: Int32Array | null): Float64Array {
  forgetProducts(...d.inputs, ...d.others.map((o) => o.data));
  return evalVariant(d, v, cols);
}

let gpu: GpuContext;
let kit: Parameters<typeof gpuProducts>[0];

beforeAll(async () => {
  gpu = await acquireGpu(nodeGpu());
  const { device } = gpu;
  kit = {
    device,
    pipelines: new PipelineCache(device, nodeShaderSource()),
    pool: new PoisonPool(device),
    dfFma: false,
    maxBindingBytes: device.limits.maxStorageBufferBindingSize,
  };
});
afterAll(() => gpu?.device.destroy());

/** Every operand variant the search tries at a linear op of this data (those that apply to its shape). */
function variantsOf(d: OpData, rng: () => number): Variant[] {
  const T = d.tokens.length;
  const K = d.inputs[0].length / T;
  const out: Variant[] = [
    { inputFormat: 'bf16' },
    { inputFormat: 'fp16' },
    { weightFormat: 'bf16' },
    { weightFormat: 'fp16' },
    { inputFormat: 'tf32', weightFormat: 'tf32' },
    { inputFormat: 'bf16', weightFormat: 'bf16', biasFormat: 'bf16' },
    { inputFormat: 'fp16', bias: 0 },
    { weightFormat: 'bf16', bias: 2 },
    { inputShift: 1 + Math.floor(rng() * 3) },
    { inputShift: -1 - Math.floor(rng() * 3) },
  ];
  if (widthOf(d) === K) out.push({ transposed: true });
  const other = d.others.find((o) => o.data.length === d.inputs[0].length);
  if (other) out.push({ input: other.data });
  return out;
}

describe('products on the GPU oracle', () => {
  it('equal the fp64 product of every operand variant of every linear op and fused MLP group, on any columns', async () => {
    // A fused group's output is its product under the variant, then GELU (|GELU'| < 1.13) or the residual sum (the
    // other terms exact): the product's bound, times 1.13, holds for it too.
    const ops: OpKind[] = ['qkv', 'dense', 'fc1', 'fc2', 'lm_head', 'mlp_up', 'mlp_residual'];
    for (let j = 0; j < 14; j++) {
      const seed = freshSeed();
      const rng = mulberry32(seed);
      const d = plantOp(seed, ops[j % ops.length], () => ({}));
      const T = d.tokens.length;
      const N = widthOf(d);
      const cache = new ProductCache();
      const requests = variantsOf(d, rng).map((v) => {
        const cols =
          rng() < 0.3
            ? null
            : Int32Array.from({ length: 1 + Math.floor(rng() * N) }, () => Math.floor(rng() * N));
        return { v, cols };
      });
      for (const r of requests) expect(isOperandProduct(d, r.v), JSON.stringify(r.v)).toBe(true);
      await gpuProducts(kit, d, cache)(requests);
      const msgOf = (v: Variant) =>
        `seed ${seed} ${d.op} ${JSON.stringify({ ...v, input: v.input ? 'other' : undefined })}`;
      // A linear op's output is the GPU's product itself; a fused group's is computed from the product held for it
      // (every one taken before the fp64 products below forget them).
      const gots = requests.map(({ v, cols }) => {
        if (!['mlp_up', 'mlp_residual'].includes(d.op)) expect(cache.get(v, cols), msgOf(v)).toBeDefined();
        else expect(heldProduct(d, v, v.input ?? d.inputs[0], N, cols), msgOf(v)).not.toBeNull();
        return cache.get(v, cols) ?? evalVariant(d, v, cols, cache);
      });
      for (const [q, { v, cols }] of requests.entries()) {
        const msg = msgOf(v);
        const got = gots[q];
        const want = fp64Of(d, v, cols);
        const { K, x, row, bias } = productOperands(d, v);
        const w = new Float64Array(K);
        const picked = cols ?? Int32Array.from({ length: N }, (_, i) => i);
        picked.forEach((n, c) => {
          row(n, N, w);
          for (let t = 0; t < T; t++) {
            let mag = Math.abs(bias(n));
            for (let k = 0; k < K; k++) mag += Math.abs(x[t * K + k] * w[k]);
            const i = t * picked.length + c;
            const err = Math.abs(got![i] - want[i]);
            const bound = 1.13 * (K + 2) * 2 ** -44 * mag + 2 ** -50 * Math.abs(want[i]);
            if (!(err <= bound))
              expect.fail(`${msg}: [${t}, ${n}] GPU ${got![i]} vs fp64 ${want[i]} (bound ${bound})`);
          }
        });
      }
    }
  });

  it('the search names the same causes, with the same residuals, as with the fp64 products', async () => {
    const plants: [OpKind, Variant][] = [
      ['fc1', { outFormat: 'bf16' }],
      ['qkv', { inputFormat: 'bf16' }],
      ['dense', { transposed: true }],
      ['fc2', { weightFormat: 'fp16' }],
      ['fc1', { inputFormat: 'tf32', weightFormat: 'tf32' }],
      ['qkv', { bias: 2 }],
      ['dense', { inputShift: 2 }],
      ['lm_head', { inputFormat: 'fp16', weightFormat: 'fp16', outFormat: 'fp16' }],
      // The fused groups: the teaching fault (ReLU in GELU's place), an operand and an output variant.
      ['mlp_up', { act: 'relu' }],
      ['mlp_up', { inputFormat: 'bf16' }],
      ['mlp_up', { outFormat: 'bf16' }],
      ['mlp_residual', { weightFormat: 'fp16' }],
      ['mlp_residual', { bias: 0 }],
    ];
    for (const [op, variant] of plants) {
      const seed = freshSeed();
      const d = plantOp(seed, op, () => variant);
      const cpu = explain(d);
      const cache = new ProductCache();
      let asked = 0;
      const run = gpuProducts(kit, d, cache);
      // The exact product held first, as the two-path why's checks hold it (why-paths.ts).
      await run([{ v: {}, cols: null }]);
      const onGpu = await explainWith(d, cache, async (requests) => {
        asked += requests.length;
        await run(requests);
      });
      const msg = `seed ${seed} ${op} ${JSON.stringify(variant)}: GPU "${onGpu.words}" / CPU "${cpu.words}"`;
      expect(asked, msg).toBeGreaterThan(0);
      expect(
        onGpu.named.map((c) => c.id),
        msg,
      ).toEqual(cpu.named.map((c) => c.id));
      expect(onGpu.named.length, msg).toBeGreaterThan(0);
      // Every cause tested, the same residual to well within a floor (the outputs agree to ~1e-12 relative).
      const byId = new Map(cpu.tested.map((c) => [c.id, c.residual]));
      for (const c of onGpu.tested) {
        const r = byId.get(c.id)!;
        expect(Math.abs(c.residual - r), `${msg}: ${c.id}`).toBeLessThanOrEqual(1e-6 * Math.max(1, r));
      }
    }
  });
});
