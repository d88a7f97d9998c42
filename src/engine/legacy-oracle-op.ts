// One op of the model on a run's recorded inputs, in double-float (GpuOracle.opOn records it): the local check of a
// run (src/compare/run-checks.ts), each op as the whole forward computes it (oracle-layer.ts), on every row or on a
// row range.
import { dfScores, dfSoftmax, dfValues } from '../kernels/oracle/attention';
import { dfEmbedding } from '../kernels/oracle/embedding';
import { dfGelu } from '../kernels/oracle/gelu';
import { dfLayerNorm } from '../kernels/oracle/layernorm';
import { dfLinear } from '../kernels/oracle/linear';
import { dfPromote } from '../kernels/oracle/promote';
import { dfResidual } from '../kernels/oracle/residual';
import { dfRotary } from '../kernels/oracle/rotary';
import { familySlotWidth } from '../model/run-names';
import { OPS } from '../ops/descriptors';
import { NEOX_SEQUENTIAL, neoxStepOfCheck } from '../ops/families';
import type { CheckOp, OpKind, OpStep, SlotWidth } from '../ops/types';
import type { GpuLayer, GpuLinear, GpuNorm } from './gpu-model';
import { layerBuffers, type OracleKit, recordLayer, recordLmHead } from './legacy-oracle-layer';
import { type DfBuffer, OracleError, type Recording } from './oracle-df';

/** The ops a run's local checks re-run (src/compare/run-checks.ts): the registry's check ops (src/ops/types.ts). */
export type OracleOp = CheckOp;

/** One op on recorded inputs: f32 buffers of n floats each, in the op's argument order. */
export interface OracleOpCall {
  op: OracleOp;
  layer: number | null;
  inputs: { buffer: GPUBuffer; n: number }[];
  label: string;
}

/** The GPU model's weights by the registry steps' weight names (src/ops/families.ts, GPT-NeoX). */
const LAYER_WEIGHT: Readonly<Record<string, (l: GpuLayer) => GpuLinear | GpuNorm>> = {
  inputLayernorm: (l) => l.inputLayernorm,
  postAttentionLayernorm: (l) => l.postAttentionLayernorm,
  qkv: (l) => l.attention.qkv,
  dense: (l) => l.attention.dense,
  fc1: (l) => l.mlp.denseHTo4h,
  fc2: (l) => l.mlp.dense4hToH,
};

/** What one op's double-float form is given: the kit, the recording, the call, its promoted inputs and rows. */
interface DfOpArgs {
  k: OracleKit;
  rec: Recording;
  c: OracleOpCall;
  xs: GPUBuffer[];
  tokens: number[];
  from: number;
  rotary: () => { cos: GPUBuffer; sin: GPUBuffer };
  step: OpStep;
}
type DfOpForm = (a: DfOpArgs) => DfBuffer;

const rowsOut = (a: DfOpArgs) => a.tokens.length - a.from;

const norm: DfOpForm = (a) => {
  const { cfg } = a.k.model;
  const d = cfg.hiddenSize;
  const R = rowsOut(a);
  const nw = (
    a.c.layer === null ? a.k.model.finalLayerNorm : LAYER_WEIGHT[a.step.weight!](a.k.model.layers[a.c.layer])
  ) as GpuNorm;
  const y = a.rec.df(R * d, a.c.label);
  a.rec.program.add(
    dfLayerNorm(a.c.label, { x: a.xs[0], weight: nw.weight, bias: nw.bias, y }, R, d, cfg.layerNormEps, {
      constants: a.k.df,
    }),
  );
  return { buffer: y, n: R * d };
};

const linear: DfOpForm = (a) => {
  const w = LAYER_WEIGHT[a.step.weight!](a.k.model.layers[a.c.layer!]) as GpuLinear;
  const cfg = a.k.model.cfg;
  const N = familySlotWidth(a.step.width, cfg);
  const K = familySlotWidth(inputWidth(a.step), cfg);
  const R = rowsOut(a);
  const y = a.rec.df(R * N, a.c.label);
  a.rec.program.add(
    dfLinear(a.c.label, { x: a.xs[0], w: w.weight, b: w.bias, y, dummy: a.k.model.dummy }, R, N, K, {
      constants: a.k.dfW,
    }),
  );
  return { buffer: y, n: R * N };
};

/**
 * GPT-NeoX's double-float forms on recorded inputs, by the registry op kind of the check's last step (the attention
 * check's steps are the rotary and the core: its form records both). The Llama family's df forms are the registry's
 * `df` slots (kernels/oracle/df-forms.ts).
 */
