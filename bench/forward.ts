// Forward-pass benchmark: reference vs fused path on seeded Pythia-shaped models, wall time per forward
// (submit to done, no readback, median of reps) and the per-op GPU time breakdown (timestamp queries).

import type { Engine } from '../src/engine/engine';
import { summarizeTimings } from '../src/engine/timing';
import type { RandomModelSpec } from '../src/model/random-model';
import { median } from './cli';

export const SHAPES: Record<string, RandomModelSpec> = {
  tiny: { vocab: 1000, d: 128, layers: 2, heads: 4, ff: 512, rotaryPct: 0.25, parallel: true },
  'pythia-70m': { vocab: 50304, d: 512, layers: 6, heads: 8, ff: 2048, rotaryPct: 0.25, parallel: true },
  'pythia-160m': { vocab: 50304, d: 768, layers: 12, heads: 12, ff: 3072, rotaryPct: 0.25, parallel: true },
  'pythia-410m': { vocab: 50304, d: 1024, layers: 24, heads: 16, ff: 4096, rotaryPct: 0.25, parallel: true },
  // From the Pythia configs: head_dim 256, 128, 80, 128.
  'pythia-1b': { vocab: 50304, d: 2048, layers: 16, heads: 8, ff: 8192, rotaryPct: 0.25, parallel: true },
  'pythia-1.4b': { vocab: 50304, d: 2048, layers: 24, heads: 16, ff: 8192, rotaryPct: 0.25, parallel: true },
  'pythia-2.8b': { vocab: 50304, d: 2560, layers: 32, heads: 32, ff: 10240, rotaryPct: 0.25, parallel: true },
  'pythia-6.9b': { vocab: 50432, d: 4096, layers: 32, heads: 32, ff: 16384, rotaryPct: 0.25, parallel: true },
  'pythia-12b': { vocab: 50688, d: 5120, layers: 36, heads: 40, ff: 20480, rotaryPct: 0.25, parallel: true },
};

/** Loads SHAPES[model]'s seeded model (seed 4321, made on the GPU, 4096 positions) into the engine; its shape. */
export async function loadShape(engine: Engine, model: string): Promise<RandomModelSpec> {
  const shape = SHAPES[model];
  if (!shape) throw new Error(`unknown model '${model}' (one of ${Object.keys(SHAPES).join(', ')})`);
  await engine.loadSeededModel({ ...shape, maxPos: 4096 }, 4321, model);
  return shape;
}

/** A prompt of T token ids below `vocab`, spread by two primes (`salt` gives another). */
export const benchPrompt = (T: number, vocab: number, salt = 1): number[] =>
  Array.from({ length: T }, (_, i) => (i * 7919 + salt * 104729) % vocab);

export interface ForwardRow {
  model: string;
  T: number;
  path: 'reference' | 'fused';
  medianMs: number;
  minMs: number;
  dispatches: number;
  gpuMsByKind: Record<string, number> | null;
}

export async function benchForward(
  engine: Engine,
  model: string,
  Ts: number[],
  reps: number,
  log: (s: string) => void = () => {},
): Promise<ForwardRow[]> {
  const spec = SHAPES[model];
  log(`${model}: seeded weights on the GPU`);
  await engine.loadSeededModel({ ...spec, maxPos: 4096 }, 1234, model);
  const rows: ForwardRow[] = [];
  for (const T of Ts) {
    const tokens = Array.from({ length: T }, (_, i) => (i * 7919) % spec.vocab);
    for (const path of ['reference', 'fused'] as const) {
      await engine.timeForward(tokens, { path }, 10); // warm-up: pipelines, caches, GPU clocks
      const { ms, dispatches } = await engine.timeForward(tokens, { path }, reps);
      const timed = await engine.forward(tokens, { path, timing: true });
      const kinds = timed.timings ? summarizeTimings(timed.timings, spec.layers).perKind : null;
      const gpuMsByKind = kinds
        ? Object.fromEntries(Object.entries(kinds).map(([k, ns]) => [k, ns / 1e6]))
        : null;
      const row = { model, T, path, medianMs: median(ms), minMs: Math.min(...ms), dispatches, gpuMsByKind };
      log(
        `${model} T=${T} ${path}: median ${row.medianMs.toFixed(3)} ms, min ${row.minMs.toFixed(3)} ms, ${dispatches} dispatches`,
      );
      rows.push(row);
    }
  }
  engine.unloadModel();
  return rows;
}
