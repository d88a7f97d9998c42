// A comparison whose results reach the page as they exist: the analysis (layers, verdict, taps, timing)
// first, then bisection and determinism, then the generation on both paths one token at a time. Built on
// analyze()'s public options only: a first analyze() without bisection, determinism and generation, a
// second one for bisection and determinism (its forward passes are repeated, the fp64 oracle comes from
// analyze's cache, the local phase is skipped), and greedy generation through engine.generate with the
// same planted faults, so the final report is what one analyze() call returns.
import { analyze, type Report } from '../compare/analyze';
import type { Engine } from '../engine/engine';
import type { FusedKernelId } from '../engine/fused-kernels';
import { faultHooks, placeFaults } from '../run/faults';
import type { RunSpec } from '../run/runspec';
import type { ComparePartial } from './api';

export interface ProgressiveOptions {
  signal: AbortSignal;
  onProgress: (phase: string, done: number, total: number) => void;
  onPartial: (p: ComparePartial) => void;
}

/** The phases of the second analyze() that are new (its repeated forward passes count as bisection). */
const SECOND_PHASES = new Set(['bisection', 'determinism']);

export async function compareProgressively(
  engine: Engine,
  spec: RunSpec,
  tokens: number[],
  o: ProgressiveOptions,
): Promise<Report> {
  const first = await analyze(engine, spec, tokens, {
    signal: o.signal,
    onProgress: o.onProgress,
    skip: { bisection: true, determinism: true, generation: true },
  });
  o.onPartial({ kind: 'analysis', report: first });

  const second = await analyze(engine, spec, tokens, {
    signal: o.signal,
    // Progress never goes back: the second call's forward passes are reported as the start of bisection.
    onProgress: (phase, done, total) =>
      SECOND_PHASES.has(phase) ? o.onProgress(phase, done, total) : o.onProgress('bisection', 0, 1),
    skip: { local: true, generation: true },
  });
  o.onPartial({ kind: 'bisection', bisection: second.bisection });
  o.onPartial({ kind: 'determinism', determinism: second.determinism });

  const t1 = performance.now();
  o.onProgress('generation', 0, 1);
  const generation = await generateBoth(engine, spec, tokens, o);
  return {
    ...first,
    bisection: second.bisection,
    determinism: second.determinism,
    generation,
    durations: {
      ...first.durations,
      bisection: second.durations.bisection ?? 0,
      determinism: second.durations.determinism ?? 0,
      generation: performance.now() - t1,
    },
  };
}

/** Greedy generation on the reference path, then the fused one (with the run's faults), token by token. */
async function generateBoth(
  engine: Engine,
  spec: RunSpec,
  tokens: number[],
  o: ProgressiveOptions,
): Promise<Report['generation']> {
  const n = spec.generate;
  if (n === 0) return null;
  const layers = engine.modelInfo?.config.numLayers ?? 0;
  const hooks = faultHooks(placeFaults(spec.faults, spec.seed, layers));
  const decode = (ids: number[]) => engine.tokenizer?.decode(ids) ?? null;
  const run = async (path: 'reference' | 'fused') => {
    const ids: number[] = [];
    await engine.generate(
      tokens,
      n,
      (id) => {
        ids.push(id);
        o.onPartial({ kind: 'token', path, ids: [...ids], text: decode(ids), total: n });
      },
      o.signal,
      path === 'reference'
        ? { path: 'reference', precision: spec.precision }
        : { path: new Set<FusedKernelId>(spec.fused), precision: spec.precision, hooks },
    );
    return ids;
  };
  const refIds = await run('reference');
  const fusedIds = await run('fused');
  const first = refIds.findIndex((id, i) => fusedIds[i] !== id);
  return {
    reference: { ids: refIds, text: decode(refIds) },
    fused: { ids: fusedIds, text: decode(fusedIds) },
    firstDifference: first < 0 ? null : first,
  };
}
