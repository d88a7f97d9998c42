// model.safetensors (HF LlamaForCausalLM / Qwen2 / Qwen3 / Mistral names) -> LlamaWeights in fp32, every tensor
// checked against the config: one file in memory, or a stream of one file or of an index and its shards (the
// readers of weight-stream.ts and shard-stream.ts), F32 / F16 / BF16. A missing, mis-shaped, non-finite or
// unexpected tensor gets one line naming it.

import type { LinearWeights, LlamaConfig, LlamaLayerWeights, LlamaWeights, Tensor } from '../numeric/types';
import { ModelLoadError, quoteName } from './errors';
import { parseSafetensorsHeader, type SafetensorsEntry, type SafetensorsHeader } from './safetensors';
import { readTensorF32 } from './safetensors-read';
import {
  keepingAll,
  type ReadOptions,
  type StreamPlanOptions,
  streamFamilyWeights,
  type Weights,
} from './weight-stream';
import { checkTiedHead, Loader, planOf, type WeightsPlanOf } from './weights';

/** Buffers older Llama checkpoints carry that are not weights (the rotary inverse frequencies). */
export const LLAMA_IGNORED_BUFFER =
  /^model\.(layers\.\d+\.self_attn\.rotary_emb\.inv_freq|rotary_emb\.inv_freq)$/;
const LAYER_NAME = /^model\.layers\.(\d+)\./;
const EMBED = 'model.embed_tokens.weight';
const HEAD = 'lm_head.weight';

/** Why a tensor the file has is not part of this model: the config key that rules it out, when there is one. */
function unexpectedWhy(cfg: LlamaConfig, name: string): string {
  const m = /^model\.layers\.\d+\.(self_attn\.(q|k|v|o)_proj|mlp\.(gate|up|down)_proj)\.bias$/.exec(name);
  if (m) {
    if (m[3]) return `but ${cfg.flavour}'s MLP has no biases with this config.json (mlp_bias false)`;
    if (m[2] === 'o') return `but ${cfg.flavour}'s o_proj has no bias with this config.json`;
    return `but ${cfg.flavour}'s q/k/v projections have no biases with this config.json (attention_bias false)`;
  }
  if (/^model\.layers\.\d+\.self_attn\.(q|k)_norm\.weight$/.test(name))
    return `(q/k norms belong to model_type 'qwen3'; this config.json is '${cfg.flavour}')`;
  return `(not part of a ${cfg.flavour} causal LM)`;
}

/** The per-layer shapes of a Llama-family checkpoint ([out, in] as nn.Linear stores them). */
export function llamaShapes(cfg: LlamaConfig) {
  const { hiddenSize: d, numHeads: H, numKvHeads: KV, headDim: hd, intermediateSize: ff } = cfg;
  return { q: [H * hd, d], kv: [KV * hd, d], o: [d, H * hd], gateUp: [ff, d], down: [d, ff] } as const;
}

/** The family's plan of a header (weights.ts WeightsPlanOf): its tied head must equal model.embed_tokens. */
export type LlamaWeightsPlan = WeightsPlanOf<LlamaWeights>;

function assemble(cfg: LlamaConfig, ld: Loader, file: string): LlamaWeights {
  const { vocabSize: V, hiddenSize: d, numLayers: L, headDim: hd } = cfg;
  const s = llamaShapes(cfg);
  for (const name of [...ld.entries.keys(), ...ld.ignored]) {
    const m = LAYER_NAME.exec(name);
    if (m !== null && Number(m[1]) >= L) {
      throw new ModelLoadError(
        file,
        `tensor ${quoteName(name)} belongs to layer ${m[1]} but config.json has num_hidden_layers ${L} ` +
          '(config and weights do not match)',
        name,
      );
    }
  }
  const lin = (prefix: string, shape: readonly number[], bias: boolean): LinearWeights =>
    ld.linear(prefix, shape[0], shape[1], bias);
  const embedTokens = ld.tensor(EMBED, [V, d]);
  const layers: LlamaLayerWeights[] = [];
  for (let i = 0; i < L; i++) {
    const p = `model.layers.${i}`;
    layers.push({
      inputLayernorm: ld.tensor(`${p}.input_layernorm.weight`, [d]),
      q: lin(`${p}.self_attn.q_proj`, s.q, cfg.attentionBias),
      k: lin(`${p}.self_attn.k_proj`, s.kv, cfg.attentionBias),
      v: lin(`${p}.self_attn.v_proj`, s.kv, cfg.attentionBias),
      o: lin(`${p}.self_attn.o_proj`, s.o, cfg.oProjBias),
      qNorm: cfg.qkNorm ? ld.tensor(`${p}.self_attn.q_norm.weight`, [hd]) : null,
      kNorm: cfg.qkNorm ? ld.tensor(`${p}.self_attn.k_norm.weight`, [hd]) : null,
      postAttentionLayernorm: ld.tensor(`${p}.post_attention_layernorm.weight`, [d]),
      gate: lin(`${p}.mlp.gate_proj`, s.gateUp, cfg.mlpBias),
      up: lin(`${p}.mlp.up_proj`, s.gateUp, cfg.mlpBias),
      down: lin(`${p}.mlp.down_proj`, s.down, cfg.mlpBias),
    });
  }
  const norm = ld.tensor('model.norm.weight', [d]);
  let lmHead: Tensor;
  if (cfg.tieWordEmbeddings) {
    lmHead = embedTokens;
    if (ld.has(HEAD)) {
      const h = ld.tensor(HEAD, [V, d]);
      if (ld.dryRun) ld.tiedHead = HEAD;
      else checkTiedHead(h.data, embedTokens.data, HEAD, file, EMBED);
    }
  } else {
    if (!ld.has(HEAD)) {
      throw new ModelLoadError(
        file,
        `missing tensor '${HEAD}'; config.json has tie_word_embeddings false`,
        HEAD,
      );
    }
    lmHead = ld.tensor(HEAD, [V, d]);
  }
  for (const name of ld.entries.keys()) {
    if (!ld.used.has(name))
      throw new ModelLoadError(
        file,
        `unexpected tensor ${quoteName(name)} ${unexpectedWhy(cfg, name)}`,
        name,
      );
  }
  return { embedTokens, layers, norm, lmHead };
}

