// A comparison whose results reach the page as they exist: analyze() sends the analysis (layers, verdict, taps,
// timing) the moment its one GPU submit is read back, then bisection and determinism, then the generation on both
// paths one token at a time; the final report is what it returns.
import { analyze, type Report } from '../compare/analyze';
import type { Engine } from '../engine/engine';
import type { RunSpec } from '../run/runspec';
import type { ComparePartial } from './api';

export interface ProgressiveOptions {
  signal: AbortSignal;
  onProgress: (phase: string, done: number, total: number) => void;
  onPartial: (p: ComparePartial) => void;
}

export function compareProgressively(
  engine: Engine,
  spec: RunSpec,
  tokens: number[],
  o: ProgressiveOptions,
): Promise<Report> {
  return analyze(engine, spec, tokens, {
    signal: o.signal,
    onProgress: o.onProgress,
    onPartial: o.onPartial,
  });
}
