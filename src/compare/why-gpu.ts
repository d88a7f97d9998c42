// The cause search's products on the GPU oracle: the operand variants of a linear op (the input rounded, shifted or
// another tensor; the weights rounded or transposed; the bias scaled or rounded) read on the CPU exactly as the fp64
// product reads them (causes/exact-op.ts productOperands), multiplied in double-float by the oracle's own linear
// kernel (engine/oracle-products.ts), a search's step in one submit. What it cannot take (a bias that is no f32
// value, weights past one binding) is left to the fp64 product on the CPU.
import { oracleProducts, type Product, type ProductsKit } from '../engine/oracle-products';
import { type ProductCache, productOperands, widthOf } from './causes/exact-op';
import type { ProductRequest } from './causes/explain';
import type { OpData } from './causes/types';

/** Fills `cache` with the outputs of the requested products, computed on the GPU oracle; says how long the GPU's part
 * took (upload, multiply, read back), in ms. */
export function gpuProducts(kit: ProductsKit, d: OpData, cache: ProductCache) {
  return async (requests: ProductRequest[]): Promise<number> => {
    const T = d.tokens.length;
    const N = widthOf(d);
    const inputs: Float32Array[] = [];
    const inputOf = new Map<ArrayLike<number>, number>();
    const products: Product[] = [];
    const asked: ProductRequest[] = [];
    let K = 0;
    for (const r of requests) {
      if (cache.has(r.v, r.cols)) continue;
      const ops = productOperands(d, r.v);
      K = ops.K;
      const cols = r.cols ?? Int32Array.from({ length: N }, (_, i) => i);
      if (cols.length * K * 4 > kit.maxBindingBytes) continue;
      const w = new Float32Array(cols.length * K);
      const b = new Float32Array(cols.length);
      const row = new Float64Array(K);
      let exact = true;
      cols.forEach((n, j) => {
        ops.row(n, N, row);
        w.set(row, j * K);
        const bias = ops.bias(n);
        b[j] = bias;
        exact &&= b[j] === bias || Number.isNaN(bias);
      });
      // Rounded or read another way, weights stay f32 values; a bias that is not one is left to the CPU.
      if (!exact) continue;
      let x = inputOf.get(ops.x);
      if (x === undefined) {
        x = inputs.push(Float32Array.from(ops.x)) - 1;
        inputOf.set(ops.x, x);
      }
      products.push({ x, w, b: d.weights.linear?.bias ? b : null });
      asked.push(r);
    }
    const g0 = performance.now();
    const outs = await oracleProducts(kit, T, K, inputs, products);
    const gpuMs = performance.now() - g0;
    asked.forEach((r, i) => {
      cache.set(r.v, r.cols, outs[i]);
    });
    return gpuMs;
  };
}
