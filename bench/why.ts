// What the "why" phase of the two-path compare costs on a real GPU: a seeded Pythia-shaped model (T = 128, every
// fused kernel, 8 generated tokens, no bisection), compared clean and with a teaching fault planted from layer 1;
// each compare's phases (ms) and the why sentence. Usage: node why.mjs [--model pythia-410m] [--fault gelu_relu]
// [--reps 3] [--out FILE] [--oracle auto|gpu|cpu] [--generate 8] [--tokens 128] [--clean 1] (--clean 0: the faulted
// compare alone; a smaller shape and --oracle gpu profile the GPU oracle's why on SwiftShader)
import { writeFileSync } from 'node:fs';
import { analyze } from '../src/compare/analyze';
import { Engine } from '../src/engine/engine';
import { nodeGpu } from '../src/gpu/node';
import { nodeShaderSource } from '../src/kernels/shaders-node';
import type { FaultId } from '../src/run/faults';
import { defaultRunSpec } from '../src/run/runspec';
import { SHAPES } from './forward';

const argv = process.argv.slice(2);
const value = (name: string, d: string) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : d;
};
const model = value('--model', 'pythia-410m');
const fault = value('--fault', 'gelu_relu') as FaultId;
const reps = Number(value('--reps', '3'));
const oracle = value('--oracle', 'auto') as 'auto' | 'gpu' | 'cpu';
const generate = Number(value('--generate', '8'));
const T = Number(value('--tokens', '128'));
const clean = value('--clean', '1') !== '0';

async function main() {
  const engine = await Engine.create(nodeGpu(), nodeShaderSource());
  const shape = argv.includes('--shape')
    ? { ...SHAPES[model], ...JSON.parse(value('--shape', '{}')) }
    : SHAPES[model];
  await engine.loadSeededModel({ ...shape, maxPos: 4096 }, 4321, model);
  const tokens = Array.from({ length: T }, (_, i) => (i * 7919 + 104729) % shape.vocab);
  const rows = [];
  for (const faults of clean ? [[], [{ id: fault, fromLayer: 1 }]] : [[{ id: fault, fromLayer: 1 }]]) {
    const spec = {
      ...defaultRunSpec(),
      model: { kind: 'embedded' as const, id: model },
      generate,
      faults,
    };
    for (let r = 0; r <= reps; r++) {
      const t0 = performance.now();
      const report = await analyze(engine, spec, tokens, { skip: { bisection: true }, oracle });
      const ms = performance.now() - t0;
      const row = {
        fault: faults.length ? fault : null,
        rep: r,
        ms,
        phases: report.durations,
        why: report.why?.sentence,
      };
      console.error(JSON.stringify(row));
      rows.push(row);
    }
  }
  const out = { adapter: engine.adapter.description, model, date: new Date().toISOString(), rows };
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
