// The why of a generation's faults: runs of a greedy generation with a real KV cache (run-synth-gen.ts, written
// without the cause library), each with one fault planted the way a decode kernel commits it, from the first decode
// step on at one layer — each found at decode step 1, its layer and op, with its cause named there, scored on the
// decode's rows; prompt faults on some rows only (a tile's input read through fp16, one position's output stored in
// fp16) named with their rows; a benign pair (exact and f32 sums) names nothing. Fresh seed per run (KERNEL_SEED=n
// fixes it; the seed is in every message).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { randomModelFiles } from '../model/random-model';
import { readRunFile } from '../model/run-file';
import { rowWords } from '../model/run-generation';
import { mulberry32 } from '../numeric/random';
import { analyzeRuns, streamRuns } from './analyze-runs';
import { type GenFault, type GenSynthOptions, synthGeneration } from './run-synth-gen';
import type { RunInput } from './runs-input';

const seed = freshSeed();
const rng = mulberry32(seed);
const shape = { vocab: 89, d: 48, layers: 3, heads: 4, ff: 94, rotaryPct: 0.5, parallel: true };
const P = 7 + Math.floor(rng() * 4);
const prompt = Array.from({ length: P }, () => Math.floor(rng() * shape.vocab));
const N = 4;
let engine: Engine;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
  await engine.loadModel(randomModelFiles(shape, seed));
});
afterAll(() => engine?.dispose());

async function run(o: GenSynthOptions, file: string): Promise<RunInput> {
  const cfg = engine.modelInfo!.config;
  const { bytes } = synthGeneration(cfg, engine.weights!, prompt, N, o);
  async function* one() {
    yield bytes;
  }
  return { file: await readRunFile(one(), bytes.length, cfg, { file }), sha256: null };
}

const layer = 1 + Math.floor(rng() * (shape.layers - 1));
/** Each decode fault, the op its check names and the cause that must be named first. */
const DECODE: [GenFault, string, string][] = [
  [{ kind: 'gelu-tanh', layer }, 'act', 'gelu-tanh'],
  [{ kind: 'kv-fp16', layer }, 'attention', 'kv-cache-fp16'],
  [{ kind: 'drop-position', layer, position: Math.floor(rng() * P) }, 'attention', 'kv-positions-dropped'],
  [{ kind: 'rotary-position', layer, offset: -1 }, 'attention', 'rotary-offset'],
  [{ kind: 'rotary-off-k', layer }, 'attention', 'rotary-off-k'],
  [{ kind: 'bias-dropped', layer }, 'dense', 'bias-dropped'],
  [{ kind: 'scale', layer, scale: 1 / 12 }, 'attention', 'softmax-scale'],
  [{ kind: 'residual-term', layer }, 'residual', 'residual-term-dropped'],
  [{ kind: 'other-layer-cache', layer, from: Math.floor(rng() * layer) }, 'attention', 'kv-other-layer'],
  [{ kind: 'window', layer, window: P - 2 - Math.floor(rng() * 3) }, 'attention', 'kv-positions-dropped'],
  [{ kind: 'acc-fp16', layer }, 'fc1', 'acc-fp16'],
];

describe('decode faults of a generation', () => {
  it.each(DECODE.map(([f, op, cause]) => [f.kind, f, op, cause] as const))(
    '%s: found at decode step 1, its layer and op, its cause named on the decode rows',
    async (_, fault, op, cause) => {
      const report = await analyzeRuns(engine, await run({ fault }, `${fault.kind}.safetensors`), null);
      const f = report.findings[0];
      const ctx = `seed ${seed}, P ${P}, ${JSON.stringify(fault)}: ${f.sentence}`;
      expect(f.diverged, ctx).toBe(true);
      expect(f.layer, ctx).toBe(layer);
      expect(f.check, ctx).toBe(`layers.${layer}.${op}`);
      // Its rows past the floor said from decode step 1: that step alone, or the stretch from it (to the last row:
      // "every row from decode step 1 (position P) on").
      const check = report.checks.find((c) => c.id === f.check)!;
      expect(check.firstRow, ctx).toBe(P);
      const T = report.tokens.length;
      expect(f.sentence, ctx).toContain(`run A, ${rowWords(P, P, check.pastTo!, T)}, layer ${layer}: `);
      const named = f.cause?.named[0];
      expect(named?.id, ctx).toBe(cause);
      // (rotary positions say from which row they jump themselves)
      expect(named?.params[cause === 'rotary-offset' ? 'from' : 'rowsFrom'], ctx).toBe(P);
      expect(f.sentence, ctx).toContain('from decode step 1');
      if (fault.kind === 'drop-position') expect(named?.params.position, ctx).toBe(fault.position);
      if (fault.kind === 'window') expect(named?.params.window, ctx).toBe(fault.window);
      if (fault.kind === 'other-layer-cache') expect(named?.params.layer, ctx).toBe(fault.from);
      if (fault.kind === 'rotary-position') expect(named?.params.offset, ctx).toBe(-1);
    },
  );
});

