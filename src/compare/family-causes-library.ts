// The cause library's causes (docs/CAUSES.md) where their op exists in the Llama family, as candidates of
// family-causes.ts: a linear's running sum in half (any linear), a linear's bias dropped, the softmax scale, the
// attention core in half, a residual term dropped; and, in a run of a generation (`decodeFrom`, its first decode
// row), the decode's rotary positions off and a cached position dropped from the decode's rows on.

import type { LlamaConfig } from '../numeric/types';
import { OPS } from '../ops/descriptors';
import { familyOf } from '../ops/families';
import type { OpStep } from '../ops/types';
import { slotWidth } from '../ops/widths';
import { attentionHalfEnd } from './family-causes-attention-half';
import {
  accHalfForm,
  attentionHalfForm,
  biasDropped,
  positionDroppedForm,
  rotaryPositionsForm,
} from './family-causes-forms';
import type { Candidate, CandidateOptions, CheckSteps } from './family-causes-types';

/** The op kinds of a layer's matrix products (the descriptors' `linear`; the LM head's are not the library's). */
function layerLinears(cfg: LlamaConfig): ReadonlySet<OpStep['op']> {
  return new Set(familyOf(cfg).layer.flatMap((s) => (OPS[s.op].linear ? [s.op] : [])));
}

/** The cause library's candidates for the ops of a Llama-family group. */
export function libraryCandidates(
  c: CheckSteps,
  cfg: LlamaConfig,
  _layer: number,
  opts: CandidateOptions,
): Candidate[] {
  const out: Candidate[] = [];
  const LINEAR = layerLinears(cfg);
  const linears = c.steps.filter((s) => LINEAR.has(s.op));
  const isLinear = (s: OpStep) => LINEAR.has(s.op);
  if (linears.length > 0) {
    // A chunk as long as K is one fp32 sum rounded once: the output in half, not a running sum (not tried). The sums
    // are emulated step by step in fp32, so the running sum is tried where the group's products are at most
    // ACC_WORK multiply-adds (the rows known): the small models of tests and fixtures, not a real model's layer.
    const K = Math.min(...linears.map((s) => reduceLength(cfg, s)));
    const work =
      (opts.rows ?? Number.POSITIVE_INFINITY) * linears.reduce((n, s) => n + productSize(cfg, s), 0);
    if (work <= ACC_WORK)
      for (const format of ['fp16', 'bf16'] as const)
        for (const chunk of [1, 16, 64].filter((n) => n < K))
          out.push({
            id: `acc-${format}`,
            family: 'narrower',
            words: `the running sums of the product kept in ${format}${chunk === 1 ? ', rounded after every add' : `, an fp32 sum over each ${chunk} of K added in ${format}`}`,
            params: { format, chunk },
            applies: isLinear,
            form: accHalfForm(format, chunk),
            orderSpread: [accHalfForm(format, chunk, -1), accHalfForm(format, chunk, 1)],
          });
    const withBias = linears.filter((s) => hasBias(cfg, s));
    if (withBias.length > 0)
      out.push({
        id: 'bias-dropped',
        family: 'operands',
        words: "the linear's bias is left out",
        params: {},
        applies: (s) => isLinear(s) && hasBias(cfg, s),
        form: biasDropped,
      });
  }
  if (c.steps.some((s) => s.op === 'attention')) {
    const hd = cfg.headDim;
    const model = 1 / Math.sqrt(hd);
    const scales: [number, string][] = [
      [1, 'unscaled (1)'],
      [1 / hd, `1/head_dim (${(1 / hd).toPrecision(3)})`],
      [model * 2, `2 × head_dim^-0.5`],
      [model / 2, `head_dim^-0.5 / 2`],
      [Math.SQRT2 * model, `√2 × head_dim^-0.5`],
      [model / Math.SQRT2, `head_dim^-0.5 / √2`],
    ];
    for (const [scale, what] of scales)
      out.push({
        id: 'softmax-scale',
        family: 'constants',
        words: `the scores are scaled by ${what}, not head_dim^-0.5 (${model.toPrecision(3)})`,
        params: { scale },
        applies: (s) => s.op === 'attention',
        variant: { scale },
      });
    for (const format of ['fp16', 'bf16'] as const)
      out.push({
        id: `attention-${format}`,
        family: 'narrower',
        words: `the attention core runs in ${format}: q, k (after rotary) and v rounded, the scores, the probabilities and the output rounded`,
        params: { format },
        applies: (s) => s.op === 'attention',
        form: attentionHalfForm(format),
        orderSpread: [attentionHalfEnd(format, -1), attentionHalfEnd(format, 1)],
      });
    const P = opts.decodeFrom;
    if (P !== undefined && P >= 1) {
      const shifts: [string, (t: number) => number, Record<string, number>][] = [
        ...[-4, -3, -2, -1, 1, 2, 3, 4].map(
          (s) =>
            [`at position p ${s > 0 ? '+' : '−'} ${Math.abs(s)}`, (t: number) => t + s, { offset: s }] as [
              string,
              (t: number) => number,
              Record<string, number>,
            ],
        ),
        ['as position 0', () => 0, { offset: Number.NaN }],
        ['counted from 0 at the first decode step', (t) => t - P, { offset: -P }],
      ];
      for (const [what, at, params] of shifts)
        out.push({
          id: 'rotary-offset',
          family: 'layout',
          words: `every row from decode step 1 (position ${P}) on rotated ${what}, the prompt's rows exact`,
          params: { from: P, ...(Number.isNaN(params.offset) ? { at: 0 } : params) },
          applies: (s) => s.op === 'rotary',
          form: rotaryPositionsForm(P, at),
        });
      // Every cached position where the attention re-runs stay within POSITIONS_WORK multiply-adds in all; past it
      // the first two and the last two (a sink, an edge off by one).
      const rows = opts.rows ?? Number.POSITIVE_INFINITY;
      const each = 2 * cfg.numHeads * rows * rows * cfg.headDim;
      const positions =
        P * each <= POSITIONS_WORK
          ? Array.from({ length: P }, (_, j) => j)
          : [...new Set([0, 1, P - 2, P - 1])].filter((j) => j >= 0 && j < P);
      for (const j of positions)
        out.push({
          id: 'kv-positions-dropped',
          family: 'layout',
          words: `cached position ${j} is out of sight of every row from decode step 1 (position ${P}) on`,
          params: { position: j, from: P },
          applies: (s) => s.op === 'attention',
          form: positionDroppedForm(j, P),
        });
    }
  }
  const residual = c.steps.find((s) => s.op === 'residual');
  if (residual)
    for (const term of residual.inputs)
      out.push({
        id: 'residual-term-dropped',
        family: 'operands',
        words: `the residual add leaves out its term ${term === 'in' ? "the layer's input" : `'${term}'`}`,
        params: { term },
        applies: (s) => s.slot === residual.slot,
        form: (a) => Float64Array.from(a.inputs[residual.inputs.indexOf(term) === 0 ? 1 : 0]),
      });
  return out;
}

