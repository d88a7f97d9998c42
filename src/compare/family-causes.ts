// The Llama family's causes for the why (family-why.ts, and the analysis of runs), each a variant of one op of the
// group where an error is born, as the op registry's fp64 forms take it (Fp64Args.variant, the config a cause
// changes, or a form of its own: family-causes-forms.ts): RMSNorm — eps outside the root (the eps on a grid of 1 …
// 1e6 × the config's, and solved between by the rows scorer: Candidate.tune), eps inside the root off, the mean subtracted, no weight, computed in half (HF's cast order in
// a half model) or with the weight before the cast back; q/k norms skipped or over the whole projection; SwiGLU —
// gate and up swapped, GELU (erf or tanh) or ReLU in SiLU's place; attention — KV heads interleaved, the window
// ignored or off by one; rotary — theta off, the llama3/linear scaling skipped, GPT-J pairs; any op — its output in
// half; and the cause library's causes where their op exists (family-causes-library.ts). And the verdict: a cause
// named as docs/CAUSES.md names one.

import type { LlamaConfig } from '../numeric/types';
import type { OpStep } from '../ops/types';
import type { CauseVerdict, TestedCause } from './causes/types';
import { normSkipped, normWholeRow, rmsHalfForm, swigluGeluTanh } from './family-causes-forms';
import { libraryCandidates } from './family-causes-library';
import type { Candidate, CandidateOptions, CheckSteps } from './family-causes-types';

export type { Candidate, CandidateOptions, CheckSteps } from './family-causes-types';