/** Loads Llama-family weights from one safetensors file in memory, F16 / BF16 converted to fp32. */
export function loadLlamaWeights(
  cfg: LlamaConfig,
  bytes: Uint8Array,
  file = 'model.safetensors',
): LlamaWeights {
  const h = parseSafetensorsHeader(bytes, file, { ignore: (name) => LLAMA_IGNORED_BUFFER.test(name) });
  const read = (e: SafetensorsEntry) => readTensorF32(bytes, h.dataOffset, e, file);
  return assemble(cfg, new Loader({ entries: h.entries, ignored: h.ignored, read }, file), file);
}

/** Checks a parsed header against the config (names, shapes, layers, LM head) without reading any data. */
export function planLlamaWeights(
  cfg: LlamaConfig,
  header: SafetensorsHeader,
  file = 'model.safetensors',
): LlamaWeightsPlan {
  return planOf(header, file, (ld) => assemble(cfg, ld, file));
}

/** streamLlamaWeights' options: weight-stream.ts's, the plan this family's. */
export type StreamLlamaWeightsOptions = StreamPlanOptions<LlamaWeightsPlan>;

/**
 * Streams Llama-family weights from a source (one file, or an index and its shards) as weight-stream.ts's
 * streamWeights does GPT-NeoX's: the header checked against the config first, each tensor checked finite and handed
 * out as soon as its bytes are complete, a stored tied head compared with model.embed_tokens. A refused value is
 * reported once the files have been read to their end (a malformed file is refused for that first); no tensor is
 * handed out after a refused one. Resolves to the plan.
 */
export function streamLlamaWeights(
  cfg: LlamaConfig,
  source: Weights,
  opts: StreamLlamaWeightsOptions,
): Promise<LlamaWeightsPlan> {
  return streamFamilyWeights(
    source,
    {
      plan: (header, file) => planLlamaWeights(cfg, header, file),
      ignore: (name) => LLAMA_IGNORED_BUFFER.test(name),
      isEmbed: (name) => name === EMBED,
      embedName: EMBED,
    },
    opts,
  );
}

/** The whole model in fp32 on the CPU from a source, tensor by tensor (the CPU oracle's copy). */
export async function readLlamaWeights(
  cfg: LlamaConfig,
  source: Weights,
  opts: ReadOptions = {},
): Promise<LlamaWeights> {
  return (await streamLlamaWeights(cfg, source, keepingAll(opts))).skeleton;
}

/** A model's weights with every shape the config gives and empty data (to lay out buffers before any data). */
export function emptyLlamaWeights(cfg: LlamaConfig): LlamaWeights {
  const t = (shape: readonly number[]): Tensor => ({ shape: [...shape], data: new Float32Array(0) });
  const lin = (shape: readonly number[], bias: boolean): LinearWeights => ({
    weight: t(shape),
    bias: bias ? t([shape[0]]) : null,
  });
  const s = llamaShapes(cfg);
  const { vocabSize: V, hiddenSize: d, headDim: hd } = cfg;
  const embedTokens = t([V, d]);
  return {
    embedTokens,
    layers: Array.from({ length: cfg.numLayers }, () => ({
      inputLayernorm: t([d]),
      q: lin(s.q, cfg.attentionBias),
      k: lin(s.kv, cfg.attentionBias),
      v: lin(s.kv, cfg.attentionBias),
      o: lin(s.o, cfg.oProjBias),
      qNorm: cfg.qkNorm ? t([hd]) : null,
      kNorm: cfg.qkNorm ? t([hd]) : null,
      postAttentionLayernorm: t([d]),
      gate: lin(s.gateUp, cfg.mlpBias),
      up: lin(s.gateUp, cfg.mlpBias),
      down: lin(s.down, cfg.mlpBias),
    })),
    norm: t([d]),
    lmHead: cfg.tieWordEmbeddings ? embedTokens : t([V, d]),
  };
}

/** Parameter count and fp32 footprint (a tied head counted once). */
export function llamaModelSummary(cfg: LlamaConfig): { params: number; bytesF32: number } {
  const { vocabSize: V, hiddenSize: d, numLayers: L, numHeads: H, numKvHeads: KV, headDim: hd } = cfg;
  const ff = cfg.intermediateSize;
  const attn = 2 * H * hd * d + 2 * KV * hd * d;
  const attnBias = (cfg.attentionBias ? H * hd + 2 * KV * hd : 0) + (cfg.oProjBias ? d : 0);
  const mlp = 3 * ff * d + (cfg.mlpBias ? 2 * ff + d : 0);
  const perLayer = 2 * d + attn + attnBias + mlp + (cfg.qkNorm ? 2 * hd : 0);
  const params = V * d + L * perLayer + d + (cfg.tieWordEmbeddings ? 0 : V * d);
  return { params, bytesF32: 4 * params };
}
