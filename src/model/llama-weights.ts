// model.safetensors (HF LlamaForCausalLM / Qwen2 / Qwen3 / Mistral names) -> LlamaWeights in fp32, every tensor
// checked against the config: one file in memory, or a stream of one file or of an index and its shards (the
// readers of weight-stream.ts and shard-stream.ts), F32 / F16 / BF16. A missing, mis-shaped, non-finite or
// unexpected tensor gets one line naming it.

import type { LinearWeights, LlamaConfig, LlamaLayerWeights, LlamaWeights, Tensor } from '../numeric/types';
import { OPS } from '../ops/descriptors';
import { LLAMA_FAMILY, layerSteps } from '../ops/families';
import type { OpStep } from '../ops/types';
import { headsOf, slotWidth } from '../ops/widths';
import { ModelLoadError, quoteName } from './errors';
import { LLAMA_FLAG_OFF } from './llama-config';
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
const SPEC = LLAMA_FAMILY;
const LAYER_NAME = new RegExp(`^${SPEC.layerPrefix.replace(/\./g, '\\.')}\\.(\\d+)\\.`);
const EMBED = `${SPEC.embed.module}.weight`;
const HEAD = `${SPEC.lmHead.module}.weight`;

const LAYER_TENSOR = new RegExp(`^${SPEC.layerPrefix.replace(/\./g, '\\.')}\\.\\d+\\.(.+)\\.(weight|bias)$`);

/**
 * Why a tensor the file has is not part of this model: the config flag that rules it out (a layer step's bias flag
 * for its `.bias`, its `only` flag for its weight), when there is one.
 */
function unexpectedWhy(cfg: LlamaConfig, name: string): string {
  const m = LAYER_TENSOR.exec(name);
  const step = m ? SPEC.layer.find((s) => s.weight && s.module === m[1]) : undefined;
  const flag = m?.[2] === 'bias' ? step?.bias : step?.only;
  const why = flag && !cfg[flag] ? LLAMA_FLAG_OFF[flag] : undefined;
  return why ? why(cfg.flavour) : `(not part of a ${cfg.flavour} causal LM)`;
}

/** What a step's weight is to a forward, by the step: a matrix product's, a table of rows (one per token), a scale. */
export type StepWeightKind = 'linear' | 'table' | 'scale';

/** A step's weights as a checkpoint stores them (`{module}.weight`, and `.bias` where it has one). */
export interface StepWeights {
  step: OpStep;
  /** The field of LlamaWeights (at the top) or LlamaLayerWeights it fills: the step's `weight`. */
  field: string;
  /** Its HF module: layer-relative in a layer (`self_attn.q_proj`), model-level at the top (`model.norm`). */
  module: string;
  kind: StepWeightKind;
  /** nn.Linear's [out, in], nn.Embedding's [vocab, width], a norm's [width] (one head's for a per-head step). */
  shape: number[];
  /** Held as LinearWeights (the step has a bias flag), else as one Tensor. */
  pair: boolean;
  /** The checkpoint holds its `.bias`: the step's bias flag is true in the config. */
  bias: boolean;
  /** The config has the step (its `only` flag); a layer's absent step holds null. */
  present: boolean;
}

/** The width of a slot's rows, read off the step that writes it (`in`, a layer's input, is the embedding's). */
function widthOfSlot(cfg: LlamaConfig, slot: string): number {
  if (slot === 'in') return slotWidth(cfg, SPEC.embed.width);
  const step = [SPEC.embed, ...SPEC.layer, SPEC.finalNorm, SPEC.lmHead].find((s) => s.slot === slot);
  if (!step) throw new Error(`the Llama family has no slot '${slot}'`);
  return slotWidth(cfg, step.width);
}

function stepWeights(cfg: LlamaConfig, step: OpStep, present: boolean): StepWeights {
  if (!step.weight || step.module === undefined)
    throw new Error(`step '${step.slot}' has no weight or module`);
  const out = slotWidth(cfg, step.width);
  // A linear's weight is [out, in]; the family's embedding reads the tokens (a table of vocab rows); a norm
  // scales its rows' last axis: one head's width where its module runs on the heads' view.
  const kind: StepWeightKind = OPS[step.op].linear ? 'linear' : step === SPEC.embed ? 'table' : 'scale';
  const shape =
    kind === 'linear'
      ? [out, widthOfSlot(cfg, step.inputs[0])]
      : kind === 'table'
        ? [slotWidth(cfg, 'vocab'), out]
        : [step.recordedAs === 'heads' ? out / headsOf(cfg, step.width) : out];
  const pair = step.bias !== undefined;
  const bias = step.bias !== undefined && cfg[step.bias];
  return { step, field: step.weight, module: step.module, kind, shape, pair, bias, present };
}

/** A Llama-family checkpoint's weights by step: the top steps', and one layer's (every layer has the same). */
export interface LlamaStepWeights {
  embed: StepWeights;
  layer: StepWeights[];
  finalNorm: StepWeights;
  lmHead: StepWeights;
}

/**
 * Every weight of a Llama-family checkpoint, read off the family's steps (ops/families.ts): the embedding, the
 * layer's steps with weights in HF's module order (the family's `moduleOrder`, a checkpoint's order), the final norm
 * and the LM head (whose tensor a tied config leaves out).
 */
