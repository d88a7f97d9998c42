// The hidden-state dump contract as JSON: nested arrays embeddings [T][d], layers [L][T][d],
// final_norm [T][d], logits [T][V].
import type { HiddenDump } from '../model/types';

function rows(a: Float32Array | Float64Array, n: number, width: number): number[][] {
  const out: number[][] = [];
  for (let i = 0; i < n; i++) out.push(Array.from(a.subarray(i * width, (i + 1) * width)));
  return out;
}

export interface DumpJson {
  embeddings: number[][];
  layers: number[][][];
  final_norm: number[][];
  logits: number[][];
}

export function dumpToJson(d: HiddenDump<Float32Array | Float64Array>): DumpJson {
  return {
    embeddings: rows(d.embeddings, d.T, d.d),
    layers: d.layers.map((l) => rows(l, d.T, d.d)),
    final_norm: rows(d.finalNorm, d.T, d.d),
    logits: rows(d.logits, d.T, d.V),
  };
}
