// The exact op with a variant as parameters (types.ts Variant): one form per registry op kind (its `causes` slot),
// built on the fp64 oracle's own functions (src/kernels/cpu/), so the model's form and every miswritten form are the
// same code. Outputs are
// [T, cols] for the output columns asked for (all when `cols` is null): a large op is scored on a sample.
// (A little past 400 lines: every op kind's exact form and the operands its products read, kept in one place.)
import { layerNormF64 } from '../../kernels/cpu/layernorm';
import { linearF64 } from '../../kernels/cpu/linear';
import { type NumFormat, roundF32Into, roundTo } from '../../numeric/round';
import { fillSlotsOf, formOf } from '../../ops/slots';
import type { CheckOp, OpKind as RegistryOp } from '../../ops/types';
import { gather, mapAll, round } from './arrays';
import { actOf } from './exact-arith';
import { attention } from './exact-attention';
import { heldProduct } from './search-products';
import { ATTENTION_OPS, LINEAR_OPS, type OpData, type OpKind, stepOfOp, type Variant } from './types';
import { innerOf, rowsView, sliceRows } from './variant-rows';

export { innerOf, withRows } from './variant-rows';

/** The variant keys a plain product (a linear op) reads as operands: what the GPU oracle can run (why-gpu.ts). */
const OPERAND_KEYS: readonly (keyof Variant)[] = [
  'inputFormat',
  'weightFormat',
  'bias',
  'biasFormat',
  'transposed',
  'inputShift',
  'input',
];

