// The analysis of runs from elsewhere on run files made from the fp64 oracle (src/compare/run-synth.ts), faults
// planted at a random layer: the verdict names that layer and op, clean runs agree, hidden-states-only runs name the
// layer, TransformerLens names land on the same checks, and the GPU double-float route gives the CPU route's answer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { randomModelFiles } from '../model/random-model';
import { readRunFile } from '../model/run-file';
import { mulberry32 } from '../numeric/random';
import { analyzeRuns, streamRuns } from './analyze-runs';
import { type OpCheck, runChecks } from './run-checks';
import { type SynthOptions, synthRun } from './run-synth';
import type { FeedProgress } from './runs-feed';
import type { RunsReport } from './runs-report';
import { startRunsAnalysis } from './runs-start';

const seed = freshSeed();
const rng = mulberry32(seed);
let engine: Engine;
const shapes = [
  { vocab: 97, d: 36, layers: 3, heads: 3, ff: 70, rotaryPct: 0.5, parallel: true },
  { vocab: 101, d: 40, layers: 3, heads: 5, ff: 60, rotaryPct: 1, parallel: false },
];
const shape = shapes[Math.floor(rng() * 2)];
const T = 9 + Math.floor(rng() * 8);
const tokens = Array.from({ length: T }, () => Math.floor(rng() * shape.vocab));
const where = `seed ${seed}, ${shape.parallel ? 'parallel' : 'sequential'}, T ${T}`;

beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
  await engine.loadModel(randomModelFiles(shape, seed));
});
afterAll(() => engine?.dispose());

