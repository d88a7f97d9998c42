// The cause of the two-path compare's decode finding: the decode teaching fault (decode_rotary: the single-row
// decode step rotated as position 0) planted from a random layer is found at decode step 1, its layer and the fused
// QKV projection and attention core, and the cause named there is the rotary's: every row from decode step 1 on
// rotated as position 0 — in the decode check, its sentence and the generation's one story. A clean generation
// names no cause. Where the decode check names an op itself (every op recorded with its taps: here a run of a
// generation written apart from the library, run-synth-gen.ts, with a tanh GELU in its decode steps), the decode
// finding carries the cause the runs analysis found there, and the one story ends with it. Fresh seed per run
// (KERNEL_SEED=n fixes it; the seed is in every message); 56 seeds pass.
import Ajv2020 from 'ajv/dist/2020';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import schema from '../../docs/report.schema.json';
import { Engine } from '../engine/engine';
import { ALL_FUSED } from '../engine/fused-kernels';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { randomModelFiles } from '../model/random-model';
import { readRunFile } from '../model/run-file';
import { mulberry32 } from '../numeric/random';
import { defaultRunSpec, type RunSpec } from '../run/runspec';
import { reportToJson } from '../ui/export';
import { analyze } from './analyze';
import { analyzeRuns } from './analyze-runs';
import { decodeCheckOf, decodeRows } from './decode-run-file';
import { decodeChecker } from './decode-runs';
import { generationWords } from './generation-verdict';
import { synthGeneration } from './run-synth-gen';

const seed = freshSeed();
const rng = mulberry32(seed);
// (d and ff off the GEMM tiles; a prompt of 5..9 tokens)
const shape = { vocab: 89, d: 48, layers: 3, heads: 4, ff: 94, rotaryPct: 0.5, parallel: true };
const prompt = Array.from({ length: 5 + Math.floor(rng() * 5) }, () => Math.floor(rng() * shape.vocab));
const P = prompt.length;
let engine: Engine;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
  await engine.loadModel(randomModelFiles(shape, seed));
});
afterAll(() => engine?.dispose());

const specOf = (faults: RunSpec['faults']): RunSpec => ({
  ...defaultRunSpec(),
  model: { kind: 'embedded', id: 'test' },
  fused: [...ALL_FUSED],
  faults,
  seed,
  generate: 4,
});
const skip = { bisection: true, determinism: true, taps: true } as const;

describe('the two-path decode finding names its cause', () => {
  it('Decode step rotated as position 0: step 1, its layer, the fused attention, rotary-offset (position 0)', async () => {
    const fromLayer = Math.floor(rng() * shape.layers);
    const spec = specOf([{ id: 'decode_rotary', fromLayer }]);
    const r = await analyze(engine, spec, prompt, { skip, checkDecode: decodeChecker(engine) });
    const [ref, fused] = r.generation!.decode!;
    const ctx = `seed ${seed}, P ${P}, layer ${fromLayer}: ${fused.sentence}`;
    expect(r.verdict, ctx).toBe('generation-diverged');
    expect(fused.born?.step, ctx).toBe(1);
    expect(fused.born?.row, ctx).toBe(P);
    expect(fused.born?.layer, ctx).toBe(fromLayer);
    expect(fused.born?.check, ctx).toBe(`layers.${fromLayer}.attn_block`);
    // Rotated as position 0 from the first decode step on (the prompt's rows the exact op's). A rotation at
    // position 0 is the identity, so the same rows with rotary on none of a head's dims are the same arithmetic:
    // the library names both, equally, and nothing else.
    const named = fused.cause?.named ?? [];
    expect(named.find((n) => n.id === 'rotary-offset')?.params, ctx).toEqual({ from: P, offset: 'zero' });
    for (const n of named.filter((x) => x.id !== 'rotary-offset'))
      expect([n.id, n.params], ctx).toEqual(['rotary-width', { ndims: 0, rowsFrom: P, rowsTo: P + 3 }]);
    expect(fused.anatomy, ctx).not.toBeNull();
    const words = `every row from decode step 1 (position ${P}) on rotated as position 0 [rotary-offset]`;
    expect(fused.sentence, ctx).toContain('; probable cause: ');
    expect(fused.sentence, ctx).toContain(words);
    expect(r.generation?.words, ctx).toContain(
      `born at decode step 1 (position ${P}), layer ${fromLayer}, the QKV projection and the attention core (fused), on the fused path`,
    );
    expect(r.generation?.words, ctx).toContain('; probable cause: ');
    expect(r.generation?.words, ctx).toContain(words);
    // The reference path's decode agrees: nothing born, no cause.
    expect(ref.verdict, `${ctx} / ${ref.sentence}`).toBe('agree');
    expect(ref.cause ?? null, ctx).toBeNull();
    // The report with the decode finding's cause and anatomy validates against docs/report.schema.json.
    const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);
    expect(validate(JSON.parse(reportToJson(r))), JSON.stringify(validate.errors)).toBe(true);
  });

  it('a clean generation names no cause', async () => {
    const r = await analyze(engine, specOf([]), prompt, { skip, checkDecode: decodeChecker(engine) });
    const ctx = `seed ${seed}, P ${P}: ${r.generation?.words}`;
    expect(r.verdict, ctx).toBe('agree');
    for (const d of r.generation!.decode!) {
      expect(d.verdict, `${ctx} / ${d.sentence}`).toBe('agree');
      expect(d.cause ?? null, ctx).toBeNull();
      expect(d.sentence, ctx).not.toContain('probable cause');
    }
    expect(r.generation?.words, ctx).not.toContain('probable cause');
  });

  it('an op the decode check names itself carries the runs analysis’s cause into the finding and the story', async () => {
    const cfg = engine.modelInfo!.config;
    const layer = Math.floor(rng() * shape.layers);
    const { bytes } = synthGeneration(cfg, engine.weights!, prompt, 4, {
      fault: { kind: 'gelu-tanh', layer },
    });
    async function* one() {
      yield bytes;
    }
    const file = await readRunFile(one(), bytes.length, cfg, { file: 'gelu-tanh.safetensors' });
    const report = await analyzeRuns(engine, { file, sha256: null }, null, { rows: decodeRows(P) });
    const d = decodeCheckOf('fused', report, P);
    const ctx = `seed ${seed}, P ${P}, layer ${layer}: ${d.sentence}`;
    expect(d.born?.check, ctx).toBe(`layers.${layer}.act`);
    expect(d.born?.step, ctx).toBe(1);
    expect(d.cause?.named[0]?.id, ctx).toBe('gelu-tanh');
    expect(d.cause?.named[0]?.params.rowsFrom, ctx).toBe(P);
    expect(d.anatomy, ctx).not.toBeNull();
    expect(d.sentence, ctx).toContain(`; probable cause: ${d.cause!.words}`);
    const ids = [...(file.generation?.generated ?? [])];
    const words = generationWords(
      { reference: { ids, text: null }, fused: { ids, text: null }, firstDifference: null, decode: [d] },
      P,
    );
    expect(words, ctx).toContain(`born at decode step 1 (position ${P}), layer ${layer}, `);
    // (the story names the cause in its words; the finding's sentence says what it leaves)
    expect(words, ctx).toContain(`; probable cause: ${d.cause!.named[0].words} [gelu-tanh]`);
    expect(words, ctx).not.toContain('explains all but');
  });
});
