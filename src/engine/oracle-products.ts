// Plain products on the GPU oracle: y = x W^T + b exactly in double-float (the oracle's own linear kernel) on
// operands given as values — what a cause's variant of a linear op reads (its input rounded or shifted or another
// tensor, its weights rounded or transposed, its bias scaled or rounded: compare/causes/exact-op.ts
// productOperands) or the model's own weights on the GPU (the exact product of an op on a path's recorded input: the
// two-path why's checks). Many products, one submit, one readback (compare/why-gpu.ts asks for a search's worth).
import type { PipelineCache } from '../gpu/pipelines';
import type { BufferPool } from '../gpu/pool';
import { recordReadbackPacked } from '../gpu/readback';
import { dfGelu } from '../kernels/oracle/gelu';
import { dfLinear } from '../kernels/oracle/linear';
import { dfPromote } from '../kernels/oracle/promote';
import { fromDfPairs } from '../numeric/double-float';
import type { GpuLinear } from './gpu-model';
import { DF_BYTES, OracleError, Recording } from './oracle-df';

export interface Product {
  /** Index into the inputs: x [T, K], f32 values (K: the input's length over T). */
  x: number;
  /** W [N, K], f32 values. */
  w: Float32Array;
  /** b [N] f32 values, or null (no bias). */
  b: Float32Array | null;
}

/** A product on the model's own weights as they lie on the GPU (f32, or packed f16 with `f16`). */
export interface ModelProduct {
  x: number;
  linear: GpuLinear;
  /** N, the weight's rows. */
  n: number;
  f16: boolean;
}

/** The exact GELU (df) of an earlier product's output, by its index: a fused dense_h_to_4h + GELU's exact output. */
export interface GeluOf {
  gelu: number;
}

export interface ProductsKit {
  device: GPUDevice;
  pipelines: PipelineCache;
  pool: BufferPool;
  dfFma: boolean;
  maxBindingBytes: number;
}

/** Each product's output [T, N] in fp64 (hi + lo of its df result), in the products' order. */
export async function oracleProducts(
  kit: ProductsKit,
  T: number,
  inputs: (Float32Array | { gpu: GPUBuffer; n: number })[],
  products: (Product | ModelProduct | GeluOf)[],
  dummy: GPUBuffer | null = null,
): Promise<Float64Array[]> {
  if (products.length === 0) return [];
  const { device } = kit;
  const rec = new Recording(device, kit.pipelines, kit.pool, kit.maxBindingBytes);
  try {
    const lengths = inputs.map((x) => (x instanceof Float32Array ? x.length : x.n));
    for (const n of lengths)
      if (n === 0 || n % T !== 0)
        throw new OracleError(`oracle products: an input holds ${n} values, not ${T} rows`);
    // f32 values (uploaded, or a buffer already on the GPU: a tap) promoted to df pairs (a zero low part) there.
    const xs = inputs.map((x, i) => {
      const df = rec.df(lengths[i], `product.x${i}`);
      const f32 = x instanceof Float32Array ? rec.upload(x, `product.x${i}.f32`) : x.gpu;
      rec.program.add(dfPromote(`product.promote${i}`, { x: f32, out: df }, lengths[i]));
      return df;
    });
    const none = dummy ?? rec.upload(new Float32Array(4), 'product.dummy');
    const outs: { y: GPUBuffer; n: number }[] = [];
    const uploads = new Map<Float32Array, GPUBuffer>();
    const uploaded = (a: Float32Array, label: string) => {
      let buf = uploads.get(a);
      if (!buf) uploads.set(a, (buf = rec.upload(a, label)));
      return buf;
    };
    const record = (p: Product | ModelProduct | GeluOf, i: number): { y: GPUBuffer; n: number } => {
      if ('gelu' in p) {
        const src = outs[p.gelu];
        if (!src) throw new OracleError(`oracle products: product ${i} takes the GELU of no earlier product`);
        const out = rec.df(src.n, `product.y${i}`);
        const constants = { DF_FMA: kit.dfFma };
        rec.program.add(dfGelu(`product.${i}.gelu`, { x: src.y, y: out }, src.n, { constants }));
        return { y: out, n: src.n };
      }
      if (!xs[p.x]) throw new OracleError(`oracle products: product ${i} reads no input ${p.x}`);
      const K = lengths[p.x] / T;
      if ('linear' in p) {
        const constants = { DF_FMA: kit.dfFma, W_F16: p.f16 };
        const out = rec.df(T * p.n, `product.y${i}`);
        const buf = { x: xs[p.x], w: p.linear.weight, b: p.linear.bias, y: out, dummy: none };
        rec.program.add(dfLinear(`product.${i}`, buf, T, p.n, K, { constants }));
        return { y: out, n: T * p.n };
      }
      const N = p.w.length / K;
      if (!Number.isInteger(N) || N < 1 || (p.b && p.b.length !== N))
        throw new OracleError(`oracle products: product ${i} has ${p.w.length} weights for K = ${K}`);
      if (p.w.byteLength > kit.maxBindingBytes)
        throw new OracleError(`oracle products: product ${i}'s weights need more than one storage binding`);
      const out = rec.df(T * N, `product.y${i}`);
      // (weights or a bias that several products share are uploaded once)
      const w = uploaded(p.w, `product.w${i}`);
      const b = p.b ? uploaded(p.b, `product.b${i}`) : null;
      const constants = { DF_FMA: kit.dfFma, W_F16: false };
      rec.program.add(
        dfLinear(`product.${i}`, { x: xs[p.x], w, b, y: out, dummy: none }, T, N, K, { constants }),
      );
      return { y: out, n: T * N };
    };
    for (const [i, p] of products.entries()) outs.push(record(p, i));
    const encoder = device.createCommandEncoder({ label: 'oracle-products' });
    rec.program.encode(encoder);
    const finish = recordReadbackPacked(
      device,
      encoder,
      outs.map((o) => ({ src: o.y, bytes: o.n * DF_BYTES })),
    );
    device.queue.submit([encoder.finish()]);
    const got = await finish();
    return got.map((pairs, i) => fromDfPairs(pairs, outs[i].n));
  } finally {
    rec.release();
  }
}