/** The family's causes for the ops of a group (each a variant of one of its steps), with their parameters. */
export function candidatesFor(
  c: CheckSteps,
  cfg: LlamaConfig,
  layer: number,
  opts: CandidateOptions = {},
): Candidate[] {
  const has = (op: OpStep['op']) => c.steps.some((s) => s.op === op);
  const of = (op: OpStep['op']) => (s: OpStep) => s.op === op;
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
  for (const op of ['rmsnorm', 'qk_norm'] as const) {
    if (!has(op)) continue;
    const norm = op === 'rmsnorm' ? 'the RMSNorm' : 'the q/k RMSNorm';
    // Each eps of the grid, and (tune) any eps between: the rows scorer solves it from the run where the grid misses.
    const outside = (eps: number): Candidate => {
      const factor = eps / cfg.rmsNormEps;
      return {
        id: 'rms-eps-outside',
        family: 'constants',
        words: `${norm}'s eps is added outside the root, to the RMS (eps ${eps.toPrecision(3)}${factor === 1 ? ', the config’s' : `, ${Number(factor.toPrecision(3))} × the config’s`})`,
        params: { eps },
        applies: of(op),
        cfg: { rmsNormEps: eps },
        variant: { epsOutside: true },
        tune: { key: 'eps', value: eps, make: outside },
      };
    };
    const inside = (eps: number): Candidate => ({
      id: 'rms-eps',
      family: 'constants',
      words: `${norm}'s eps (inside the root) is ${eps.toPrecision(3)}, ${Number((eps / cfg.rmsNormEps).toPrecision(3))} × the config’s ${cfg.rmsNormEps}`,
      params: { eps },
      applies: of(op),
      cfg: { rmsNormEps: eps },
      tune: { key: 'eps', value: eps, make: inside },
    });
    for (const factor of [1, 10, 100, 1e3, 1e4, 1e5, 1e6]) out.push(outside(cfg.rmsNormEps * factor));
    for (const factor of [0.01, 0.1, 10, 100, 1e3, 1e4, 1e5, 1e6]) out.push(inside(cfg.rmsNormEps * factor));
    out.push({
      id: 'rms-mean-subtracted',
      family: 'function',
      words: `${norm} subtracts the row mean (a LayerNorm without bias)`,
      params: {},
      applies: of(op),
      variant: { centered: true },
    });
    out.push({
      id: 'rms-no-weight',
      family: 'operands',
      words: `${norm}'s weight is left out`,
      params: {},
      applies: of(op),
      variant: { noWeight: true },
    });
    for (const format of ['bf16', 'fp16'] as const) {
      out.push({
        id: `rms-${format}`,
        family: 'narrower',
        words: `${norm} is computed in ${format} as in a ${format} model: its input and weight in ${format}, the normalised value cast back to ${format}, then the product rounded`,
        params: { format },
        applies: of(op),
        form: rmsHalfForm(format, false),
      });
      out.push({
        id: 'rms-cast-order',
        family: 'narrower',
        words: `${norm} in ${format} applies the weight before the cast back to ${format} (one rounding; HF casts, then multiplies)`,
        params: { format },
        applies: of(op),
        form: rmsHalfForm(format, true),
      });
    }
    if (op === 'qk_norm') {
      out.push({
        id: 'qk-norm-skipped',
        family: 'operands',
        words: 'the q/k norm is left out: the projection goes to the rotary unnormalised',
        params: {},
        applies: of(op),
        form: normSkipped,
      });
      out.push({
        id: 'qk-norm-whole',
        family: 'layout',
        words:
          'the q/k norm is taken over the whole projection of a row (all its heads at once), not per head',
        params: {},
        applies: of(op),
        form: normWholeRow,
      });
    }
  }
  if (has('swiglu')) {
    out.push({
      id: 'swiglu-swapped',
      family: 'layout',
      words: 'gate and up are swapped: silu(up) · gate',
      params: {},
      applies: of('swiglu'),
      swiglu: { swap: true },
    });
    for (const act of ['gelu', 'relu'] as const)
      out.push({
        id: `swiglu-${act}`,
        family: 'function',
        words: `another activation on the gate: ${act === 'gelu' ? 'GELU' : 'ReLU'} in SiLU's place`,
        params: { act },
        applies: of('swiglu'),
        swiglu: { act },
      });
    out.push({
      id: 'swiglu-gelu-tanh',
      family: 'function',
      words: "another activation on the gate: GELU's tanh approximation in SiLU's place",
      params: { act: 'gelu-tanh' },
      applies: of('swiglu'),
      form: swigluGeluTanh,
    });
  }
  if (has('attention')) {
    const { numHeads: H, numKvHeads: KV } = cfg;
    if (KV > 1 && KV < H)
      out.push({
        id: 'kv-interleaved',
        family: 'layout',
        words: `KV heads mapped to the wrong query heads: query head h reads KV head h mod ${KV} (repeat_interleave's order), not h / ${H / KV}`,
        params: {},
        applies: of('attention'),
        variant: { kvMap: Array.from({ length: H }, (_, h) => h % KV) },
      });
    const w = cfg.slidingWindow[layer] ?? null;
    const windows: (number | null)[] = w === null ? [] : [null, ...(w > 1 ? [w - 1] : []), w + 1];
    for (const win of windows)
      out.push({
        id: win === null ? 'window-ignored' : 'window-off',
        family: 'layout',
        words:
          win === null
            ? `the sliding window (${w}) is ignored: every earlier key seen`
            : `the sliding window is ${win}, not ${w}`,
        params: win === null ? {} : { window: win },
        applies: of('attention'),
        cfg: { slidingWindow: cfg.slidingWindow.map((x, j) => (j === layer ? win : x)) },
      });
  }
  if (has('rotary')) {
    // Each theta of the grid, and (tune) any theta between: solved from the run where the grid misses.
    const theta = (v: number): Candidate => ({
      id: 'rotary-theta',
      family: 'constants',
      words: `the rope theta is ${Number(v.toPrecision(6))}, not ${cfg.ropeTheta}`,
      params: { theta: v },
      applies: of('rotary'),
      cfg: { ropeTheta: v },
      tune: { key: 'theta', value: v, make: theta },
    });
    for (const f of [0.01, 0.1, 0.5, 2, 10, 100]) out.push(theta(cfg.ropeTheta * f));
    if (cfg.ropeScaling.type !== 'default')
      out.push({
        id: 'rotary-scaling-skipped',
        family: 'constants',
        words: `the ${cfg.ropeScaling.type} frequency scaling of the rotary is skipped`,
        params: { type: cfg.ropeScaling.type },
        applies: of('rotary'),
        cfg: { ropeScaling: { type: 'default' } as LlamaConfig['ropeScaling'] },
      });
    out.push({
      id: 'rotary-gptj',
      family: 'layout',
      words: "the rotary rotates GPT-J's interleaved pairs (2i, 2i + 1) instead of rotate-half",
      params: {},
      applies: of('rotary'),
      variant: { gptj: true },
    });
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
