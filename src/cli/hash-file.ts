// Node only: the sha256 of a file computed on a worker thread that reads the file itself, with node:crypto's native
// sha256, so that hashing takes no turn of the main thread, which reads and decodes the same file meanwhile. A run's
// sha256 is its identity in reports and links (docs/RUNS.md): the hex digest of every byte of the file.
import { Worker } from 'node:worker_threads';

/** Plain JavaScript the worker evaluates (no loader, no bundling): the file's bytes, as read, into the hash. */
const HASHER = `
const { createHash } = require('node:crypto');
const { createReadStream } = require('node:fs');
const { parentPort, workerData } = require('node:worker_threads');
const h = createHash('sha256');
let bytes = 0;
createReadStream(workerData, { highWaterMark: 4 << 20 })
  .on('data', (c) => { h.update(c); bytes += c.length; })
  .on('end', () => parentPort.postMessage({ sha256: h.digest('hex'), bytes }))
  .on('error', (e) => parentPort.postMessage({ error: String((e && e.message) || e), code: e && e.code }));
`;

export interface FileHash {
  /** Lower-case hex. */
  sha256: string;
  /** The bytes hashed: the file's length when it was read. */
  bytes: number;
}

export interface FileHashing {
  done: Promise<FileHash>;
  /** Stops the worker (the import failed, nothing will ask for the hash); `done` then never settles. */
  stop(): void;
}

/** Starts hashing the file at `path` on its own thread. A read error rejects `done` with its `code`. */
export function hashFile(path: string): FileHashing {
  const worker = new Worker(HASHER, { eval: true, workerData: path, execArgv: [] });
  const done = new Promise<FileHash>((resolve, reject) => {
    worker.once('message', (m: FileHash & { error?: string; code?: string }) => {
      if (m.error !== undefined) reject(Object.assign(new Error(m.error), { code: m.code }));
      else resolve({ sha256: m.sha256, bytes: m.bytes });
      void worker.terminate();
    });
    worker.once('error', reject);
  });
  done.catch(() => undefined); // awaited later, or never where the import failed first
  return { done, stop: () => void worker.terminate() };
}
