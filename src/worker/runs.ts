// Run files in the worker (docs/RUNS.md): each streamed from its Blob tensor by tensor and checked against the loaded
// model's config before any GPU work, each slot taken up by the analysis as it arrives; hashed beside that and the
// analysis (hash-blob.ts), the sha256 checked against the one a link names as soon as it is known (a mismatch stops
// the analysis). Nothing of the loaded model changes, whatever a run file holds.
import { streamRuns } from '../compare/analyze-runs';
import type { RunsReport } from '../compare/runs-report';
import type { Engine } from '../engine/engine';
import { checkSameTokens, type ReadRunOptions, type RunFile, readRunFile } from '../model/run-file';
import type { NeoXConfig } from '../numeric/types';
import type { RunFileInput, RunLoadProgress } from './api';
import { workerError } from './boundary';
import { hashBlobs } from './hash-blob';

/** Reads one run file from the page's Blob, handing its header and slots to `reader` as they come. */
function readRun(
  cfg: NeoXConfig,
  input: RunFileInput,
  signal: AbortSignal,
  onProgress: (p: RunLoadProgress) => void,
  reader: Pick<ReadRunOptions, 'onHeader' | 'onSlot'>,
): Promise<RunFile> {
  return readRunFile(input.blob.stream(), input.blob.size, cfg, {
    file: input.name,
    signal,
    onProgress: (loaded, total) => onProgress({ file: input.name, loadedBytes: loaded, totalBytes: total }),
    ...reader,
  });
}

/** Each run's sha256 (hex); refused where a link names another. */
export function checkedHashes(runs: RunFileInput[], signal: AbortSignal): Promise<string[]> {
  const hashes = hashBlobs(
    runs.map((r) => r.blob),
    signal,
  );
  return Promise.all(
    hashes.map((h, i) =>
      h.then((hex) => {
        const { name, expectedSha256: want } = runs[i];
        if (want && hex !== want)
          throw workerError(
            'model-mismatch',
            `${name} hashes to sha256 ${hex.slice(0, 16)}…, but the link names ${want.slice(0, 16)}…: not the run that was shared`,
          );
        return hex;
      }),
    ),
  );
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
  const cfg = engine.modelInfo.config;
  // The hashes' failure (a link's mismatch) stops the reading and the analysis, and is what is said.
  const ctl = new AbortController();
  const stop = () => ctl.abort();
  signal.addEventListener('abort', stop, { once: true });
  if (signal.aborted) stop();
  let refused: unknown = null;
  const hashes = checkedHashes(runs, ctl.signal);
  hashes.catch((e) => {
    refused = e;
    stop();
  });
  // The analysis starts on the first header's tokens and takes each slot as it is read (streamRuns).
  const stream = streamRuns(engine, runs.length, { signal: ctl.signal, onProgress: onPhase });
  try {
    const [a, b] = await Promise.all([
      readRun(cfg, runs[0], ctl.signal, onLoad, stream.reader(0)),
      runs[1] ? readRun(cfg, runs[1], ctl.signal, onLoad, stream.reader(1)) : null,
    ]);
    if (b) checkSameTokens(a, b);
    const report = await stream.report({ file: a, sha256: null }, b && { file: b, sha256: null });
    const shas = await hashes;
    return { ...report, runs: report.runs.map((r, i) => ({ ...r, sha256: shas[i] })) };
  } catch (e) {
    stop();
    throw refused ?? e;
  } finally {
    signal.removeEventListener('abort', stop);
    // A refused file's analysis: its buffers back (report() gives them back itself).
    void stream.release();
  }
}
