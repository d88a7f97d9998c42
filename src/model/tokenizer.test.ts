import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ModelLoadError } from './errors';
import { byteTokenizer, parseTokenIds, parseTokenizerDescription, parseTokenizerText } from './tokenizer';

describe('byteTokenizer', () => {
  const tok = byteTokenizer();

  it('describes itself', () => {
    expect(tok.kind).toBe('bytes');
    expect(tok.vocabSize).toBe(256);
  });

  it('encodes text as its UTF-8 bytes', () => {
    expect(tok.encode('')).toEqual([]);
    expect(tok.encode('Hi!')).toEqual([72, 105, 33]);
    expect(tok.encode('é')).toEqual([0xc3, 0xa9]);
    expect(tok.encode('€')).toEqual([0xe2, 0x82, 0xac]);
    expect(tok.encode('😀')).toEqual([0xf0, 0x9f, 0x98, 0x80]);
  });

  it('round-trips text, including astral characters and newlines', () => {
    for (const s of ['The quick brown fox', 'naïve café\n\t', '日本語 😀 ok', '\u0000x']) {
      expect(tok.decode(tok.encode(s))).toBe(s);
    }
  });

  it('shows broken UTF-8 as U+FFFD instead of throwing', () => {
    expect(tok.decode([0xe2, 0x82])).toBe('\uFFFD'); // truncated 3-byte sequence
    expect(tok.decode([0x61, 0xff, 0x62])).toBe('a\uFFFDb');
    expect(tok.decode([0xc3])).toBe('\uFFFD');
  });

  it('shows ids outside 0..255 as U+FFFD without merging the bytes around them', () => {
    expect(tok.decode([0x61, 300, 0x62])).toBe('a\uFFFDb');
    expect(tok.decode([0xc3, 256, 0xa9])).toBe('\uFFFD\uFFFD\uFFFD');
    expect(tok.decode([-1, 1.5])).toBe('\uFFFD\uFFFD');
  });
});

const EXPECTED_OBJECT =
  'tokenizer.json: expected a JSON object like {"type": "bytes"} or a Hugging Face tokenizer.json';

describe('parseTokenizerDescription', () => {
  it('accepts {"type": "bytes"}', () => {
    const t = parseTokenizerDescription({ type: 'bytes' });
    expect(t.kind).toBe('bytes');
    expect(t.encode('A')).toEqual([65]);
  });

  it('names what it found otherwise', () => {
    const cases: [unknown, string][] = [
      [
        { type: 'bpe' },
        'tokenizer.json: tokenizer type \'bpe\' is not supported (only "bytes", or a Hugging Face tokenizer.json)',
      ],
      [
        { type: 3 },
        'tokenizer.json: tokenizer type number 3 is not supported (only "bytes", or a Hugging Face tokenizer.json)',
      ],
      [
        {},
        "tokenizer.json: missing key 'type' (expected \"bytes\") or 'model' (a Hugging Face tokenizer.json)",
      ],
      [[], `${EXPECTED_OBJECT}, found an array`],
      [null, `${EXPECTED_OBJECT}, found null`],
      ['bytes', `${EXPECTED_OBJECT}, found string 'bytes'`],
    ];
    for (const [json, message] of cases) {
      let err: unknown;
      try {
        parseTokenizerDescription(json);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ModelLoadError);
      expect((err as Error).message).toBe(message);
    }
  });
});

/** GPT-2's byte -> symbol table as GPT-NeoX's ByteLevel uses it (printable bytes stand for themselves). */
function byteSymbols(): string[] {
  const out: string[] = [];
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    out.push(String.fromCharCode(printable ? b : 256 + extra++));
  }
  return out;
}

/**
 * A tiny GPT-NeoX-style tokenizer.json: NFC, ByteLevel pre-tokenizer / post-processor / decoder, a BPE whose
 * vocabulary is the 256 byte symbols (id = byte value; ' ' is 'Ġ' = 32) plus five merges, and one special token.
 */
function tinyTokenizerJson(): Record<string, unknown> {
  const vocab: Record<string, number> = {};
  byteSymbols().forEach((sym, b) => {
    vocab[sym] = b;
  });
  const merges = ['Ġ t', 'h e', 'Ġt he', 'l l', 'he ll']; // ranks 0..4
  merges.forEach((m, i) => {
    vocab[m.replace(' ', '')] = 256 + i; // Ġt 256, he 257, Ġthe 258, ll 259, hell 260
  });
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [
      {
        id: 261,
        content: '<|endoftext|>',
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special: true,
      },
    ],
    normalizer: { type: 'NFC' },
    pre_tokenizer: byteLevel,
    post_processor: byteLevel,
    decoder: byteLevel,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      vocab,
      merges,
    },
  };
}

