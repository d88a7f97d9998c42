// The GPU route of a Llama-family runs analysis (family-runs-gpu.ts: each check re-run by the registry's df forms on
// the GPU from the run's recorded inputs; the exact forward by FamilyGpuOracle) against the CPU route (the fp64 forms)
// on every PyTorch run fixture (src/model/testdata/llama-runs/), fed as the file is read (streamFamilyRuns). On
// SwiftShader 'auto' takes the CPU route, so the GPU route is given here directly (DF_FMA off: the split products,
// right on any adapter); which route an analysis takes is familyOracle's (family-selftest.ts, its own tests). The two
// give the same report: the same verdict,
// the same born op and named cause, and every check's ratio to its floor within 1e-6 relative. Why that tolerance:
// the df forms carry ~2^-48 per op and fp64 ~2^-53, so the two exact outputs differ by < ~1e-12 relative; the errors
// they measure are a rounding of the run's storage or more (>= ~1e-8 relative of the output), so a ratio moves by
// < 1e-12 / 1e-8 = 1e-4 of itself at the very worst and by ~1e-7 in practice; 1e-6 holds with room.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../engine/engine';
import { BufferPool } from '../gpu/pool';
import { readRunFile } from '../model/run-file';
import { fixtureEngine, loadFixture } from './family-fixtures.testdata';
import { analyzeFamilyRuns, type FamilyRunsModel, familyRunsModel, streamFamilyRuns } from './family-runs';
import { gpuRerunOf } from './family-runs-gpu';

const RUNS = 'src/model/testdata/llama-runs';

interface RunEntry {
  file: string;
  model: string;
  fault: { id: string; cause: string } | null;
}
const manifest = JSON.parse(readFileSync(join(RUNS, 'manifest.json'), 'utf8')) as { runs: RunEntry[] };

let engine: Engine;
beforeAll(async () => {
  engine = await fixtureEngine();
});
afterAll(() => engine?.dispose());

let loaded = '';
/** The run analysed as it is read, in chunks of 4 KiB (its checks re-run while the rest comes in). */
async function analyze(r: RunEntry, route: 'gpu' | 'cpu') {
  if (loaded !== r.model) {
    await loadFixture(engine, r.model);
    loaded = r.model;
  }
  const bytes = new Uint8Array(readFileSync(join(RUNS, r.file)));
  const chunks = (async function* () {
    for (let i = 0; i < bytes.length; i += 4096) {
      await new Promise((ok) => setTimeout(ok, 0));
      yield bytes.subarray(i, i + 4096);
    }
  })();
  const model: FamilyRunsModel = {
    ...familyRunsModel(engine),
    oracle: async () => {
      if (route === 'cpu')
        return {
          info: { kind: 'cpu', reason: 'asked', selfTest: null },
          gpu: null,
          release: () => undefined,
        };
      const pool = new BufferPool(engine.devicePipelines().device);
      return {
        info: { kind: 'gpu', reason: 'given', selfTest: null },
        gpu: gpuRerunOf(engine, pool, false),
        release: () => pool.destroyAll(),
      };
    },
  };
  const stream = streamFamilyRuns(model, 1);
  const file = await readRunFile(chunks, bytes.length, engine.llamaModel!.cfg, {
    file: r.file,
    ...stream.reader(0),
  });
  return stream.report({ file, sha256: null }, null);
}

/**
 * The double-float kernels are emulated on SwiftShader (~3 s an analysis here): CI takes two runs that between them
 * hold q/k norms, GQA, a generation's decode rows, BF16 storage and a tied head (a sliding window: the oracle's test
 * below); FAMILY_RUNS_GPU_ALL=1 takes all 34 (docs/RUNS.md: all agree).
 */
const CI_RUNS = new Set(['clean-generation-qwen3-qknorm.safetensors', 'rms-cast-order.safetensors']);

describe('the GPU route of the Llama-family runs analysis gives the CPU route report', () => {
  const sorted = [...manifest.runs]
    .filter((r) => process.env.FAMILY_RUNS_GPU_ALL || CI_RUNS.has(r.file))
    .sort((x, y) => x.model.localeCompare(y.model));
  it.each(sorted.map((r) => [r.fault?.id ?? r.file, r] as const))('%s', async (_, r) => {
    const gpu = await analyze(r, 'gpu');
    const cpu = await analyze(r, 'cpu');
    expect(gpu.oracle.kind, gpu.oracle.reason).toBe('gpu');
    expect(gpu.oracle.reason).toMatch(
      / [1-9]\d* checks re-run in double-float on the GPU, 0 in fp64 on the CPU/,
    );
    expect(cpu.oracle.kind).toBe('cpu');
    expect(gpu.verdict, gpu.sentence).toBe(cpu.verdict);
    expect(gpu.checks.map((c) => c.id)).toEqual(cpu.checks.map((c) => c.id));
    gpu.checks.forEach((c, i) => {
      const want = cpu.checks[i];
      expect(c.born, c.id).toBe(want.born);
      expect(Math.abs(c.ratio - want.ratio), `${c.id}: ${c.ratio} vs ${want.ratio}`).toBeLessThanOrEqual(
        1e-6 * Math.max(want.ratio, 1e-30),
      );
    });
    expect(gpu.findings.map((f) => [f.check, f.cause?.named.map((n) => n.id)])).toEqual(
      cpu.findings.map((f) => [f.check, f.cause?.named.map((n) => n.id)]),
    );
    for (const c of gpu.curves)
      for (const [id, p] of Object.entries(c.runs)) {
        const want = cpu.curves.find((x) => x.slot === c.slot)!.runs[id];
        expect(Math.abs((p?.ratio ?? 0) - (want?.ratio ?? 0)), `${c.slot} ${id}`).toBeLessThanOrEqual(
          1e-6 * (want?.ratio ?? 0),
        );
      }
    if (r.fault && r.fault.id !== 'rms-cast-order')
      expect(gpu.findings[0]?.cause?.named.map((n) => n.id)).toEqual([r.fault.cause]);
  });
});

describe('the oracle of a Llama-family runs analysis', () => {
  it("asked for the GPU: the family's self-test passes here and every check is re-run there; the report says so", async () => {
    const r = manifest.runs.find((x) => x.file === 'window-ignored.safetensors')!;
    if (loaded !== r.model) {
      await loadFixture(engine, r.model);
      loaded = r.model;
    }
    const bytes = new Uint8Array(readFileSync(join(RUNS, r.file)));
    const file = await readRunFile(
      (async function* () {
        yield bytes;
      })(),
      bytes.length,
      engine.llamaModel!.cfg,
      { file: r.file },
    );
    const run = { file, sha256: null };
    const gpu = await analyzeFamilyRuns(familyRunsModel(engine), run, null, { oracle: 'gpu' });
    expect(gpu.oracle.kind, gpu.oracle.reason).toBe('gpu');
    expect(gpu.oracle.selfTest?.ok).toBe(true);
    expect(gpu.oracle.reason).toMatch(
      / [1-9]\d* checks re-run in double-float on the GPU, 0 in fp64 on the CPU/,
    );
    expect(gpu.findings[0]?.cause?.named.map((n) => n.id)).toEqual(['window-ignored']);
    // 'auto' on a CPU adapter (SwiftShader): the CPU route, saying why
    const auto = await analyzeFamilyRuns(familyRunsModel(engine), run, null);
    expect(auto.oracle.kind).toBe('cpu');
    expect(auto.oracle.reason).toMatch(
      /this adapter is itself a CPU.* 0 checks re-run in double-float on the GPU/,
    );
    expect(auto.sentence).toBe(gpu.sentence);
  });
});