/** The variant keys that change the computation (the rest transform the exact output afterwards). */
const CORE_KEYS: readonly (keyof Variant)[] = [
  ...OPERAND_KEYS,
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
  'termFormat',
  'sumFormat',
  'kvFormat',
  'kvFrom',
  'keysDropped',
  'keysMoved',
  'keysZeroed',
  'qkvFormat',
  'scoresFormat',
  'rotaryOff',
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

/** The input of a product as the variant reads it: rounded, then shifted along each row (kept for the op's search,
 * per input, format and shift: every candidate reads one of a few). */
const inputsRead = new WeakMap<OpData, Map<ArrayLike<number>, Map<string, Float64Array>>>();
function inputOf(d: OpData, x0: ArrayLike<number>, f: NumFormat | undefined, s: number): Float64Array {
  let byInput = inputsRead.get(d);
  if (!byInput) {
    byInput = new Map();
    inputsRead.set(d, byInput);
  }
  let byForm = byInput.get(x0);
  if (!byForm) {
    byForm = new Map();
    byInput.set(x0, byForm);
  }
  const key = `${f ?? ''}:${s}`;
  let x = byForm.get(key);
  if (x) return x;
  if (f && x0 instanceof Float32Array) {
    x = new Float64Array(x0.length);
    roundF32Into(f, x0, x);
  } else x = new Float64Array(round(f, x0));
  if (s) {
    const T = d.tokens.length;
    const K = x0.length / T;
    const src = Float64Array.from(x);
    // (element k of a row takes k + s where that is in the row, else 0: each row's run copied whole)
    const lo = Math.max(0, -s);
    const hi = Math.min(K, K - s);
    x.fill(0);
    if (hi > lo) for (let t = 0; t < T; t++) x.set(src.subarray(t * K + lo + s, t * K + hi + s), t * K + lo);
  }
  byForm.set(key, x);
  return x;
}

/**
 * A product's operands as the variant reads them — the input (rounded, shifted, or another tensor), weight row n
 * (rounded, or read transposed) and its bias (scaled, rounded): what the fp64 product here and the GPU oracle's
 * double-float product (compare/why-gpu.ts) both multiply.
 */
export function productOperands(d: OpData, v: Variant, x0: ArrayLike<number> = v.input ?? d.inputs[0]) {
  const T = d.tokens.length;
  const K = x0.length / T;
  const W = d.weights.lmHead ?? d.weights.linear!.weight.data;
  const b = d.weights.linear?.bias?.data ?? null;
  return {
    K,
    x: inputOf(d, x0, v.inputFormat, v.inputShift ?? 0),
    /** Weight row n of an op with N outputs into w[0, K). */
    row(n: number, N: number, w: Float64Array | Float32Array): void {
      if (v.weightFormat && !v.transposed) {
        roundF32Into(v.weightFormat, W.subarray(n * K, (n + 1) * K), w);
        return;
      }
      for (let k = 0; k < K; k++) w[k] = v.transposed ? W[k * N + n] : W[n * K + k];
      if (v.weightFormat) for (let k = 0; k < K; k++) w[k] = roundTo(v.weightFormat, w[k]);
    },
    bias: (n: number): number =>
      b ? (v.biasFormat ? roundTo(v.biasFormat, b[n]) : b[n]) * (v.bias ?? 1) : 0,
  };
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
  const held = heldProduct(d, v, x0, N, cols); // (multiplied on the GPU oracle: search-products.ts)
  if (held) return held;
  const { K, x, row, bias } = productOperands(d, v, x0);
  return linearF64(x, T, K, [], null, N, { cols, row, bias, acc: v.acc });
}

/**
 * Whether the variant of a linear op changes only its operands (no accumulator emulation, no output transform):
 * its output is then the plain product of productOperands, which the GPU oracle can compute.
 */
export function isOperandProduct(d: OpData, v: Variant): boolean {
  return (
    (LINEAR_OPS.includes(d.op) || d.op === 'mlp_up' || d.op === 'mlp_residual') &&
    changesCore(v) &&
    CORE_KEYS.every((k) => v[k] === undefined || OPERAND_KEYS.includes(k)) &&
    !hasTransform(v) &&
    !onlyBias(v)
  );
}

/** Whether the variant reads any product operand its own way (a product the GPU oracle may be multiplying for it). */
export function readsOperands(v: Variant): boolean {
  return OPERAND_KEYS.some((k) => v[k] !== undefined);
}

/**
 * Outputs of variants computed elsewhere (the GPU oracle), by variant and columns (by identity: the search asks for
 * the same objects it handed out).
 */
export class ProductCache {
  private readonly byVariant = new Map<Variant, Map<Int32Array | null, Float64Array>>();
  get(v: Variant, cols: Int32Array | null): Float64Array | undefined {
    return this.byVariant.get(v)?.get(cols);
  }
  has(v: Variant, cols: Int32Array | null): boolean {
    return this.get(v, cols) !== undefined;
  }
  set(v: Variant, cols: Int32Array | null, out: Float64Array): void {
    let m = this.byVariant.get(v);
    if (!m) {
      m = new Map();
      this.byVariant.set(v, m);
    }
    m.set(cols, out);
  }
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
  const tf = v.termFormat;
  const sf = v.sumFormat;
  // HF's order, as the oracle sums (run-checks-cpu.ts): the sum is exact in fp64 far below any f32 floor.
  for (let i = 0; i < out.length; i++) {
    let s = 0;
    for (let j = terms.length - 1; j >= 0; j--) {
      const x = tf?.term === j ? roundTo(tf.format, terms[j][i]) : terms[j][i];
      s += coefs[j] * x;
      if (sf && j < terms.length - 1) s = roundTo(sf, s);
    }
    out[i] = s;
  }
  return out;
}

/** One op kind's exact form under a variant, [T, cols]: the registry's `causes` form (src/ops/slots.ts). */
export type CauseForm = (d: OpData, v: Variant, cols: Int32Array | null) => Float64Array;

const exactOf: CauseForm = (d, _v, cols) => gather(d.exact, d.tokens.length, widthOf(d), cols);
const linearForm: CauseForm = (d, v, cols) => linear(d, v, cols);

// The cause variants of each op kind GPT-NeoX's runs check, as parameters of its exact form (the Llama family's
// causes are compare/family-causes.ts's): filled into the registry's `causes` slots, read by the step's op kind.
fillSlotsOf('causes', {
  embedding: exactOf,
  layernorm: (d, v, cols) => gather(norm(d, v), d.tokens.length, widthOf(d), cols),
  final_norm: (d, v, cols) => gather(norm(d, v), d.tokens.length, widthOf(d), cols),
  qkv: linearForm,
  out_proj: linearForm,
  mlp_up: linearForm,
  mlp_down: linearForm,
  lm_head: linearForm,
  gelu: (d, v, cols) => {
    const f = actOf(v.act ?? 'gelu');
    return gather(mapAll(round(v.inputFormat, v.input ?? d.inputs[0]), f), d.tokens.length, widthOf(d), cols);
  },
  attention: (d, v, cols) => attention(d, v, cols),
  residual: (d, v, cols) => gather(residual(d.inputs, v), d.tokens.length, widthOf(d), cols),
} satisfies Partial<Record<RegistryOp, CauseForm>>);

/**
 * The fused groups, checked whole where the fused path writes no tap between their ops, and the whole layer (no
 * single variant: its exact output).
 */
const GROUP_FORMS: Readonly<Record<Exclude<OpKind, CheckOp> | 'layer', CauseForm>> = {
  layer: exactOf,
  attn_block: (d, v, cols) => {
    // The QKV projection (its product variants) then the attention core (its variants), on the heads asked for.
    const T = d.tokens.length;
    const hd = d.cfg.headDim;
    const heads = cols ? [...new Set(Array.from(cols, (c) => Math.floor(c / hd)))] : null;
    const qkvCols = heads
      ? Int32Array.from(heads.flatMap((h) => Array.from({ length: 3 * hd }, (_, e) => h * 3 * hd + e)))
      : null;
    const N = 3 * d.cfg.hiddenSize;
    const part = linear(d, v, qkvCols, undefined, N);
    if (v.rows) {
      // The projection's variant on the rows it applies to; the other rows' keys and values are the exact ones.
      const ex = linear(d, {}, qkvCols, undefined, N);
      const n = part.length / T;
      for (let t = 0; t < T; t++)
        if (t < v.rows.from || t >= v.rows.to) part.set(ex.subarray(t * n, (t + 1) * n), t * n);
    }
    const qkv = qkvCols ? new Float64Array(T * N) : part;
    if (qkvCols)
      for (let t = 0; t < T; t++)
        for (let j = 0; j < qkvCols.length; j++) qkv[t * N + qkvCols[j]] = part[t * qkvCols.length + j];
    return attention(d, { ...v, input: undefined }, cols, qkv);
  },
  mlp_up: (d, v, cols) => {
    const f = actOf(v.act ?? 'gelu');
    return mapAll(linear(d, v, cols, undefined, widthOf(d)), f);
  },
  mlp_residual: (d, v, cols) => {
    // fc2's product (its variants, bias included) on the asked columns, then the residual sum (its variants).
    const T = d.tokens.length;
    const width = widthOf(d);
    const mlp = linear(d, v, cols, v.input ?? d.inputs[0], width);
    const terms = d.inputs.map((x, j) => (j === 0 ? mlp : gather(x, T, width, cols)));
    const replace = v.replace ? { ...v.replace, data: gather(v.replace.data, T, width, cols) } : undefined;
    return residual(terms, { ...v, replace }, mlp);
  },
};

/** The core computation under the variant, [T, cols] (the exact op itself for an empty variant). */
export function core(d: OpData, v: Variant, cols: Int32Array | null): Float64Array {
  const group = GROUP_FORMS[d.op as keyof typeof GROUP_FORMS];
  if (group) return group(d, v, cols);
  const step = stepOfOp(d.op);
  if (!step) throw new Error(`causes: no registry step for the op '${d.op}'`);
  return (formOf('causes', step.op) as CauseForm)(d, v, cols);
}

/**
 * The output transforms of a variant (row shift, element shift, one row broadcast, heads permuted, dropout, applied
 * in that order to the full [T, width] output `a`) on the columns `cols` only: each output element is read from the
 * element of `a` the transforms move there (zero where one reads outside), so no full-size copy is made.
 * causes/transform.test.ts holds it to the definition on the full tensor.
 */
export function transformAt(
  a: ArrayLike<number>,
  T: number,
  width: number,
  v: Variant,
  cols: Int32Array | null,
): Float64Array {
  const n = cols ? cols.length : width;
  const out = new Float64Array(T * n);
  const hd = v.headPerm ? width / v.headPerm.length : 0;
  for (let t = 0; t < T; t++)
    for (let j = 0; j < n; j++) {
      const c0 = cols ? cols[j] : j;
      let scale = 1;
      if (v.dropout) scale = v.dropout.dropped[t * width + c0] ? 0 : 1 / (1 - v.dropout.p);
      let c = v.headPerm ? v.headPerm[Math.floor(c0 / hd)] * hd + (c0 % hd) : c0;
      let r = v.broadcastRow ?? t;
      if (v.elemShift) {
        const i = r * width + c - v.elemShift;
        if (i < 0 || i >= T * width) continue;
        r = Math.floor(i / width);
        c = i - r * width;
      }
      if (v.rowShift && r >= v.rowShift.from) {
        r -= v.rowShift.shift;
        if (r < 0 || r >= T) continue;
      }
      const x = a[r * width + c];
      out[t * n + j] = scale === 1 ? x : scale === 0 ? 0 : x / (1 - v.dropout!.p);
    }
  return out;
}

function hasTransform(v: Variant): boolean {
  return (
    v.rowShift !== undefined ||
    v.elemShift !== undefined ||
    v.broadcastRow !== undefined ||
    v.headPerm !== undefined ||
    v.dropout !== undefined
  );
}

/**
 * The variant's output on the columns `cols` ([T, cols]), before any rounding of the output (the scorer's): from
 * `cache` when it holds it (a fresh copy: the caller may write to it). Under `rows`, the variant's output on those
 * rows and the exact output on the others.
 */
export function evalVariant(
  d: OpData,
  v: Variant,
  cols: Int32Array | null,
  cache?: ProductCache | null,
): Float64Array {
  if (!v.rows) return evalWhole(d, v, cols, cache);
  const T = d.tokens.length;
  const width = widthOf(d);
  const n = cols ? cols.length : width;
  const { from, to } = v.rows;
  const inner = innerOf(v);
  if (!ATTENTION_OPS.includes(d.op) && !hasTransform(inner) && !cache?.has(inner, cols)) {
    // A row-wise op: the variant on its rows alone, the exact output on the others.
    const out = gather(d.exact, T, width, cols);
    out.set(evalWhole(rowsView(d, from, to), sliceRows(inner, T, from, to), cols, null), from * n);
    return out;
  }
  // The attention core reads `rows` itself (the keys of the other rows are the exact ones); a product the GPU oracle
  // multiplied is its variant on every row: the other rows then put back.
  const out = evalWhole(d, ATTENTION_OPS.includes(d.op) ? v : inner, cols, cache);
  for (let t = 0; t < T; t++) {
    if (t >= from && t < to) continue;
    for (let j = 0; j < n; j++) out[t * n + j] = d.exact[t * width + (cols ? cols[j] : j)];
  }
  return out;
}

function evalWhole(
  d: OpData,
  v: Variant,
  cols: Int32Array | null,
  cache?: ProductCache | null,
): Float64Array {
  const T = d.tokens.length;
  const width = widthOf(d);
  const held = cache?.get(v, cols);
  if (held) return held.slice();
  if (!hasTransform(v)) {
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
  return transformAt(changesCore(v) ? core(d, v, null) : d.exact, T, width, v, cols);
}
