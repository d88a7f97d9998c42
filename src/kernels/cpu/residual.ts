// fp64 oracle: residual additions, in HF's operand order.

/** a + b elementwise. */
export function addF64(a: ArrayLike<number>, b: ArrayLike<number>): Float64Array {
  if (a.length !== b.length) throw new Error(`addF64: lengths ${a.length} and ${b.length} differ`);
  const out = new Float64Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i] + b[i];
  return out;
}

/** Parallel residual, HF order `mlp_output + attn_output + hidden_states`: (mlp + attn) + x elementwise. */
export function add3F64(x: ArrayLike<number>, attn: ArrayLike<number>, mlp: ArrayLike<number>): Float64Array {
  if (x.length !== attn.length || x.length !== mlp.length) {
    throw new Error(`add3F64: lengths ${x.length}, ${attn.length}, ${mlp.length} differ`);
  }
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = mlp[i] + attn[i] + x[i];
  return out;
}
