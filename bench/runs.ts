// The import and analysis of a pair of runs made elsewhere (docs/RUNS.md), timed on a real GPU: both run files
// streamed from disk (checked, decoded tensor by tensor; hashed on worker threads meanwhile: 'import ms' is until
// both are decoded, 'analysis ms' until the report holds both hashes) and analyzed (GPU double-float oracle, every
// local check, GPU-reduced metrics). Memory: the process's peak RSS above its level once the model is loaded, sampled
// every 2 ms, against the two files' size. Inputs from tools/bench_runs.py (a 410m-shaped model, runs at T = 128).
// Warm-up (compare/runs-warmup.ts: the self-test, every pipeline's compile, the first calls of the analysis's
// JavaScript, paid once per process when the model is loaded) before the reps unless --no-warm: rep 0 is then the
// process's first file pair. Usage: node runs.mjs --dir DIR [--reps 3] [--whole] [--evict] [--no-warm] [--out FILE]

import { execFileSync } from 'node:child_process';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readModelDir } from '../src/cli/model-dir';
import { readRuns, withSha256 } from '../src/cli/run-read';
import { analyzeRuns, streamRuns } from '../src/compare/analyze-runs';
import { type RunsStart, startRunsAnalysis } from '../src/compare/runs-start';
import { warmRunsAnalysis } from '../src/compare/runs-warmup';
import { Engine } from '../src/engine/engine';
import { nodeGpu } from '../src/gpu/node';
import { nodeShaderSource } from '../src/kernels/shaders-node';
import { log, rssAboveBase, value } from './cli';

const dir = value('--dir') ?? '.';
const reps = Number(value('--reps') ?? 3);
const whole = process.argv.includes('--whole');
// `--evict`: each rep reads cold, the files dropped from the page cache first (posix_fadvise DONTNEED, by python3:
// Node has no fadvise), as from a disk the OS has not cached.
const evict = process.argv.includes('--evict');
const EVICT =
  'import os,sys\nfor p in sys.argv[1:]:\n fd=os.open(p,os.O_RDONLY); os.fsync(fd); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED); os.close(fd)';

async function main() {
  const engine = await Engine.create(nodeGpu(), nodeShaderSource());
  const t0 = performance.now();
  await engine.loadModel(readModelDir(dir));
  const loadMs = performance.now() - t0;
  const warm = process.argv.includes('--no-warm') ? null : await warmRunsAnalysis(engine);
  if (warm)
    log(`warm-up: ${warm.ms.toFixed(0)} ms on ${warm.tokens} tokens ${JSON.stringify(warm.durations)}`);
  const cfg = engine.modelInfo!.config;
  const files = ['a.safetensors', 'b.safetensors'].map((f) => join(dir, f));
  const fileBytes = files.reduce((s, f) => s + statSync(f).size, 0);
  const rows = [];
  for (let r = 0; r < reps; r++) {
    if (evict) execFileSync('python3', ['-c', EVICT, ...files]);
    const rss = rssAboveBase(2);
    const ta = performance.now();
    // As `cli compare-runs` (src/cli/run-read.ts): decoded here, hashed on worker threads until the analysis ends.
    // The analysis starts on the first header's tokens and takes each slot as it is read, as the CLI's does
    // (streamRuns); `--whole`: the files read whole first, the analysis after (the tree before streaming).
    const stream = whole ? null : streamRuns(engine, 2);
    let start: Promise<RunsStart> | undefined;
    const reads = await readRuns(
      files.map((f, i) => [f, i ? '--b' : '--a']),
      cfg,
      (i) =>
        stream?.reader(i) ?? {
          onHeader: (h) => {
            start ??= startRunsAnalysis(engine, h.tokens);
          },
        },
    );
    const tb = performance.now();
    const analysis = stream
      ? stream.report(reads[0].run, reads[1].run)
      : analyzeRuns(engine, reads[0].run, reads[1].run, {}, start);
    const report = await withSha256(await analysis, reads);
    const tc = performance.now();
    const above = rss.stop();
    const row = {
      rep: r,
      importMs: tb - ta,
      analysisMs: tc - tb,
      totalMs: tc - ta,
      phases: report.durations,
      peakAboveBaseBytes: above,
      peakOverFiles: above / fileBytes,
      checks: report.checks.length,
      oracle: report.oracle.kind,
      sentence: report.sentence,
      causeMs: report.findings.map((f) => f.cause?.ms ?? null),
    };
    log(JSON.stringify(row));
    rows.push(row);
  }
  const out = {
    device: engine.adapter,
    date: new Date().toISOString(),
    model: { layers: cfg.numLayers, d: cfg.hiddenSize, vocab: cfg.vocabSize },
    loadMs,
    warmup: warm,
    fileBytes,
    rows,
  };
  const o = value('--out');
  if (o) writeFileSync(o, JSON.stringify(out, null, 2));
  console.log(JSON.stringify(out));
  engine.dispose();
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
