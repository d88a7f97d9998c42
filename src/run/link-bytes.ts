// The bytes of a link, shared by run links (permalink.ts) and runs links (runs-link.ts): base64url without padding
// (strict and canonical when decoding), raw DEFLATE inflated within a bound (a decompression bomb is refused, not
// expanded), and the one error a link's decoding throws, LinkError, with a reason for code and one sentence for
// the viewer.
import { Inflate } from 'fflate';

export type LinkErrorReason =
  | 'too-long'
  | 'format'
  | 'version'
  | 'base64'
  | 'inflate'
  | 'too-large'
  | 'encoding'
  | 'json'
  | 'payload'
  | 'spec'
  | 'sharer'
  | 'scenario'
  | 'internal';

/** The only error the codec throws. `reason` is for code; `message` is one sentence for the viewer. */
export class LinkError extends Error {
  override name = 'LinkError';
  constructor(
    readonly reason: LinkErrorReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const DECODE = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i;

export function base64urlEncode(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + ALPHABET[(n >> 6) & 63] + ALPHABET[n & 63];
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i] << 16;
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63];
  } else if (rest === 2) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8);
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + ALPHABET[(n >> 6) & 63];
  }
  return out;
}

/** Strict: base64url alphabet only, no padding, canonical (unused trailing bits zero). Throws LinkError. */
export function base64urlDecode(s: string): Uint8Array {
  const bad = () => new LinkError('base64', 'The link is damaged: its data is not valid base64url.');
  if (s.length % 4 === 1) throw bad();
  const out = new Uint8Array(Math.floor((s.length * 3) / 4));
  let o = 0;
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const v = c < 128 ? DECODE[c] : -1;
    if (v < 0) throw bad();
    acc = ((acc << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (acc >> bits) & 0xff;
    }
  }
  if ((acc & ((1 << bits) - 1)) !== 0) throw bad();
  return out;
}

const CHUNK = 64;

/** Inflates raw DEFLATE data, refusing more than `max` output bytes (checked every 64 input bytes). */
export function inflateBounded(data: Uint8Array, max: number): Uint8Array {
  const chunks: Uint8Array[] = [];
  let total = 0;
  let over = false;
  const inflater = new Inflate((chunk) => {
    total += chunk.length;
    if (total > max) {
      over = true;
      throw new LinkError('too-large', 'The link expands to more than 256 KiB: refused.');
    }
    chunks.push(chunk);
  });
  try {
    for (let i = 0; i < data.length; i += CHUNK) {
      inflater.push(data.subarray(i, i + CHUNK), i + CHUNK >= data.length);
    }
  } catch (e) {
    if (over && e instanceof LinkError) throw e;
    throw new LinkError('inflate', 'The link is damaged: its data does not decompress.', { cause: e });
  }
  const out = new Uint8Array(total);
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}