async function* chunks(bytes: Uint8Array, size: number) {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

/** Chunks a turn of the event loop apart (as a disk's): what was started meanwhile has run. */
async function* slowChunks(bytes: Uint8Array, size: number) {
  for await (const c of chunks(bytes, size)) {
    await new Promise((r) => setTimeout(r, 0));
    yield c;
  }
}

async function run(o: SynthOptions, file: string) {
  const cfg = engine.modelInfo!.config;
  const bytes = synthRun(cfg, engine.weights!, tokens, o);
  return { file: await readRunFile(chunks(bytes, 997), bytes.length, cfg, { file }), sha256: null };
}

describe('analysis of runs from elsewhere', () => {
  it('a clean run agrees; a bf16 residual at layer j is named at that layer residual add, in run B', async () => {
    const j = Math.floor(rng() * shape.layers);
    const a = await run({ label: 'clean' }, 'a.safetensors');
    const b = await run({ fault: { kind: 'residual-bf16', layer: j }, label: 'bf16 add' }, 'b.safetensors');
    const r = await analyzeRuns(engine, a, b);
    const [fa, fb] = r.findings;
    expect(fa.diverged, `${fa.sentence} (${where})`).toBe(false);
    expect(fb.diverged, where).toBe(true);
    expect(fb.layer, `${fb.sentence} (${where})`).toBe(j);
    expect(fb.check, fb.sentence).toBe(shape.parallel ? `layers.${j}.residual` : `layers.${j}.residual_mlp`);
    expect(fb.sentence).toContain(`run B (bf16 add), layer ${j}: the`);
    expect(r.verdict).toBe('diverged');
    // B vs A departs from layer j on; before it the two runs are bit-identical.
    const bva = r.curves.filter((c) => c.slot.startsWith('layers.')).map((c) => c.bVsA!.metrics.maxAbs);
    expect(
      bva.slice(0, j).every((v) => v === 0),
      where,
    ).toBe(true);
    expect(bva[j]).toBeGreaterThan(0);
  });

  it.each(['gpu', 'cpu'] as const)(
    'streamed as the file is read (%s oracle): each check re-run once its inputs are in, the report the whole file’s; a start of other tokens refused, its buffers back',
    async (oracle) => {
      const j = Math.floor(rng() * shape.layers);
      const cfg = engine.modelInfo!.config;
      const bytes = synthRun(cfg, engine.weights!, tokens, { fault: { kind: 'residual-bf16', layer: j } });
      // The first steps done before the read (on a header's tokens they may finish later: arrivals then wait).
      const stream = streamRuns(
        engine,
        1,
        { oracle },
        Promise.resolve(await startRunsAnalysis(engine, tokens, { oracle })),
      );
      const feed = stream.reader(0);
      let planned: OpCheck[] = [];
      const arrived = new Set<string>();
      let atLast: FeedProgress | null = null;
      let slots = 0;
      const file = await readRunFile(slowChunks(bytes, 997), bytes.length, cfg, {
        file: 'b.safetensors',
        onHeader: (h) => {
          expect(h.tokens).toEqual(tokens);
          slots = h.slots.size;
          const lmHead = h.slots.get('logits')?.name.startsWith('lm_head') ? 'lm_head' : 'embed_out';
          planned = runChecks(cfg, (sl) => h.slots.has(sl), lmHead).checks;
          feed.onHeader(h);
        },
        onSlot: (slot, t) => {
          // Before the last slot is handed on, every check whose inputs came before it has been re-run.
          if (arrived.size === slots - 1) atLast = stream.progress();
          arrived.add(slot);
          feed.onSlot(slot, t);
        },
      });
      const b = { file, sha256: null };
      const early = await stream.report(b, null);
      const late = await analyzeRuns(engine, b, null, { oracle });
      expect(early.durations.start, where).toBeGreaterThan(0);
      expect(atLast, where).not.toBeNull();
      const last = [...arrived].at(-1)!;
      const ready = planned.filter((c) => c.inputs.every((sl) => sl !== last)).length;
      expect(atLast!.slots, where).toBe(slots - 1);
      expect(atLast!.reruns, where).toEqual([oracle === 'gpu' ? ready : 0]);
      // The floors' run (every op, on the engine's taps) re-run as soon as the header was in.
      const whole = new Set(planned.filter((c) => c.op === 'layer').map((c) => c.layer!));
      const floors = runChecks(cfg, () => true, 'embed_out', whole).checks.length;
      expect(atLast!.floors, where).toBe(oracle === 'gpu' ? floors : 0);
      const timeless = (r: RunsReport) =>
        JSON.parse(
          JSON.stringify([r.checks, r.curves, r.findings, r.verdict], (k, v) => (k === 'ms' ? 0 : v)),
        );
      expect(timeless(early), where).toEqual(timeless(late));
      expect(early.findings[0].layer, where).toBe(j);
      const live = engine.gpuParts().pool.stats().bytesInUse;
      const other = startRunsAnalysis(
        engine,
        tokens.map((t) => (t + 1) % shape.vocab),
        { oracle },
      );
      await expect(analyzeRuns(engine, b, null, { oracle }, other)).rejects.toThrow(
        /started on other tokens/,
      );
      expect(engine.gpuParts().pool.stats().bytesInUse).toBe(live);
    },
  );

  it('a wrong GELU at layer j is named at mlp.act; hidden-states and TransformerLens runs name the layer', async () => {
    const j = Math.floor(rng() * (shape.layers - 1)); // hidden_states hold every layer's output but the last
    const mods = await analyzeRuns(
      engine,
      await run({ fault: { kind: 'act-scale', layer: j } }, 'm.safetensors'),
      null,
    );
    expect(mods.findings[0].check, `${mods.findings[0].sentence} (${where})`).toBe(`layers.${j}.act`);
    expect(mods.findings[0].module).toBe(`gpt_neox.layers.${j}.mlp.act`);
    const hidden = await analyzeRuns(
      engine,
      await run({ fault: { kind: 'act-scale', layer: j }, names: 'hidden' }, 'h.safetensors'),
      null,
    );
    expect(hidden.findings[0].check, `${hidden.findings[0].sentence} (${where})`).toBe(`layers.${j}.layer`);
    expect(hidden.runs[0].missing.length).toBeGreaterThan(0);
    const tl = await analyzeRuns(
      engine,
      await run({ fault: { kind: 'act-scale', layer: j }, names: 'tl' }, 't.safetensors'),
      null,
    );
    expect(tl.findings[0].check, `${tl.findings[0].sentence} (${where})`).toBe(`layers.${j}.act`);
  });

  // The double-float shaders take seconds to compile on SwiftShader (a minute when the machine is loaded).
  it('the GPU double-float route gives the CPU route its verdict and ratios', {
    timeout: 400_000,
  }, async () => {
    const j = Math.floor(rng() * shape.layers);
    const b = await run({ fault: { kind: 'residual-bf16', layer: j } }, 'b.safetensors');
    const gpu = await analyzeRuns(engine, b, null, { oracle: 'gpu', metrics: 'gpu' });
    const cpu = await analyzeRuns(engine, b, null, { oracle: 'cpu', metrics: 'cpu' });
    expect([gpu.oracle.kind, cpu.oracle.kind]).toEqual(['gpu', 'cpu']);
    expect(gpu.findings[0].check).toBe(cpu.findings[0].check);
    gpu.checks.forEach((c, i) => {
      const e = cpu.checks[i];
      expect(c.id).toBe(e.id);
      // Both oracles are within ~1e-13 of exact: the measured errors agree to the GPU sums' f32 reduction (1e-5).
      expect(Math.abs(c.error.relL2 - e.error.relL2), `${c.id} (${where})`).toBeLessThanOrEqual(
        1e-5 * e.error.relL2 + 1e-12,
      );
    });
  });
});
