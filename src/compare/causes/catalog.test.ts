// Every cause is planted in an op of a random shape (recorded as an fp32 kernel of that variant would write it) and
// must be named, with its parameter found; a correct op names none, and an error no family covers gets "no known
// cause explains it". Fresh seeds each run (CAUSE_SEEDS=n runs n of them; the seed is in every failure message).
import { describe, expect, it } from 'vitest';
import { explain, scorer } from './explain';
import { plantOp } from './plant.testdata';
import type { OpData, OpKind, Variant } from './types';

interface Plant {
  cause: string;
  op: OpKind;
  variant: (d: OpData) => Variant;
  /** What the search must find (each param equal, or within 10 % for numbers marked approx). */
  params?: Record<string, number | string>;
  approx?: string[];
}

const PLANTS: Plant[] = [
  {
    cause: 'acc-fp16',
    op: 'fc2',
    variant: () => ({ acc: { chunk: 16, fused: true } }),
    params: { chunk: 16 },
  },
  {
    cause: 'acc-fp16',
    op: 'mlp_up',
    variant: (d) => ({ acc: { chunk: d.inputs[0].length / d.tokens.length, fused: false } }),
  },
  // fused groups checked whole
  { cause: 'relu', op: 'mlp_up', variant: () => ({ act: 'relu' }) },
  { cause: 'input-shifted', op: 'mlp_up', variant: () => ({ inputShift: 2 }), params: { shift: 2 } },
  { cause: 'rotary-gptj', op: 'attn_block', variant: () => ({ rotary: { gptj: true } }) },
  {
    cause: 'softmax-no-rescale',
    op: 'attn_block',
    variant: () => ({ noRescale: { block: 4, threads: 1 } }),
    params: { block: 4 },
  },
  { cause: 'bias-dropped', op: 'mlp_residual', variant: () => ({ bias: 0 }) },
  {
    cause: 'residual-wrong-tensor',
    op: 'mlp_residual',
    variant: (d) => ({ replace: { term: 2, data: d.inputs[1] } }),
    params: { term: 'layers.0.out', from: 'layers.1.attn_out' },
  },
  { cause: 'output-bf16', op: 'fc1', variant: () => ({ outFormat: 'bf16' }) },
  { cause: 'output-fp16', op: 'attention', variant: () => ({ outFormat: 'fp16' }) },
  { cause: 'output-bf16', op: 'residual', variant: () => ({ outFormat: 'bf16' }) },
  { cause: 'input-bf16', op: 'qkv', variant: () => ({ inputFormat: 'bf16' }) },
  { cause: 'input-fp16', op: 'fc2', variant: () => ({ inputFormat: 'fp16' }) },
  { cause: 'weight-bf16', op: 'dense', variant: () => ({ weightFormat: 'bf16' }) },
  { cause: 'weight-fp16', op: 'fc1', variant: () => ({ weightFormat: 'fp16' }) },
  { cause: 'tf32', op: 'qkv', variant: () => ({ inputFormat: 'tf32', weightFormat: 'tf32' }) },
  {
    cause: 'autocast-bf16',
    op: 'fc2',
    variant: () => ({ inputFormat: 'bf16', weightFormat: 'bf16', biasFormat: 'bf16', outFormat: 'bf16' }),
  },
  {
    cause: 'autocast-fp16',
    op: 'lm_head',
    variant: () => ({ inputFormat: 'fp16', weightFormat: 'fp16', outFormat: 'fp16' }),
  },
  { cause: 'bias-dropped', op: 'fc2', variant: () => ({ bias: 0 }) },
  { cause: 'bias-doubled', op: 'qkv', variant: () => ({ bias: 2 }) },
  { cause: 'ln-weight-dropped', op: 'ln1', variant: () => ({ norm: { noWeight: true } }) },
  { cause: 'ln-bias-dropped', op: 'final_norm', variant: () => ({ norm: { noBias: true } }) },
  {
    cause: 'residual-term-dropped',
    op: 'residual',
    variant: () => ({ coefs: [1, 0, 1] }),
    params: { term: 'layers.1.attn_out' },
  },
  {
    cause: 'residual-term-doubled',
    op: 'residual',
    variant: () => ({ coefs: [2, 1, 1] }),
    params: { term: 'layers.1.mlp_out' },
  },
  {
    cause: 'residual-wrong-tensor',
    op: 'residual',
    variant: (d) => ({ replace: { term: 2, data: d.others.find((o) => o.slot === 'layers.1.ln1')!.data } }),
    params: { term: 'layers.0.out', from: 'layers.1.ln1' },
  },
  {
    cause: 'input-wrong-tensor',
    op: 'dense',
    variant: (d) => ({ input: d.others.find((o) => o.slot === 'layers.1.attn_out')!.data }),
    params: { from: 'layers.1.attn_out' },
  },
  { cause: 'row-broadcast', op: 'ln2', variant: () => ({ broadcastRow: 3 }), params: { row: 3 } },
  { cause: 'ln-eps', op: 'ln2', variant: () => ({ eps: 0.05 }), params: { eps: 0.05 }, approx: ['eps'] },
  {
    cause: 'ln-eps-outside',
    op: 'ln1',
    variant: () => ({ eps: 0.01, norm: { epsOutside: true } }),
    params: { eps: 0.01 },
    approx: ['eps'],
  },
  { cause: 'ln-unbiased-var', op: 'final_norm', variant: () => ({ norm: { unbiased: true } }) },
  {
    cause: 'softmax-scale',
    op: 'attention',
    variant: () => ({ scores: { scale: 1 } }),
    params: { scale: 1 },
    approx: ['scale'],
  },
  {
    cause: 'softmax-scale',
    op: 'attention',
    variant: (d) => ({ scores: { scale: 1 / d.cfg.headDim } }),
  },
  {
    cause: 'rotary-base',
    op: 'attention',
    variant: () => ({ rotaryBase: 500 }),
    params: { base: 500 },
    approx: ['base'],
  },
  {
    cause: 'rotary-width',
    op: 'attention',
    variant: (d) => ({ rotaryNdims: d.cfg.rotaryNdims - 2 }),
  },
  {
    cause: 'rows-shifted',
    op: 'fc1',
    variant: () => ({ rowShift: { shift: 1, from: 4 } }),
    params: { shift: 1, from: 4 },
  },
  {
    cause: 'rows-shifted',
    op: 'attention',
    variant: () => ({ rowShift: { shift: -2, from: 0 } }),
    params: { shift: -2, from: 0 },
  },
  { cause: 'elements-shifted', op: 'dense', variant: () => ({ elemShift: 2 }), params: { shift: 2 } },
  { cause: 'input-shifted', op: 'fc1', variant: () => ({ inputShift: 2 }), params: { shift: 2 } },
  { cause: 'weight-transposed', op: 'dense', variant: () => ({ transposed: true }) },
  { cause: 'qkv-layout', op: 'attention', variant: () => ({ rotary: { layout3: true } }) },
  {
    cause: 'heads-permuted',
    op: 'attention',
    variant: (d) => ({ headPerm: Array.from({ length: d.cfg.numHeads }, (_, h) => d.cfg.numHeads - 1 - h) }),
  },
  { cause: 'causal-missing', op: 'attention', variant: () => ({ scores: { causalOffset: null } }) },
  {
    cause: 'causal-off-by-one',
    op: 'attention',
    variant: () => ({ scores: { causalOffset: 1 } }),
    params: { offset: 1 },
  },
  { cause: 'rotary-gptj', op: 'attention', variant: () => ({ rotary: { gptj: true } }) },
  {
    cause: 'rotary-offset',
    op: 'attention',
    variant: (d) => ({ rotary: { positions: d.tokens.map((_, t) => (t < 5 ? t : t - 5)) } }),
    params: { from: 5, offset: -5 },
  },
  { cause: 'gelu-tanh', op: 'act', variant: () => ({ act: 'gelu-tanh' }) },
  { cause: 'gelu-sigmoid', op: 'act', variant: () => ({ act: 'gelu-sigmoid' }) },
  { cause: 'relu', op: 'act', variant: () => ({ act: 'relu' }) },
  { cause: 'silu', op: 'act', variant: () => ({ act: 'silu' }) },
  { cause: 'softmax-fp16', op: 'attention', variant: () => ({ probsFormat: 'fp16' }) },
  { cause: 'softmax-bf16', op: 'attention', variant: () => ({ probsFormat: 'bf16' }) },
  {
    cause: 'softmax-no-rescale',
    op: 'attention',
    variant: () => ({ noRescale: { block: 2, threads: 2 } }),
    params: { block: 2, threads: 2 },
  },
];

