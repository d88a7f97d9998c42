import { describe, expect, it } from 'vitest';
import { ModelLoadError } from './errors';
import { byteTokenizer, parseTokenIds, parseTokenizerDescription } from './tokenizer';

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

describe('parseTokenizerDescription', () => {
  it('accepts {"type": "bytes"}', () => {
    const t = parseTokenizerDescription({ type: 'bytes' });
    expect(t.kind).toBe('bytes');
    expect(t.encode('A')).toEqual([65]);
  });

  it('names what it found otherwise', () => {
    const cases: [unknown, string][] = [
      [{ type: 'bpe' }, 'tokenizer.json: tokenizer type \'bpe\' is not supported (only "bytes")'],
      [{ type: 3 }, 'tokenizer.json: tokenizer type number 3 is not supported (only "bytes")'],
      [{}, 'tokenizer.json: missing key \'type\' (expected "bytes")'],
      [[], 'tokenizer.json: expected a JSON object like {"type": "bytes"}, found an array'],
      [null, 'tokenizer.json: expected a JSON object like {"type": "bytes"}, found null'],
      ['bytes', 'tokenizer.json: expected a JSON object like {"type": "bytes"}, found string \'bytes\''],
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
