// Our own decode steps as runs: the recorded rows of each decode step sit at their positions (equal, bit for bit,
// to the same rows of a whole forward over the same tokens, as the decode's design promises); a clean decode agrees
// op by op on both paths; a planted fault is named at its layer in the prefill and every decode step after it.
import Ajv2020 from 'ajv/dist/2020';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import schema from '../../docs/report.schema.json';
import type { RecordedDecode } from '../engine/decode-record';
import { Engine } from '../engine/engine';
import { ALL_FUSED } from '../engine/fused-kernels';
import { GpuOracle } from '../engine/oracle-gpu';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { randomModelFiles } from '../model/random-model';
import { mulberry32 } from '../numeric/random';
import { faultHooks, placeFaults } from '../run/faults';
import { defaultRunSpec, type RunSpec } from '../run/runspec';
import { reportToJson } from '../ui/export';
import { analyze } from './analyze';
import { analyzeRuns } from './analyze-runs';
import { decodeRows, decodeRunInput, vsFullOf } from './decode-run-file';
import { checkDecode, decodeChecker } from './decode-runs';
import { decideOracle } from './oracle-source';
import type { RunsReport } from './runs-report';

const seed = freshSeed();
const shape = { vocab: 97, d: 48, layers: 3, heads: 4, ff: 96, rotaryPct: 0.5, parallel: true };
let engine: Engine;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
  await engine.loadModel(randomModelFiles(shape, seed));
});
afterAll(() => engine?.dispose());

const rng = mulberry32(seed);
const prompt = Array.from({ length: 7 }, () => Math.floor(rng() * shape.vocab));
const N = 5;

describe('our decode recorded as runs', () => {
  it('puts every step at its position: the rows equal the whole forward of the same tokens', async () => {
    const [ref] = await checkDecode(engine, prompt, N, [{ name: 'reference', opts: { path: 'reference' } }]);
    const tokens = [...prompt, ...ref.ids.slice(0, -1)];
    expect(ref.file.tokens).toEqual(tokens);
    expect(ref.file.generation).toEqual({ prefill: prompt.length, generated: ref.ids });
    const whole = await engine.forward(tokens, { path: 'reference', taps: 'all' });
    for (const name of ['embed', 'layers.1.ln1', 'layers.2.ctx', 'layers.0.fc1', 'final_norm', 'logits']) {
      const got = ref.file.slots.get(name)!.data;
      const want = whole.taps.get(name)!;
      expect(got.length, name).toBe(want.length);
      const at = got.findIndex((v, i) => !Object.is(v, want[i]));
      expect(at, `${name} differs at flat index ${at} (seed ${seed})`).toBe(-1);
    }
  });

  it('a clean decode agrees op by op on both paths, every decode step checked', async () => {
    const runs = await checkDecode(engine, prompt, N, [
      { name: 'reference', opts: { path: 'reference' } },
      { name: 'fused', opts: { path: new Set(ALL_FUSED) } },
    ]);
    for (const r of runs) {
      expect(r.report.verdict, `${r.path} (seed ${seed}): ${r.report.sentence}`).toBe('agree');
      expect(r.report.tokens.length).toBe(prompt.length + N - 1);
      expect(r.report.checks.length, r.path).toBeGreaterThan(3 * shape.layers);
      expect(r.report.checks.every((c) => c.firstRow === null)).toBe(true);
      expect(r.report.runs[0].generation?.prefill).toBe(prompt.length);
    }
  });

  it('a planted fault is named at its layer, in every row from the prefill on', async () => {
    const fromLayer = 1 + (seed % (shape.layers - 1));
    const planted = placeFaults([{ id: 'gelu_relu', fromLayer }], seed, shape.layers);
    const [fused] = await checkDecode(engine, prompt, N, [
      { name: 'fused', opts: { path: new Set(ALL_FUSED), hooks: faultHooks(planted) } },
    ]);
    const f = fused.report.findings[0];
    const ctx = `seed ${seed}: ${f.sentence}`;
    expect(f.diverged, ctx).toBe(true);
    expect(f.layer, ctx).toBe(fromLayer);
    const check = fused.report.checks.find((c) => c.id === f.check)!;
    expect(check.firstRow, ctx).toBe(0);
    // The fault is in every row: said whole, not as the first row alone (one token's error).
    const T = prompt.length + N - 1;
    expect(check.pastTo, ctx).toBe(T - 1);
    expect(f.sentence, ctx).toContain(
      `, every row of the prompt (the prefill, positions 0–${prompt.length - 1}) and every decode step after it, layer ${fromLayer}: `,
    );
  });
});

