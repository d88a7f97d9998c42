// What checking every decode step costs on a real GPU (RunSpec.checkDecode): a seeded Pythia-shaped model
// (T = 128, every fused kernel, 8 generated tokens, no fault, no bisection), the full compare without and with
// each path's decode steps recorded and checked op by op as runs; each compare's phases (ms), the runs analyses'
// own phases, and the decode checks' verdicts. Usage: node decode-check.mjs [--model pythia-410m] [--reps 3]
// [--out FILE]
import { analyze } from '../src/compare/analyze';
import type { DecodeChecker } from '../src/compare/decode-run-file';
import { decodeChecker } from '../src/compare/decode-runs';
import { defaultRunSpec } from '../src/run/runspec';
import { benchEngine, log, median, runMain, saveOut, value } from './cli';
import { benchPrompt, loadShape } from './forward';

async function main() {
  const model = value('--model') ?? 'pythia-410m';
  const reps = Number(value('--reps') ?? '3');
  const engine = await benchEngine();
  const shape = await loadShape(engine, model);
  const tokens = benchPrompt(128, shape.vocab);
  const spec = { ...defaultRunSpec(), model: { kind: 'embedded' as const, id: model }, generate: 8 };
  const checker = decodeChecker(engine);
  const logged: DecodeChecker = async (file, o, other) => {
    const report = await checker(file, o, other);
    log(JSON.stringify({ runsPhases: report.durations }));
    return report;
  };
  const rows: { checkDecode: boolean; rep: number; ms: number }[] = [];
  // Interleaved, the first of each a warm-up (rep 0): pipelines, recorded plans, the oracle.
  for (let r = 0; r <= reps; r++) {
    for (const check of [false, true]) {
      const t0 = performance.now();
      const report = await analyze(engine, spec, tokens, {
        skip: { bisection: true },
        checkDecode: check ? logged : undefined,
      });
      const row = {
        checkDecode: check,
        rep: r,
        ms: performance.now() - t0,
        phases: report.durations,
        decode: report.generation?.decode?.map((d) => `${d.path}: ${d.verdict} (${d.checks} checks)`),
      };
      log(JSON.stringify(row));
      rows.push(row);
    }
  }
  const med = (check: boolean) =>
    median(rows.filter((x) => x.checkDecode === check && x.rep > 0).map((x) => x.ms));
  const summary = { without: med(false), with: med(true), added: med(true) / med(false) - 1 };
  log(JSON.stringify(summary));
  saveOut({ adapter: engine.adapter.description, model, date: new Date().toISOString(), summary, rows });
  engine.dispose();
}

runMain(main);