/** The tiny tokenizer written to a tokenizer.json file and read back as text, the way a model folder is. */
function tinyFromFile(json: Record<string, unknown> = tinyTokenizerJson()) {
  const dir = mkdtempSync(join(tmpdir(), 'tok-'));
  try {
    const path = join(dir, 'tokenizer.json');
    writeFileSync(path, JSON.stringify(json, null, 2));
    return parseTokenizerText(readFileSync(path, 'utf8'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function refusal(fn: () => unknown): ModelLoadError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ModelLoadError) return e;
    throw new Error(`expected a ModelLoadError, got ${String(e)}`);
  }
  throw new Error('expected a ModelLoadError, nothing was thrown');
}

describe('Hugging Face tokenizer.json (BPE)', () => {
  const tok = tinyFromFile();

  it('describes itself: kind hf-bpe, ids 0..261', () => {
    expect(tok.kind).toBe('hf-bpe');
    expect(tok.vocabSize).toBe(262);
  });

  it('encodes to the ids the merges give (lowest rank first, words split before the spaces)', () => {
    const cases: [string, number[]][] = [
      ['', []],
      ['the', [116, 257]], // t h e -> t he (h e); "t he" is not a merge
      [' the', [258]], // Ġ t h e -> Ġt h e -> Ġt he -> Ġthe
      ['the the', [116, 257, 258]], // pre-tokens 'the', 'Ġthe'
      [' then', [258, 110]],
      ['hello', [260, 111]], // h e l l o -> he l l o -> he ll o -> hell o
      [' hello there', [32, 260, 111, 258, 114, 101]], // 'Ġh' is not a merge
      ['a  b', [97, 32, 32, 98]], // 'Ġ' before 'Ġb' splits off as its own pre-token
      ['é', [0xc3, 0xa9]], // UTF-8 bytes of U+00E9, as byte symbols
      ['😀!', [0xf0, 0x9f, 0x98, 0x80, 33]],
      ['<|endoftext|>the', [261, 116, 257]], // the special token is matched before pre-tokenizing
      ['\n\n', [10, 10]],
    ];
    for (const [text, ids] of cases) expect(tok.encode(text), JSON.stringify(text)).toEqual(ids);
  });

  it('normalizes to NFC like GPT-NeoX (e + combining acute encodes as é)', () => {
    expect(tok.encode('e\u0301')).toEqual([0xc3, 0xa9]);
  });

  it('round-trips ASCII and UTF-8 text exactly (no space clean-up)', () => {
    for (const s of [
      'The quick brown fox, the hell. Then?',
      "Hello , world ! it 's here .",
      '  leading and trailing spaces  ',
      'tabs\tand\nnewlines\r\n',
      'naïve café, 日本語, Ελληνικά, emoji 😀🎉, math ∑∫',
      '<|endoftext|> the end <|endoftext|>',
      'x',
    ]) {
      expect(tok.decode(tok.encode(s))).toBe(s);
    }
  });

  it('decodes ids outside the vocabulary as U+FFFD without merging the text around them', () => {
    expect(tok.decode([])).toBe('');
    expect(tok.decode([258, 999, 258])).toBe(' the\uFFFD the');
    expect(tok.decode([-1, 1.5, 262])).toBe('\uFFFD\uFFFD\uFFFD');
    expect(tok.decode([0xc3])).toBe('\uFFFD'); // a cut UTF-8 sequence
    expect(tok.decode([261])).toBe('<|endoftext|>');
  });

  it('accepts merges in the newer [a, b] form and a description object directly', () => {
    const json = tinyTokenizerJson();
    const model = json.model as Record<string, unknown>;
    model.merges = (model.merges as string[]).map((m) => m.split(' '));
    const t = parseTokenizerDescription(json);
    expect(t.encode(' hello there')).toEqual([32, 260, 111, 258, 114, 101]);
  });

  it('refuses malformed tokenizer.json files with a ModelLoadError naming tokenizer.json', () => {
    const edits: [string, (j: Record<string, unknown>, m: Record<string, unknown>) => void, RegExp][] = [
      ['model not an object', (j) => (j.model = [1]), /'model' must be an object, found an array/],
      ['model type WordPiece', (_, m) => (m.type = 'WordPiece'), /model type 'WordPiece' is not supported/],
      ['no model type', (_, m) => delete m.type, /missing key 'model.type'/],
      ['vocab an array', (_, m) => (m.vocab = []), /'model.vocab' must be an object/],
      ['negative id', (_, m) => ((m.vocab as Record<string, number>).x = -1), /token 'x' the id number -1/],
      ['fractional id', (_, m) => ((m.vocab as Record<string, number>).x = 2.5), /the id number 2.5/],
      ['huge id', (_, m) => ((m.vocab as Record<string, number>).x = 1e300), /the id number 1e\+300/],
      ['duplicate id', (_, m) => ((m.vocab as Record<string, number>).x = 3), /gives id 3 to both/],
      ['merges a string', (_, m) => (m.merges = 'Ġ t'), /'model.merges' must be an array/],
      ['merge of three', (_, m) => (m.merges = ['a b c']), /merge 0 must be "a b" or \["a", "b"\]/],
      ['merge with a number', (_, m) => (m.merges = [['a', 1]]), /merge 0 must be/],
      ['merge out of vocab', (_, m) => (m.merges = ['Ġ t', 'q z']), /merge 1 \('q z'\) uses 'qz'/],
      [
        'byte symbol missing',
        (_, m) => delete (m.vocab as Record<string, number>)['!'],
        /lacks the byte-level symbol '!' for byte 33/,
      ],
      [
        'unk not in vocab',
        (_, m) => (m.unk_token = '<unk>'),
        /'model.unk_token' '<unk>' is not in the vocabulary/,
      ],
      ['unk a number', (_, m) => (m.unk_token = 3), /'model.unk_token' must be a string or null/],
      ['added tokens an object', (j) => (j.added_tokens = {}), /'added_tokens' must be an array/],
      [
        'added token id',
        (j) => (j.added_tokens = [{ id: 'x', content: 'a' }]),
        /added token 0 has id string 'x'/,
      ],
      [
        'added token content',
        (j) => (j.added_tokens = [{ id: 5 }]),
        /added token 0 must have a non-empty 'content'/,
      ],
      [
        'pre-tokenizer a string',
        (j) => (j.pre_tokenizer = 'ByteLevel'),
        /'pre_tokenizer' must be null or an object/,
      ],
      [
        'unknown decoder',
        (j) => (j.decoder = { type: 'Bogus' }),
        /could not be built \(Unknown Decoder type: Bogus\)/,
      ],
      ['unknown normalizer', (j) => (j.normalizer = { type: 'Zap' }), /could not be built/],
      ['dropout 2', (_, m) => (m.dropout = 2), /'model.dropout' must be null or a number in \[0, 1\]/],
    ];
    for (const [what, edit, message] of edits) {
      const json = tinyTokenizerJson();
      edit(json, json.model as Record<string, unknown>);
      const err = refusal(() => parseTokenizerDescription(json));
      expect(err.file, what).toBe('tokenizer.json');
      expect(err.message, what).toMatch(/^tokenizer\.json: /);
      expect(err.message, what).toMatch(message);
      expect(err.message, what).not.toContain('\n');
    }
  });

  it('refuses a truncated or non-JSON tokenizer.json file', () => {
    const text = JSON.stringify(tinyTokenizerJson());
    for (const bad of [text.slice(0, text.length >> 1), '', '{"model": ', 'not json']) {
      const err = refusal(() => parseTokenizerText(bad));
      expect(err.message).toMatch(/^tokenizer\.json: not valid JSON \(/);
    }
    expect(refusal(() => parseTokenizerText('{"model": null}')).message).toBe(
      "tokenizer.json: 'model' must be an object, found null",
    );
  });
});

describe('parseTokenIds', () => {
  it('parses commas and whitespace', () => {
    expect(parseTokenIds('3,14,15', 256)).toEqual([3, 14, 15]);
    expect(parseTokenIds('  3 , 14,\n15 ', 256)).toEqual([3, 14, 15]);
    expect(parseTokenIds('3 14\t15', 256)).toEqual([3, 14, 15]);
    expect(parseTokenIds('0', 1)).toEqual([0]);
    expect(parseTokenIds('255', 256)).toEqual([255]);
    expect(Object.is(parseTokenIds('-0', 10)[0], 0)).toBe(true);
  });

  it('refuses empty input and empty entries', () => {
    expect(() => parseTokenIds('', 256)).toThrow('no token ids given');
    expect(() => parseTokenIds('  \n', 256)).toThrow('no token ids given');
    expect(() => parseTokenIds('3,,4', 256)).toThrow('token id 2 is empty (stray comma?)');
    expect(() => parseTokenIds('3,', 256)).toThrow('token id 2 is empty');
    expect(() => parseTokenIds(',3', 256)).toThrow('token id 1 is empty');
  });

  it('refuses non-integers', () => {
    expect(() => parseTokenIds('3,1.5', 256)).toThrow("token id 2 '1.5' is not an integer");
    expect(() => parseTokenIds('abc', 256)).toThrow("token id 1 'abc' is not an integer");
    expect(() => parseTokenIds('0x10', 256)).toThrow('is not an integer');
    expect(() => parseTokenIds('1e2', 256)).toThrow('is not an integer');
  });

  it('refuses out-of-range ids', () => {
    expect(() => parseTokenIds('256', 256)).toThrow(
      'token id 256 is out of range (vocabulary has 256 ids: 0..255)',
    );
    expect(() => parseTokenIds('1,-1', 256)).toThrow('token id -1 is out of range');
    expect(() => parseTokenIds('99999999999999999999', 50304)).toThrow('out of range');
  });
});