/** The most multiply-adds of a group's products under which a running sum in half is tried (about 1 s here). */
export const ACC_WORK = 4e6;

/** The most multiply-adds of the attention re-runs of all cached positions tried as the one dropped. */
export const POSITIONS_WORK = 16e6;

/** The width of the slot a linear step reads (its K): the layer's input, or the step that writes it. */
function inputWidth(cfg: LlamaConfig, s: OpStep): number {
  const input = s.inputs[0];
  if (input === 'in') return cfg.hiddenSize;
  const from = familyOf(cfg).layer.find((x) => x.slot === input);
  if (!from) throw new Error(`${s.slot}: reads '${input}', which no step of the layer writes`);
  return slotWidth(cfg, from.width);
}

/** N · K of a linear step. */
function productSize(cfg: LlamaConfig, s: OpStep): number {
  return slotWidth(cfg, s.width) * inputWidth(cfg, s);
}

/** The length of a linear step's sums (its K). */
function reduceLength(cfg: LlamaConfig, s: OpStep): number {
  return inputWidth(cfg, s);
}

/** Whether the config gives a linear step a bias (the step's bias flag; docs/FAMILIES.md, each flavour's biases). */
function hasBias(cfg: LlamaConfig, s: OpStep): boolean {
  return s.bias !== undefined && cfg[s.bias];
}
