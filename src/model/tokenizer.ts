// Tokenizers: the embedded model's byte-level one (UTF-8 bytes are the token ids), Hugging Face tokenizer.json
// files (GPT-NeoX BPE, through @huggingface/tokenizers: pure JS, no network), and the parser for token ids
// typed by hand.

import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { describeJson, ModelLoadError, quoteName } from './errors';
import { checkJsonDepth, stripBom } from './json-text';

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

// ---- Hugging Face tokenizer.json (BPE) ---------------------------------------------------------------------

/** Ids past this are refused (the same bound as config.json's vocab_size). */
const MAX_TOKEN_ID = 10_000_000;

/** An error's message for a one-line ModelLoadError (V8's JSON errors quote the text, newlines included). */
function reason(e: unknown): string {
  const m = (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' ');
  return m.length > 300 ? `${m.slice(0, 300)}…` : m;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function own(obj: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

/** GPT-2's byte -> printable-character table (the ByteLevel pre-tokenizer's alphabet), index = byte. */
function byteLevelAlphabet(): string[] {
  const table: string[] = new Array(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    table[b] = String.fromCharCode(printable ? b : 256 + extra++);
  }
  return table;
}

/** Whether a pre-tokenizer (or a Sequence of them) includes ByteLevel. */
function usesByteLevel(p: unknown): boolean {
  if (!isObject(p)) return false;
  if (p.type === 'ByteLevel') return true;
  const inner = own(p, 'pretokenizers');
  return p.type === 'Sequence' && Array.isArray(inner) && inner.some(usesByteLevel);
}

/**
 * Validates what the library would otherwise trip over (or silently mis-handle) and returns the description to
 * build it from: the BPE vocabulary (string -> unique id), the merges (every part and every result in the
 * vocabulary, as the Rust tokenizers require), the added tokens, and the pipeline stages (null or typed).
 */
function checkHfDescription(json: Record<string, unknown>, file: string): Record<string, unknown> {
  const fail = (detail: string, key?: string): never => {
    throw new ModelLoadError(file, detail, key);
  };
  const model = own(json, 'model');
  if (!isObject(model)) return fail(`'model' must be an object, found ${describeJson(model)}`, 'model');
  const type = own(model, 'type');
  if (type === undefined) fail(`missing key 'model.type' (expected "BPE")`, 'model.type');
  if (type !== 'BPE') {
    const found = typeof type === 'string' ? quoteName(type) : describeJson(type);
    fail(`model type ${found} is not supported (only "BPE", as GPT-NeoX uses)`, 'model.type');
  }

  const vocab = own(model, 'vocab');
  if (!isObject(vocab))
    return fail(`'model.vocab' must be an object, found ${describeJson(vocab)}`, 'model.vocab');
  const byId = new Map<number, string>();
  for (const [token, id] of Object.entries(vocab)) {
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= MAX_TOKEN_ID) {
      fail(
        `'model.vocab' gives token ${quoteName(token)} the id ${describeJson(id)} ` +
          `(ids are integers in 0..${MAX_TOKEN_ID - 1})`,
        'model.vocab',
      );
    }
    const prev = byId.get(id as number);
    if (prev !== undefined) {
      fail(`'model.vocab' gives id ${id} to both ${quoteName(prev)} and ${quoteName(token)}`, 'model.vocab');
    }
    byId.set(id as number, token);
  }

  const merges = own(model, 'merges');
  if (!Array.isArray(merges)) {
    return fail(`'model.merges' must be an array, found ${describeJson(merges)}`, 'model.merges');
  }
  const pairs: [string, string][] = [];
  for (let i = 0; i < merges.length; i++) {
    const m = merges[i];
    let pair: string[] | null = null;
    if (typeof m === 'string') pair = m.split(' ');
    else if (Array.isArray(m) && m.every((x) => typeof x === 'string')) pair = m as string[];
    if (pair === null || pair.length !== 2 || pair[0] === '' || pair[1] === '') {
      fail(
        `merge ${i} must be "a b" or ["a", "b"] with two non-empty tokens, found ` +
          (typeof m === 'string' ? quoteName(m) : describeJson(m)),
        'model.merges',
      );
    }
    const [a, b] = pair as [string, string];
    for (const t of [a, b, a + b]) {
      if (!Object.hasOwn(vocab, t)) {
        fail(
          `merge ${i} (${quoteName(`${a} ${b}`)}) uses ${quoteName(t)}, which is not in the vocabulary`,
          'model.merges',
        );
      }
    }
    pairs.push([a, b]);
  }

  for (const k of ['unk_token', 'continuing_subword_prefix', 'end_of_word_suffix']) {
    const v = own(model, k);
    if (v !== undefined && v !== null && typeof v !== 'string') {
      fail(`'model.${k}' must be a string or null, found ${describeJson(v)}`, `model.${k}`);
    }
  }
  for (const k of ['fuse_unk', 'byte_fallback', 'ignore_merges']) {
    const v = own(model, k);
    if (v !== undefined && v !== null && typeof v !== 'boolean') {
      fail(`'model.${k}' must be true or false, found ${describeJson(v)}`, `model.${k}`);
    }
  }
  const dropout = own(model, 'dropout');
  if (
    dropout !== undefined &&
    dropout !== null &&
    !(typeof dropout === 'number' && dropout >= 0 && dropout <= 1)
  ) {
    fail(
      `'model.dropout' must be null or a number in [0, 1], found ${describeJson(dropout)}`,
      'model.dropout',
    );
  }

  const addedRaw = own(json, 'added_tokens') ?? [];
  if (!Array.isArray(addedRaw)) {
    return fail(`'added_tokens' must be an array, found ${describeJson(addedRaw)}`, 'added_tokens');
  }
  const added = new Set<string>();
  for (let i = 0; i < addedRaw.length; i++) {
    const t = addedRaw[i];
    if (!isObject(t)) fail(`added token ${i} must be an object, found ${describeJson(t)}`, 'added_tokens');
    const tok = t as Record<string, unknown>;
    const id = own(tok, 'id');
    const content = own(tok, 'content');
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= MAX_TOKEN_ID) {
      fail(
        `added token ${i} has id ${describeJson(id)} (ids are integers in 0..${MAX_TOKEN_ID - 1})`,
        'added_tokens',
      );
    }
    if (typeof content !== 'string' || content === '') {
      fail(
        `added token ${i} must have a non-empty 'content' string, found ${describeJson(content)}`,
        'added_tokens',
      );
    }
    for (const k of ['single_word', 'lstrip', 'rstrip', 'normalized', 'special']) {
      const v = own(tok, k);
      if (v !== undefined && typeof v !== 'boolean') {
        fail(`added token ${i} has '${k}' ${describeJson(v)} (expected true or false)`, 'added_tokens');
      }
    }
    added.add(content as string);
  }

  const unk = own(model, 'unk_token');
  if (typeof unk === 'string' && !Object.hasOwn(vocab, unk) && !added.has(unk)) {
    fail(`'model.unk_token' ${quoteName(unk)} is not in the vocabulary`, 'model.unk_token');
  }

  const stages: Record<string, unknown> = {};
  for (const k of ['normalizer', 'pre_tokenizer', 'post_processor', 'decoder']) {
    const v = own(json, k) ?? null;
    if (v !== null && !(isObject(v) && typeof v.type === 'string')) {
      fail(`'${k}' must be null or an object with a 'type' string, found ${describeJson(v)}`, k);
    }
    stages[k] = v;
  }
  // Without a fallback a byte-level BPE drops any byte it has no symbol for: encoding must not lose text.
  if (
    usesByteLevel(stages.pre_tokenizer) &&
    typeof unk !== 'string' &&
    own(model, 'byte_fallback') !== true
  ) {
    const alphabet = byteLevelAlphabet();
    for (let b = 0; b < 256; b++) {
      if (!Object.hasOwn(vocab, alphabet[b])) {
        fail(
          `'model.vocab' lacks the byte-level symbol ${quoteName(alphabet[b])} for byte ${b} ` +
            '(a ByteLevel tokenizer needs all 256)',
          'model.vocab',
        );
      }
    }
  }
  return {
    ...json,
    ...stages,
    added_tokens: addedRaw,
    model: { ...model, merges: pairs },
  };
}

