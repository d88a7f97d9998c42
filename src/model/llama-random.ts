// Seeded random Llama-family checkpoints (HF names, a LlamaConfig's shapes) for tests: every op matters, as in
// tools/llama_fixtures.py — linear weights N(0, 1/fan_in), biases N(0, 0.1), RMSNorm and q/k-norm weights
// 1 + N(0, 0.1), embeddings N(0, 1). The tensors are the family's steps' (llama-weights.ts llamaStepWeights).
import { mulberry32, randn } from '../numeric/random';
import type { DType, LlamaConfig } from '../numeric/types';
import { llamaStepWeights, type StepWeights, stepPrefix } from './llama-weights';
import type { TensorToWrite } from './safetensors-write';

/** The tensors of a random model of `cfg`, in HF's order; the LM head left out when the config ties it. */
export function randomLlamaTensors(cfg: LlamaConfig, seed: number, dtype: DType = 'F32'): TensorToWrite[] {
  const rng = mulberry32(seed);
  const out: TensorToWrite[] = [];
  const t = (name: string, shape: readonly number[], data: Float32Array) =>
    out.push({ name, dtype, shape: [...shape], data });
  const draw = (w: StepWeights, layer: number | null) => {
    if (!w.present) return;
    const p = stepPrefix(w, layer);
    const n = w.shape.reduce((a, b) => a * b, 1);
    if (w.kind === 'table') t(`${p}.weight`, w.shape, randn(rng, n, 1));
    else if (w.kind === 'scale')
      t(
        `${p}.weight`,
        w.shape,
        randn(rng, n, 0.1).map((v) => 1 + v),
      );
    else {
      t(`${p}.weight`, w.shape, randn(rng, n, 1 / Math.sqrt(w.shape[1])));
      if (w.bias) t(`${p}.bias`, [w.shape[0]], randn(rng, w.shape[0], 0.1));
    }
  };
  const ws = llamaStepWeights(cfg);
  draw(ws.embed, null);
  for (let i = 0; i < cfg.numLayers; i++) for (const w of ws.layer) draw(w, i);
  draw(ws.finalNorm, null);
  if (!cfg.tieWordEmbeddings) draw(ws.lmHead, null);
  return out;
}