const DF_ON_RECORDED: Readonly<Partial<Record<OpKind, DfOpForm>>> = {
  embedding: (a) => {
    const d = a.k.model.cfg.hiddenSize;
    const R = rowsOut(a);
    const ids = a.rec.upload(new Uint32Array(a.tokens.slice(a.from)), 'ids');
    const y = a.rec.df(R * d, a.c.label);
    a.k.model.embedIn.forEach((chunk, i) => {
      a.rec.program.add(
        dfEmbedding(`${a.c.label}[${i}]`, { ids, table: chunk.buffer, out: y }, R, d, chunk, {
          constants: a.k.dfW,
        }),
      );
    });
    return { buffer: y, n: R * d };
  },
  layernorm: norm,
  final_norm: norm,
  qkv: linear,
  out_proj: linear,
  mlp_up: linear,
  mlp_down: linear,
  gelu: (a) => {
    const n = rowsOut(a) * a.k.model.cfg.intermediateSize;
    const y = a.rec.df(n, a.c.label);
    a.rec.program.add(dfGelu(a.c.label, { x: a.xs[0], y }, n, { constants: a.k.df }));
    return { buffer: y, n };
  },
  attention: (a) => {
    const { cfg } = a.k.model;
    const { label } = a.c;
    const T = a.tokens.length;
    const d = cfg.hiddenSize;
    const R = rowsOut(a);
    const H = cfg.numHeads;
    const hd = cfg.headDim;
    const df = { constants: a.k.df };
    const rope = a.rotary();
    const rows = { q0: a.from, R }; // the query rows; the keys and values of all T positions
    const [q, k, v] = ['q', 'k', 'v'].map((n) => a.rec.df(T * d, `${label}.${n}`));
    const scores = a.rec.df(H * R * T, `${label}.scores`);
    const probs = a.rec.df(H * R * T, `${label}.probs`);
    const ctx = a.rec.df(R * d, label);
    a.rec.program.add(
      dfRotary(`${label}.rotary`, { qkv: a.xs[0], ...rope, q, k, v }, T, H, hd, cfg.rotaryNdims, df),
    );
    a.rec.program.add(dfScores(`${label}.scores`, { q, k, s: scores }, H, T, hd, df, rows));
    a.rec.program.add(dfSoftmax(`${label}.probs`, { s: scores, p: probs }, H, T, df, rows));
    a.rec.program.add(dfValues(label, { p: probs, v, ctx }, H, T, hd, df, rows));
    return { buffer: ctx, n: R * d };
  },
  residual: (a) => {
    const n = rowsOut(a) * a.k.model.cfg.hiddenSize;
    const y = a.rec.df(n, a.c.label);
    const [x0, x1, x2] = a.xs;
    a.rec.program.add(
      dfResidual(a.c.label, { a: x0, b: x1, c: x2 ?? null, out: y, dummy: a.k.model.dummy }, n, {
        constants: a.k.df,
      }),
    );
    return { buffer: y, n };
  },
  lm_head: (a) => recordLmHead(a.k, a.rec, a.xs[0], rowsOut(a), a.tokens.length),
};

/** The whole layer on its recorded input: the forward's own layer (oracle-layer.ts). */
function wholeLayer(a: Omit<DfOpArgs, 'step'>): DfBuffer {
  const { c, rec, k, from } = a;
  const d = k.model.cfg.hiddenSize;
  const T = a.tokens.length;
  const rope = a.rotary();
  // Past attention, the layer reads its input's rows from..T−1 only: promoted again from there.
  let rows: { from: number; x: GPUBuffer } | undefined;
  if (from > 0) {
    rows = { from, x: rec.df((T - from) * d, `${c.label}.in0.rows`) };
    const src = c.inputs[0].buffer;
    rec.program.add(
      dfPromote(`${c.label}.promote.rows`, { x: src, out: rows.x }, (T - from) * d, {}, from * d),
    );
  }
  const b = layerBuffers(k.model.cfg, rec, T, c.label);
  const y = recordLayer(k, rec, c.layer!, a.xs[0], T, rope, b, 'dump', rows);
  return { buffer: y, n: (T - from) * d };
}

/** The width of a check's first input slot (its rows are promoted and checked against it): the hidden size at
 * the layer's input, else the width of the step that writes it. */
function inputWidth(step: OpStep): SlotWidth {
  const name = (step.check?.inputs ?? step.inputs)[0];
  const spec = NEOX_SEQUENTIAL;
  return [spec.embed, ...spec.layer, spec.finalNorm].find((s) => s.slot === name)?.width ?? 'hidden';
}

/**
 * Records op `c` on its recorded inputs into `rec` (rows from..T−1 of its output; see GpuOracle.opOn) and returns
 * its output. `rotary` gives the cos/sin tables of all T positions, uploaded into `rec`.
 */
export function recordOp(
  k: OracleKit,
  rec: Recording,
  c: OracleOpCall,
  tokens: number[],
  from: number,
  rotary: () => { cos: GPUBuffer; sin: GPUBuffer },
): DfBuffer {
  const { cfg } = k.model;
  const T = tokens.length;
  const R = T - from;
  // The check's registry step (GPT-NeoX's, src/ops/families.ts); the whole layer has none.
  const step = neoxStepOfCheck(c.op);
  const allRows = !step || OPS[step.op].wholeSequence;
  const width = familySlotWidth(step ? inputWidth(step) : 'hidden', cfg);
  const xs = c.inputs.map(({ buffer, n }, j) => {
    // Every row (T·width), or only the checked ones ((T − from)·width) where the op is row-wise.
    const rows = n === T * width ? T : !allRows && n === R * width ? R : -1;
    if (rows < 0)
      throw new OracleError(
        `oracle ${c.label}: input ${j} holds ${n} floats, not ${allRows ? T : `${T} or ${R}`} rows of ${width}`,
      );
    const skip = allRows ? 0 : (rows - R) * width;
    const count = allRows ? n : R * width;
    const x = rec.df(count, `${c.label}.in${j}`);
    rec.program.add(dfPromote(`${c.label}.promote${j}`, { x: buffer, out: x }, count, {}, skip));
    return x;
  });
  if (!step) return wholeLayer({ k, rec, c, xs, tokens, from, rotary });
  const form = DF_ON_RECORDED[step.op];
  if (!form)
    throw new OracleError(`oracle ${c.label}: '${step.op}' has no double-float form on recorded inputs`);
  return form({ k, rec, c, xs, tokens, from, rotary, step });
}
