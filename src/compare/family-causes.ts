// The Llama family's causes for the why (family-why.ts, and the analysis of runs), each a variant of one op of the
// group where an error is born, as the op registry's fp64 forms take it (Fp64Args.variant, the config a cause
// changes, or a form of its own). Each op kind declares its own (the registry's `variants` slots: its op module's
// `causes`, kernels/ops/ — RMSNorm and the q/k norm in rmsnorm.ts, SwiGLU in swiglu.ts, attention in attention.ts,
// the rotary in rotary.ts), and they apply to the steps of that kind; here
// only the causes of any op (its output in half) and the cause library's where their op exists
// (family-causes-library.ts). And the verdict: a cause named as docs/CAUSES.md names one.

import '../kernels/cpu/op-fp64'; // fills the registry's fp64 and variants slots
import type { LlamaConfig } from '../numeric/types';
import { formOf, hasForm } from '../ops/slots';
import type { CauseVariant, OpStep } from '../ops/types';
import type { CauseVerdict, TestedCause } from './causes/types';
import { libraryCandidates } from './family-causes-library';
import type { Candidate, CandidateOptions, CheckSteps } from './family-causes-types';

export type { Candidate, CandidateOptions, CheckSteps } from './family-causes-types';

/** An op's cause variant as a candidate on the steps it applies to (a tuned value's too). */
function candidateOf(v: CauseVariant, applies: (s: OpStep) => boolean): Candidate {
  const { tune, ...rest } = v;
  if (!tune) return { ...rest, applies };
  return { ...rest, applies, tune: { ...tune, make: (x) => candidateOf(tune.make(x), applies) } };
}

/** The family's causes for the ops of a group (each a variant of one of its steps), with their parameters. */
export function candidatesFor(
  c: CheckSteps,
  cfg: LlamaConfig,
  layer: number,
  opts: CandidateOptions = {},
): Candidate[] {
  const out: Candidate[] = [];
  const last = c.steps[c.steps.length - 1];
  for (const format of ['bf16', 'fp16'] as const)
    out.push({
      id: `output-${format}`,
      family: 'narrower',
      words: `the output is rounded to ${format}`,
      params: { format },
      applies: (s) => s.slot === last.slot,
      half: { format, input: false },
    });
  // Each op kind of the group, in the order its steps come, with the causes it declares.
  for (const op of new Set(c.steps.map((s) => s.op))) {
    if (!hasForm('variants', op)) continue;
    const applies = (s: OpStep) => s.op === op;
    const steps = c.steps.filter(applies);
    for (const v of formOf('variants', op)({ cfg, layer, steps, ...opts })) out.push(candidateOf(v, applies));
  }
  out.push(...libraryCandidates(c, cfg, layer, opts));
  return out;
}

/**
 * The causes named as the cause library names them (docs/CAUSES.md): those within k × floor that no other explains
 * clearly better (2× its residual, or one floor, whichever is more); none within it: "no known cause explains it".
 */
export function verdictOf(tested: TestedCause[], error: number, k: number, ms: number): CauseVerdict {
  const sorted = [...tested].sort((a, b) => a.residual - b.residual);
  const best = sorted[0];
  const named =
    best && best.residual <= k
      ? sorted.filter((t) => t.residual <= k && t.residual <= Math.max(2 * best.residual, best.residual + 1))
      : [];
  const runnerUp = sorted.find((t) => !named.includes(t)) ?? null;
  const words =
    named.length > 0
      ? named.map((t) => `${t.words} (×${t.residual.toPrecision(2)} its floor left)`).join('; or ')
      : `no known cause explains it${best ? ` (the closest: ${best.words}, ×${best.residual.toPrecision(3)} its floor left)` : ''}`;
  return { named, runnerUp, error, words, tested: sorted, sampled: null, ms };
}
