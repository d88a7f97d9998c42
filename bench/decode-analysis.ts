// Where the decode check's runs analysis spends its time on a real GPU (issue 27's cost): a seeded Pythia-shaped
// model, T = 128, 8 generated tokens, both paths' decodes recorded (kept on the GPU), then, warm, median of reps:
// the analysis as the decode check runs it (runs A and B, the decode rows), each run alone, and its fixed parts
// alone (the exact forward over every position, the reference path's forward with every tap).
// Usage: node decode-analysis.mjs [--model pythia-410m] [--reps 3] [--out FILE]
import { analyzeRuns } from '../src/compare/analyze-runs';
import { decodeRows, decodeRunInput } from '../src/compare/decode-run-file';
import { runChecks } from '../src/compare/run-checks';
import type { RecordedDecode } from '../src/engine/decode-record';
import { ALL_FUSED } from '../src/engine/fused-kernels';
import { GpuOracle } from '../src/engine/oracle-gpu';
import { GpuTimer } from '../src/gpu/timestamps';
import { benchEngine, log, median, runMain, saveOut, value } from './cli';
import { benchPrompt, loadShape } from './forward';

async function main() {
  const model = value('--model') ?? 'pythia-410m';
  const reps = Number(value('--reps') ?? '3');
  const engine = await benchEngine();
  const shape = await loadShape(engine, model);
  const prompt = benchPrompt(128, shape.vocab);
  const recorded: RecordedDecode[] = [];
  const paths = [{ path: 'reference' as const }, { path: new Set(ALL_FUSED) }];
  const ids = await engine.generatePaths(prompt, 8, paths, undefined, undefined, { recorded });
  const runs = await Promise.all(
    ['reference', 'fused'].map((p, i) => decodeRunInput(recorded[i], prompt, ids[i], p, 'fp32', true)),
  );
  const tokens = runs[0].file.tokens;
  const rows = decodeRows(prompt.length);
  const opts = { oracle: 'gpu' as const, rows };
  const { device, pipelines, pool, model: gm } = engine.gpuParts();
  const oracle = new GpuOracle(device, pipelines, pool, gm, {
    dfFma: true,
    maxBindingBytes: engine.maxBindingBytes,
    angles: 'hf-fp32',
  });
  const cases: Record<string, () => Promise<unknown>> = {
    'analysis A+B (the decode check)': () => analyzeRuns(engine, runs[0], runs[1], opts),
    'analysis A (reference decode)': () => analyzeRuns(engine, runs[0], null, opts),
    'analysis B (fused decode)': () => analyzeRuns(engine, runs[1], null, opts),
    'exact forward, every position': async () => {
      const b = engine.batch();
      try {
        const r = oracle.forward(b.encoder, tokens, 'dump');
        b.onRelease(() => r.release());
        await b.submit();
      } finally {
        b.release();
      }
    },
    'reference forward, every tap': async () => {
      const b = engine.batch();
      try {
        b.forward(tokens, { path: 'reference', precision: 'fp32', taps: 'all' });
        await b.submit();
      } finally {
        b.release();
      }
    },
  };
  const out: Record<string, { ms: number[]; median: number; phases?: unknown }> = {};
  for (const [name, f] of Object.entries(cases)) {
    const ms: number[] = [];
    let phases: unknown;
    for (let r = 0; r <= reps; r++) {
      const t0 = performance.now();
      const got = await f();
      if (r > 0) ms.push(performance.now() - t0);
      if (got && typeof got === 'object' && 'durations' in got) phases = got.durations;
    }
    out[name] = { ms, median: median(ms), phases };
    log(JSON.stringify({ name, ...out[name] }));
  }
  // Each check's GPU time (one timed pass per kernel), per run: by op, and the costliest kernels.
  const profile: Record<string, unknown> = {};
  for (const [j, run] of runs.entries()) {
    const { checks } = runChecks(engine.modelInfo!.config, (s) => run.file.slots.has(s));
    const timer = new GpuTimer(device, 2000);
    const b = engine.batch();
    try {
      for (const c of checks) {
        const inputs = c.inputs.map((s) => {
          const t = run.resident!.slots.get(s)!;
          return { buffer: t.buffer, n: t.floats };
        });
        const one = oracle.opOn(
          b.encoder,
          { op: c.op, layer: c.layer, inputs, label: `${c.op}|${c.id}` },
          tokens,
          rows.from,
          timer,
        );
        b.onRelease(() => one.release());
      }
      timer.resolve(b.encoder);
      await b.submit();
      const t = (await timer.read()) ?? [];
      const byOp: Record<string, number> = {};
      for (const x of t) byOp[x.label.split('|')[0]] = (byOp[x.label.split('|')[0]] ?? 0) + x.ns / 1e6;
      const top = [...t]
        .sort((x, y) => y.ns - x.ns)
        .slice(0, 12)
        .map((x) => `${x.label} ${(x.ns / 1e6).toFixed(3)}`);
      const total = t.reduce((n, x) => n + x.ns / 1e6, 0);
      profile[j === 0 ? 'A' : 'B'] = { checks: checks.length, passes: t.length, totalMs: total, byOp, top };
      log(JSON.stringify({ run: j === 0 ? 'A' : 'B', total, byOp, top }));
    } finally {
      b.release();
      timer.destroy();
    }
  }
  {
    const timer = new GpuTimer(device, 2000);
    const b = engine.batch();
    try {
      const r = oracle.forward(b.encoder, tokens, 'dump', timer);
      b.onRelease(() => r.release());
      timer.resolve(b.encoder);
      await b.submit();
      const t = (await timer.read()) ?? [];
      const byOp: Record<string, number> = {};
      for (const x of t) {
        const k = x.label.replace(/layers\.\d+\./, '');
        byOp[k] = (byOp[k] ?? 0) + x.ns / 1e6;
      }
      profile.exact = { totalMs: t.reduce((n, x) => n + x.ns / 1e6, 0), byOp };
      log(JSON.stringify({ exact: profile.exact }));
    } finally {
      b.release();
      timer.destroy();
    }
  }
  for (const r of recorded) r.release();
  saveOut({
    adapter: engine.adapter.description,
    model,
    date: new Date().toISOString(),
    cases: out,
    profile,
  });
  engine.dispose();
}

runMain(main);