describe('prompt faults on some rows', () => {
  it('a tile of rows read through fp16, one row stored in fp16, a tanh GELU from a tile on, a term and a LayerNorm in half', async () => {
    const from = 1 + Math.floor(rng() * (P - 4));
    const cases: [GenFault, string, string, number, number][] = [
      [{ kind: 'rows-input-fp16', layer, from, to: from + 3 }, 'fc1', 'input-fp16', from, from + 3],
      [{ kind: 'rows-output-fp16', layer, from, to: from + 1 }, 'fc2', 'output-fp16', from, from + 1],
      // from a tile on
      [{ kind: 'rows-gelu-tanh', layer, from, to: P }, 'act', 'gelu-tanh', from, P],
      // every row: no rows said
      [{ kind: 'rows-term-bf16', layer, from: 0, to: P + N }, 'residual', 'residual-term-rounded', -1, -1],
      [{ kind: 'rows-ln2-fp16', layer, from: 0, to: P + N }, 'ln2', 'parts-fp16', -1, -1],
    ];
    for (const [fault, op, cause, a, b] of cases) {
      const report = await analyzeRuns(engine, await run({ fault }, `${fault.kind}.safetensors`), null);
      const f = report.findings[0];
      const ctx = `seed ${seed}, P ${P}, ${JSON.stringify(fault)}: ${f.sentence}`;
      expect(f.check, ctx).toBe(`layers.${layer}.${op}`);
      expect(f.cause?.named[0]?.id, ctx).toBe(cause);
      expect(f.cause?.named[0]?.params.rowsFrom, ctx).toBe(a < 0 ? undefined : a);
      expect(f.cause?.named[0]?.params.rowsTo, ctx).toBe(b < 0 ? undefined : b);
    }
  });
});

describe('a benign pair', () => {
  it('a generation with exact sums and its twin with f32 sums agree and name no cause', async () => {
    const a = await run({ label: 'exact' }, 'a.safetensors');
    const b = await run({ label: 'f32 sums', f32: true }, 'b.safetensors');
    const report = await analyzeRuns(engine, a, b);
    expect(report.verdict, `seed ${seed}: ${report.sentence}`).toBe('agree');
    for (const f of report.findings) expect(f.cause ?? null, `seed ${seed}: ${f.sentence}`).toBeNull();
  });
});

describe('parted generations as a pair', () => {
  it('two generations whose texts part at decode step 1 are compared on the rows they share, with the parting said', async () => {
    const cfg = engine.modelInfo!.config;
    const a = synthGeneration(cfg, engine.weights!, prompt, N);
    // B feeds another id to decode step 2: the texts part where decode step 1 (row P) chose.
    const other = (a.generated[1] + 1 + Math.floor(rng() * (cfg.vocabSize - 1))) % cfg.vocabSize;
    const b = synthGeneration(cfg, engine.weights!, prompt, N, { force: { step: 2, id: other } });
    const read = async (bytes: Uint8Array, file: string): Promise<RunInput> => {
      async function* one() {
        yield bytes;
      }
      return { file: await readRunFile(one(), bytes.length, cfg, { file }), sha256: null };
    };
    const report = await analyzeRuns(
      engine,
      await read(a.bytes, 'a.safetensors'),
      await read(b.bytes, 'b.safetensors'),
    );
    const ctx = `seed ${seed}, P ${P}: ${report.sentence}`;
    expect(report.verdict, ctx).toBe('agree');
    expect(report.tokens.length, ctx).toBe(P + 1);
    const p = report.parting!;
    expect(p, ctx).toBeDefined();
    expect([p.row, p.step, p.rows], ctx).toEqual([P, 1, P + 1]);
    expect(p.held, ctx).toEqual({ A: P + N - 1, B: P + N - 1 });
    expect(p.chose, ctx).toEqual({ A: a.generated[1], B: other });
    // A chose greedily (the exact forward's choice), B was made to choose another: no near tie, B against exact.
    expect(p.exact!.gap, ctx).toBeGreaterThan(0);
    expect(p.nearTie, ctx).toBe(false);
    expect(p.margin.A!, ctx).toBeGreaterThan(0);
    expect(report.sentence, ctx).toContain(
      `The texts part at decode step 1 (position ${P}): run A chose ${a.generated[1]}, run B ${other}; `,
    );
    expect(report.sentence, ctx).toContain('run B chose against the exact forward');
    // Streamed as the page and the CLI read (the analysis starts on A's header): the same report.
    const stream = streamRuns(engine, 2);
    const streamed = async (bytes: Uint8Array, j: number, file: string): Promise<RunInput> => {
      async function* chunks() {
        for (let i = 0; i < bytes.length; i += 4093) yield bytes.subarray(i, i + 4093);
      }
      return {
        file: await readRunFile(chunks(), bytes.length, cfg, { file, ...stream.reader(j) }),
        sha256: null,
      };
    };
    const [sa, sb] = await Promise.all([
      streamed(a.bytes, 0, 'a.safetensors'),
      streamed(b.bytes, 1, 'b.safetensors'),
    ]);
    const again = await stream.report(sa, sb);
    expect([again.verdict, again.parting?.row, again.parting?.chose], ctx).toEqual(['agree', P, p.chose]);
    expect(again.sentence, ctx).toBe(report.sentence);
  });

  it('generations of other prompts are still refused in one line', async () => {
    const cfg = engine.modelInfo!.config;
    const a = synthGeneration(cfg, engine.weights!, prompt, N);
    const b = synthGeneration(
      cfg,
      engine.weights!,
      [...prompt.slice(0, -1), (prompt[P - 1] + 1) % cfg.vocabSize],
      N,
    );
    const read = async (bytes: Uint8Array, file: string): Promise<RunInput> => {
      async function* one() {
        yield bytes;
      }
      return { file: await readRunFile(one(), bytes.length, cfg, { file }), sha256: null };
    };
    await expect(
      analyzeRuns(engine, await read(a.bytes, 'a.safetensors'), await read(b.bytes, 'b.safetensors')),
    ).rejects.toThrow(
      /run B is of other tokens than run A \(a\.safetensors\): they differ first at position/,
    );
  });
});