describe('the two-path analysis with its decode checked', () => {
  it.each(['cpu', 'gpu'] as const)(
    'reports each path on its decode steps (%s oracle): the reference agrees, a planted fault is born at its layer',
    async (oracle) => {
      const fromLayer = 1 + (seed % (shape.layers - 1));
      const spec: RunSpec = {
        ...defaultRunSpec(),
        model: { kind: 'embedded', id: 'test' },
        fused: [...ALL_FUSED],
        faults: [{ id: 'residual_wiring', fromLayer }],
        seed,
        generate: 3,
      };
      const r = await analyze(engine, spec, prompt, {
        skip: { bisection: true, determinism: true, taps: true },
        checkDecode: decodeChecker(engine),
        oracle,
      });
      expect(r.oracle.kind).toBe(oracle);
      const [ref, fused] = r.generation!.decode!;
      const ctx = `seed ${seed}: ${ref.sentence} / ${fused.sentence}`;
      expect(ref.path).toBe('reference');
      expect(ref.verdict, ctx).toBe('agree');
      expect(ref.born).toBeNull();
      expect(fused.verdict, ctx).toBe('diverged');
      expect(fused.born?.layer, ctx).toBe(fromLayer);
      // Only the decode steps' rows are checked (the prompt's are the compare's own, which finds the fault there).
      expect(fused.born?.step, ctx).toBe(1);
      expect(fused.born?.row, ctx).toBe(prompt.length);
      expect(r.firstDivergentLayer, ctx).toBe(fromLayer);
      for (const d of [ref, fused]) {
        expect(d.checkedFrom).toBe(prompt.length);
        expect(d.sentence, ctx).toContain(
          `only decode steps 1–2 (positions ${prompt.length}–${prompt.length + 1}) checked here; positions 0–${prompt.length - 1}: the prompt`,
        );
      }
      expect(ref.checks).toBeGreaterThan(3 * shape.layers);
      expect(fused.checks).toBeGreaterThan(0);
      // Our cached decode is the whole forward, bit for bit, on both paths (the fault is in both alike).
      for (const d of [ref, fused])
        expect(d.vsFull, `${d.path} (seed ${seed})`).toEqual({ relL2: 0, ratio: 0, within: true });
      // The report with its decode checks validates against docs/report.schema.json.
      const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);
      expect(validate(JSON.parse(reportToJson(r))), JSON.stringify(validate.errors)).toBe(true);
      // Without the option, no decode is recorded.
      const plain = await analyze(engine, spec, prompt, {
        skip: { bisection: true, determinism: true, taps: true },
      });
      expect(plain.generation!.decode).toBeUndefined();
    },
  );
});

describe('a recorded decode checked where it lies (on the GPU)', () => {
  it('gives the report of the same decode read back and uploaded: every check, the finding and its cause', async () => {
    const fromLayer = 1 + (seed % (shape.layers - 1));
    const planted = placeFaults([{ id: 'gelu_relu', fromLayer }], seed, shape.layers);
    const recorded: RecordedDecode[] = [];
    const opts = { path: new Set(ALL_FUSED), hooks: faultHooks(planted) };
    const [ids] = await engine.generatePaths(prompt, N, [opts], undefined, undefined, { recorded });
    try {
      const rows = decodeRows(prompt.length);
      const analyse = async (onGpu: boolean) => {
        const run = await decodeRunInput(recorded[0], prompt, ids, 'fused decode', 'fp32', onGpu);
        if (onGpu) expect([...run.file.slots.values()].every((t) => t.data.length === 0)).toBe(true);
        return analyzeRuns(engine, run, null, { oracle: 'gpu', rows });
      };
      const [there, read] = [await analyse(true), await analyse(false)];
      const ctx = `seed ${seed}: ${there.sentence}`;
      expect(there.findings[0].diverged, ctx).toBe(true);
      expect(there.findings[0].layer, ctx).toBe(fromLayer);
      // The why ran on the born op (its data read back for it).
      expect(there.findings[0].cause, ctx).toBeDefined();
      expect(there.findings[0].anatomy, ctx).toBeTruthy();
      // The same checks, curves, words, causes and anatomy (the search's own time apart).
      const timeless = (r: RunsReport) =>
        JSON.parse(JSON.stringify([r.checks, r.curves, r.findings], (k, v) => (k === 'ms' ? 0 : v)));
      expect(timeless(there), ctx).toEqual(timeless(read));
      // Read back only for the why: the file then holds every recorded row.
      const again = await decodeRunInput(recorded[0], prompt, ids, 'fused decode', 'fp32', true);
      await again.resident!.load();
      const whole = await recorded[0].read();
      for (const [name, data] of whole)
        expect(again.file.slots.get(name.replace(/\.resid_mid$/, '.ln2_in'))!.data).toEqual(data);
    } finally {
      for (const r of recorded) r.release();
    }
    await expect(recorded[0].read()).rejects.toThrow(/released/);
  });

  it('the reference decode and a fused one in one analysis, as read back (the reference decode is the floors’ run bit for bit: each error its floor)', async () => {
    const recorded: RecordedDecode[] = [];
    const paths = [{ path: 'reference' as const }, { path: new Set(ALL_FUSED) }];
    const ids = await engine.generatePaths(prompt, N, paths, undefined, undefined, { recorded });
    try {
      const rows = decodeRows(prompt.length);
      const analyse = async (onGpu: boolean) => {
        const [a, b] = await Promise.all(
          ['reference', 'fused'].map((p, i) => decodeRunInput(recorded[i], prompt, ids[i], p, 'fp32', onGpu)),
        );
        return analyzeRuns(engine, a, ids[0].every((id, t) => ids[1][t] === id) ? b : null, {
          oracle: 'gpu',
          rows,
        });
      };
      const [there, read] = [await analyse(true), await analyse(false)];
      const ctx = `seed ${seed}: ${there.sentence}`;
      expect(there.verdict, ctx).toBe('agree');
      // Run A is the reference forward bit for bit, re-run on the same bits: each error is its floor.
      for (const c of there.checks.filter((x) => x.run === 'A'))
        expect(c.error, `${ctx}: ${c.id}`).toEqual(c.floor);
      const timeless = (r: RunsReport) =>
        JSON.parse(JSON.stringify([r.checks, r.curves, r.findings], (k, v) => (k === 'ms' ? 0 : v)));
      expect(timeless(there), ctx).toEqual(timeless(read));
    } finally {
      for (const r of recorded) r.release();
    }
  });
});