export function llamaStepWeights(cfg: LlamaConfig): LlamaStepWeights {
  const held = new Set(layerSteps(SPEC, cfg).map((s) => s.slot));
  const order = SPEC.moduleOrder ?? SPEC.layer.map((s) => s.slot);
  const at = (s: OpStep) => order.indexOf(s.slot);
  const layer = SPEC.layer
    .filter((s) => s.weight)
    .sort((a, b) => at(a) - at(b))
    .map((s) => stepWeights(cfg, s, held.has(s.slot)));
  return {
    embed: stepWeights(cfg, SPEC.embed, true),
    layer,
    finalNorm: stepWeights(cfg, SPEC.finalNorm, true),
    lmHead: stepWeights(cfg, SPEC.lmHead, true),
  };
}

/** A layer's tensors' prefix (`model.layers.3.self_attn.q_proj`), or a top step's (`model.norm`). */
export function stepPrefix(w: StepWeights, layer: number | null): string {
  return layer === null ? w.module : `${SPEC.layerPrefix}.${layer}.${w.module}`;
}

/** The family's plan of a header (weights.ts WeightsPlanOf): its tied head must equal model.embed_tokens. */
export type LlamaWeightsPlan = WeightsPlanOf<LlamaWeights>;

/** A step's weights from the loader: LinearWeights, one Tensor, or null where the config has no such step. */
function take(ld: Loader, w: StepWeights, layer: number | null): Tensor | LinearWeights | null {
  if (!w.present) return null;
  const p = stepPrefix(w, layer);
  return w.pair ? ld.linear(p, w.shape[0], w.shape[1], w.bias) : ld.tensor(`${p}.weight`, w.shape);
}

function assemble(cfg: LlamaConfig, ld: Loader, file: string): LlamaWeights {
  const L = cfg.numLayers;
  const ws = llamaStepWeights(cfg);
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
  const embedTokens = take(ld, ws.embed, null) as Tensor;
  const layers: LlamaLayerWeights[] = [];
  for (let i = 0; i < L; i++) layers.push(layerOf(ws, (w) => take(ld, w, i)));
  const norm = take(ld, ws.finalNorm, null) as Tensor;
  let lmHead: Tensor;
  if (cfg.tieWordEmbeddings) {
    lmHead = embedTokens;
    if (ld.has(HEAD)) {
      const h = take(ld, ws.lmHead, null) as Tensor;
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
    lmHead = take(ld, ws.lmHead, null) as Tensor;
  }
  for (const name of ld.entries.keys()) {
    if (!ld.used.has(name))
      throw new ModelLoadError(
        file,
        `unexpected tensor ${quoteName(name)} ${unexpectedWhy(cfg, name)}`,
        name,
      );
  }
  return top(ws, embedTokens, layers, norm, lmHead);
}

/** One layer's LlamaLayerWeights under its steps' fields, in HF's module order (the fields' order). */
function layerOf(
  ws: LlamaStepWeights,
  f: (w: StepWeights) => Tensor | LinearWeights | null,
): LlamaLayerWeights {
  return Object.fromEntries(ws.layer.map((w) => [w.field, f(w)])) as unknown as LlamaLayerWeights;
}

/** LlamaWeights under the top steps' fields (embedTokens, layers, norm, lmHead: the order of a checkpoint). */
function top(
  ws: LlamaStepWeights,
  embed: Tensor,
  layers: LlamaLayerWeights[],
  norm: Tensor,
  lmHead: Tensor,
): LlamaWeights {
  return {
    [ws.embed.field]: embed,
    layers,
    [ws.finalNorm.field]: norm,
    [ws.lmHead.field]: lmHead,
  } as unknown as LlamaWeights;
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
  const empty = (w: StepWeights): Tensor | LinearWeights | null =>
    !w.present ? null : w.pair ? { weight: t(w.shape), bias: w.bias ? t([w.shape[0]]) : null } : t(w.shape);
  const ws = llamaStepWeights(cfg);
  const embedTokens = empty(ws.embed) as Tensor;
  const layers = Array.from({ length: cfg.numLayers }, () => layerOf(ws, empty));
  const lmHead = cfg.tieWordEmbeddings ? embedTokens : (empty(ws.lmHead) as Tensor);
  return top(ws, embedTokens, layers, empty(ws.finalNorm) as Tensor, lmHead);
}

/** Parameter count and fp32 footprint (a tied head counted once). */
export function llamaModelSummary(cfg: LlamaConfig): { params: number; bytesF32: number } {
  const ws = llamaStepWeights(cfg);
  const size = (w: StepWeights) =>
    w.present ? w.shape.reduce((a, b) => a * b, 1) + (w.bias ? w.shape[0] : 0) : 0;
  const perLayer = ws.layer.reduce((n, w) => n + size(w), 0);
  const params =
    size(ws.embed) +
    cfg.numLayers * perLayer +
    size(ws.finalNorm) +
    (cfg.tieWordEmbeddings ? 0 : size(ws.lmHead));
  return { params, bytesF32: 4 * params };
}
