// Test support: run files made from the fp64 oracle (rounded to f32 as a run records them), with a fault planted
// at one layer and propagated through the rest of the forward — so the analysis of runs can be tested without
// PyTorch (the fixtures PyTorch made are in src/model/testdata/runs/).

import { embeddingF64 } from '../kernels/cpu/embedding';
import { oracleLayer } from '../kernels/cpu/forward';
import { layerNormF64 } from '../kernels/cpu/layernorm';
import { linearF64 } from '../kernels/cpu/linear';
import type { RotaryAngles } from '../kernels/cpu/rotary-angles';
import { type TensorToWrite, writeSafetensors } from '../model/safetensors-write';
import { bf16BitsToF32, f32ToBf16Bits } from '../numeric/bits';
import type { ModelWeights, NeoXConfig } from '../numeric/types';

export type SynthFault =
  /** The layer's output (after its residual adds) stored in bf16. */
  | { kind: 'residual-bf16'; layer: number }
  /** The layer's MLP activation scaled by (1 + 1e-3): a wrong GELU. */
  | { kind: 'act-scale'; layer: number };

export interface SynthOptions {
  fault?: SynthFault;
  /** 'modules': HF module paths; 'hidden': hidden_states.* + logits; 'tl': TransformerLens names. */
  names?: 'modules' | 'hidden' | 'tl';
  angles?: RotaryAngles;
  label?: string;
  metadata?: Record<string, string>;
}

const MODULE: Record<string, string> = {
  ln1: 'input_layernorm:out',
  qkv: 'attention.query_key_value:out',
  ctx: 'attention.dense:in',
  attn_out: 'attention.dense:out',
  ln2_in: 'post_attention_layernorm:in',
  ln2: 'post_attention_layernorm:out',
  fc1: 'mlp.dense_h_to_4h:out',
  gelu: 'mlp.act:out',
  mlp_out: 'mlp.dense_4h_to_h:out',
};

const TL: Record<string, string> = {
  ln1: 'ln1.hook_normalized',
  attn_out: 'hook_attn_out',
  ln2: 'ln2.hook_normalized',
  fc1: 'mlp.hook_pre',
  gelu: 'mlp.hook_post',
  mlp_out: 'hook_mlp_out',
  out: 'hook_resid_post',
};

const bf16 = (v: Float64Array) => Float64Array.from(v, (x) => bf16BitsToF32(f32ToBf16Bits(x)));

/** A run file of `tokens` on the model `w`, as the options say. */
export function synthRun(
  cfg: NeoXConfig,
  w: ModelWeights,
  tokens: number[],
  o: SynthOptions = {},
): Uint8Array {
  const T = tokens.length;
  const d = cfg.hiddenSize;
  const names = o.names ?? 'modules';
  const tensors: TensorToWrite[] = [];
  const put = (name: string, v: Float64Array, width: number) =>
    tensors.push({ name, dtype: 'F32', shape: [T, width], data: Float32Array.from(v) });
  let x = embeddingF64(w.embedIn.data, d, tokens);
  if (names === 'modules') put('gpt_neox.embed_in:out', x, d);
  if (names === 'hidden') put('hidden_states.0', x, d);
  if (names === 'tl') put('hook_embed', x, d);
  for (let i = 0; i < cfg.numLayers; i++) {
    const taps = new Map<string, Float64Array>();
    const f = o.fault?.layer === i ? o.fault : undefined;
    // The input is what a run records: f32.
    const xin = Float64Array.from(Float32Array.from(x));
    let out = oracleLayer(cfg, w.layers[i], xin, T, i, taps, { angles: o.angles ?? 'hf-fp32' });
    if (f?.kind === 'act-scale') {
      // Re-run the MLP tail with the wrong activation (parallel: out = x + attn + mlp; sequential: mid + mlp).
      const gelu = taps.get(`layers.${i}.gelu`)!.map((v) => v * (1 + 1e-3));
      const lw = w.layers[i];
      const mlp = linearF64(gelu, T, cfg.intermediateSize, lw.fc2.weight.data, lw.fc2.bias?.data ?? null, d);
      const base =
        taps.get(`layers.${i}.resid_mid`) ?? xin.map((v, j) => v + taps.get(`layers.${i}.attn_out`)![j]);
      taps.set(`layers.${i}.gelu`, gelu);
      taps.set(`layers.${i}.mlp_out`, mlp);
      out = base.map((v, j) => v + mlp[j]);
    }
    if (f?.kind === 'residual-bf16') out = bf16(out);
    const tap = (s: string) =>
      s === 'ln2_in' ? (taps.get(`layers.${i}.resid_mid`) ?? xin) : taps.get(`layers.${i}.${s}`)!;
    const width = (s: string) =>
      s === 'qkv' ? 3 * d : s === 'fc1' || s === 'gelu' ? cfg.intermediateSize : d;
    if (names === 'modules') {
      for (const [s, m] of Object.entries(MODULE)) put(`gpt_neox.layers.${i}.${m}`, tap(s), width(s));
      put(`gpt_neox.layers.${i}:out`, out, d);
    } else if (names === 'tl') {
      put(`blocks.${i}.hook_resid_pre`, xin, d);
      for (const [s, m] of Object.entries(TL)) put(`blocks.${i}.${m}`, s === 'out' ? out : tap(s), width(s));
    } else if (i + 1 < cfg.numLayers) put(`hidden_states.${i + 1}`, out, d);
    x = out;
  }
  const xf = Float64Array.from(Float32Array.from(x));
  const fn = layerNormF64(
    xf,
    T,
    d,
    w.finalLayerNorm.weight.data,
    w.finalLayerNorm.bias.data,
    cfg.layerNormEps,
  );
  const logits = linearF64(
    Float64Array.from(Float32Array.from(fn)),
    T,
    d,
    w.lmHead.data,
    null,
    cfg.vocabSize,
  );
  if (names === 'modules') put('gpt_neox.final_layer_norm:out', fn, d);
  if (names === 'hidden') put(`hidden_states.${cfg.numLayers}`, fn, d);
  if (names === 'tl') put('ln_final.hook_normalized', fn, d);
  if (names !== 'tl') put(names === 'modules' ? 'embed_out:out' : 'logits', logits, cfg.vocabSize);
  return writeSafetensors(tensors, {
    tokens: JSON.stringify(tokens),
    ...(o.label ? { label: o.label } : {}),
    dtype: 'float32',
    ...o.metadata,
  });
}
