// The analysis of Llama-family runs (family-runs.ts) on the committed HF fixture models, in Node on SwiftShader (the
// floors are the engine's Llama reference path's own taps): runs made in TypeScript (family-runs-synth.testdata.ts: the fp64
// registry forward, each step stored at the run's dtype and read back at it, Hugging Face's fp32 rotary angles) with
// one of the family's causes planted at one layer's op are found at that layer and op, the cause named; a run with
// nothing planted — another arithmetic than the reference path's, at F32 or BF16 — agrees, and so does the
// reference path's own run. Seeds draw the model, the tokens, the layer, the cause and the dtype.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Engine, EngineError } from '../engine/engine';
import { readRunFile } from '../model/run-file';
import { mulberry32 } from '../numeric/random';
import type { LlamaConfig } from '../numeric/types';
import { fixtureEngine, LLAMA_FIXTURES, loadFixture } from './family-fixtures.testdata';
import { analyzeFamilyRuns, familyRunsModel, streamFamilyRuns } from './family-runs';
import { plantsFor, runOfSlots, synthFamilyRun } from './family-runs-synth.testdata';

const MODELS = ['llama-gqa-llama3', 'llama-mqa-linear-tied', 'mistral-window', 'qwen2-bias', 'qwen3-qknorm'];

let engine: Engine;
beforeAll(async () => {
  engine = await fixtureEngine();
});
afterAll(() => engine?.dispose());

let loaded = '';
async function load(name: string): Promise<LlamaConfig> {
  if (loaded !== name) {
    await loadFixture(engine, name);
    loaded = name;
  }
  const m = engine.llamaModel;
  if (!m) throw new Error('no Llama-family model');
  return m.cfg;
}

async function read(bytes: Uint8Array, cfg: LlamaConfig, file: string) {
  const chunks = (async function* () {
    yield bytes;
  })();
  return { file: await readRunFile(chunks, bytes.length, cfg, { file }), sha256: null };
}