describe('the decode rows’ exact forward from the prompt’s (AnalyzeRunsOptions.prefix)', () => {
  it('gives the report of the exact forward over every position', async () => {
    const fromLayer = seed % shape.layers;
    const planted = placeFaults([{ id: 'decode_rotary', fromLayer }], seed, shape.layers);
    const recorded: RecordedDecode[] = [];
    const opts = { path: new Set(ALL_FUSED), hooks: faultHooks(planted) };
    const [ids] = await engine.generatePaths(prompt, N, [opts], undefined, undefined, { recorded });
    const { device, pipelines, pool, model } = engine.gpuParts();
    const oracle = new GpuOracle(device, pipelines, pool, model, {
      dfFma: (await decideOracle(engine, 'gpu')).dfFma,
      maxBindingBytes: engine.maxBindingBytes,
    });
    const batch = engine.batch();
    try {
      // The two-path compare's exact forward over the prompt, every tap.
      const main = oracle.forward(batch.encoder, prompt, 'all');
      batch.onRelease(() => main.release());
      await batch.submit();
      const run = await decodeRunInput(recorded[0], prompt, ids, 'fused decode', 'fp32', true);
      const rows = decodeRows(prompt.length);
      const base = { oracle: 'gpu' as const, rows, angles: 'exact' as const };
      const prefix = { from: prompt.length, qkv: (i: number) => main.taps.get(`layers.${i}.qkv`)! };
      const [every, from] = [
        await analyzeRuns(engine, run, null, base),
        await analyzeRuns(engine, run, null, { ...base, prefix }),
      ];
      const ctx = `seed ${seed}, layer ${fromLayer}: ${from.sentence}`;
      expect(from.findings[0].diverged, ctx).toBe(true);
      expect(from.findings[0].layer, ctx).toBe(fromLayer);
      const timeless = (r: RunsReport) =>
        JSON.parse(JSON.stringify([r.checks, r.curves, r.findings], (k, v) => (k === 'ms' ? 0 : v)));
      expect(timeless(from), ctx).toEqual(timeless(every));
    } finally {
      batch.release();
      for (const r of recorded) r.release();
    }
  });
});

describe('vsFullOf', () => {
  it('is 0 for equal logits, past k × the floor when a decode row is off, never within for NaN', () => {
    const r = mulberry32(seed + 1);
    const full = Array.from({ length: 40 }, () => r() * 2 - 1);
    expect(vsFullOf(full, full, 1e-7, 10)).toEqual({ relL2: 0, ratio: 0, within: true });
    const off = [...full];
    off[37] += 1e-3;
    const got = vsFullOf(off, full, 1e-7, 10);
    expect(got.within, `seed ${seed}`).toBe(false);
    expect(got.ratio).toBeGreaterThan(10);
    const tiny = [...full];
    tiny[3] += 1e-9;
    expect(vsFullOf(tiny, full, 1e-7, 10).within).toBe(true);
    off[0] = Number.NaN;
    expect(vsFullOf(off, full, 1e-7, 10).within).toBe(false);
  });
});
