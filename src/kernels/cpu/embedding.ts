// fp64 oracle: token embedding lookup (HF gpt_neox.embed_in).

/** Gathers rows of the embedding table. table [V, d] -> out [T, d]. Throws on an out-of-range id. */
export function embeddingF64(table: Float32Array, d: number, tokens: number[]): Float64Array {
  const V = Math.floor(table.length / d);
  if (V * d !== table.length) throw new Error(`embeddingF64: table length ${table.length} is not V*${d}`);
  const T = tokens.length;
  const out = new Float64Array(T * d); // [T, d]
  for (let t = 0; t < T; t++) {
    const id = tokens[t];
    if (!Number.isInteger(id) || id < 0 || id >= V) {
      throw new Error(`embeddingF64: token ${id} at position ${t} is outside [0, ${V})`);
    }
    const src = id * d;
    const dst = t * d;
    for (let e = 0; e < d; e++) out[dst + e] = table[src + e];
  }
  return out;
}
