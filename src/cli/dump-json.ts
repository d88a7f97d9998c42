// The hidden-state dump contract as JSON: nested arrays embeddings [T][d], layers [L][T][d],
// final_norm [T][d], logits [T][V].
import type { HiddenDump } from '../numeric/types';

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

/** The first non-finite value of a dump (in contract order) and how many there are, or null when all are finite. */
export function firstNonFinite(
  d: HiddenDump<Float32Array | Float64Array>,
): { count: number; where: string; value: number } | null {
  const parts: [string, Float32Array | Float64Array, number][] = [
    ['embeddings', d.embeddings, d.d],
    ...d.layers.map((l, i): [string, Float32Array | Float64Array, number] => [`layers[${i}]`, l, d.d]),
    ['final_norm', d.finalNorm, d.d],
    ['logits', d.logits, d.V],
  ];
  let count = 0;
  let first: { where: string; value: number } | null = null;
  for (const [name, a, width] of parts) {
    for (let i = 0; i < a.length; i++) {
      if (Number.isFinite(a[i])) continue;
      count++;
      first ??= { where: `${name}[${Math.floor(i / width)}][${i % width}]`, value: a[i] };
    }
  }
  return first === null ? null : { count, ...first };
}

/** JSON text of a dump; non-finite numbers as the strings "NaN", "Infinity", "-Infinity" (JSON has no such numbers). */
export function dumpJsonText(d: HiddenDump<Float32Array | Float64Array>): string {
  return JSON.stringify(dumpToJson(d), (_k, v) =>
    typeof v === 'number' && !Number.isFinite(v) ? String(v) : v,
  );
}
