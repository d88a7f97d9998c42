// The double-float form of every op kind of the registry (src/ops/), filled into its `df` slots: the launches that
// compute one step in df (an f32 pair per value, ~2^-48 per op) from its input df buffers into its output df
// buffer, with the model's weights. Every family's GPU oracle (src/engine/oracle-gpu.ts) iterates the family's
// steps with these, as the fp64 forward (kernels/cpu/op-forward.ts) iterates the fp64 forms. This table holds the
// op kinds not yet in a module of their own; the op modules (kernels/ops/) bring theirs, and registry.test.ts fails
// on an op kind with neither. Where the families lay a slot out differently the form
// follows the config, as the fp64 forms do: GPT-NeoX's rotary packs q, k, v into one [3, H, T, hd] buffer and its
// attention reads them there; the Llama family's rotary is per projection and its attention reads GQA heads. A form
// computes its step's rows from..T−1 (DfArgs, df-form.ts).
import { familyOf } from '../../ops/families';
import { fillSlots } from '../../ops/slots';
import type { OpKind } from '../../ops/types';
import { withOpModules } from '../ops/index';
import { ROTARY } from '../ops/rotary';
import { type DfForm, dfLinearForm, dfNeed, dfRows } from './df-form';
import { dfEmbedding } from './embedding';
import { dfGelu } from './gelu';
import { dfLayerNorm } from './layernorm';
import { dfResidual } from './residual';

export type { DfArgs, DfForm } from './df-form';
export { dfRows } from './df-form';

/** GPT-NeoX's LayerNorm over the hidden size (its weights have a bias). */
const layernorm: DfForm = (a) => {
  const d = a.cfg.hiddenSize;
  if (a.cfg.family === 'llama') throw new Error(`${a.label}: a LayerNorm in a Llama-family model`);
  const b = { x: a.inputs[0], weight: dfNeed(a.weight, a), bias: dfNeed(a.bias, a), y: a.out };
  return [dfLayerNorm(a.label, b, dfRows(a), d, a.cfg.layerNormEps, { constants: a.df })];
};

const TABLE: Readonly<Partial<Record<OpKind, DfForm>>> = {
  // One launch a chunk of the table (a large vocabulary comes in several): each writes the rows of its ids.
  embedding: (a) => [
    dfEmbedding(
      a.label,
      { ids: a.ids, table: dfNeed(a.weight, a), out: a.out },
      dfRows(a),
      a.cfg.hiddenSize,
      a.weightRows ?? { row0: 0, rows: a.cfg.vocabSize },
      { constants: a.dfW },
    ),
  ],
  layernorm,
  qkv: dfLinearForm('hidden'),
  q_proj: dfLinearForm('hidden'),
  k_proj: dfLinearForm('hidden'),
  v_proj: dfLinearForm('hidden'),
  rotary: ROTARY.df, // its module's (kernels/ops/rotary.ts), by name: no OP_MODULES entry yet
  out_proj: dfLinearForm('q'),
  // Inputs summed left to right (HF's operand order): (a + b) + c.
  residual: (a) => {
    if (a.inputs.length < 2 || a.inputs.length > 3)
      throw new Error(`${a.label}: a residual add of ${a.inputs.length} terms (2 or 3 are read)`);
    const [x, y, z] = a.inputs;
    const n = dfRows(a) * a.cfg.hiddenSize;
    return [
      dfResidual(a.label, { a: x, b: y, c: z ?? null, out: a.out, dummy: a.dummy }, n, { constants: a.df }),
    ];
  },
  mlp_up: dfLinearForm('hidden'),
  gelu: (a) => [
    dfGelu(a.label, { x: a.inputs[0], y: a.out }, dfRows(a) * a.cfg.intermediateSize, { constants: a.df }),
  ],
  mlp_down: dfLinearForm('ff'),
  // A family's final norm is its layer's norm (the kind of its first step, input_layernorm), on the model's weights.
  final_norm: (a) => DF_FORMS[familyOf(a.cfg).layer[0].op](a),
  lm_head: dfLinearForm('hidden'),
};

/** Every op kind's df form: this table's and the op modules' (kernels/ops/, one file an op kind). */
export const DF_FORMS: Readonly<Record<OpKind, DfForm>> = withOpModules('df', TABLE);

fillSlots('df', DF_FORMS);
