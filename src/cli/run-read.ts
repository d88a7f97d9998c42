// Node only: run files read from disk for `cli compare-runs` and the benches. Each file is read and decoded on the
// main thread while a worker thread reads it again and hashes it (hash-file.ts): the sha256, a run's identity in the
// report, comes in beside the import and the analysis, never before them, and is checked to be of the same bytes.
// The next chunk's read is under way while one is decoded (prefetched), so the disk's copy overlaps the decode.
import { Buffer } from 'node:buffer';
import { statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename } from 'node:path';
import type { RunInput } from '../compare/analyze-runs';
import type { RunsReport } from '../compare/runs-report';
import { type ReadRunOptions, readRunFile } from '../model/run-file';
import type { ModelConfig } from '../numeric/types';
import { CliInputError, fsReason, quoteUser } from './files';
import { hashFile } from './hash-file';

/** What a reader hands on as it reads (readRunFile's onHeader and onSlot). */
export type Reader = Pick<ReadRunOptions, 'onHeader' | 'onSlot'>;

/** A run read from disk (`run.sha256` null); its sha256 on the way. */
export interface ReadRun {
  run: RunInput;
  sha256: Promise<string>;
  /** Stops the hashing where nothing will wait for it (a refusal, a failure). */
  stop(): void;
}

/**
 * The bytes of the file at `path` in chunks of `chunkBytes` (the last one shorter), two buffers taken in turn: the
 * next chunk is read while the reader decodes this one. A chunk is valid until the next one is asked for, as with one
 * buffer read into again and again (streamSafetensors is done with a chunk before it asks for the next). The file is closed when the iteration ends,
 * fails or is stopped early (after the read under way).
 */
export async function* prefetchedFileStream(
  path: string,
  chunkBytes = 4 << 20,
): AsyncGenerator<Uint8Array, void> {
  const fh = await open(path, 'r');
  const bufs = [new Uint8Array(chunkBytes), new Uint8Array(chunkBytes)];
  const fill = async (buf: Uint8Array) => {
    let filled = 0;
    while (filled < chunkBytes) {
      const { bytesRead } = await fh.read(buf, filled, chunkBytes - filled, null);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return filled;
  };
  let next: Promise<number> | null = fill(bufs[0]);
  try {
    for (let i = 0; ; i++) {
      const filled = await next;
      next = null;
      if (filled === 0) return;
      if (filled < chunkBytes) {
        yield bufs[i & 1].subarray(0, filled);
        return;
      }
      next = fill(bufs[(i + 1) & 1]);
      next.catch(() => undefined); // (awaited when the next chunk is asked for, or below)
      yield bufs[i & 1];
    }
  } finally {
    await next?.catch(() => undefined);
    await fh.close();
  }
}

/** Streams a run file from disk after checking it is a regular file, its hashing started beside it. */
export async function readRun(
  path: string,
  flag: string,
  cfg: ModelConfig,
  handlers?: Reader,
): Promise<ReadRun> {
  const what = `${flag} ${quoteUser(path)}`;
  let size: number;
  let mtime: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new CliInputError(`${what}: is not a regular file`);
    size = st.size;
    mtime = st.mtimeMs;
  } catch (e) {
    if (e instanceof CliInputError) throw e;
    throw new CliInputError(`${what}: ${fsReason(e)}`);
  }
  const hashing = hashFile(path);
  try {
    // Two 4 MiB buffers, read into in turn: the reader copies what it keeps.
    const file = await readRunFile(prefetchedFileStream(path), size, cfg, {
      file: basename(path),
      ...handlers,
      sameBytes: (x, y) => Buffer.compare(x, y) === 0,
    });
    const sha256 = hashing.done.then(
      (h) => {
        const now = statSync(path, { throwIfNoEntry: false });
        if (h.bytes !== file.bytes || now?.size !== size || now?.mtimeMs !== mtime)
          throw new CliInputError(
            `${what}: the file changed while it was read (its sha256 would name other bytes)`,
          );
        return h.sha256;
      },
      (e) => {
        throw new CliInputError(`${what}: ${fsReason(e)}`);
      },
    );
    sha256.catch(() => undefined); // awaited after the analysis
    return { run: { file, sha256: null }, sha256, stop: hashing.stop };
  } catch (e) {
    hashing.stop();
    if (typeof (e as { kind?: unknown })?.kind === 'string') throw e;
    throw new CliInputError(`${what}: ${fsReason(e)}`);
  }
}

/**
 * Runs read at once ([path, flag] each); where one is refused the others' hashing stops, the first refusal thrown.
 * `reader(i)`: what file i's reader hands its header and each slot to as they come (an analysis: streamRuns).
 */
export async function readRuns(
  files: [string, string][],
  cfg: ModelConfig,
  reader?: (i: number) => Reader,
): Promise<ReadRun[]> {
  const settled = await Promise.allSettled(
    files.map(([path, flag], i) => readRun(path, flag, cfg, reader?.(i))),
  );
  const refused = settled.find((s) => s.status === 'rejected');
  if (refused) {
    for (const s of settled) if (s.status === 'fulfilled') s.value.stop();
    throw refused.reason;
  }
  return settled.map((s) => (s as PromiseFulfilledResult<ReadRun>).value);
}

/** The report with each run's sha256, once hashed (`runs` in the report's order: A, then B). */
export async function withSha256(report: RunsReport, runs: ReadRun[]): Promise<RunsReport> {
  const shas = await Promise.all(runs.map((r) => r.sha256));
  return { ...report, runs: report.runs.map((r, i) => ({ ...r, sha256: shas[i] })) };
}
