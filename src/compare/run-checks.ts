// The local checks of a run (docs/RUNS.md, "which taps feed which check"): each op of the forward re-run exactly by
// the oracle from the input the run itself recorded, and compared with the output the run recorded. Ops Hugging
// Face does not expose as modules are checked from the taps around them: the attention core (rotary, scores,
// softmax, values) from `query_key_value:out` to `attention.dense:in`, and the residual adds from a layer's input,
// attention and MLP outputs to its output (or to `post_attention_layernorm:in` in the sequential style). A check
// runs only where the run holds its inputs and output; what is missing narrows the answer, and is listed.
import type { OracleOp } from '../engine/oracle-gpu';
import { inputSlot } from '../model/run-names';
import type { NeoXConfig } from '../numeric/types';

export interface OpCheck {
  /** Unique within a run: 'layers.2.residual_mlp', 'embed'. */
  id: string;
  op: OracleOp;
  layer: number | null;
  /** The Hugging Face module path the op lives in ('gpt_neox.layers.2.mlp.act', 'gpt_neox.layers.2' for the adds). */
  module: string;
  /** The op in words, for the verdict's sentence. */
  what: string;
  /** Slots the op reads (in the oracle's argument order) and the slot it writes. */
  inputs: string[];
  output: string;
}

/** A check that could not run, and what it lacked. */
export interface MissingCheck {
  id: string;
  module: string;
  lacks: string[];
}

/** Every check a model has, in forward order, for a run that records the slots `has` says it does. */
export function runChecks(
  cfg: NeoXConfig,
  has: (slot: string) => boolean,
  lmHead: 'embed_out' | 'lm_head' = 'embed_out',
  /** Layers whose whole-layer check runs even where every op is checked (the floor's run, for the others). */
  wholeLayers: ReadonlySet<number> = new Set(),
): { checks: OpCheck[]; missing: MissingCheck[] } {
  const all: OpCheck[] = [];
  const add = (c: OpCheck) => all.push(c);
  add({
    id: 'embed',
    op: 'embed',
    layer: null,
    module: 'gpt_neox.embed_in',
    what: 'the embedding',
    inputs: [],
    output: 'embed',
  });
  for (let i = 0; i < cfg.numLayers; i++) {
    const p = `layers.${i}`;
    const m = `gpt_neox.layers.${i}`;
    const x = inputSlot(i);
    const s = (n: string) => `${p}.${n}`;
    const one = (id: string, op: OracleOp, module: string, what: string, inputs: string[], output: string) =>
      add({ id: s(id), op, layer: i, module, what, inputs, output });
    one('ln1', 'ln1', `${m}.input_layernorm`, 'input_layernorm', [x], s('ln1'));
    one('qkv', 'qkv', `${m}.attention.query_key_value`, 'the QKV projection', [s('ln1')], s('qkv'));
    one(
      'attention',
      'attention',
      `${m}.attention`,
      'the attention core (rotary, scores, softmax, values)',
      [s('qkv')],
      s('ctx'),
    );
    one(
      'dense',
      'dense',
      `${m}.attention.dense`,
      'the attention output projection',
      [s('ctx')],
      s('attn_out'),
    );
    if (cfg.useParallelResidual) {
      const ln2In = has(s('ln2_in')) ? s('ln2_in') : x;
      one('ln2', 'ln2', `${m}.post_attention_layernorm`, 'post_attention_layernorm', [ln2In], s('ln2'));
    } else {
      one(
        'residual_attn',
        'residual',
        m,
        "the attention residual add (attention output + the layer's input)",
        [s('attn_out'), x],
        s('ln2_in'),
      );
      one('ln2', 'ln2', `${m}.post_attention_layernorm`, 'post_attention_layernorm', [s('ln2_in')], s('ln2'));
    }
    one('fc1', 'fc1', `${m}.mlp.dense_h_to_4h`, 'mlp.dense_h_to_4h', [s('ln2')], s('fc1'));
    one('act', 'act', `${m}.mlp.act`, 'the GELU (mlp.act)', [s('fc1')], s('gelu'));
    one('fc2', 'fc2', `${m}.mlp.dense_4h_to_h`, 'mlp.dense_4h_to_h', [s('gelu')], s('mlp_out'));
    if (cfg.useParallelResidual)
      one(
        'residual',
        'residual',
        m,
        "the residual add (MLP output + attention output + the layer's input)",
        [s('mlp_out'), s('attn_out'), x],
        s('out'),
      );
    else
      one(
        'residual_mlp',
        'residual',
        m,
        'the MLP residual add (MLP output + the attention residual)',
        [s('mlp_out'), s('ln2_in')],
        s('out'),
      );
    one('layer', 'layer', m, 'the whole layer', [x], s('out'));
  }
  const last = inputSlot(cfg.numLayers);
  add({
    id: 'final_norm',
    op: 'final_norm',
    layer: null,
    module: 'gpt_neox.final_layer_norm',
    what: 'final_layer_norm',
    inputs: [last],
    output: 'final_norm',
  });
  add({
    id: 'lm_head',
    op: 'lm_head',
    layer: null,
    module: lmHead,
    what: 'the LM head',
    inputs: ['final_norm'],
    output: 'logits',
  });
  const checks: OpCheck[] = [];
  const missing: MissingCheck[] = [];
  const lacking = (c: OpCheck) => [...c.inputs, c.output].filter((slot) => !has(slot));
  for (const c of all) {
    const lacks = lacking(c);
    if (lacks.length > 0) missing.push({ id: c.id, module: c.module, lacks });
    // The whole layer re-run only where its ops cannot all be checked one by one (it adds nothing then, and costs
    // a forward of the layer).
    else if (
      c.op !== 'layer' ||
      wholeLayers.has(c.layer!) ||
      all.some((o) => o.layer === c.layer && o.op !== 'layer' && lacking(o).length > 0)
    )
      checks.push(c);
  }
  return { checks, missing };
}
