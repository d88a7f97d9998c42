// One op of the model on a run's recorded inputs, in double-float (GpuOracle.opOn records it): the local check of a
// run (src/compare/run-checks.ts), each op by the same steps and df forms as the whole forward (oracle-steps.ts), on
// every row or on the rows from..T−1.

import { dfPromote } from '../kernels/oracle/promote';
import { OPS } from '../ops/descriptors';
import { checkSteps, familyOf, layerSteps } from '../ops/families';
import type { CheckOp } from '../ops/types';
import { slotWidth } from '../ops/widths';
import { type DfBuffer, OracleError } from './oracle-df';
import {
  type Env,
  recordEmbedding,
  recordFinalNorm,
  recordLayer,
  recordLmHead,
  recordStep,
} from './oracle-steps';

/** The ops a run's local checks re-run (src/compare/run-checks.ts): the registry's check ops (src/ops/types.ts). */
export type OracleOp = CheckOp;

/** One op on recorded inputs: f32 buffers of n floats each, in the op's argument order. */
export interface OracleOpCall {
  op: OracleOp;
  layer: number | null;
  inputs: { buffer: GPUBuffer; n: number }[];
  label: string;
}

/**
 * Records op `c` on its recorded inputs (rows from..T−1 of its output; see GpuOracle.opOn) and returns its output:
 * the check's steps (its own and the uncovered steps it reads: the rotary before the attention core, checkSteps),
 * or the whole layer, each by its df form as the whole forward records it.
 */
export function recordOp(env: Env, c: OracleOpCall, from: number): DfBuffer {
  const { rec, T } = env;
  const cfg = env.core.src.cfg;
  const spec = familyOf(cfg);
  const R = T - from;
  const layerSteps_ = layerSteps(spec, cfg);
  const among = c.layer === null ? [spec.embed, spec.finalNorm, spec.lmHead] : layerSteps_;
  // The check's own step (the whole layer has none), the steps it re-runs, and its first input's width.
  const step = c.op === 'layer' ? null : (among.find((s) => s.check?.op === c.op) ?? null);
  if (c.op !== 'layer' && !step)
    throw new OracleError(`oracle ${c.label}: the ${cfg.family} family has no '${c.op}' check here`);
  const steps = step?.check ? checkSteps(spec, cfg, c.layer, step.check.id) : [];
  const allRows = !step || OPS[step.op].wholeSequence;
  const named = [spec.embed, ...layerSteps_, spec.finalNorm];
  const inName = step ? (step.check?.inputs ?? step.inputs)[0] : undefined;
  const width = slotWidth(cfg, named.find((s) => s.slot === inName)?.width ?? 'hidden');
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
  if (!step) return wholeLayer(env, c, xs[0], from);
  if (step === spec.embed) return { buffer: recordEmbedding(env, from), n: R * cfg.hiddenSize };
  if (step === spec.finalNorm) return { buffer: recordFinalNorm(env, xs[0], from), n: R * cfg.hiddenSize };
  if (step === spec.lmHead) return recordLmHead(env, xs[0], from);
  // The layer's steps in order: the first reads the recorded inputs, the rest what the steps before computed; a
  // step that a later whole-sequence op reads is computed over every row.
  const outs = new Map<string, GPUBuffer>();
  let out: DfBuffer | null = null;
  steps.forEach((s, j) => {
    const inputs =
      j === 0
        ? xs
        : s.inputs.map((n) => {
            const b = outs.get(n);
            if (!b)
              throw new OracleError(
                `oracle ${c.label}: ${s.slot} reads '${n}', which the check does not give`,
              );
            return b;
          });
    const later = steps.slice(j + 1);
    const outAll = later.some((t) => OPS[t.op].wholeSequence && t.inputs.includes(s.slot));
    const stepFrom = outAll ? 0 : from;
    const n = (T - stepFrom) * slotWidth(cfg, s.width);
    const label = j === steps.length - 1 ? c.label : `${c.label}.${s.slot}`;
    const y = rec.df(n, label);
    recordStep(env, s, c.layer ?? -1, label, inputs, y, stepFrom);
    outs.set(s.slot, y);
    out = { buffer: y, n };
  });
  if (!out) throw new OracleError(`oracle ${c.label}: the check re-runs no step`);
  return out;
}

/** The whole layer on its recorded input (every row): past attention it reads its rows from..T−1, promoted again. */
function wholeLayer(env: Env, c: OracleOpCall, x: GPUBuffer, from: number): DfBuffer {
  const { rec, T } = env;
  const d = env.core.src.cfg.hiddenSize;
  if (c.layer === null) throw new OracleError(`oracle ${c.label}: the whole layer needs a layer index`);
  let tail = x;
  if (from > 0) {
    tail = rec.df((T - from) * d, `${c.label}.in0.rows`);
    const src = c.inputs[0].buffer;
    rec.program.add(
      dfPromote(`${c.label}.promote.rows`, { x: src, out: tail }, (T - from) * d, {}, from * d),
    );
  }
  const y = recordLayer(env, c.layer, { from, x: { all: x, tail }, taps: 'dump' });
  return { buffer: y, n: (T - from) * d };
}
