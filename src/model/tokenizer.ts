// The embedded model's byte-level tokenizer (UTF-8 bytes are the token ids), its tokenizer.json description,
// and the parser for token ids typed by hand.

import { describeJson, ModelLoadError, quoteName } from './errors';

export interface Tokenizer {
  encode(text: string): number[];
  decode(ids: number[]): string;
  vocabSize: number;
  kind: string;
}

/**
 * UTF-8 bytes <-> ids 0..255. decode is lenient: broken UTF-8 shows U+FFFD, and so does any id outside 0..255
 * (a model's vocabulary may be padded past 256).
 */
export function byteTokenizer(): Tokenizer {
  const encoder = new TextEncoder();
  const decoder = new TextDecoder('utf-8', { fatal: false });
  return {
    kind: 'bytes',
    vocabSize: 256,
    encode: (text) => Array.from(encoder.encode(text)),
    decode: (ids) => {
      let out = '';
      let run: number[] = [];
      for (const id of ids) {
        if (Number.isInteger(id) && id >= 0 && id < 256) {
          run.push(id);
        } else {
          out += decoder.decode(new Uint8Array(run)) + '\uFFFD';
          run = [];
        }
      }
      return out + decoder.decode(new Uint8Array(run));
    },
  };
}

/** A tokenizer from its JSON description; only `{ "type": "bytes" }` exists. */
export function parseTokenizerDescription(json: unknown, file = 'tokenizer.json'): Tokenizer {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ModelLoadError(
      file,
      `expected a JSON object like {"type": "bytes"}, found ${describeJson(json)}`,
    );
  }
  const type = Object.hasOwn(json, 'type') ? (json as Record<string, unknown>).type : undefined;
  if (type === undefined) throw new ModelLoadError(file, `missing key 'type' (expected "bytes")`, 'type');
  if (type !== 'bytes') {
    const found = typeof type === 'string' ? quoteName(type) : describeJson(type);
    throw new ModelLoadError(file, `tokenizer type ${found} is not supported (only "bytes")`, 'type');
  }
  return byteTokenizer();
}

/** Parses hand-typed token ids such as "3, 14,15" (commas and/or whitespace between ids). */
export function parseTokenIds(text: string, vocabSize: number): number[] {
  const trimmed = text.trim();
  if (trimmed === '') throw new Error('no token ids given (type ids such as 3,14,15)');
  const parts = trimmed.split(/\s*,\s*|\s+/);
  return parts.map((p, i) => {
    if (p === '') throw new Error(`token id ${i + 1} is empty (stray comma?)`);
    if (!/^[+-]?\d+$/.test(p)) {
      throw new Error(
        `token id ${i + 1} ${quoteName(p.length > 20 ? `${p.slice(0, 20)}…` : p)} is not an integer`,
      );
    }
    const id = Number(p) || 0; // '-0' -> 0
    if (id < 0 || id >= vocabSize) {
      throw new Error(`token id ${p} is out of range (vocabulary has ${vocabSize} ids: 0..${vocabSize - 1})`);
    }
    return id;
  });
}
