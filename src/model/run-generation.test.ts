// Runs of a generation: the prefill and the generated ids read from __metadata__, refused in one line when they
// cannot describe the run's tokens; rows named by decode step; the first row past the floor; two generations whose
// texts part, paired on the rows they share.
import { describe, expect, it } from 'vitest';
import { firstRowPast, rowInWords, rowsPast, runRows } from '../compare/run-rows';
import { freshSeed } from '../kernels/testing';
import { mulberry32 } from '../numeric/random';
import { parseConfigText } from './config';
import { randomConfigJson } from './random-model';
import { checkSameTokens, readRunFile } from './run-file';
import { parseRunGeneration, partedPair, rowStep, rowWords } from './run-generation';
import { writeSafetensors } from './safetensors-write';

const cfg = parseConfigText(
  JSON.stringify(
    randomConfigJson({ vocab: 50, d: 12, layers: 2, heads: 3, ff: 20, rotaryPct: 0.5, parallel: true }),
  ),
);
const tokens = [1, 2, 3, 4, 49, 7];

describe('generation metadata', () => {
  it('reads prefill and generated; a run without prefill is a run of one forward', () => {
    const meta = { tokens: '', prefill: '4', generated: '[49, 7, 8]' };
    expect(parseRunGeneration(meta, tokens, cfg, 'f')).toEqual({ prefill: 4, generated: [49, 7, 8] });
    expect(parseRunGeneration({ prefill: ' 6 ' }, tokens, cfg, 'f')).toEqual({ prefill: 6, generated: null });
    expect(parseRunGeneration({}, tokens, cfg, 'f')).toBeNull();
  });
  it.each([
    [{ prefill: '0' }, /prefill = "0" must be the prompt's length, a whole number from 1 to the 6 tokens/],
    [{ prefill: '7' }, /prefill = "7"/],
    [{ prefill: '2.5' }, /prefill = "2.5"/],
    [{ generated: '[1]' }, /'generated' but no 'prefill'/],
    [{ prefill: '4', generated: 'x' }, /generated is not JSON/],
    [{ prefill: '4', generated: '[49, 50]' }, /list of token ids of this model \(vocabulary 50\)/],
    [{ prefill: '4', generated: '[49]' }, /does not continue the prompt/],
    [{ prefill: '4', generated: '[49, 8, 7]' }, /does not continue the prompt/],
  ])('refuses %j in one line', (meta, pattern) => {
    expect(() => parseRunGeneration(meta, tokens, cfg, 'gen.safetensors')).toThrow(pattern);
  });
  it('is read with the run, and checked before any tensor', async () => {
    const T = tokens.length;
    const file = (meta: Record<string, string>) =>
      writeSafetensors([{ name: 'logits', dtype: 'F32', shape: [T, 50], data: new Float32Array(T * 50) }], {
        tokens: JSON.stringify(tokens),
        ...meta,
      });
    const read = (bytes: Uint8Array) => {
      async function* one() {
        yield bytes;
      }
      return readRunFile(one(), bytes.length, cfg, { file: 'gen.safetensors' });
    };
    const run = await read(file({ prefill: '3', generated: '[4, 49, 7, 9]' }));
    expect(run.generation).toEqual({ prefill: 3, generated: [4, 49, 7, 9] });
    expect((await read(file({}))).generation).toBeNull();
    await expect(read(file({ prefill: '3', generated: '[4, 9]' }))).rejects.toThrow(/^gen.safetensors: /);
  });
  it('names a row by the step that computed it', () => {
    expect(rowStep(3, 4)).toEqual({ phase: 'prefill', step: 0 });
    expect(rowStep(4, 4)).toEqual({ phase: 'decode', step: 1 });
    expect(rowWords(36, 32)).toBe('decode step 5 (position 36)');
    expect(rowWords(2, 32)).toBe('the prefill (position 2)');
  });
  it('says a stretch of rows past the floor whole: every row of the prompt, or every row from one on', () => {
    // a prompt of 6 rows, then decode steps 1–4 (positions 6–9): T = 10
    const T = 10;
    expect(rowWords(0, 6, 5, T)).toBe('every row of the prompt (the prefill, positions 0–5)');
    expect(rowWords(0, 6, 9, T)).toBe(
      'every row of the prompt (the prefill, positions 0–5) and every decode step after it',
    );
    expect(rowWords(0, 6, 7, T)).toBe(
      'every row of the prompt (the prefill, positions 0–5) and decode steps 1–2',
    );
    expect(rowWords(0, 6, 6, T)).toBe(
      'every row of the prompt (the prefill, positions 0–5) and decode step 1',
    );
    expect(rowWords(3, 6, 9, T)).toBe(
      'the prefill from position 3 on (positions 3–5) and every decode step after it',
    );
    expect(rowWords(3, 6, 5, T)).toBe('the prefill from position 3 on (positions 3–5)');
    expect(rowWords(2, 6, 3, T)).toBe('the prefill (positions 2–3)');
    expect(rowWords(5, 6, 5, T)).toBe('the prefill (position 5)');
    expect(rowWords(7, 6, 9, T)).toBe('every row from decode step 2 (position 7) on');
    expect(rowWords(6, 6, 8, T)).toBe('decode steps 1–3 (positions 6–8)');
    expect(rowWords(9, 6, 9, T)).toBe('decode step 4 (position 9)');
    // a run of the prompt alone
    expect(rowWords(0, 6, 5, 6)).toBe('every row of the prompt (the prefill, positions 0–5)');
    // a run of one forward: positions
    expect(rowInWords(0, null, 9, T)).toBe('every position from 0 on');
    expect(rowInWords(2, null, 4, T)).toBe('positions 2–4');
    expect(rowInWords(2, null)).toBe('position 2');
  });
});

describe('firstRowPast', () => {
  it('finds the first row past k × its floor, for any seed', () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const n = 5 + Math.floor(rng() * 30);
    const floor = 1e-7 * (1 + rng());
    const rows = Array.from({ length: n }, () => floor * rng() * 9);
    const floors = rows.map(() => floor * rng());
    expect(firstRowPast(rows, floors, floor, 'fp32', 10), `seed ${seed}`).toBeNull();
    const at = Math.floor(rng() * n);
    rows[at] = floor * (11 + rng() * 100);
    if (at + 1 < n) rows[at + 1] = Number.NaN;
    expect(firstRowPast(rows, floors, floor, 'fp32', 10), `seed ${seed}`).toBe(at);
    // A larger floor at that row itself keeps it under.
    const high = [...floors];
    high[at] = rows[at];
    expect(firstRowPast(rows, high, floor, 'fp32', 10), `seed ${seed}`).toBe(at + 1 < n ? at + 1 : null);
    // Never below one rounding of the storage: an fp16 run's rows at fp32's floor are fine.
    expect(firstRowPast([2 ** -12], [0], 1e-9, 'fp16', 10)).toBeNull();
    expect(firstRowPast(null, null, floor, 'fp32', 10)).toBeNull();
  });
  it('finds the unbroken stretch of rows past from the first, for any seed', () => {
    const seed = freshSeed();
    const rng = mulberry32(seed);
    const n = 5 + Math.floor(rng() * 30);
    const floor = 1e-7 * (1 + rng());
    const rows = Array.from({ length: n }, () => floor * rng() * 9);
    const floors = rows.map(() => floor * rng());
    expect(rowsPast(rows, floors, floor, 'fp32', 10), `seed ${seed}`).toBeNull();
    const at = Math.floor(rng() * n);
    const to = at + Math.floor(rng() * (n - at));
    for (let r = at; r <= to; r++)
      rows[r] = rng() < 0.2 ? Number.POSITIVE_INFINITY : floor * (11 + rng() * 100);
    // a row past after a gap is not part of the stretch
    if (to + 2 < n) rows[to + 2] = Number.NaN;
    expect(rowsPast(rows, floors, floor, 'fp32', 10), `seed ${seed}`).toEqual({ first: at, to });
    expect(firstRowPast(rows, floors, floor, 'fp32', 10), `seed ${seed}`).toBe(at);
  });
});

