// File-system access for the CLI: only regular files are read (a FIFO would block forever, a device never ends),
// every failure is bad input naming the path and the reason in words, and an output path is checked before any
// compute starts.
import { accessSync, constants, readFileSync, type Stats, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { oneLine, quoteName } from '../model/errors';
import { stripBom } from '../model/json-text';

/** Bad input on the command line or in the files it names: exit 2, one line. */
export class CliInputError extends Error {
  readonly kind = 'input' as const;
  override name = 'CliInputError';
  constructor(message: string) {
    super(oneLine(message));
  }
}

/** The one helper for user text in a message: quoted, control characters and non-ASCII escaped, cut short. */
export const quoteUser = quoteName;
export { oneLine };

const REASONS: Record<string, string> = {
  ENOENT: 'does not exist',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EISDIR: 'is a folder, not a file',
  ENOTDIR: 'a part of the path is not a folder',
  ELOOP: 'too many symbolic links (a link loop?)',
  ENAMETOOLONG: 'the name is too long',
  EMFILE: 'too many open files',
  ENFILE: 'too many open files',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
  EIO: 'input/output error',
  EBUSY: 'the file is busy',
  EINVAL: 'invalid path',
  EFBIG: 'the file is too large',
};

/** A file-system error in words: "permission denied", or the error's code. */
export function fsReason(e: unknown): string {
  const code = (e as { code?: unknown })?.code;
  if (typeof code === 'string') return REASONS[code] ?? `file-system error ${code}`;
  if (e instanceof RangeError) return 'the file is too large to read';
  return e instanceof Error ? e.message : String(e);
}

function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO()) return 'a named pipe';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/** stat() of a path, as bad input on failure; `what` names it in messages (e.g. "--spec spec.json"). */
function statOf(path: string, what: string): Stats {
  try {
    return statSync(path); // follows links; never blocks on a FIFO (only open does)
  } catch (e) {
    throw new CliInputError(`${what}: ${fsReason(e)}`);
  }
}

/** The bytes of a regular file; anything else (folder, FIFO, device, socket) or any error is bad input. */
export function readRegularFile(path: string, what: string): Uint8Array {
  const st = statOf(path, what);
  if (!st.isFile()) throw new CliInputError(`${what}: is ${kindOf(st)}, expected a regular file`);
  try {
    const b = readFileSync(path);
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  } catch (e) {
    throw new CliInputError(`${what}: ${fsReason(e)}`);
  }
}

/** The size of a regular file (anything else, or any error, is bad input); it is not opened. */
export function regularFileSize(path: string, what: string): number {
  const st = statOf(path, what);
  if (!st.isFile()) throw new CliInputError(`${what}: is ${kindOf(st)}, expected a regular file`);
  return st.size;
}

/** A regular file as UTF-8 text, a leading BOM removed; invalid UTF-8 is refused, not replaced. */
export function readTextFile(path: string, what: string): string {
  const bytes = readRegularFile(path, what);
  try {
    return stripBom(new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes));
  } catch {
    throw new CliInputError(`${what}: is not valid UTF-8 text`);
  }
}

/** True when `path` exists (any kind); errors other than "does not exist" are bad input. */
export function exists(path: string, what: string): boolean {
  try {
    statSync(path);
    return true;
  } catch (e) {
    if ((e as { code?: unknown })?.code === 'ENOENT') return false;
    throw new CliInputError(`${what}: ${fsReason(e)}`);
  }
}

/** The folder at `path`, or bad input saying what it is instead. */
export function requireFolder(path: string, what: string): void {
  const st = statOf(path, what);
  if (!st.isDirectory()) throw new CliInputError(`${what}: is ${kindOf(st)}, expected a folder`);
}

/**
 * Checks that `out` can be written, before any compute: its folder exists and is writable, and `out` itself is
 * not a folder, a FIFO or a device, and is writable if it exists.
 */
export function checkOutPath(out: string): void {
  const what = `--out ${quoteUser(out)}`;
  if (out === '') throw new CliInputError('--out: empty path');
  const parent = dirname(resolve(out));
  let pst: Stats;
  try {
    pst = statSync(parent);
  } catch (e) {
    throw new CliInputError(`${what}: its folder ${quoteUser(parent)} ${fsReason(e)}`);
  }
  if (!pst.isDirectory()) throw new CliInputError(`${what}: ${quoteUser(parent)} is not a folder`);
  let st: Stats | null = null;
  try {
    st = statSync(out);
  } catch (e) {
    if ((e as { code?: unknown })?.code !== 'ENOENT') throw new CliInputError(`${what}: ${fsReason(e)}`);
  }
  if (st !== null && !st.isFile())
    throw new CliInputError(`${what}: is ${kindOf(st)}, expected a regular file`);
  try {
    accessSync(st === null ? parent : out, constants.W_OK);
  } catch (e) {
    throw new CliInputError(`${what}: ${fsReason(e)} (not writable)`);
  }
}
