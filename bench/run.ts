// `npm run bench`: the benchmark runner (Node, Dawn). On a real GPU: GEMM GFLOP/s at 2048³ (fused core vs
// reference, plus tile configurations), reference vs fused forward of Pythia-shaped seeded models at T = 128
// and 512 with dispatch counts, and the cost of a full compare against two bare forwards. On SwiftShader
// (CPU) the sizes shrink so it finishes; those numbers are sanity checks, never claims.
// Flags: --out FILE (JSON), --models pythia-70m,pythia-160m,pythia-410m, --tune, --quick,
// --compare-shapes pythia-70m,… (the full compare at T = 128 on seeded models; 'none' skips it)

import { readModelDir } from '../src/cli/model-dir';
import { analyze } from '../src/compare/analyze';
import { Engine } from '../src/engine/engine';
import { nodeGpu } from '../src/gpu/node';
import { nodeShaderSource } from '../src/kernels/shaders-node';
import { defaultRunSpec } from '../src/run/runspec';
import { benchAttention } from './attention';
import { argv, log, median, printOut, runMain, saveOut, value } from './cli';
import { benchCompare } from './compare';
import { benchForward, type ForwardRow, SHAPES } from './forward';
import { benchGemm, cube, formatTimings, tuneGemm } from './gemm';

async function compareCost(engine: Engine, modelDir: string, reps: number) {
  await engine.loadModel(readModelDir(modelDir));
  const spec = { ...defaultRunSpec(), generate: 0 };
  const tokens = engine.tokenizer!.encode('And God said unto Moses, ');
  const skip = { local: true, bisection: true, determinism: true, generation: true };
  // Warm-up (pipelines, and the oracle of this prompt), then the first compare of another prompt, which pays
  // for its fp64 oracle, then repeated compares of the warm prompt.
  await analyze(engine, spec, tokens, { skip });
  const coldTokens = engine.tokenizer!.encode('In the beginning God created the heaven');
  const tc = performance.now();
  await analyze(engine, spec, coldTokens, { skip });
  const cold = performance.now() - tc;
  const bare: number[] = [];
  const full: number[] = [];
  let phases: Record<string, number> = {};
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    await engine.forward(tokens, { path: 'reference' });
    await engine.forward(tokens, { path: 'fused' });
    const t1 = performance.now();
    const report = await analyze(engine, spec, tokens, { skip });
    full.push(performance.now() - t1);
    bare.push(t1 - t0);
    phases = report.durations;
  }
  const row = {
    model: modelDir,
    T: tokens.length,
    twoBareForwardsMs: median(bare),
    compareMs: median(full),
    ratio: median(full) / median(bare),
    firstCompareMs: cold,
    firstTokens: coldTokens.length,
    firstRatio: cold / median(bare),
    phases,
  };
  log(
    `compare cost: ${row.compareMs.toFixed(1)} ms (first of a prompt ${cold.toFixed(1)} ms) vs two bare forwards ${row.twoBareForwardsMs.toFixed(1)} ms (×${row.ratio.toFixed(2)}, first ×${row.firstRatio.toFixed(2)})`,
  );
  engine.unloadModel();
  return row;
}

async function main() {
  const engine = await Engine.create(nodeGpu(), nodeShaderSource());
  const a = engine.adapter;
  const soft = /swiftshader/i.test(`${a.vendor} ${a.architecture} ${a.description}`);
  const quick = soft || argv.includes('--quick');
  log(
    `adapter: ${a.vendor} ${a.architecture} ${a.description} (timestamp-query ${engine.features.timestampQuery})`,
  );
  const out: Record<string, unknown> = {
    date: new Date().toISOString(),
    adapter: a,
    features: engine.features,
    quick,
  };
  const { device, pipelines } = engine.devicePipelines();
  const gemm = await benchGemm(device, pipelines, [cube(quick ? 256 : 2048)], { reps: quick ? 3 : 20 });
  log(formatTimings(gemm));
  out.gemm = gemm;
  if (argv.includes('--tune') && !quick) {
    const tuned = await tuneGemm(device, pipelines, 2048);
    log(formatTimings(tuned));
    out.gemmTune = tuned;
  }
  if (argv.includes('--tune-attention')) {
    const shapes = quick
      ? [{ H: 2, T: 24, hd: 32 }]
      : [
          { H: 8, T: 128, hd: 64 },
          { H: 8, T: 512, hd: 64 },
          { H: 16, T: 512, hd: 64 },
        ];
    const att = await benchAttention(device, pipelines, shapes, quick ? 2 : 20);
    for (const r of att)
      log(`attention H=${r.H} T=${r.T} hd=${r.hd} ${r.kernel}: ${r.skipped ?? `${r.ms.toFixed(3)} ms`}`);
    out.attention = att;
  }
  const models = (value('--models') ?? (quick ? 'tiny' : 'pythia-70m')).split(',');
  const rows: ForwardRow[] = [];
  for (const m of models) {
    if (!SHAPES[m]) throw new Error(`unknown model shape ${m}`);
    rows.push(...(await benchForward(engine, m, quick ? [16] : [128, 512], quick ? 2 : 20, log)));
  }
  out.forward = rows;
  const compareShapes = value('--compare-shapes') ?? (quick ? 'tiny' : 'pythia-70m,pythia-160m,pythia-410m');
  if (compareShapes !== 'none') {
    out.compare = [];
    for (const m of compareShapes.split(',')) {
      if (!SHAPES[m]) throw new Error(`unknown model shape ${m}`);
      (out.compare as unknown[]).push(await benchCompare(engine, m, quick ? 16 : 128, quick ? 2 : 7, log));
    }
  }
  out.compareCost = await compareCost(
    engine,
    value('--compare-model') ?? 'public/models/neox-kjv-bytes',
    quick ? 1 : 5,
  );
  saveOut(out);
  printOut(out);
  engine.dispose();
}

runMain(main);