describe('parted generations as a pair', () => {
  const P = 4;
  const run = (ids: number[], generated: number[] | null) => ({
    tokens: ids,
    generation: { prefill: P, generated },
  });
  it('part where their streams (the tokens, then the last generated id) first differ, from the prompt on', () => {
    const prompt = [5, 6, 7, 8];
    // texts part at the choice of decode step 2 (row P + 1): tokens differ at index P + 2
    const a = run([...prompt, 10, 11, 12], [10, 11, 12, 13]);
    const b = run([...prompt, 10, 11, 20], [10, 11, 20, 21]);
    expect(partedPair(a, b)).toEqual({ rows: P + 2, row: P + 1, chose: { a: 12, b: 20 } });
    // the first generated id differs: the prefill's last row chose
    const c = run([...prompt, 30], [30, 31]);
    expect(partedPair(a, c)).toEqual({ rows: P, row: P - 1, chose: { a: 10, b: 30 } });
    // the same tokens, only the last generated id (which no row reads) differs
    const d = run([...prompt, 10, 11, 12], [10, 11, 12, 40]);
    expect(partedPair(a, d)).toEqual({ rows: P + 3, row: P + 2, chose: { a: 13, b: 40 } });
    // one generation shorter, the same up to its end: compared on its rows
    const e = run([...prompt, 10], [10, 11]);
    expect(partedPair(a, e)).toEqual({ rows: P + 1, row: P, chose: { a: 11, b: 11 } });
  });

  it('are no pair: the same tokens and ids, other prompts, other prefills, a run of one forward', () => {
    const prompt = [5, 6, 7, 8];
    const a = run([...prompt, 10, 11], [10, 11, 12]);
    expect(partedPair(a, run([...prompt, 10, 11], [10, 11, 12]))).toBeNull();
    expect(partedPair(a, run([5, 6, 9, 8, 10, 11], [10, 11, 12]))).toBeNull();
    expect(
      partedPair(a, { tokens: [...prompt, 10, 11], generation: { prefill: 3, generated: null } }),
    ).toBeNull();
    expect(partedPair(a, { tokens: [...prompt, 10, 11], generation: null })).toBeNull();
  });

  it('the run file check lets a parted pair through and still refuses other prompts in one line', async () => {
    const make = async (ids: number[], generated: number[], file: string) => {
      const bytes = writeSafetensors(
        [
          {
            name: 'logits',
            dtype: 'F32',
            shape: [ids.length, cfg.vocabSize],
            data: new Float32Array(ids.length * cfg.vocabSize),
          },
        ],
        { tokens: JSON.stringify(ids), prefill: String(P), generated: JSON.stringify(generated) },
      );
      async function* one() {
        yield bytes;
      }
      return readRunFile(one(), bytes.length, cfg, { file });
    };
    const a = await make([1, 2, 3, 4, 10, 11], [10, 11, 12], 'a.safetensors');
    const b = await make([1, 2, 3, 4, 10, 20], [10, 20, 21], 'b.safetensors');
    expect(() => checkSameTokens(a, b)).not.toThrow();
    const cut = runRows(b, 5);
    expect(cut.tokens).toEqual([1, 2, 3, 4, 10]);
    expect(cut.generation).toEqual({ prefill: P, generated: [10, 20] });
    expect(cut.slots.get('logits')!.data.length).toBe(5 * cfg.vocabSize);
    const c = await make([1, 2, 9, 4, 10, 11], [10, 11, 12], 'c.safetensors');
    expect(() => checkSameTokens(a, c)).toThrow(
      /run B is of other tokens than run A \(a\.safetensors\): they differ first at position 2/,
    );
  });
});
