// Run files in the worker (docs/RUNS.md): each streamed from its Blob tensor by tensor, hashed on the way, checked
// against the loaded model's config before any GPU work, and against the sha256 a link names when it ends; then the
// analysis of runs. Nothing of the loaded model changes, whatever a run file holds.
import { analyzeRuns, type RunInput } from '../compare/analyze-runs';
import type { RunsReport } from '../compare/runs-report';
import type { Engine } from '../engine/engine';
import { checkSameTokens, readRunFile } from '../model/run-file';
import type { RunFileInput, RunLoadProgress } from './api';
import { workerError } from './boundary';
import { hashChunks } from './url-model';

/** Reads one run file from the page's Blob, hashing it; a sha256 that differs from `expected` is refused. */
async function readRun(
  engine: Engine,
  input: RunFileInput,
  signal: AbortSignal,
  onProgress: (p: RunLoadProgress) => void,
): Promise<RunInput> {
  const cfg = engine.modelInfo!.config;
  let sha256 = '';
  const source = hashChunks(input.blob.stream(), (hex) => {
    sha256 = hex;
    if (input.expectedSha256 && hex !== input.expectedSha256)
      throw workerError(
        'model-mismatch',
        `${input.name} hashes to sha256 ${hex.slice(0, 16)}…, but the link names ${input.expectedSha256.slice(0, 16)}…: not the run that was shared`,
      );
  });
  const file = await readRunFile(source, input.blob.size, cfg, {
    file: input.name,
    signal,
    onProgress: (loaded, total) => onProgress({ file: input.name, loadedBytes: loaded, totalBytes: total }),
  });
  return { file, sha256 };
}

/** The analysis of run A (and B) on the engine's loaded model. */
export async function compareRunFiles(
  engine: Engine,
  runs: RunFileInput[],
  signal: AbortSignal,
  onLoad: (p: RunLoadProgress) => void,
  onPhase: (phase: string, done: number, total: number) => void,
): Promise<RunsReport> {
  if (!engine.modelInfo)
    throw workerError('model', 'no model is loaded: load the model the runs were made with');
  if (runs.length < 1 || runs.length > 2)
    throw workerError('input', `give one or two run files, not ${runs.length}`);
  const [a, b] = await Promise.all([
    readRun(engine, runs[0], signal, onLoad),
    runs[1] ? readRun(engine, runs[1], signal, onLoad) : null,
  ]);
  if (b) checkSameTokens(a.file, b.file);
  return analyzeRuns(engine, a, b, { signal, onProgress: onPhase });
}
