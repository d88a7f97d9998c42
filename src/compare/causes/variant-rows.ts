// A variant on some rows of an op (Variant.rows): the variant without its rows (one object per variant, so that a
// product cache knows it by identity), and a row-wise op's rows as an op of their own (its inputs, outputs and the
// variant's own tensors cut to those rows), so that a variant on a few rows is computed on those rows alone.
import type { OpData, Variant } from './types';

/** Rows [from, to) of a [T, width] tensor (a view). */
function rowsOfArray(a: ArrayLike<number>, T: number, from: number, to: number): ArrayLike<number> {
  const w = a.length / T;
  return a instanceof Float32Array || a instanceof Float64Array
    ? a.subarray(from * w, to * w)
    : Array.prototype.slice.call(a, from * w, to * w);
}

/** The op's rows [from, to) as an op of their own (row-wise ops only), one per op and span. */
const views = new WeakMap<OpData, Map<string, OpData>>();
export function rowsView(d: OpData, from: number, to: number): OpData {
  let m = views.get(d);
  if (!m) {
    m = new Map();
    views.set(d, m);
  }
  const key = `${from}:${to}`;
  let view = m.get(key);
  if (!view) {
    const T = d.tokens.length;
    view = {
      ...d,
      tokens: d.tokens.slice(from, to),
      inputs: d.inputs.map((x) => x.subarray((from * x.length) / T, (to * x.length) / T)),
      recorded: d.recorded.subarray((from * d.recorded.length) / T, (to * d.recorded.length) / T),
      exact: d.exact.subarray((from * d.exact.length) / T, (to * d.exact.length) / T),
    };
    m.set(key, view);
  }
  return view;
}

/** A variant's own tensors (another input, a replaced term) cut to rows [from, to), one cut per tensor and span. */
const cuts = new WeakMap<object, Map<string, ArrayLike<number>>>();
export function sliceRows(v: Variant, T: number, from: number, to: number): Variant {
  if (!v.input && !v.replace) return v;
  const cut = (a: ArrayLike<number>) => {
    let m = cuts.get(a);
    if (!m) {
      m = new Map();
      cuts.set(a, m);
    }
    const key = `${T}:${from}:${to}`;
    let c = m.get(key);
    if (!c) {
      c = rowsOfArray(a, T, from, to);
      m.set(key, c);
    }
    return c;
  };
  return {
    ...v,
    ...(v.input ? { input: cut(v.input) } : {}),
    ...(v.replace ? { replace: { term: v.replace.term, data: cut(v.replace.data) } } : {}),
  };
}

const inners = new WeakMap<Variant, Variant>();

/** The variant on the rows `span` only; its variant without rows is `inner` itself (innerOf). */
export function withRows(inner: Variant, span: { from: number; to: number }): Variant {
  const v = { ...inner, rows: span };
  inners.set(v, inner);
  return v;
}

/** The variant without its rows (one object per variant: a product cache knows it by identity). */
export function innerOf(v: Variant): Variant {
  if (!v.rows) return v;
  let inner = inners.get(v);
  if (!inner) {
    const { rows: _, ...rest } = v;
    inner = rest;
    inners.set(v, inner);
  }
  return inner;
}
