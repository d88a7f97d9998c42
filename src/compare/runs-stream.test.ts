// The runs analysis fed as two files are read at once (streamRuns, runs-feed.ts): their tensors interleaved in
// random-sized chunks, it gives the report of the whole files; a file that breaks off mid-read, or a run B of other
// tokens, leaves nothing on the GPU and the engine as it was.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { randomModelFiles } from '../model/random-model';
import { type ReadRunOptions, readRunFile } from '../model/run-file';
import { mulberry32 } from '../numeric/random';
import { analyzeRuns, streamRuns } from './analyze-runs';
import { type SynthOptions, synthRun } from './run-synth';
import type { RunsReport } from './runs-report';

const seed = freshSeed();
const rng = mulberry32(seed);
let engine: Engine;
const shape = [
  { vocab: 89, d: 24, layers: 3, heads: 2, ff: 50, rotaryPct: 0.5, parallel: true },
  { vocab: 83, d: 30, layers: 2, heads: 3, ff: 44, rotaryPct: 1, parallel: false },
][Math.floor(rng() * 2)];
const T = 5 + Math.floor(rng() * 9);
const tokens = Array.from({ length: T }, () => Math.floor(rng() * shape.vocab));
const where = `seed ${seed}, ${shape.parallel ? 'parallel' : 'sequential'}, T ${T}`;

beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
  await engine.loadModel(randomModelFiles(shape, seed));
});
afterAll(() => engine?.dispose());

/** Random-sized chunks, each a turn of the event loop after the last (as a disk's), to `stop` bytes if given. */
async function* chunks(bytes: Uint8Array, stop = bytes.length) {
  for (let i = 0; i < stop; ) {
    const n = Math.min(stop - i, 1 + Math.floor(rng() * 3000));
    await new Promise((r) => setTimeout(r, 0));
    yield bytes.subarray(i, i + n);
    i += n;
  }
}

function synth(o: SynthOptions, ids = tokens): Uint8Array {
  return synthRun(engine.modelInfo!.config, engine.weights!, ids, o);
}

function read(
  bytes: Uint8Array,
  file: string,
  reader?: Pick<ReadRunOptions, 'onHeader' | 'onSlot'>,
  stop?: number,
) {
  return readRunFile(chunks(bytes, stop), bytes.length, engine.modelInfo!.config, { file, ...reader });
}

const timeless = (r: RunsReport) =>
  JSON.parse(JSON.stringify([r.checks, r.curves, r.findings, r.verdict], (k, v) => (k === 'ms' ? 0 : v)));

const inUse = () => engine.gpuParts().pool.stats().bytesInUse;

describe('the runs analysis fed as the files are read', () => {
  it.each(['gpu', 'cpu'] as const)(
    'two files read at once, interleaved (%s oracle): the report of the whole files, every buffer back',
    {
      timeout: 300_000,
    },
    async (oracle) => {
      const j = Math.floor(rng() * shape.layers);
      const a = synth({ label: 'clean' });
      const b = synth({ fault: { kind: 'residual-bf16', layer: j }, label: 'bf16 add' });
      const live = inUse();
      const stream = streamRuns(engine, 2, { oracle });
      const [fa, fb] = await Promise.all([
        read(a, 'a.safetensors', stream.reader(0)),
        read(b, 'b.safetensors', stream.reader(1)),
      ]);
      const streamed = await stream.report({ file: fa, sha256: null }, { file: fb, sha256: null });
      expect(inUse(), where).toBe(live);
      expect(streamed.oracle.kind).toBe(oracle);
      const whole = await analyzeRuns(
        engine,
        { file: fa, sha256: null },
        { file: fb, sha256: null },
        { oracle },
      );
      expect(timeless(streamed), where).toEqual(timeless(whole));
      expect(
        streamed.findings.map((f) => f.diverged),
        where,
      ).toEqual([false, true]);
      expect(streamed.findings[1].layer, where).toBe(j);
    },
  );

  it('a file that breaks off mid-read: the read refused, the analysis’s buffers back, the engine unharmed', {
    timeout: 300_000,
  }, async () => {
    const a = synth({});
    const b = synth({ fault: { kind: 'act-scale', layer: 0 } });
    const live = inUse();
    const stream = streamRuns(engine, 2, { oracle: 'gpu' });
    // In the second half of the tensors (past the header's 8-byte length and JSON): the first half fed and
    // re-run, the rest never.
    const header = 8 + Number(new DataView(b.buffer, b.byteOffset).getBigUint64(0, true));
    const stop = header + Math.floor((0.5 + 0.49 * rng()) * (b.length - header));
    const reads = await Promise.allSettled([
      read(a, 'a.safetensors', stream.reader(0)),
      read(b, 'b.safetensors', stream.reader(1), stop),
    ]);
    expect(reads[0].status, where).toBe('fulfilled');
    expect(reads[1].status, `${where}, stop ${stop} of ${b.length}`).toBe('rejected');
    await stream.release();
    expect(inUse(), where).toBe(live);
    const again = await analyzeRuns(
      engine,
      { file: (reads[0] as PromiseFulfilledResult<never>).value, sha256: null },
      null,
    );
    expect(again.verdict, `${again.sentence} (${where})`).toBe('agree');
  });

  it('a run B of other tokens: one clear line, nothing left on the GPU', { timeout: 300_000 }, async () => {
    const other = tokens.map((t, i) => (i === T - 1 ? (t + 1) % shape.vocab : t));
    const live = inUse();
    const stream = streamRuns(engine, 2, { oracle: 'gpu' });
    const [fa, fb] = await Promise.all([
      read(synth({}), 'a.safetensors', stream.reader(0)),
      read(synth({}, other), 'b.safetensors', stream.reader(1)),
    ]);
    await expect(stream.report({ file: fa, sha256: null }, { file: fb, sha256: null })).rejects.toThrow(
      `run B is of other tokens than run A (a.safetensors): they differ first at position ${T - 1}`,
    );
    expect(inUse(), where).toBe(live);
  });
});
