// `npx tsx bench/llama.ts`: the Llama family's fused forward (engine/llama-fused.ts) on seeded models of real
// shapes (SmolLM2-135M, Qwen2.5-0.5B), T = 128 and 512: the recorded dispatches submitted again and again, each
// submit-to-done timed on the wall clock, no readback (as bench/forward.ts times GPT-NeoX's plans), with the adapter's
// GEMM policy. The PyTorch peer for the same shapes is bench/torch_llama_peer.py (HF SDPA under CUDA-graph replay).
// Flags: --models smollm2-135m,qwen2.5-0.5b --T 128,512 --reps 9 --out FILE. On SwiftShader use `--models tiny`.

import { LlamaFused } from '../src/engine/llama-fused';
import { randomLlamaTensors, smallLlamaConfig } from '../src/model/llama-random';
import { loadLlamaWeights } from '../src/model/llama-weights';
import { writeSafetensors } from '../src/model/safetensors-write';
import type { LlamaConfig } from '../src/numeric/types';
import { benchEngine, log, median, printOut, runMain, saveOut, value } from './cli';

const L = (over: Partial<LlamaConfig>): LlamaConfig => smallLlamaConfig(over);

/** The shapes of the HF configs (HuggingFaceTB/SmolLM2-135M, Qwen/Qwen2.5-0.5B); weights seeded, not trained. */
export const LLAMA_SHAPES: Record<string, LlamaConfig> = {
  tiny: L({
    vocabSize: 997,
    hiddenSize: 96,
    numLayers: 2,
    numHeads: 6,
    numKvHeads: 2,
    headDim: 16,
    rotaryDim: 16,
  }),
  'smollm2-135m': L({
    vocabSize: 49152,
    hiddenSize: 576,
    numLayers: 30,
    numHeads: 9,
    numKvHeads: 3,
    headDim: 64,
    rotaryDim: 64,
    intermediateSize: 1536,
    ropeTheta: 100000,
    tieWordEmbeddings: true,
    maxPositionEmbeddings: 8192,
    slidingWindow: Array(30).fill(null),
  }),
  'qwen2.5-0.5b': L({
    flavour: 'qwen2',
    vocabSize: 151936,
    hiddenSize: 896,
    numLayers: 24,
    numHeads: 14,
    numKvHeads: 2,
    headDim: 64,
    rotaryDim: 64,
    intermediateSize: 4864,
    rmsNormEps: 1e-6,
    ropeTheta: 1000000,
    attentionBias: true,
    tieWordEmbeddings: true,
    maxPositionEmbeddings: 32768,
    slidingWindow: Array(24).fill(null),
  }),
};

async function main() {
  const engine = await benchEngine();
  const { device, pipelines } = engine.devicePipelines();
  const models = (value('--models') ?? 'smollm2-135m,qwen2.5-0.5b').split(',');
  const Ts = (value('--T') ?? '128,512').split(',').map(Number);
  const reps = Number(value('--reps') ?? 9);
  const rows: unknown[] = [];
  const out = { adapter: engine.adapter, policy: engine.gemmPolicy.name, rows };
  for (const name of models) {
    const cfg = LLAMA_SHAPES[name];
    if (!cfg) throw new Error(`unknown shape ${name}: ${Object.keys(LLAMA_SHAPES).join(', ')}`);
    const t0 = performance.now();
    const w = loadLlamaWeights(cfg, writeSafetensors(randomLlamaTensors(cfg, 4321, 'BF16')));
    const fused = LlamaFused.create({ device, pipelines }, cfg, w);
    log(`${name}: weights made and uploaded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    for (const T of Ts) {
      const tokens = Array.from({ length: T }, (_, i) => (i * 7919 + 104729) % cfg.vocabSize);
      const time = { reps, ms: [] as number[] };
      await fused.forward(tokens, { gemmPolicy: engine.gemmPolicy, time });
      const row = { model: name, T, medianMs: median(time.ms), minMs: Math.min(...time.ms), reps };
      log(`${name} T=${T}: fused forward ${row.medianMs.toFixed(2)} ms (min ${row.minMs.toFixed(2)})`);
      rows.push(row);
      saveOut(out);
    }
    fused.destroy();
  }
  printOut(out);
  engine.dispose();
}

runMain(main);