const SEEDS = Number(process.env.CAUSE_SEEDS ?? 2);
const base = Math.floor(Math.random() * 2 ** 30);

describe('the cause library', () => {
  it.each(PLANTS.map((p, i) => [`${p.cause} at ${p.op}`, i] as const))('finds %s', (_, i) => {
    const p = PLANTS[i];
    for (let j = 0; j < SEEDS; j++) {
      // A draw where the planted variant happens to equal the exact op (an online softmax whose maximum never grows
      // after the first block) has nothing to find: the next draw is taken (the fault must show; that is the premise).
      let seed = base + 7919 * j + i;
      let d = plantOp(seed, p.op, p.variant);
      for (let redraw = 1; redraw < 20 && !(scorer(d, null)({}) > 10 * d.k); redraw++)
        d = plantOp((seed += 1_000_003), p.op, p.variant);
      const v = explain(d);
      const msg = `seed ${seed}: ${v.words}; error ${v.error.toPrecision(3)}×; tested ${v.tested
        .slice(0, 4)
        .map((t) => `${t.id} ${t.residual.toPrecision(3)}`)
        .join(', ')}`;
      expect(v.error, msg).toBeGreaterThan(d.k);
      const found = v.named.find((c) => c.id === p.cause);
      expect(found, msg).toBeDefined();
      expect(v.named[0].id, msg).toBe(p.cause);
      for (const [key, want] of Object.entries(p.params ?? {})) {
        const got = found!.params[key];
        if (p.approx?.includes(key))
          expect(Math.abs(Number(got) / Number(want) - 1), `${msg}: ${key}`).toBeLessThan(0.1);
        else expect(got, `${msg}: ${key}`).toBe(want);
      }
      expect(v.words, msg).toContain(v.named[0].words);
    }
  });

  it('a large op is screened and scored on samples of its columns, and its cause still named', () => {
    const plants: [OpKind, Variant, string][] = [
      ['fc1', { inputFormat: 'bf16' }, 'input-bf16'],
      ['fc2', { bias: 0 }, 'bias-dropped'],
      ['mlp_up', { act: 'gelu-tanh' }, 'gelu-tanh'],
      ['fc1', { rowShift: { shift: 1, from: 9 } }, 'rows-shifted'],
    ];
    for (let j = 0; j < Math.max(1, SEEDS / 5); j++)
      for (const [op, variant, id] of plants) {
        const seed = base + 611953 * j;
        const d = plantOp(seed, op, () => variant, 10, true);
        const v = explain(d);
        expect(v.sampled, `seed ${seed}: ${op}`).not.toBeNull();
        expect(v.named[0]?.id, `seed ${seed}: ${v.words}`).toBe(id);
      }
  });

  it('a correct op names no cause and searches nothing', () => {
    for (let j = 0; j < 3 * SEEDS; j++) {
      const ops: OpKind[] = ['fc1', 'attention', 'ln1', 'act', 'residual'];
      const seed = base + 104729 * j;
      const d = plantOp(seed, ops[j % ops.length], () => ({}));
      const v = explain(d);
      expect(v.error, `seed ${seed}`).toBeLessThanOrEqual(d.k);
      expect(v.named, `seed ${seed}`).toEqual([]);
      expect(v.tested, `seed ${seed}`).toEqual([]);
    }
  });

  it('an error no family covers is "no known cause explains it", with what came closest', () => {
    for (let j = 0; j < 3 * SEEDS; j++) {
      const seed = base + 15485863 * j;
      // A wrong product the catalog has no variant for: the weights scaled by 1.001.
      const d = plantOp(seed, 'fc1', () => ({}));
      d.recorded = Float32Array.from(
        d.recorded,
        (x, i) =>
          x + 1e-3 * (d.exact[i] - d.weights.linear!.bias!.data[i % (d.exact.length / d.tokens.length)]),
      );
      const v = explain(d);
      expect(v.error, `seed ${seed}`).toBeGreaterThan(d.k);
      expect(v.named, `seed ${seed}: ${v.words}`).toEqual([]);
      expect(v.words).toMatch(/^no known cause explains it \(closest: /);
      expect(v.tested.length).toBeGreaterThan(10);
    }
  });
});
