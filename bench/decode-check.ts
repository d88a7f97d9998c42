// What checking every decode step costs on a real GPU (RunSpec.checkDecode): a seeded Pythia-shaped model
// (T = 128, every fused kernel, 8 generated tokens, no fault, no bisection), the full compare without and with
// each path's decode steps recorded and checked op by op as runs; each compare's phases (ms) and the decode
// checks' verdicts. Usage: node decode-check.mjs [--model pythia-410m] [--reps 3] [--out FILE]
import { writeFileSync } from 'node:fs';
import { analyze } from '../src/compare/analyze';
import { decodeChecker } from '../src/compare/decode-runs';
import { Engine } from '../src/engine/engine';
import { nodeGpu } from '../src/gpu/node';
import { nodeShaderSource } from '../src/kernels/shaders-node';
import { defaultRunSpec } from '../src/run/runspec';
import { SHAPES } from './forward';

const argv = process.argv.slice(2);
const value = (name: string, d: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : d;
};
const model = value('--model', 'pythia-410m');
const reps = Number(value('--reps', '3'));

async function main() {
  const engine = await Engine.create(nodeGpu(), nodeShaderSource());
  const shape = SHAPES[model];
  await engine.loadSeededModel({ ...shape, maxPos: 4096 }, 4321, model);
  const tokens = Array.from({ length: 128 }, (_, i) => (i * 7919 + 104729) % shape.vocab);
  const spec = { ...defaultRunSpec(), model: { kind: 'embedded' as const, id: model }, generate: 8 };
  const checker = decodeChecker(engine);
  const rows: { checkDecode: boolean; rep: number; ms: number }[] = [];
  // Interleaved, the first of each a warm-up (rep 0): pipelines, recorded plans, the oracle.
  for (let r = 0; r <= reps; r++) {
    for (const check of [false, true]) {
      const t0 = performance.now();
      const report = await analyze(engine, spec, tokens, {
        skip: { bisection: true },
        checkDecode: check
          ? async (file, o) => {
              const report = await checker(file, o);
              console.error(JSON.stringify({ runsPhases: report.durations }));
              return report;
            }
          : undefined,
      });
      const ms = performance.now() - t0;
      const row = {
        checkDecode: check,
        rep: r,
        ms,
        phases: report.durations,
        decode: report.generation?.decode?.map((d) => `${d.path}: ${d.verdict} (${d.checks} checks)`),
      };
      console.error(JSON.stringify(row));
      rows.push(row);
    }
  }
  const med = (check: boolean) => {
    const v = rows.filter((x) => x.checkDecode === check && x.rep > 0).map((x) => x.ms);
    v.sort((a, b) => a - b);
    return v[Math.floor(v.length / 2)];
  };
  const summary = { without: med(false), with: med(true), added: med(true) / med(false) - 1 };
  console.error(JSON.stringify(summary));
  const out = { adapter: engine.adapter.description, model, date: new Date().toISOString(), summary, rows };
  const file = argv.includes('--out') ? value('--out', '') : '';
  if (file) writeFileSync(file, JSON.stringify(out, null, 2));
  engine.dispose();
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
