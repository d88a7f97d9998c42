// Streaming safetensors reader: parses the header as soon as it has arrived and hands out each tensor (fp32) as
// soon as its bytes are complete, holding only the current tensor's bytes, never the whole file.
//
// The header is validated by the same code as the whole-file reader (parseHeaderSection); on top of that the
// stream must end exactly where the header's last tensor ends (no truncation, no trailing bytes).

import { ModelLoadError, quoteName } from './errors';
import {
  headerPastEndError,
  numElements,
  type ParseOptions,
  parseHeaderSection,
  readHeaderLength,
  type SafetensorsEntry,
  type SafetensorsHeader,
  tooShortError,
} from './safetensors';
import { decodeTensorF32, LITTLE_ENDIAN, viewTensorF32 } from './safetensors-read';

export interface StreamSafetensorsOptions {
  /** Called once the header is parsed and validated, before any tensor. */
  onHeader?(header: SafetensorsHeader): void | Promise<void>;
  /**
   * Called for each tensor in offset order with its fp32 values [numel(e.shape)]; awaited (backpressure). `data` is
   * a fresh array, or, where `views` is on and `view` is true, a view on the source's chunk: valid until the
   * returned promise settles (a caller that keeps it copies it, `data.slice()`).
   */
  onTensor(name: string, e: SafetensorsEntry, data: Float32Array, view: boolean): void | Promise<void>;
  /**
   * F32 tensors that lie whole inside one chunk at a 4-byte aligned offset are handed out as views on the chunk,
   * with no copy (on little-endian hosts); the others as before.
   */
  views?: boolean;
  /**
   * With `views`: whether the caller keeps this tensor's array (default: all). An F32 tensor it does not keep that
   * spans chunks is gathered in one scratch array reused from tensor to tensor, and lent (`view` true).
   */
  keeps?(e: SafetensorsEntry): boolean;
  /** Called after each chunk with the bytes read so far (monotone; the last call has loaded === total). */
  onProgress?(loaded: number, total: number | null): void;
  /** Aborting rejects promptly with a DOMException named 'AbortError' and cancels the source. */
  signal?: AbortSignal;
  /** The file named in errors (default 'model.safetensors'). */
  file?: string;
  /** Tensors to validate but skip (see ParseOptions.ignore): never decoded, never handed out. */
  ignore?: ParseOptions['ignore'];
  /**
   * Test hook: the bytes this reader holds, on every change: the chunk in hand plus its partial header or
   * tensor buffer.
   */
  onBuffered?(bytes: number): void;
}

export interface StreamSafetensorsResult {
  header: SafetensorsHeader;
  /** Bytes read from the source. */
  bytes: number;
}

type Source = ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

interface ChunkSource {
  next(): Promise<Uint8Array | null>;
  /** Stops the source; never waits (a pending read may hold it up). */
  cancel(reason: unknown): void;
}