/**
 * A Hugging Face tokenizer.json (BPE, e.g. GPT-NeoX / Pythia: NFC, ByteLevel pre-tokenizer and decoder) through
 * @huggingface/tokenizers. encode adds no special tokens (GPT-NeoX uses none) and decode does no clean-up of
 * spaces, so decode(encode(s)) === s for NFC text; ids outside the vocabulary decode to U+FFFD.
 */
export function hfTokenizer(json: Record<string, unknown>, file = 'tokenizer.json'): Tokenizer {
  const description = checkHfDescription(json, file);
  let hf: HfTokenizer;
  try {
    hf = new HfTokenizer(description, { clean_up_tokenization_spaces: false });
  } catch (e) {
    throw new ModelLoadError(file, `the tokenizer could not be built (${reason(e)})`);
  }
  let vocabSize = 0;
  for (const id of hf.get_vocab(true).values()) vocabSize = Math.max(vocabSize, id + 1);
  if (vocabSize === 0) throw new ModelLoadError(file, 'the vocabulary is empty', 'model.vocab');

  const encode = (text: string): number[] => {
    const { ids, tokens } = hf.encode(text, { add_special_tokens: false });
    for (let i = 0; i < ids.length; i++) {
      if (!Number.isInteger(ids[i])) throw new Error(`${file}: token ${quoteName(tokens[i])} has no id`);
    }
    return ids;
  };
  const known = (id: number) =>
    Number.isInteger(id) && id >= 0 && id < vocabSize && hf.id_to_token(id) !== undefined;
  const decodeRun = (run: number[]) =>
    run.length === 0
      ? ''
      : hf.decode(run, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  const decode = (ids: number[]): string => {
    let out = '';
    let run: number[] = [];
    for (const id of ids) {
      if (known(id)) {
        run.push(id);
      } else {
        out += decodeRun(run) + '\uFFFD';
        run = [];
      }
    }
    return out + decodeRun(run);
  };
  // Some stages only fail when used (a bad regex, an unknown option): find out now, not mid-run.
  try {
    decode(encode('Hello, world! 0123 naïve 日本 \n\t'));
  } catch (e) {
    throw new ModelLoadError(file, `the tokenizer fails on a test text (${reason(e)})`);
  }
  return { kind: 'hf-bpe', vocabSize, encode, decode };
}

/**
 * A tokenizer from its JSON description: `{ "type": "bytes" }`, or a Hugging Face tokenizer.json (an object with
 * a 'model', see hfTokenizer). Anything else raises ModelLoadError naming the file.
 */
export function parseTokenizerDescription(json: unknown, file = 'tokenizer.json'): Tokenizer {
  if (!isObject(json)) {
    throw new ModelLoadError(
      file,
      `expected a JSON object like {"type": "bytes"} or a Hugging Face tokenizer.json, found ${describeJson(json)}`,
    );
  }
  if (Object.hasOwn(json, 'model')) return hfTokenizer(json, file);
  const type = own(json, 'type');
  if (type === undefined) {
    throw new ModelLoadError(
      file,
      `missing key 'type' (expected "bytes") or 'model' (a Hugging Face tokenizer.json)`,
      'type',
    );
  }
  if (type !== 'bytes') {
    const found = typeof type === 'string' ? quoteName(type) : describeJson(type);
    throw new ModelLoadError(
      file,
      `tokenizer type ${found} is not supported (only "bytes", or a Hugging Face tokenizer.json)`,
      'type',
    );
  }
  return byteTokenizer();
}

/** HF tokenizer.json nests about 6 levels (normalizer/pre_tokenizer sequences); 64 leaves room, stays far from the stack limit. */
export const TOKENIZER_MAX_DEPTH = 64;

/** Parses tokenizer.json text (either kind); malformed JSON becomes a ModelLoadError. */
export function parseTokenizerText(text: string, file = 'tokenizer.json'): Tokenizer {
  const body = stripBom(text);
  // Checked before parsing: the tokenizer library walks the description recursively and overflows the stack.
  checkJsonDepth(body, TOKENIZER_MAX_DEPTH, file);
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (e) {
    throw new ModelLoadError(file, `not valid JSON (${reason(e)})`);
  }
  return parseTokenizerDescription(json, file);
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
