// Run files in the worker (docs/RUNS.md): each streamed from its Blob tensor by tensor and checked against the loaded
// model's config before any GPU work, each slot taken up by the analysis as it arrives; hashed beside that and the
// analysis (hash-blob.ts), the sha256 checked against the one a link names as soon as it is known (a mismatch stops
// the analysis). Nothing of the loaded model changes, whatever a run file holds.
import { streamRuns } from '../compare/analyze-runs';
import { familyRunsModel, streamFamilyRuns } from '../compare/family-runs';
import type { RunsReport } from '../compare/runs-report';
import { warmRunsAnalysis } from '../compare/runs-warmup';
import type { Engine } from '../engine/engine';
import {
  checkSameTokens,
  otherModelWords,
  type ReadRunOptions,
  type RunFile,
  readRunFile,
  runModelShape,
  weightsNotRunWords,
} from '../model/run-file';
import { slotOfFamilyName, slotOfName } from '../model/run-names';
import { parseHeaderSection, readHeaderLength } from '../model/safetensors';
import type { ModelConfig } from '../numeric/types';
import { familyOf } from '../ops/families';
import type { RunFileInput, RunLoadProgress, RunsWarmupStatus } from './api';
import { workerError } from './boundary';
import { hashBlobs } from './hash-blob';

/** Reads one run file from the page's Blob, handing its header and slots to `reader` as they come. */
function readRun(
  cfg: ModelConfig,
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

/** A run's header is read whole for the model check only below this (a run's header is a few KiB). */
const CHECK_HEADER_BYTES = 16 << 20;

/** A run file's header: its tensors' names, its contract tensors' shapes, its metadata. */
interface RunHeaderSeen {
  names: string[];
  entries: { name: string; shape: number[] }[];
  meta: Record<string, string>;
}

/** A run file's header, or null where it cannot be read: reading the file itself then says why, beside it. */
async function headerOf({ blob, name }: RunFileInput, cfg: ModelConfig): Promise<RunHeaderSeen | null> {
  try {
    if (blob.size < 8) return null;
    const n = readHeaderLength(new Uint8Array(await blob.slice(0, 8).arrayBuffer()), name);
    if (n > CHECK_HEADER_BYTES || n > blob.size - 8) return null;
    const json = new Uint8Array(await blob.slice(8, 8 + n).arrayBuffer());
    const { header, sorted } = parseHeaderSection(json, blob.size - 8 - n, name, {
      ignore: (t) =>
        (cfg.family === 'llama'
          ? slotOfFamilyName(familyOf(cfg), t, Number.MAX_SAFE_INTEGER)
          : slotOfName(t, Number.MAX_SAFE_INTEGER)) === null,
    });
    return { names: sorted.map((e) => e.name), entries: [...header.entries.values()], meta: header.metadata };
  } catch {
    return null;
  }
}

/**
 * Every run's header against the loaded model before anything is streamed: a weights file picked as a run is named
 * as such; runs of another model (their vocabulary, hidden size or layers) are named together in one line, so that
 * loading theirs is the one thing left to do (not a token id blamed in one file of the two).
 */
export async function checkRunsModel(cfg: ModelConfig, runs: RunFileInput[]): Promise<void> {
  const heads = await Promise.all(runs.map((r) => headerOf(r, cfg)));
  const spec = cfg.family === 'llama' ? familyOf(cfg) : undefined;
  heads.forEach((h, i) => {
    const weights = h && weightsNotRunWords(h.names, h.meta);
    if (weights) throw workerError('input', `${runs[i].name}: ${weights}`);
  });
  const other = heads.flatMap((h, i) => {
    const words = h && otherModelWords(runModelShape(h.entries, h.meta, spec), cfg);
    return words ? [{ run: `run ${i === 0 ? 'A' : 'B'} (${runs[i].name})`, words }] : [];
  });
  if (other.length === 0) return;
  const words = other.every((o) => o.words === other[0].words)
    ? other[0].words
    : other.map((o) => `${o.run}: ${o.words}`).join('; ');
  const who =
    other.length === runs.length && runs.length > 1
      ? 'these runs come'
      : `${other.map((o) => o.run).join(' and ')} ${other.length > 1 ? 'come' : 'comes'}`;
  throw workerError('model-mismatch', `${who} from another model (${words}): load theirs`);
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
  // A Llama-family model's runs are read by its own names (its config) and analysed by compare/family-runs.ts.
  const cfg = engine.modelInfo.modelConfig ?? engine.modelInfo.config;
  await checkRunsModel(cfg, runs);
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
  if (cfg.family === 'llama') {
    // Fed as the files are read (streamFamilyRuns), as GPT-NeoX's below.
    const stream = streamFamilyRuns(familyRunsModel(engine), runs.length, {
      signal: ctl.signal,
      onProgress: onPhase,
    });
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
      void stream.release();
    }
  }
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

/** Tokens the page's warm-up runs on (capped by the model's positions): a run's usual length, as the bench's. */
export const PAGE_WARMUP_TOKENS = 128;

/**
 * The runs analysis's warm-up in the page's worker (compare/runs-warmup.ts: the double-float self-test, the compile
 * of every pipeline, the first calls of the analysis's JavaScript), run once per worker when the runs panel asks for
 * it. It holds no claim on the worker: any job that arrives meanwhile yields it (`yieldTo`: stopped at its next step,
 * its buffers given back, what it compiled kept) and runs at once; a runs import that ends before any warm-up paid
 * its costs itself, and none is run after it. A worker closed in the middle ends it with the worker.
 */
export class RunsWarmer {
  private status: RunsWarmupStatus = { state: 'skipped', started: 0, finished: 0, warmup: null };
  private running: { abort: AbortController; done: Promise<RunsWarmupStatus> } | null = null;

  /** Runs the warm-up unless it ran or was paid (`busy`: another job holds the worker, so it waits for the next ask). */
  warm(engine: Engine, busy: string | null): Promise<RunsWarmupStatus> {
    if (this.running) return this.running.done;
    const st = this.status;
    if (st.state !== 'skipped') return Promise.resolve({ ...st });
    const info = engine.modelInfo;
    const why = !info
      ? 'no model is loaded'
      : info.family === 'llama'
        ? 'the Llama family’s runs analysis has no warm-up yet'
        : busy && `not now: ${busy}`;
    if (why) return Promise.resolve({ ...st, why });
    const abort = new AbortController();
    st.started++;
    const done = warmRunsAnalysis(engine, PAGE_WARMUP_TOKENS, abort.signal).then(
      (warmup): RunsWarmupStatus => {
        st.finished++;
        Object.assign(st, { state: 'done', warmup, why: undefined });
        return { ...st };
      },
      (e: unknown): RunsWarmupStatus => {
        if (st.state === 'skipped')
          st.why = abort.signal.aborted
            ? 'stopped: another job came first'
            : `failed: ${e instanceof Error ? e.message : String(e)}`;
        return { ...st };
      },
    );
    this.running = { abort, done };
    void done.then(() => {
      this.running = null;
    });
    return done;
  }

  /** Stops a running warm-up at its next step and waits until it has (its buffers back). */
  async yieldTo(): Promise<void> {
    const r = this.running;
    if (!r) return;
    r.abort.abort();
    await r.done;
  }

  /** A runs import has ended: what the warm-up pays is paid, none runs after it. */
  paid(): void {
    if (this.status.state === 'skipped') Object.assign(this.status, { state: 'paid', why: undefined });
  }
}
