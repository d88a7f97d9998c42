// The cause search's products on the GPU oracle: the operand variants of a product (the input rounded, shifted or
// another tensor; the weights rounded or transposed; the bias scaled or rounded) read on the CPU exactly as the fp64
// product reads them (causes/exact-op.ts productOperands), multiplied in double-float by the oracle's own linear
// kernel (engine/oracle-products.ts), a search's step in one submit; and the exact product of an op on a path's own
// recorded input, on the model's weights where they lie (the two-path why's checks: why-paths.ts). Each product is
// held for the search (causes/search-products.ts), so whatever the op does after it (a fused group's activation or
// residual sum, the attention core) runs on it. What the GPU cannot take (a bias that is no f32 value, weights past
// one binding) is left to the fp64 product on the CPU.
import type { GpuModel } from '../engine/gpu-model';
import {
  type GeluOf,
  type ModelProduct,
  oracleProducts,
  type Product,
  type ProductsKit,
} from '../engine/oracle-products';
import { type ProductCache, productOperands, widthOf } from './causes/exact-op';
import type { ProductRequest } from './causes/explain';
import { holdProduct } from './causes/search-products';
import { LINEAR_OPS, type OpData, type OpKind } from './causes/types';

/** The ops whose search asks the GPU oracle for its products: a linear op, or a fused group around one product
 * (the attention core of `attn_block` is searched in fp64 on the CPU, its QKV projection held from its check). */
export const GPU_SEARCH_OPS: readonly OpKind[] = [...LINEAR_OPS, 'mlp_up', 'mlp_residual'];

/** Fills `cache` with the outputs of the requested products, computed on the GPU oracle; says how long the GPU's part
 * took (upload, multiply, read back), in ms. */
export function gpuProducts(kit: ProductsKit, d: OpData, cache: ProductCache) {
  // (each input the variants read, as f32 values, kept for the search's later steps)
  const f32Of = new Map<ArrayLike<number>, Float32Array>();
  const weightsOf = new Map<
    string,
    Map<Int32Array | null, { w: Float32Array; b: Float32Array; exact: boolean }>
  >();
  return async (requests: ProductRequest[]): Promise<number> => {
    const T = d.tokens.length;
    const N = widthOf(d);
    const inputs: Float32Array[] = [];
    const inputOf = new Map<ArrayLike<number>, number>();
    const products: Product[] = [];
    const asked: ProductRequest[] = [];
    for (const r of requests) {
      if (cache.has(r.v, r.cols)) continue;
      const ops = productOperands(d, r.v);
      const K = ops.K;
      const cols = r.cols ?? Int32Array.from({ length: N }, (_, i) => i);
      if (cols.length * K * 4 > kit.maxBindingBytes) continue;
      // (the weights and bias as the variant reads them, shared by every variant that reads them alike)
      const key = [r.v.weightFormat, r.v.transposed, r.v.bias, r.v.biasFormat, K].join('|');
      let byCols = weightsOf.get(key);
      if (!byCols) weightsOf.set(key, (byCols = new Map()));
      let wb = byCols.get(r.cols);
      if (!wb) {
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
        wb = { w, b, exact };
        byCols.set(r.cols, wb);
      }
      const { w, b } = wb;
      // Rounded or read another way, weights stay f32 values; a bias that is not one is left to the CPU.
      if (!wb.exact) continue;
      let x = inputOf.get(ops.x);
      if (x === undefined) {
        let f32 = f32Of.get(ops.x);
        if (!f32) {
          f32 = Float32Array.from(ops.x);
          f32Of.set(ops.x, f32);
        }
        x = inputs.push(f32) - 1;
        inputOf.set(ops.x, x);
      }
      products.push({ x, w, b: d.weights.linear?.bias ? b : null });
      asked.push(r);
    }
    const g0 = performance.now();
    const outs = await oracleProducts(kit, T, inputs, products);
    const gpuMs = performance.now() - g0;
    const linear = LINEAR_OPS.includes(d.op);
    asked.forEach((r, i) => {
      // (held under the input the product reads: exact-op's product finds it there, under any op that holds it)
      holdProduct(d, r.v, r.v.input ?? d.inputs[0], N, r.cols, outs[i]);
      // A linear op's output is its product; a fused group's is computed from the held product when it is scored
      // (its activation or residual sum over the sample: most candidates asked for the final sample never are).
      if (linear) cache.set(r.v, r.cols, outs[i]);
    });
    return gpuMs;
  };
}

