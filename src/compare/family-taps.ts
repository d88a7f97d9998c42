// The Llama-family analysis's tap comparisons and its determinism check (family-compare.ts): every reference tap
// against the exact forward's and the fused path's, and two fused runs compared bit for bit.
import type { HiddenDump } from '../numeric/types';
import { familyOf, layerSteps } from '../ops/families';
import type { RunSpec } from '../run/runspec';
import { errorHistogram, fullMetrics } from './metrics';
import type { DeterminismResult, TapResult } from './report';

/**
 * Every reference tap against the exact forward's (the step's op kind from the op registry), and against the fused
 * path's tap of the same name where the fused path writes that slot out (its kernels' own outputs and the dump's);
 * a slot a fused kernel keeps to itself is 'fused-away'.
 */
export function tapResults(
  refTaps: Map<string, Float32Array>,
  fusedTaps: Map<string, Float32Array>,
  fused: HiddenDump,
  exactTaps: Map<string, Float64Array>,
  cfg: Parameters<typeof familyOf>[0],
  precision: RunSpec['precision'],
): TapResult[] {
  const opOf = new Map(layerSteps(familyOf(cfg), cfg).map((s) => [s.slot, s.op as string]));
  const fusedOf = (name: string): Float32Array | null => {
    const t = fusedTaps.get(name);
    if (t) return t;
    if (name === 'embed') return fused.embeddings;
    if (name === 'final_norm') return fused.finalNorm;
    if (name === 'logits') return fused.logits;
    const out = /^layers\.(\d+)\.out$/.exec(name);
    return out ? fused.layers[Number(out[1])] : null;
  };
  const out: TapResult[] = [];
  for (const [name, ref] of refTaps) {
    const want = exactTaps.get(name);
    const parts = /^layers\.(\d+)\.(.+)$/.exec(name);
    const layer = parts ? Number(parts[1]) : null;
    const op = parts ? (opOf.get(parts[2]) ?? parts[2]) : name === 'embed' ? 'embedding' : name;
    const f = fusedOf(name);
    const same = f !== null && f.length === ref.length;
    out.push({
      name,
      layer,
      op,
      status: same ? 'compared' : 'fused-away',
      shape: ref.length,
      vsReference: same ? fullMetrics(f, ref, precision) : null,
      refVsOracle: want ? fullMetrics(ref, want, precision) : null,
      histogram: same ? errorHistogram(f, ref) : null,
    });
  }
  return out;
}

/** Two fused runs bit for bit, tensor by tensor. */
export function sameBits(a: HiddenDump, b: HiddenDump): DeterminismResult {
  const pairs: [string, Float32Array, Float32Array][] = [
    ['embeddings', a.embeddings, b.embeddings],
    ...a.layers.map((l, i) => [`layers.${i}`, l, b.layers[i]] as [string, Float32Array, Float32Array]),
    ['final_norm', a.finalNorm, b.finalNorm],
    ['logits', a.logits, b.logits],
  ];
  const differences: DeterminismResult['differences'] = [];
  for (const [tensor, x, y] of pairs) {
    const xb = new Uint32Array(x.buffer, x.byteOffset, x.length);
    const yb = new Uint32Array(y.buffer, y.byteOffset, y.length);
    let count = 0;
    let firstIndex = -1;
    for (let i = 0; i < xb.length; i++)
      if (xb[i] !== yb[i]) {
        count++;
        if (firstIndex < 0) firstIndex = i;
      }
    if (count > 0) differences.push({ tensor, count, firstIndex, schedule: 'the same, run again' });
  }
  const identical = differences.length === 0;
  return { identical, differences, runs: [{ schedule: 'the same, run again', identical }] };
}