function chunkSource(source: Source): ChunkSource {
  if (typeof (source as ReadableStream<Uint8Array>).getReader === 'function') {
    const reader = (source as ReadableStream<Uint8Array>).getReader();
    return {
      next: async () => {
        const r = await reader.read();
        return r.done ? null : r.value;
      },
      cancel: (reason) => {
        reader.cancel(reason).catch(() => {});
      },
    };
  }
  const it = (source as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  return {
    next: async () => {
      const r = await it.next();
      return r.done ? null : r.value;
    },
    cancel: () => {
      try {
        it.return?.()?.catch?.(() => {});
      } catch {
        // a source that fails to stop has nothing more to give us
      }
    },
  };
}

function abortError(): DOMException {
  return new DOMException('the load was aborted', 'AbortError');
}

/** `p`, or a rejection with AbortError as soon as `signal` aborts (the pending work is left to finish). */
function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return p;
  if (signal.aborted) {
    p.catch(() => {});
    return Promise.reject(abortError());
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError());
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/** A tensor being filled: its raw bytes, which for F32 on little-endian hosts are the output array's own. */
interface Filling {
  e: SafetensorsEntry;
  n: number; // numel
  buf: Uint8Array; // [e.end - e.begin]
  out: Float32Array | null; // [n] when buf is its storage
  lent: boolean; // out is the scratch array's
  fill: number;
}

/** The parser's state machine: push chunks, then finish. */
class StreamParser {
  private phase: 'prefix' | 'header' | 'data' = 'prefix';
  /** Absolute bytes consumed. */
  private pos = 0;
  private readonly prefix = new Uint8Array(8);
  private headerLen = 0;
  private headerBuf: Uint8Array | null = null;
  private dataOffset = 0;
  /** Absolute offset where the data section must end. */
  private expectedEnd = 0;
  /** Tensors to hand out, in offset order. */
  private list: SafetensorsEntry[] = [];
  private idx = 0;
  private cur: Filling | null = null;
  /** Where lent tensors that span chunks are gathered (grown to the largest). */
  private scratch = new Float32Array(0);
  header: SafetensorsHeader | null = null;

  constructor(
    private readonly totalBytes: number | null,
    private readonly opts: StreamSafetensorsOptions,
    private readonly file: string,
  ) {}

  private held(chunk: number): void {
    this.opts.onBuffered?.(chunk + (this.headerBuf?.length ?? 0) + (this.cur?.buf.length ?? 0));
  }

  private checkAbort(): void {
    if (this.opts.signal?.aborted) throw abortError();
  }

  private async emit(e: SafetensorsEntry, data: Float32Array, view = false): Promise<void> {
    this.checkAbort();
    await this.opts.onTensor(e.name, e, data, view);
    this.checkAbort();
  }

  async push(chunk: Uint8Array): Promise<void> {
    const len = chunk.length;
    this.held(len);
    let i = 0;
    for (;;) {
      if (this.phase === 'prefix') {
        if (i === len) break;
        const fill = this.pos;
        const take = Math.min(8 - fill, len - i);
        this.prefix.set(chunk.subarray(i, i + take), fill);
        i += take;
        this.pos += take;
        if (this.pos < 8) continue;
        const n = readHeaderLength(this.prefix, this.file);
        if (this.totalBytes !== null && n > this.totalBytes - 8) {
          throw headerPastEndError(n, this.totalBytes - 8, this.file);
        }
        this.headerLen = n;
        this.headerBuf = new Uint8Array(n);
        this.phase = 'header';
        this.held(len);
        continue;
      }
      if (this.phase === 'header') {
        const buf = this.headerBuf!;
        const fill = this.pos - 8;
        if (fill < buf.length) {
          if (i === len) break;
          const take = Math.min(buf.length - fill, len - i);
          buf.set(chunk.subarray(i, i + take), fill);
          i += take;
          this.pos += take;
          continue;
        }
        await this.startData();
        this.held(len);
        continue;
      }
      // data
      if (this.cur === null) {
        const next = this.idx < this.list.length ? this.list[this.idx] : null;
        const target = next === null ? this.expectedEnd : this.dataOffset + next.begin;
        if (this.pos < target) {
          if (i === len) break;
          const skip = Math.min(target - this.pos, len - i); // a gap or an ignored tensor
          i += skip;
          this.pos += skip;
          continue;
        }
        if (next === null) {
          if (i < len) {
            throw new ModelLoadError(
              this.file,
              `file continues past the end of the data section: the header's tensors end at byte ` +
                `${this.expectedEnd} (trailing bytes)`,
            );
          }
          break;
        }
        const size = next.end - next.begin;
        const n = numElements(next.shape);
        if (size === 0) {
          this.idx++;
          await this.emit(next, new Float32Array(0));
          continue;
        }
        if (i === len) break;
        if (len - i >= size) {
          // The whole tensor is in this chunk: viewed in place, or decoded straight from it.
          const src = chunk.subarray(i, i + size);
          const view = this.opts.views ? viewTensorF32(src, next.dtype, n) : null;
          const data = view ?? decodeTensorF32(src, next.dtype, n);
          i += size;
          this.pos += size;
          this.idx++;
          await this.emit(next, data, view !== null);
          continue;
        }
        this.cur = this.allocate(next, n, size);
        this.held(len);
      }
      const cur = this.cur;
      if (i === len) break;
      const take = Math.min(cur.buf.length - cur.fill, len - i);
      cur.buf.set(chunk.subarray(i, i + take), cur.fill);
      cur.fill += take;
      i += take;
      this.pos += take;
      if (cur.fill < cur.buf.length) continue;
      const data = cur.out ?? decodeTensorF32(cur.buf, cur.e.dtype, cur.n);
      this.cur = null;
      this.idx++;
      this.held(len);
      await this.emit(cur.e, data, cur.lent);
    }
  }

  private allocate(e: SafetensorsEntry, n: number, size: number): Filling {
    try {
      if (e.dtype === 'F32' && LITTLE_ENDIAN) {
        const lent = this.opts.views === true && this.opts.keeps?.(e) === false;
        if (lent && this.scratch.length < n) this.scratch = new Float32Array(n);
        const out = lent ? this.scratch.subarray(0, n) : new Float32Array(n);
        return { e, n, buf: new Uint8Array(out.buffer, out.byteOffset, size), out, fill: 0, lent };
      }
      return { e, n, buf: new Uint8Array(size), out: null, fill: 0, lent: false };
    } catch (err) {
      throw new ModelLoadError(
        this.file,
        `tensor ${quoteName(e.name)} (${size} bytes) could not be allocated ` +
          `(${err instanceof Error ? err.message : String(err)})`,
        e.name,
      );
    }
  }

  private async startData(): Promise<void> {
    const n = this.headerLen;
    const dataSize = this.totalBytes === null ? null : this.totalBytes - 8 - n;
    const section = parseHeaderSection(this.headerBuf!, dataSize, this.file, { ignore: this.opts.ignore });
    this.headerBuf = null;
    this.dataOffset = 8 + n;
    this.expectedEnd = this.dataOffset + section.dataEnd;
    if (this.totalBytes !== null && this.expectedEnd !== this.totalBytes) {
      throw new ModelLoadError(
        this.file,
        `file is ${this.totalBytes} bytes but the header's tensors end at byte ${this.expectedEnd} ` +
          `(${this.totalBytes - this.expectedEnd} trailing bytes)`,
      );
    }
    const entries = section.header.entries;
    this.list = section.sorted.filter((s) => !s.ignored).map((s) => entries.get(s.name)!);
    this.header = section.header;
    this.phase = 'data';
    await this.opts.onHeader?.(section.header);
    this.checkAbort();
  }

  /** The source has ended: hands out trailing empty tensors, refuses a truncated file. */
  async finish(): Promise<void> {
    this.held(0);
    if (this.phase === 'prefix') throw tooShortError(this.pos, this.file);
    if (this.phase === 'header') {
      if (this.pos - 8 < this.headerLen) throw headerPastEndError(this.headerLen, this.pos - 8, this.file);
      await this.startData();
    }
    await this.push(new Uint8Array(0)); // empty tensors sitting exactly at the end
    if (this.pos < this.expectedEnd) {
      const at = this.cur?.e ?? (this.idx < this.list.length ? this.list[this.idx] : undefined);
      throw new ModelLoadError(
        this.file,
        `file is truncated: it ended at byte ${this.pos} but the header's tensors end at byte ` +
          `${this.expectedEnd}` +
          (at === undefined ? '' : ` (in or before tensor ${quoteName(at.name)})`),
        at?.name,
      );
    }
  }
}

/**
 * Reads a safetensors file from a stream of chunks (any sizes), validating the header like
 * parseSafetensorsHeader and handing out each tensor as fp32 as soon as its bytes are in. `totalBytes` (e.g. a
 * Content-Length) is checked against the header when known. Malformed, truncated or over-long input raises
 * ModelLoadError; an abort, a DOMException named 'AbortError'; errors of the source and of the callbacks pass
 * through. The source is cancelled on any failure.
 */
export async function streamSafetensors(
  source: Source,
  totalBytes: number | null,
  opts: StreamSafetensorsOptions,
): Promise<StreamSafetensorsResult> {
  if (totalBytes !== null && !(Number.isSafeInteger(totalBytes) && totalBytes >= 0)) {
    throw new TypeError(
      `streamSafetensors: totalBytes must be a non-negative integer or null, got ${totalBytes}`,
    );
  }
  const file = opts.file ?? 'model.safetensors';
  const signal = opts.signal;
  const src = chunkSource(source);
  const parser = new StreamParser(totalBytes, opts, file);
  let loaded = 0;
  try {
    if (signal?.aborted) throw abortError();
    if (totalBytes !== null && totalBytes < 8) throw tooShortError(totalBytes, file);
    for (;;) {
      const chunk = await abortable(src.next(), signal);
      if (chunk === null) break;
      if (!(chunk instanceof Uint8Array)) {
        throw new TypeError(`streamSafetensors: the source gave a ${typeof chunk} chunk, not a Uint8Array`);
      }
      if (chunk.length === 0) continue;
      loaded += chunk.length;
      await parser.push(chunk);
      opts.onProgress?.(loaded, totalBytes);
    }
    await parser.finish();
  } catch (e) {
    src.cancel(e);
    throw e;
  }
  return { header: parser.header!, bytes: loaded };
}
