// `npx tsx bench/llama-compare.ts`: the full two-path compare of the Llama family (compare/family-compare.ts, reached
// through analyze(): both forwards with every tap, the exact forward, the local re-runs, the comparisons, the
// verdict, bisection, determinism, 8 greedy tokens per path) on seeded models of real shapes (SmolLM2-135M,
// Qwen2.5-0.5B, from their HF config.json values), T = 128: the first compare of the prompt and --reps repeats, each
// with its phase times (Report.durations: the forwards keep their taps on the GPU, so sources, determinism, oracle and
// local are CPU times to record and submit, and the comparisons hold the one wait for the GPU's queue), the oracle it
// ran (GPU double-float where the self-test passed). Then the
// GPU oracle alone: its whole forward with every tap recorded and submitted (no readback; GPU wall), and with
// every tap read back and turned to fp64 (what the compare pays).
// Flags: --models smollm2-135m,qwen2.5-0.5b --T 128 --reps 3 --generate 8 --oracle auto|gpu|cpu --out FILE;
// --profile 1: then each part alone (bench/llama-compare-profile.ts).
// On SwiftShader use `--models tiny --oracle gpu` (a CPU adapter's 'auto' takes the CPU oracle).

import { analyze } from '../src/compare/analyze';
import { familyOracleOf } from '../src/compare/family-exact';
import { decideFamilyOracle, type OracleChoice } from '../src/compare/oracle-source';
import { ALL_FUSED } from '../src/engine/fused-kernels';
import { recordTapsReadback } from '../src/engine/llama-oracle-gpu';
import { BufferPool } from '../src/gpu/pool';
import { randomLlamaTensors } from '../src/model/llama-random';
import { parseModelConfigText } from '../src/model/model-config';
import { writeSafetensors } from '../src/model/safetensors-write';
import { mulberry32 } from '../src/numeric/random';
import { defaultRunSpec, type RunSpec } from '../src/run/runspec';
import { benchEngine, log, median, printOut, runMain, saveOut, value } from './cli';
import { profileCompare } from './llama-compare-profile';
import { CONFIGS } from './llama-compare-shapes';

const round = (x: number) => Math.round(x * 10) / 10;
const rounded = (d: Record<string, number>) =>
  Object.fromEntries(Object.entries(d).map(([k, v]) => [k, round(v)]));

async function main(): Promise<void> {
  const models = (value('--models') ?? 'smollm2-135m,qwen2.5-0.5b').split(',');
  const T = Number(value('--T') ?? 128);
  const reps = Number(value('--reps') ?? 3);
  const generate = Number(value('--generate') ?? 8);
  const choice = (value('--oracle') ?? 'auto') as OracleChoice;
  const engine = await benchEngine();
  const out: Record<string, unknown> = {
    adapter: engine.adapter,
    date: new Date().toISOString(),
    T,
    generate,
    rows: [],
  };
  const rows = out.rows as unknown[];
  for (const name of models) {
    const json = CONFIGS[name];
    if (!json) throw new Error(`unknown model '${name}' (${Object.keys(CONFIGS).join(', ')})`);
    const config = JSON.stringify(json);
    const cfg = parseModelConfigText(config);
    if (cfg.family !== 'llama') throw new Error(`${name}: not the Llama family`);
    let t0 = performance.now();
    const weights = writeSafetensors(randomLlamaTensors(cfg, 20261127));
    const makeMs = performance.now() - t0;
    t0 = performance.now();
    await engine.loadModel({ config, weights, name });
    const loadMs = performance.now() - t0;
    log(`${name}: weights made in ${round(makeMs)} ms, loaded in ${round(loadMs)} ms`);
    const rng = mulberry32(7);
    const tokens = Array.from({ length: T }, () => Math.floor(rng() * cfg.vocabSize));
    const spec: RunSpec = {
      ...defaultRunSpec(),
      model: { kind: 'embedded', id: name },
      prompt: { tokens },
      fused: [...ALL_FUSED],
      faults: [],
      seed: 1,
      generate,
    };
    const compares: { ms: number; durations: Record<string, number>; verdict: string; oracle: string }[] = [];
    for (let r = 0; r <= reps; r++) {
      t0 = performance.now();
      const rep = await analyze(engine, spec, tokens, { oracle: choice });
      const ms = performance.now() - t0;
      compares.push({
        ms: round(ms),
        durations: rounded(rep.durations ?? {}),
        verdict: rep.verdict,
        oracle: rep.oracle.kind,
      });
      log(
        `${name} compare ${r === 0 ? 'first' : `rep ${r}`}: ${round(ms)} ms (${rep.verdict}, oracle ${rep.oracle.kind}: ${rep.oracle.reason}); phases ${JSON.stringify(rounded(rep.durations ?? {}))}`,
      );
    }
    // The GPU oracle alone, when it is the one chosen: GPU wall of its whole forward, then with every tap read back.
    const model = engine.llamaModel;
    const { device } = engine.devicePipelines();
    const pool = new BufferPool(device);
    const info = await decideFamilyOracle(engine, choice, pool);
    const oracleTimes: { forwardMs: number[]; readbackMs: number[] } = { forwardMs: [], readbackMs: [] };
    if (model && info.kind === 'gpu') {
      const oracle = familyOracleOf(engine, model, pool, info.dfFma);
      for (let r = 0; r < reps + 1; r++) {
        for (const read of [false, true]) {
          const enc = device.createCommandEncoder();
          t0 = performance.now();
          const run = oracle.forward(enc, tokens, 'all');
          const finish = read ? recordTapsReadback(device, enc, run.taps, [...run.taps.keys()]) : null;
          device.queue.submit([enc.finish()]);
          if (finish) await finish();
          else await device.queue.onSubmittedWorkDone();
          const ms = performance.now() - t0;
          run.release();
          if (r > 0) (read ? oracleTimes.readbackMs : oracleTimes.forwardMs).push(round(ms));
        }
      }
      log(
        `${name} GPU oracle, every tap: forward ${median(oracleTimes.forwardMs)} ms, with the taps read back as fp64 ${median(oracleTimes.readbackMs)} ms`,
      );
    }
    const profile = value('--profile')
      ? await profileCompare(engine, pool, tokens, info.kind === 'gpu' ? info.dfFma : null, reps, generate)
      : null;
    pool.destroyAll();
    const repeated = compares.slice(1).map((c) => c.ms);
    rows.push({
      model: name,
      T,
      makeMs: round(makeMs),
      loadMs: round(loadMs),
      oracle: info.kind,
      oracleReason: info.reason,
      firstMs: compares[0].ms,
      repeatedMedianMs: repeated.length ? median(repeated) : null,
      compares,
      gpuOracle: oracleTimes,
      profile,
    });
    saveOut(out);
    engine.unloadModel();
  }
  printOut(out);
}

runMain(main);
