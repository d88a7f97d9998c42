// The Llama family's causes for the two-path why (family-why.ts), each a variant of one op of the group where an
// error is born, as the op registry's fp64 forms take it (Fp64Args.variant, or the config a cause changes): RMSNorm
// — eps outside the root (the eps searched over 1 … 1e6 × the config's), the mean subtracted, no weight, computed in
// half; SwiGLU — gate and up swapped, GELU or ReLU in SiLU's place; attention — KV heads interleaved, the window
// ignored or off by one; rotary — theta off, the llama3/linear scaling skipped, GPT-J pairs; any op — its output in
// half. And the verdict: a cause named as docs/CAUSES.md names one.

import type { NumFormat } from '../numeric/round';
import type { LlamaConfig } from '../numeric/types';
import type { OpStep } from '../ops/types';
import type { CauseFamily, CauseVerdict, TestedCause } from './causes/types';

/** The steps of one check: a recorded slot and the steps that compute it from recorded slots. */
export interface CheckSteps {
  steps: readonly OpStep[];
}

/** One way an op of the group could have been written: a config it reads, a variant its fp64 form takes, or both. */
export interface Candidate {
  id: string;
  family: CauseFamily;
  words: string;
  params: Record<string, number | string>;
  /** The steps it changes. */
  applies: (s: OpStep) => boolean;
  cfg?: Partial<LlamaConfig>;
  variant?: Record<string, unknown>;
  /** SwiGLU's own variants: its operands swapped, or another function in SiLU's place. */
  swiglu?: { swap?: boolean; act?: 'gelu' | 'relu' };
  /** The step's output rounded to a narrower format (its input too with `input`). */
  half?: { format: NumFormat; input: boolean };
}

/** The family's causes for the ops of a group (each a variant of one of its steps), with their parameters. */
export function candidatesFor(c: CheckSteps, cfg: LlamaConfig, layer: number): Candidate[] {
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
      applies: (s) => s === last,
      half: { format, input: false },
    });
  for (const op of ['rmsnorm', 'qk_norm'] as const) {
    if (!has(op)) continue;
    const norm = op === 'rmsnorm' ? 'the RMSNorm' : 'the q/k RMSNorm';
    for (const factor of [1, 10, 100, 1e3, 1e4, 1e5, 1e6]) {
      const eps = cfg.rmsNormEps * factor;
      out.push({
        id: 'rms-eps-outside',
        family: 'constants',
        words: `${norm}'s eps is added outside the root, to the RMS (eps ${eps.toPrecision(3)}${factor === 1 ? ', the config’s' : `, ${factor} × the config’s`})`,
        params: { eps },
        applies: of(op),
        cfg: { rmsNormEps: eps },
        variant: { epsOutside: true },
      });
    }
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
    for (const format of ['bf16', 'fp16'] as const)
      out.push({
        id: `rms-${format}`,
        family: 'narrower',
        words: `${norm} is computed in ${format} (its input and output rounded)`,
        params: { format },
        applies: of(op),
        half: { format, input: true },
      });
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
    for (const f of [0.01, 0.1, 0.5, 2, 10, 100])
      out.push({
        id: 'rotary-theta',
        family: 'constants',
        words: `the rope theta is ${cfg.ropeTheta * f}, not ${cfg.ropeTheta}`,
        params: { theta: cfg.ropeTheta * f },
        applies: of('rotary'),
        cfg: { ropeTheta: cfg.ropeTheta * f },
      });
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
