// The sha256 of run files in the engine worker, beside their decoding (docs/RUNS.md: a run's identity in reports and
// links). crypto.subtle.digest, native and off this thread, over each file's bytes, which the browser reads whole
// (Blob.arrayBuffer, also off this thread): no JavaScript touches a byte. Those bytes are held until the digest
// ends, so files that together pass WHOLE_BYTES are hashed one after another (the copy held stays under one file
// and the limit). Without crypto.subtle (a page not served over https or localhost), @noble/hashes over the file's
// stream on this thread, as before. Both give the same hex: the sha256 of every byte of the file.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';

/** Files up to this size together are hashed at once; past it, one after another. */
export const WHOLE_BYTES = 512 << 20;

function abortError(): DOMException {
  return new DOMException('the hashing was aborted', 'AbortError');
}

/** The sha256 of `blob` (lower-case hex) by crypto.subtle, one call on its whole bytes. */
async function subtleHash(blob: Blob, signal?: AbortSignal): Promise<string> {
  const bytes = await blob.arrayBuffer();
  if (signal?.aborted) throw abortError();
  return bytesToHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)));
}

/** The sha256 of `blob` (lower-case hex) by @noble/hashes over its stream, here. */
export async function streamHash(blob: Blob, signal?: AbortSignal): Promise<string> {
  const h = sha256.create();
  const reader = blob.stream().getReader();
  try {
    for (;;) {
      if (signal?.aborted) throw abortError();
      const r = await reader.read();
      if (r.done) break;
      h.update(r.value);
    }
  } finally {
    reader.releaseLock();
  }
  return bytesToHex(h.digest());
}

const hasSubtle = () => typeof crypto !== 'undefined' && typeof crypto.subtle?.digest === 'function';

/**
 * Starts hashing each blob; one promise per blob, in order. `signal` stops the work still to start (a digest under
 * way runs to its end, unheard).
 */
export function hashBlobs(
  blobs: Blob[],
  signal?: AbortSignal,
  subtle = hasSubtle(),
  wholeBytes = WHOLE_BYTES,
): Promise<string>[] {
  const one = (b: Blob) => (subtle ? subtleHash(b, signal) : streamHash(b, signal));
  const together = blobs.reduce((s, b) => s + b.size, 0) <= wholeBytes;
  let prev: Promise<unknown> = Promise.resolve();
  return blobs.map((b) => {
    const p = together || !subtle ? one(b) : prev.then(() => one(b));
    prev = p;
    p.catch(() => undefined); // the caller awaits them all, or stops waiting on a failure elsewhere
    return p;
  });
}
