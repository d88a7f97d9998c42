// `npx tsx bench/llama-compare-record.ts`: the CPU side of the Llama compare's forwards on a thin model of the
// Qwen2.5-0.5B shape's layers and heads (bench/llama-compare.ts 'qwen-thin'): each kind of forward the compare records
// (reference with every tap, fused with every tap, fused dump, the local re-runs) timed from call to return (recorded
// and submitted, not waited for), then the GPU drained; and the two paths' greedy generation, whole. On a CPU adapter
// the GPU work is small at these widths, so the times are mostly the recording's. Flags: --model qwen-thin
// --reps 5 --generate 8 --out FILE. Run it with `node --cpu-prof` (through tsx) to see where the recording goes.
import { ALL_FUSED } from '../src/engine/fused-kernels';
import { randomLlamaTensors } from '../src/model/llama-random';
import { parseModelConfigText } from '../src/model/model-config';
import { writeSafetensors } from '../src/model/safetensors-write';
import { mulberry32 } from '../src/numeric/random';
import { benchEngine, log, median, printOut, runMain, saveOut, value } from './cli';
import { CONFIGS } from './llama-compare-shapes';

const round = (x: number) => Math.round(x * 10) / 10;

async function main(): Promise<void> {
  const name = value('--model') ?? 'qwen-thin';
  const reps = Number(value('--reps') ?? 5);
  const n = Number(value('--generate') ?? 8);
  const T = Number(value('--T') ?? 128);
  const engine = await benchEngine();
  const config = JSON.stringify(CONFIGS[name]);
  const cfg = parseModelConfigText(config);
  if (cfg.family !== 'llama') throw new Error(`${name}: not the Llama family`);
  await engine.loadModel({ config, weights: writeSafetensors(randomLlamaTensors(cfg, 20261127)), name });
  const model = engine.llamaModel;
  if (!model) throw new Error(`${name}: not the Llama family`);
  const { device } = engine.devicePipelines();
  const rng = mulberry32(7);
  const tokens = Array.from({ length: T }, () => Math.floor(rng() * cfg.vocabSize));
  const fused = { path: new Set(ALL_FUSED), precision: 'fp32' as const };
  const ref = { path: 'reference' as const, precision: 'fp32' as const };
  const times: Record<string, number[]> = {};
  const time = async (label: string, f: () => Promise<{ release(): void }>) => {
    const t0 = performance.now();
    const k = await f();
    (times[label] ??= []).push(round(performance.now() - t0));
    await device.queue.onSubmittedWorkDone();
    k.release();
  };
  for (let r = 0; r <= reps; r++) {
    await time('reference, every tap', () => model.forwardKept(tokens, { ...ref, taps: true }));
    await time('fused, every tap', () => model.forwardKept(tokens, { ...fused, taps: true }));
    await time('fused, dump', () => model.forwardKept(tokens, fused));
    const base = await model.forwardKept(tokens, { ...ref, taps: true });
    const refIn = Array.from({ length: cfg.numLayers }, (_, i) => base.layerInput(i).buf);
    await time('fused, local', () => model.forwardKept(tokens, { ...fused, layerInputs: refIn }));
    await time('reference, local', () => model.forwardKept(tokens, { ...ref, layerInputs: refIn }));
    await device.queue.onSubmittedWorkDone();
    base.release();
    const t0 = performance.now();
    await engine.generatePaths(tokens, n, [ref, fused]);
    (times[`generation, ${n} tokens × 2 paths`] ??= []).push(round(performance.now() - t0));
  }
  const out = {
    adapter: engine.adapter,
    model: name,
    T,
    reps,
    medianMs: Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v.slice(1))])),
    times,
  };
  log(JSON.stringify(out.medianMs));
  saveOut(out);
  printOut(out);
}

runMain(main);
