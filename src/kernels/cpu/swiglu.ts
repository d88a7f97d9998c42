// fp64 oracle: SiLU and the SwiGLU product of the Llama MLP, down(silu(gate(x)) * up(x)) (HF LlamaMLP with
// hidden_act 'silu': ACT2FN['silu'] = torch.nn.functional.silu, x · sigmoid(x)). The two projections and `down`
// are linears (cpu/linear.ts); this file is the part between them.

/** silu(x) = x · sigmoid(x) = x / (1 + e^-x) of one value; e^-x overflowing for x < -709 gives -0 (the limit). */
export function silu(x: number): number {
  return x / (1 + Math.exp(-x));
}

/** Elementwise silu. */
export function siluF64(x: ArrayLike<number>): Float64Array {
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = silu(x[i]);
  return out;
}

/** gate, up [rows, f] -> [rows, f]: silu(gate) · up, elementwise. */
export function swigluF64(gate: ArrayLike<number>, up: ArrayLike<number>): Float64Array {
  if (gate.length !== up.length)
    throw new Error(`swigluF64: gate has ${gate.length} values and up ${up.length}; they must match`);
  const out = new Float64Array(gate.length);
  for (let i = 0; i < gate.length; i++) out[i] = silu(gate[i]) * up[i];
  return out;
}
