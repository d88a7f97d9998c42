// The page worker's runs warm-up (RunsWarmer, runs.ts): the import of two PyTorch runs (src/model/testdata/runs/) gives
// the same report, timing fields aside, on a cold engine, on that engine after the warm-up, and on a second engine
// warmed up before its first import; the warm-up runs once (asked again, it is not re-run), a job that arrives during
// it stops it with every buffer back, and an import that ran first pays it (none runs after).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunsReport } from '../compare/runs-report';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import type { RunFileInput } from './api';
import { compareRunFiles, RunsWarmer } from './runs';

const DIR = 'src/model/testdata/runs/parallel-classic';
const run = (name: string): RunFileInput => ({
  name,
  blob: new Blob([Uint8Array.from(readFileSync(join(DIR, name)))]),
});
const engines: Engine[] = [];
afterAll(() => {
  for (const e of engines) e.dispose();
});

async function fixtureEngine(): Promise<Engine> {
  const engine = await Engine.create(nodeGpu(), nodeShaderSource());
  engines.push(engine);
  await engine.loadModel({
    config: readFileSync(join(DIR, 'config.json'), 'utf8'),
    weights: Uint8Array.from(readFileSync(join(DIR, 'model.safetensors'))),
    name: 'parallel-classic',
  });
  return engine;
}

const importRuns = (engine: Engine) =>
  compareRunFiles(
    engine,
    [run('clean-cuda.run.safetensors'), run('residual-bf16.run.safetensors')],
    new AbortController().signal,
    () => undefined,
    () => undefined,
  );

/** The report with its clock fields taken out (createdAt, durations, each cause search's ms), as JSON holds it. */
const timeless = (r: RunsReport) =>
  JSON.stringify(r, (k, v) => (k === 'createdAt' || k === 'durations' || k === 'ms' ? undefined : v));

/** Where two reports' JSON first differ (a few characters either side), or null where they are the same. */
function firstDifference(a: string, b: string): string | null {
  if (a === b) return null;
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return `at ${i}: …${a.slice(i - 80, i + 80)}… against …${b.slice(i - 80, i + 80)}…`;
}

describe("the page worker's runs warm-up", () => {
  it('leaves the report as it was, runs once, yields to a job, and is paid by an import that came first', async () => {
    const cold = await fixtureEngine();
    const first = await importRuns(cold);
    expect(first.findings.map((f) => f.run)).toContain('B');
    const warmer = new RunsWarmer();
    const before = cold.gpuParts().pool.stats().bytesInUse;
    const w = await warmer.warm(cold, null);
    expect(w.state, w.why).toBe('done');
    expect([w.started, w.finished]).toEqual([1, 1]);
    expect(w.warmup!.tokens).toBe(64); // 128 capped by the fixture's 64 positions
    expect(w.warmup!.durations.why).toBeGreaterThan(0);
    expect(cold.gpuParts().pool.stats().bytesInUse).toBe(before);
    const again = await warmer.warm(cold, null);
    expect([again.state, again.started, again.finished]).toEqual(['done', 1, 1]);
    const afterWarm = await importRuns(cold);

    const warm = await fixtureEngine();
    const w2 = new RunsWarmer();
    // A job arrives at once: the warm-up stops at its next step, its buffers back, and is asked for again later.
    const idle = warm.gpuParts().pool.stats().bytesInUse;
    const stopped = w2.warm(warm, null);
    await w2.yieldTo();
    const s = await stopped;
    expect([s.state, s.started, s.finished], s.why).toEqual(['skipped', 1, 0]);
    expect(s.why).toMatch(/^stopped/);
    expect(warm.gpuParts().pool.stats().bytesInUse).toBe(idle);
    expect((await w2.warm(warm, 'a model loads')).why).toBe('not now: a model loads');
    const done = await w2.warm(warm, null);
    expect([done.state, done.started, done.finished]).toEqual(['done', 2, 1]);
    const warmFirst = await importRuns(warm);

    // Every number as JSON writes it (the shortest string that reads back as the same double): bit for bit.
    expect(firstDifference(timeless(afterWarm), timeless(first))).toBeNull();
    expect(firstDifference(timeless(warmFirst), timeless(first))).toBeNull();
    expect(timeless(first)).toContain('"verdict":"diverged"');

    // An import before any warm-up has paid it: none is run after.
    const w3 = new RunsWarmer();
    w3.paid();
    const paid = await w3.warm(warm, null);
    expect([paid.state, paid.started]).toEqual(['paid', 0]);
  }, 60_000);
});
