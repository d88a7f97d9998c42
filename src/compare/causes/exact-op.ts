// The exact op with a variant as parameters (types.ts Variant): one descriptor per op kind, built on the fp64 oracle's
// own functions (src/kernels/cpu/), so the model's form and every miswritten form are the same code. Outputs are
// [T, cols] for the output columns asked for (all when `cols` is null): a large op is scored on a sample.
import { gelu } from '../../kernels/cpu/gelu';
import { layerNormF64 } from '../../kernels/cpu/layernorm';
import { roundF32ToF16, roundTo } from '../../numeric/round';
import { gather, mapAll, round } from './arrays';
import { attention } from './exact-attention';
import { type ActFn, LINEAR_OPS, type OpData, type Variant } from './types';

const CORE_KEYS: readonly (keyof Variant)[] = [
  'inputFormat',
  'weightFormat',
  'bias',
  'biasFormat',
  'transposed',
  'inputShift',
  'input',
  'acc',
  'eps',
  'norm',
  'act',
  'scores',
  'rotary',
  'rotaryBase',
  'rotaryNdims',
  'probsFormat',
  'noRescale',
  'coefs',
  'replace',
];

const onlyBias = (v: Variant) =>
  v.bias !== undefined && CORE_KEYS.every((k) => k === 'bias' || v[k] === undefined);

/** Output columns of the op (the width of its recorded output). */
export function widthOf(d: OpData): number {
  return d.recorded.length / d.tokens.length;
}

/** Whether the variant changes the computation (else it only transforms the exact output). */
export function changesCore(v: Variant): boolean {
  return CORE_KEYS.some((k) => v[k] !== undefined);
}

function actOf(fn: ActFn): (x: number) => number {
  switch (fn) {
    case 'gelu':
      return gelu;
    case 'gelu-tanh':
      return (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));
    case 'gelu-sigmoid':
      return (x) => x / (1 + Math.exp(-1.702 * x));
    case 'relu':
      return (x) => (x > 0 ? x : 0);
    case 'silu':
      return (x) => x / (1 + Math.exp(-x));
  }
}

/** One output of a product with an fp16 accumulator, as the GEMM core emulates it (see Variant.acc). */
function accumulateF16(
  x: Float64Array,
  xo: number,
  w: Float64Array,
  K: number,
  chunk: number,
  fused: boolean,
) {
  const f = Math.fround;
  let total = 0;
  for (let k0 = 0; k0 < K; k0 += chunk) {
    let s = 0;
    const k1 = Math.min(K, k0 + chunk);
    if (fused) for (let k = k0; k < k1; k++) s = roundF32ToF16(s + x[xo + k] * w[k]);
    else for (let k = k0; k < k1; k++) s = roundF32ToF16(s + f(x[xo + k] * w[k]));
    total = k0 === 0 ? s : roundF32ToF16(total + s);
  }
  return total;
}

/** y[t, c] = sum_k x[t, k] W[n_c, k] (+ bias), with the variant's input, weight, shift and accumulator. */
function linear(
  d: OpData,
  v: Variant,
  cols: Int32Array | null,
  x0: ArrayLike<number> = v.input ?? d.inputs[0],
  N: number = widthOf(d),
): Float64Array {
  const T = d.tokens.length;
  const K = x0.length / T;
  const W = d.weights.lmHead ?? d.weights.linear!.weight.data;
  const b = d.weights.linear?.bias?.data ?? null;
  const x = new Float64Array(round(v.inputFormat, x0));
  if (v.inputShift) {
    const s = v.inputShift;
    const src = Float64Array.from(x);
    for (let t = 0; t < T; t++)
      for (let k = 0; k < K; k++) x[t * K + k] = k + s >= 0 && k + s < K ? src[t * K + k + s] : 0;
  }
  const picked = cols ?? Int32Array.from({ length: N }, (_, i) => i);
  const out = new Float64Array(T * picked.length);
  const w = new Float64Array(K);
  const acc = v.acc;
  for (let j = 0; j < picked.length; j++) {
    const n = picked[j];
    for (let k = 0; k < K; k++) w[k] = v.transposed ? W[k * N + n] : W[n * K + k];
    if (v.weightFormat) for (let k = 0; k < K; k++) w[k] = roundTo(v.weightFormat, w[k]);
    const bias = b ? (v.biasFormat ? roundTo(v.biasFormat, b[n]) : b[n]) * (v.bias ?? 1) : 0;
    for (let t = 0; t < T; t++) {
      let s = 0;
      const xo = t * K;
      if (acc) s = accumulateF16(x, xo, w, K, acc.chunk, acc.fused);
      else for (let k = 0; k < K; k++) s += x[xo + k] * w[k];
      out[t * picked.length + j] = acc ? Math.fround(s + bias) : s + bias;
    }
  }
  return out;
}

function norm(d: OpData, v: Variant): Float64Array {
  const T = d.tokens.length;
  const n = d.weights.norm!;
  const width = widthOf(d);
  return layerNormF64(
    round(v.inputFormat, v.input ?? d.inputs[0]),
    T,
    width,
    n.weight.data,
    n.bias.data,
    v.eps ?? d.cfg.layerNormEps,
    v.norm,
  );
}

/** The sum of the terms (`first` in place of the first), with the variant's coefficients and replaced term. */
function residual(
  inputs: ArrayLike<number>[],
  v: Variant,
  first: ArrayLike<number> = inputs[0],
): Float64Array {
  const terms: ArrayLike<number>[] = inputs.map((x, j) =>
    v.replace?.term === j ? v.replace.data : j === 0 ? first : x,
  );
  const coefs = v.coefs ?? terms.map(() => 1);
  const out = new Float64Array(first.length);
  // HF's order, as the oracle sums (run-checks-cpu.ts): the sum is exact in fp64 far below any f32 floor.
  for (let i = 0; i < out.length; i++) {
    let s = 0;
    for (let j = terms.length - 1; j >= 0; j--) s += coefs[j] * terms[j][i];
    out[i] = s;
  }
  return out;
}