describe('the analysis of Llama-family runs', () => {
  it('finds each planted cause at its layer and op, and names it (seeds over every fixture model)', async () => {
    const wrong: string[] = [];
    for (let seed = 1; seed <= Number(process.env.SEEDS ?? 50); seed++) {
      const r = mulberry32(seed * 7919);
      const name = MODELS[seed % MODELS.length];
      const cfg = await load(name);
      const T = 3 + Math.floor(r() * 10);
      const tokens = Array.from({ length: T }, () => Math.floor(r() * cfg.vocabSize));
      const layer = Math.floor(r() * cfg.numLayers);
      const plants = plantsFor(cfg, layer, T);
      const [plant, check] = plants[Math.floor(r() * plants.length)];
      // A theta 100× too small or llama3's scaling skipped moves the few positions of a short run by less than a
      // bf16 rounding, and a half output is no fault in a BF16 run: those in F32 runs only.
      const dtype = r() < 0.3 && !/^(rotary-theta|rotary-scaling|output-)/.test(plant.id) ? 'BF16' : 'F32';
      const where = `seed ${seed}: ${name}, T ${T}, ${dtype}, ${plant.id} at layer ${layer} ${plant.slot}`;
      const a = await read(
        synthFamilyRun(cfg, engine.llamaModel!.weights, tokens, { dtype, plant }),
        cfg,
        'a',
      );
      const report = await analyzeFamilyRuns(familyRunsModel(engine), a, null);
      const f = report.findings[0];
      const named = f.cause?.named.map((c) => c.id) ?? [];
      if (f.check !== check || !named.includes(plant.id)) wrong.push(`${where}: ${report.sentence}`);
    }
    expect(wrong).toEqual([]);
  });

  it('a run with nothing planted agrees, at F32 and BF16, with module names or hidden states only (50 seeds)', async () => {
    const wrong: string[] = [];
    for (let seed = 1; seed <= Number(process.env.SEEDS ?? 50); seed++) {
      const r = mulberry32(seed * 104729);
      const name = MODELS[seed % MODELS.length];
      const cfg = await load(name);
      const T = 1 + Math.floor(r() * 13);
      const tokens = Array.from({ length: T }, () => Math.floor(r() * cfg.vocabSize));
      const dtype = seed % 2 === 0 ? 'BF16' : 'F32';
      const names = r() < 0.25 ? 'hidden' : 'modules';
      const a = await read(
        synthFamilyRun(cfg, engine.llamaModel!.weights, tokens, { dtype, names }),
        cfg,
        'a',
      );
      const report = await analyzeFamilyRuns(familyRunsModel(engine), a, null);
      const checks = report.checks.length;
      if (report.verdict !== 'agree' || checks === 0)
        wrong.push(`seed ${seed}: ${name}, T ${T}, ${dtype}, ${names}, ${checks} checks: ${report.sentence}`);
      if (names === 'hidden' && report.checks.some((c) => c.layer !== null && !c.id.endsWith('.layer')))
        wrong.push(`seed ${seed}: a run of hidden states checked by op: ${report.checks.map((c) => c.id)}`);
    }
    expect(wrong).toEqual([]);
  });

  it("the reference path's own run agrees, at fp32 and stored in bf16 from the bf16 mode (every fixture)", async () => {
    for (const name of MODELS) {
      const cfg = await load(name);
      const tokens = Array.from({ length: 11 }, (_, t) => (t * 37 + 5) % cfg.vocabSize);
      for (const [precision, dtype] of [
        ['fp32', 'F32'],
        ['bf16', 'BF16'],
      ] as const) {
        const taps = (await engine.forward(tokens, { path: 'reference', taps: 'all', precision })).taps;
        const a = await read(runOfSlots(cfg, taps, tokens, { dtype }), cfg, 'ref');
        const report = await analyzeFamilyRuns(familyRunsModel(engine), a, null);
        expect(report.verdict, `${name} ${precision}: ${report.sentence}`).toBe('agree');
        expect(report.checks.length).toBeGreaterThan(25);
        expect(report.model.family).toBe('llama');
      }
    }
  });

  it('two runs of a generation: B against A, the finding named by its decode step (a window ignored)', async () => {
    const cfg = await load('mistral-window');
    const w = cfg.slidingWindow[1]!;
    const tokens = Array.from({ length: w + 4 }, (_, t) => (t * 53 + 11) % cfg.vocabSize);
    const P = 3;
    const metadata = { prefill: String(P), generated: JSON.stringify(tokens.slice(P)) };
    const weights = engine.llamaModel!.weights;
    const a = await read(synthFamilyRun(cfg, weights, tokens, { metadata, label: 'clean' }), cfg, 'a');
    const plant = { layer: 1, slot: 'ctx', id: 'window-ignored' };
    const b = await read(synthFamilyRun(cfg, weights, tokens, { metadata, plant, label: 'mine' }), cfg, 'b');
    const report = await analyzeFamilyRuns(familyRunsModel(engine), a, b);
    const [fa, fb] = report.findings;
    expect(fa.diverged, report.sentence).toBe(false);
    expect(fb.check).toBe('layers.1.q_rot+k_rot+ctx');
    expect(fb.module).toBe('model.layers.1.self_attn');
    const born = report.checks.find((c) => c.run === 'B' && c.id === fb.check)!;
    // Row p sees keys p − w + 1 … p within the window: the first row that sees one more is w.
    expect(born.firstRow).toBe(w);
    // … and every row after it: the stretch said whole
    expect(born.pastTo).toBe(tokens.length - 1);
    expect(fb.sentence).toContain(
      `run B (mine), every row from decode step ${w - P + 1} (position ${w}) on, layer 1:`,
    );
    expect(fb.cause?.named[0].id).toBe('window-ignored');
    expect(report.curves.find((c) => c.slot === 'logits')?.bVsA).not.toBeNull();
    expect(report.runs.map((r) => r.generation?.prefill)).toEqual([P, P]);
  });

  it("Hugging Face's own fp32 run of the Qwen3 fixture (layer 1 and the model's modules) agrees", async () => {
    const cfg = await load('qwen3-qknorm');
    const bytes = new Uint8Array(readFileSync(join(LLAMA_FIXTURES, 'qwen3-qknorm', 'run.safetensors')));
    const a = await read(bytes, cfg, 'run.safetensors');
    const report = await analyzeFamilyRuns(familyRunsModel(engine), a, null);
    expect(report.verdict, report.sentence).toBe('agree');
    // Layer 0 is not hooked: its ops are missing, its output (layer 1's input) is there.
    expect(report.checks.filter((c) => c.layer === 1).length).toBeGreaterThan(10);
    expect(report.runs[0].ignored).toContain('model.rotary_emb:out');
  });

  it('two generations whose texts part: compared on the rows they share, the parting said', async () => {
    const cfg = await load('qwen2-bias');
    const P = 4;
    const prompt = [5, 17, 42, 8];
    const genA = [11, 12, 13, 14];
    const genB = [11, 12, 99, 100];
    const weights = engine.llamaModel!.weights;
    const run = (gen: number[], label: string) => {
      const tokens = [...prompt, ...gen.slice(0, -1)];
      const metadata = { prefill: String(P), generated: JSON.stringify(gen) };
      return read(synthFamilyRun(cfg, weights, tokens, { metadata, label }), cfg, label);
    };
    const report = await analyzeFamilyRuns(
      familyRunsModel(engine),
      await run(genA, 'a'),
      await run(genB, 'b'),
    );
    // The texts part where the third new token is chosen: row P + 1 chose 13 in A and 99 in B.
    expect(report.parting?.row).toBe(P + 1);
    expect(report.parting?.chose).toEqual({ A: 13, B: 99 });
    expect(report.parting?.held).toEqual({ A: 7, B: 7 });
    expect(report.tokens).toHaveLength(P + 2);
    expect(report.verdict, report.sentence).toBe('agree');
    expect(report.sentence).toContain(
      'The texts part at decode step 2 (position 5): run A chose 13, run B 99',
    );
  });

  it('fed as the file is read: checks are re-run before its last tensor arrives, the report the same as whole', async () => {
    const cfg = await load('llama-gqa-llama3');
    const tokens = [5, 3, 9, 1, 7, 2, 8, 4, 6];
    const plant = { layer: 1, slot: 'swiglu', id: 'swiglu-swapped' };
    const bytes = synthFamilyRun(cfg, engine.llamaModel!.weights, tokens, { plant });
    const stream = streamFamilyRuns(familyRunsModel(engine), 1);
    const seen: number[] = [];
    // The file in 2 KiB chunks, a turn of the event loop between (as a disk read gives one): the feed works there.
    const chunks = (async function* () {
      for (let i = 0; i < bytes.length; i += 2048) {
        await new Promise((ok) => setTimeout(ok, 0));
        seen.push(stream.progress()[0]);
        yield bytes.subarray(i, i + 2048);
      }
    })();
    const file = await readRunFile(chunks, bytes.length, cfg, { file: 'a', ...stream.reader(0) });
    const streamed = await stream.report({ file, sha256: null }, null);
    const whole = await analyzeFamilyRuns(familyRunsModel(engine), { file, sha256: null }, null);
    const total = streamed.checks.length;
    // some checks done by the middle of the file, and not all of them at its start
    expect(seen[Math.floor(seen.length / 2)], JSON.stringify(seen)).toBeGreaterThan(0);
    expect(seen[0], JSON.stringify(seen)).toBeLessThan(total);
    expect(streamed.sentence).toBe(whole.sentence);
    expect(streamed.checks.map((c) => c.ratio)).toEqual(whole.checks.map((c) => c.ratio));
    expect(streamed.findings[0]?.cause?.named.map((n) => n.id)).toEqual(['swiglu-swapped']);
  });

  it("a cancel during the analysis stops it with the engine's 'cancelled'", async () => {
    const cfg = await load('qwen3-qknorm');
    const tokens = [3, 1, 4, 1, 5, 9, 2, 6];
    const a = await read(synthFamilyRun(cfg, engine.llamaModel!.weights, tokens), cfg, 'a');
    const ctl = new AbortController();
    const phases: string[] = [];
    const run = analyzeFamilyRuns(familyRunsModel(engine), a, null, {
      signal: ctl.signal,
      onProgress: (phase) => {
        phases.push(phase);
        if (phase === 'oracle') ctl.abort();
      },
    });
    const e = await run.catch((x: unknown) => x);
    expect(e).toBeInstanceOf(EngineError);
    expect((e as EngineError).kind).toBe('cancelled');
    expect(phases).toEqual(['sources', 'oracle']);
  });
});