/** The model's weights of the product an op holds (a fused group's: its QKV projection, dense_h_to_4h or
 * dense_4h_to_h), with its output width; null for an op without one. */
function productOf(model: GpuModel, op: OpKind, layer: number | null) {
  if (layer === null) return null;
  const l = model.layers[layer];
  const d = model.cfg.hiddenSize;
  if (op === 'qkv' || op === 'attn_block') return { linear: l.attention.qkv, n: 3 * d };
  if (op === 'dense') return { linear: l.attention.dense, n: d };
  if (op === 'fc1' || op === 'mlp_up') return { linear: l.mlp.denseHTo4h, n: model.cfg.intermediateSize };
  if (op === 'fc2' || op === 'mlp_residual') return { linear: l.mlp.dense4hToH, n: d };
  return null;
}

/** Whether the op holds a product the GPU oracle multiplies from the model's weights (exactProducts). */
export const holdsProduct = (model: GpuModel, op: OpKind, layer: number | null) =>
  productOf(model, op, layer) !== null;

/** An op's input for its exact product: its recorded tensor on the CPU, or the tap that holds it on the GPU. */
export interface ExactInput {
  op: OpKind;
  layer: number | null;
  /** null: not to be multiplied here (a tap split in column pieces). */
  x: Float32Array | { gpu: GPUBuffer; n: number } | null;
}

/** An exact product: every column of it, and the op's whole exact output where that is the product or its GELU. */
export interface ExactProduct {
  product: Float64Array;
  n: number;
  exact: Float64Array | null;
}

/**
 * The exact product (every column) of each op that holds one, on its own recorded input, multiplied on the GPU
 * oracle from the model's weights in one submit, made at the call (the promise is its readback): the op's exact
 * output then costs the CPU only what follows its product. A linear op's exact output is its product; dense_h_to_4h +
 * GELU's is its GELU, in double-float there too (in fp64 on the CPU it costs more than the product). Null for an op
 * without a product (or whose weights pass one binding).
 */
export function exactProducts(
  kit: ProductsKit,
  model: GpuModel,
  T: number,
  items: ExactInput[],
): Promise<(ExactProduct | null)[]> {
  const inputs: (Float32Array | { gpu: GPUBuffer; n: number })[] = [];
  const inputOf = new Map<object, number>();
  const products: (ModelProduct | GeluOf)[] = [];
  const at = items.map(({ op, layer, x: x0 }) => {
    const p = productOf(model, op, layer);
    if (!p || !x0 || p.linear.weight.size > kit.maxBindingBytes) return null;
    const key = x0 instanceof Float32Array ? x0 : x0.gpu;
    let x = inputOf.get(key);
    if (x === undefined) {
      x = inputs.push(x0) - 1;
      inputOf.set(key, x);
    }
    const product = products.push({ x, linear: p.linear, n: p.n, f16: model.weightsF16 }) - 1;
    const exact = LINEAR_OPS.includes(op)
      ? product
      : op === 'mlp_up'
        ? products.push({ gelu: product }) - 1
        : null;
    return { product, exact, n: p.n };
  });
  const run = oracleProducts(kit, T, inputs, products, model.dummy);
  return run.then((outs) =>
    at.map((a) =>
      a ? { product: outs[a.product], n: a.n, exact: a.exact === null ? null : outs[a.exact] } : null,
    ),
  );
}

/** Holds an op's exact product for exact-op.ts's product (under its recorded input). */
export function holdExact(d: OpData, got: ExactProduct): void {
  holdProduct(d, {}, d.inputs[0], got.n, null, got.product);
}
