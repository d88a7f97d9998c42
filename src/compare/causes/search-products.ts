// Products computed elsewhere (the GPU oracle's double-float product, compare/why-gpu.ts), held for the cause search:
// a product is the op's x W^T + b on operands read a variant's way (exact-op.ts productOperands), whatever op holds it
// — a linear op alone, or the product inside a fused group (the QKV projection of `attn_block`, dense_h_to_4h of
// `mlp_up`, dense_4h_to_h of `mlp_residual`). exact-op.ts's product asks here first: a held product is the same
// numbers (to ~1e-12 relative, the double-float's error) without the fp64 multiply-adds on the CPU, and everything the
// op does after its product (an activation, a residual sum, the attention core, an output rounding or transform)
// runs on it unchanged.
//
// Held by the input the product reads (its identity: the recorded tensor of one analysis) and, under it, by the op,
// its layer, the output width and the variant's operand keys; a product held over every column serves any sample of
// them. A variant that only scales or rounds the bias is the exact product plus the bias's change, per column.
import { roundTo } from '../../numeric/round';
import type { OpData, Variant } from './types';

interface Held {
  cols: Int32Array | null;
  out: Float64Array;
}

const held = new WeakMap<ArrayLike<number>, Map<string, Held[]>>();
const tensorIds = new WeakMap<object, number>();
let nextId = 1;

/** A recorded tensor's id within this process (a variant that reads another tensor is keyed by it). */
function idOf(x: object): number {
  let id = tensorIds.get(x);
  if (id === undefined) {
    id = nextId++;
    tensorIds.set(x, id);
  }
  return id;
}

/** The key of a product under its input: the op, layer, width and the operands the variant reads. */
function keyOf(d: OpData, v: Variant, N: number, bias = true): string {
  return [
    d.op,
    d.layer,
    N,
    v.inputFormat ?? '',
    v.weightFormat ?? '',
    v.transposed ? 't' : '',
    v.inputShift ?? 0,
    v.input ? idOf(v.input) : 0,
    bias ? (v.bias ?? 1) : '',
    bias ? (v.biasFormat ?? '') : '',
  ].join('|');
}

const sameCols = (a: Int32Array | null, b: Int32Array | null) =>
  a === b || (a !== null && b !== null && a.length === b.length && a.every((c, i) => c === b[i]));

/** Holds `out` ([T, cols], all columns when cols is null) as the product of `d`'s op under `v`'s operands. */
export function holdProduct(
  d: OpData,
  v: Variant,
  x0: ArrayLike<number>,
  N: number,
  cols: Int32Array | null,
  out: Float64Array,
): void {
  let byKey = held.get(x0);
  if (!byKey) {
    byKey = new Map();
    held.set(x0, byKey);
  }
  const key = keyOf(d, v, N);
  const list = byKey.get(key) ?? [];
  if (!list.some((h) => sameCols(h.cols, cols))) list.push({ cols, out });
  byKey.set(key, list);
}

/** The held product's columns `cols` (a fresh array), or null. */
function find(list: Held[] | undefined, T: number, N: number, cols: Int32Array | null): Float64Array | null {
  if (!list) return null;
  const same = list.find((h) => sameCols(h.cols, cols));
  if (same) return same.out.slice();
  const whole = list.find((h) => h.cols === null);
  if (!whole || !cols) return null;
  const n = cols.length;
  const out = new Float64Array(T * n);
  for (let t = 0; t < T; t++) for (let j = 0; j < n; j++) out[t * n + j] = whole.out[t * N + cols[j]];
  return out;
}

/**
 * The product of `d`'s op under `v`'s operands on the columns `cols` ([T, cols]) where one is held, else null. An
 * fp16 accumulator's emulation (`v.acc`) is never held: it is computed where it is asked.
 */
export function heldProduct(
  d: OpData,
  v: Variant,
  x0: ArrayLike<number>,
  N: number,
  cols: Int32Array | null,
): Float64Array | null {
  if (v.acc) return null;
  const byKey = held.get(x0);
  if (!byKey) return null;
  const T = d.tokens.length;
  const got = find(byKey.get(keyOf(d, v, N)), T, N, cols);
  if (got || (v.bias === undefined && v.biasFormat === undefined)) return got;
  // The bias scaled or rounded: the product with the model's bias, plus the change of each column's bias.
  const b = d.weights.linear?.bias?.data;
  const base = b
    ? find(byKey.get(keyOf(d, { ...v, bias: undefined, biasFormat: undefined }, N)), T, N, cols)
    : null;
  if (!b || !base) return null;
  const n = cols ? cols.length : N;
  for (let j = 0; j < n; j++) {
    const c = cols ? cols[j] : j;
    const change = (v.biasFormat ? roundTo(v.biasFormat, b[c]) : b[c]) * (v.bias ?? 1) - b[c];
    for (let t = 0; t < T; t++) base[t * n + j] += change;
  }
  return base;
}

/** Drops every product held under these inputs (a test computing the fp64 product afresh). */
export function forgetProducts(...inputs: ArrayLike<number>[]): void {
  for (const x of inputs) held.delete(x);
}
