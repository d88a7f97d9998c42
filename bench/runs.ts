// The import and analysis of a pair of runs made elsewhere (docs/RUNS.md), timed on a real GPU: both run files
// streamed from disk (hashed, checked, decoded tensor by tensor) and analyzed (GPU double-float oracle, every local
// check, GPU-reduced metrics). Memory: the process's peak RSS above its level once the model is loaded, sampled
// every 2 ms, against the two files' size. Inputs from tools/bench_runs.py (a 410m-shaped model, runs at T = 128).
// Usage: node runs.mjs --dir DIR [--reps 3] [--out FILE]

import { createHash } from 'node:crypto';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readModelDir } from '../src/cli/model-dir';
import { analyzeRuns } from '../src/compare/analyze-runs';
import { Engine } from '../src/engine/engine';
import { nodeGpu } from '../src/gpu/node';
import { nodeShaderSource } from '../src/kernels/shaders-node';
import { readRunFile } from '../src/model/run-file';
import { nodeFileStream } from '../src/model/stream-node';
import { log, rssAboveBase, value } from './cli';

const dir = value('--dir') ?? '.';
const reps = Number(value('--reps') ?? 3);

async function main() {
  const engine = await Engine.create(nodeGpu(), nodeShaderSource());
  const t0 = performance.now();
  await engine.loadModel(readModelDir(dir));
  const loadMs = performance.now() - t0;
  const cfg = engine.modelInfo!.config;
  const files = ['a.safetensors', 'b.safetensors'].map((f) => join(dir, f));
  const fileBytes = files.reduce((s, f) => s + statSync(f).size, 0);
  const read = async (path: string) => {
    const hash = createHash('sha256');
    async function* hashed() {
      for await (const c of nodeFileStream(path)) {
        hash.update(c);
        yield c;
      }
    }
    const file = await readRunFile(hashed(), statSync(path).size, cfg, { file: path });
    return { file, sha256: hash.digest('hex') };
  };
  const rows = [];
  for (let r = 0; r < reps; r++) {
    const rss = rssAboveBase(2);
    const ta = performance.now();
    const [a, b] = await Promise.all([read(files[0]), read(files[1])]);
    const tb = performance.now();
    const report = await analyzeRuns(engine, a, b);
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
