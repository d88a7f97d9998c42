// `npx tsx bench/llama-compare-reports.ts`: the two-path compare's report with generation's decode steps built anew
// each step (LlamaModel.stepCache = false) and recorded once and replayed (true), on the five Llama-family fixtures
// (src/model/testdata/llama), clean and with three teaching faults from layer 0, 8 or the fixture's and 12 greedy
// tokens: the two reports field for field (the timing fields ms, durations and createdAt aside); a difference is
// printed with its path and the exit code is 1. On SwiftShader about three minutes.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { analyze } from '../src/compare/analyze';
import { ALL_FUSED } from '../src/engine/fused-kernels';
import { defaultRunSpec, type RunSpec } from '../src/run/runspec';
import { benchEngine, runMain } from './cli';

const F = 'src/model/testdata/llama';
runMain(async () => {
  const engine = await benchEngine();
  let checked = 0;
  for (const name of readdirSync(F)) {
    const dir = join(F, name);
    await engine.loadModel({
      config: readFileSync(join(dir, 'config.json'), 'utf8'),
      weights: new Uint8Array(readFileSync(join(dir, 'model.safetensors'))),
      name,
    });
    const hf = JSON.parse(readFileSync(join(dir, 'hf_outputs.json'), 'utf8'));
    const tokens = hf.greedy.prompt as number[];
    const model = engine.llamaModel;
    if (!model) throw new Error(`${name}: not a Llama-family model`);
    const planted: RunSpec['faults'][] = [
      [],
      [{ id: 'swap_gate_up', fromLayer: 0 }],
      [{ id: 'rms_eps_outside', fromLayer: 0 }],
      [{ id: 'kv_interleaved', fromLayer: 0 }],
    ];
    for (const faults of planted) {
      for (const generate of [hf.greedy.new_ids.length, 12]) {
        const spec: RunSpec = {
          ...defaultRunSpec(),
          model: { kind: 'embedded' as const, id: 't' },
          prompt: { tokens },
          fused: [...ALL_FUSED],
          faults,
          seed: 1,
          generate: Number(generate),
        };
        const reps: string[] = [];
        for (const cached of [false, true]) {
          model.stepCache = cached;
          const r = await analyze(engine, spec, tokens, {});
          reps.push(
            JSON.stringify({ ...r, createdAt: null, durations: null }, (k, v) =>
              k === 'ms' ? null : typeof v === 'number' && !Number.isFinite(v) ? String(v) : v,
            ),
          );
        }
        checked++;
        const same = reps[0] === reps[1];
        console.error(
          name,
          JSON.stringify(faults),
          generate,
          same ? 'equal' : 'DIFFERENT',
          JSON.stringify(model.lastStepCounts),
        );
        if (!same) {
          process.exitCode = 1;
          const [a, b] = reps.map((x) => JSON.parse(x));
          const walk = (x: unknown, y: unknown, path: string, out: string[]) => {
            if (out.length > 8) return;
            if (typeof x !== 'object' || x === null || typeof y !== 'object' || y === null) {
              if (x !== y)
                out.push(`${path}: ${JSON.stringify(x)?.slice(0, 80)} vs ${JSON.stringify(y)?.slice(0, 80)}`);
              return;
            }
            const [ox, oy] = [x as Record<string, unknown>, y as Record<string, unknown>];
            for (const k of new Set([...Object.keys(ox), ...Object.keys(oy)]))
              walk(ox[k], oy[k], `${path}.${k}`, out);
          };
          const out: string[] = [];
          walk(a, b, '', out);
          console.error(out.join('\n'));
        }
      }
    }
  }
  console.error('checked', checked);
});
