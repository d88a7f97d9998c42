// Seeded model weights from a counter-based generator: every value is a pure function of (seed, tensor id,
// element index), so the GPU makes them in parallel (shaders/model/seeded_weights.wgsl, through
// src/kernels/seeded-weights.ts) and this module makes the same bits on the CPU — for any adapter, any
// chunking of a tensor into buffers, in any order. For benchmarks and tests of large shapes (a 2.8b-shaped
// model in seconds instead of minutes of CPU random numbers); not the same numbers as random-model.ts.
//
// The generator (pcg, the tensor key, the integer n and its scale) is in src/numeric/seeded.ts.
//
// Tensor kinds and ids (HF names; the targets are those of random-model.ts):
//   id 0                gpt_neox.embed_in.weight [V, d]             std 1
//   id 1 + 12 l + k     layer l, k = 0..11 in this order:
//                         input_layernorm.weight [d]                1 + std 0.1
//                         input_layernorm.bias [d]                  std 0.1
//                         post_attention_layernorm.weight / .bias   as above
//                         attention.query_key_value.weight [3d, d]  std 1/sqrt(d)   (fan-in)
//                         attention.query_key_value.bias [3d]       std 0.1
//                         attention.dense.weight [d, d] / .bias     std 1/sqrt(d), 0.1
//                         mlp.dense_h_to_4h.weight [ff, d] / .bias  std 1/sqrt(d), 0.1
//                         mlp.dense_4h_to_h.weight [d, ff] / .bias  std 1/sqrt(ff), 0.1
//   id 1 + 12 L, 2 + 12 L  gpt_neox.final_layer_norm.weight / .bias  1 + std 0.1, std 0.1
//   id 3 + 12 L         embed_out.weight [V, d]                     std 1/sqrt(d) (none when tied)

import { f16BitsToF32, f32ToF16Bits } from '../numeric/bits';
import { type SeededTensor, scaleFor, seededInt, tensorKey } from '../numeric/seeded';
import type { DType, ModelWeights, NeoXConfig, Tensor } from '../numeric/types';
import { emptyWeights } from './weights';

/** Elements [from, from + count) of a seeded tensor as fp32 (f16-rounded values with dtype F16). */
export function seededValues(
  seed: number,
  t: SeededTensor,
  from: number,
  count: number,
  dtype: DType = 'F32',
): Float32Array {
  const key = tensorKey(seed, t.id);
  const out = new Float32Array(count);
  for (let j = 0; j < count; j++) {
    const x = Math.fround(seededInt(key, from + j) * t.scale + t.offset); // exact: see the module header
    out[j] = dtype === 'F16' ? f16BitsToF32(f32ToF16Bits(x)) : x;
  }
  return out;
}

/**
 * How each tensor of a model with this config is drawn, keyed by the tensors of `w` (a skeleton from
 * emptyWeights(cfg) or the model's own weights; a tied head is embed_in itself).
 */
export function seededPlan(cfg: NeoXConfig, w: ModelWeights): Map<Tensor, SeededTensor> {
  const { hiddenSize: d, intermediateSize: ff, numLayers: L } = cfg;
  const plan = new Map<Tensor, SeededTensor>();
  const put = (t: Tensor | null, name: string, id: number, std: number, offset: 0 | 1 = 0) => {
    if (t) plan.set(t, { name, id, scale: scaleFor(std), offset });
  };
  put(w.embedIn, 'gpt_neox.embed_in.weight', 0, 1);
  w.layers.forEach((l, i) => {
    const p = `gpt_neox.layers.${i}`;
    const id = 1 + 12 * i;
    put(l.inputLayernorm.weight, `${p}.input_layernorm.weight`, id, 0.1, 1);
    put(l.inputLayernorm.bias, `${p}.input_layernorm.bias`, id + 1, 0.1);
    put(l.postAttentionLayernorm.weight, `${p}.post_attention_layernorm.weight`, id + 2, 0.1, 1);
    put(l.postAttentionLayernorm.bias, `${p}.post_attention_layernorm.bias`, id + 3, 0.1);
    put(l.qkv.weight, `${p}.attention.query_key_value.weight`, id + 4, 1 / Math.sqrt(d));
    put(l.qkv.bias, `${p}.attention.query_key_value.bias`, id + 5, 0.1);
    put(l.dense.weight, `${p}.attention.dense.weight`, id + 6, 1 / Math.sqrt(d));
    put(l.dense.bias, `${p}.attention.dense.bias`, id + 7, 0.1);
    put(l.fc1.weight, `${p}.mlp.dense_h_to_4h.weight`, id + 8, 1 / Math.sqrt(d));
    put(l.fc1.bias, `${p}.mlp.dense_h_to_4h.bias`, id + 9, 0.1);
    put(l.fc2.weight, `${p}.mlp.dense_4h_to_h.weight`, id + 10, 1 / Math.sqrt(ff));
    put(l.fc2.bias, `${p}.mlp.dense_4h_to_h.bias`, id + 11, 0.1);
  });
  put(w.finalLayerNorm.weight, 'gpt_neox.final_layer_norm.weight', 1 + 12 * L, 0.1, 1);
  put(w.finalLayerNorm.bias, 'gpt_neox.final_layer_norm.bias', 2 + 12 * L, 0.1);
  if (w.lmHead !== w.embedIn) put(w.lmHead, 'embed_out.weight', 3 + 12 * L, 1 / Math.sqrt(d));
  return plan;
}

/** The whole seeded model on the CPU, fp32 (the GPU generator's oracle; small models only). */
export function seededWeightsCpu(cfg: NeoXConfig, seed: number, dtype: DType = 'F32'): ModelWeights {
  const w = emptyWeights(cfg);
  for (const [t, s] of seededPlan(cfg, w)) {
    t.data = seededValues(
      seed,
      s,
      0,
      t.shape.reduce((a, b) => a * b, 1),
      dtype,
    );
  }
  return w;
}