/** The core computation under the variant, [T, cols] (the exact op itself for an empty variant). */
export function core(d: OpData, v: Variant, cols: Int32Array | null): Float64Array {
  const T = d.tokens.length;
  const width = widthOf(d);
  switch (d.op) {
    case 'qkv':
    case 'dense':
    case 'fc1':
    case 'fc2':
    case 'lm_head':
      return linear(d, v, cols);
    case 'ln1':
    case 'ln2':
    case 'final_norm':
      return gather(norm(d, v), T, width, cols);
    case 'act': {
      const f = actOf(v.act ?? 'gelu');
      return gather(mapAll(round(v.inputFormat, v.input ?? d.inputs[0]), f), T, width, cols);
    }
    case 'attention':
      return attention(d, v, cols);
    case 'residual':
      return gather(residual(d.inputs, v), T, width, cols);
    case 'embed':
    case 'layer':
      return gather(d.exact, T, width, cols);
    // Fused groups, checked whole where the fused path writes no tap between their ops.
    case 'attn_block': {
      // The QKV projection (its product variants) then the attention core (its variants), on the heads asked for.
      const hd = d.cfg.headDim;
      const heads = cols ? [...new Set(Array.from(cols, (c) => Math.floor(c / hd)))] : null;
      const qkvCols = heads
        ? Int32Array.from(heads.flatMap((h) => Array.from({ length: 3 * hd }, (_, e) => h * 3 * hd + e)))
        : null;
      const N = 3 * d.cfg.hiddenSize;
      const part = linear(d, v, qkvCols, undefined, N);
      const qkv = qkvCols ? new Float64Array(T * N) : part;
      if (qkvCols)
        for (let t = 0; t < T; t++)
          for (let j = 0; j < qkvCols.length; j++) qkv[t * N + qkvCols[j]] = part[t * qkvCols.length + j];
      return attention(d, { ...v, input: undefined }, cols, qkv);
    }
    case 'mlp_up': {
      const f = actOf(v.act ?? 'gelu');
      return mapAll(linear(d, v, cols, undefined, width), f);
    }
    case 'mlp_residual': {
      // fc2's product (its variants, bias included) on the asked columns, then the residual sum (its variants).
      const mlp = linear(d, v, cols, v.input ?? d.inputs[0], width);
      const terms = d.inputs.map((x, j) => (j === 0 ? mlp : gather(x, T, width, cols)));
      const replace = v.replace ? { ...v.replace, data: gather(v.replace.data, T, width, cols) } : undefined;
      return residual(terms, { ...v, replace }, mlp);
    }
  }
}

/** The output transforms of a variant on a full [T, width] output. */
function transform(a: Float64Array, T: number, width: number, v: Variant): Float64Array {
  let out = a;
  if (v.rowShift) {
    const { shift, from } = v.rowShift;
    out = Float64Array.from(a);
    for (let t = from; t < T; t++) {
      const src = t - shift;
      for (let c = 0; c < width; c++) out[t * width + c] = src >= 0 && src < T ? a[src * width + c] : 0;
    }
  }
  if (v.elemShift) {
    const s = v.elemShift;
    const src = out;
    out = new Float64Array(src.length);
    for (let i = 0; i < out.length; i++) out[i] = i - s >= 0 && i - s < src.length ? src[i - s] : 0;
  }
  if (v.broadcastRow !== undefined) {
    const r = v.broadcastRow;
    const row = out.slice(r * width, (r + 1) * width);
    out = new Float64Array(out.length);
    for (let t = 0; t < T; t++) out.set(row, t * width);
  }
  if (v.headPerm) {
    const hd = width / v.headPerm.length;
    const src = out;
    out = new Float64Array(src.length);
    for (let t = 0; t < T; t++)
      v.headPerm.forEach((from, h) => {
        out.set(src.subarray(t * width + from * hd, t * width + (from + 1) * hd), t * width + h * hd);
      });
  }
  if (v.dropout) {
    const { p, dropped } = v.dropout;
    out = out === a ? Float64Array.from(a) : out;
    for (let i = 0; i < out.length; i++) out[i] = dropped[i] ? 0 : out[i] / (1 - p);
  }
  return out;
}

/** The variant's output on the columns `cols` ([T, cols]), before any rounding of the output (the scorer's). */
export function evalVariant(d: OpData, v: Variant, cols: Int32Array | null): Float64Array {
  const T = d.tokens.length;
  const width = widthOf(d);
  const hasTransform =
    v.rowShift !== undefined ||
    v.elemShift !== undefined ||
    v.broadcastRow !== undefined ||
    v.headPerm !== undefined ||
    v.dropout !== undefined;
  if (!hasTransform) {
    if (onlyBias(v) && d.weights.linear?.bias && LINEAR_OPS.includes(d.op)) {
      // The exact output plus (m - 1) × bias: no product to redo.
      const out = gather(d.exact, T, width, cols);
      const b = d.weights.linear.bias.data;
      const m = (v.bias ?? 1) - 1;
      const n = cols ? cols.length : width;
      for (let t = 0; t < T; t++) for (let j = 0; j < n; j++) out[t * n + j] += m * b[cols ? cols[j] : j];
      return out;
    }
    return changesCore(v) ? core(d, v, cols) : gather(d.exact, T, width, cols);
  }
  const base = changesCore(v) ? core(d, v, null) : d.exact;
  return gather(transform(base, T, width, v), T, width, cols);
}
