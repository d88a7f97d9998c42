// The two-path report's "why" for a Llama-family model (DESIGN.md, "Why, not only where"): at the first born layer,
// each op of the fused path's layer is re-run exactly (the op registry's fp64 forms, kernels/cpu/op-fp64.ts) from
// the fused path's own recorded inputs (LlamaFused.forwardTaps) and compared with what it recorded, against that
// op's floor — the reference path's op measured the same way from its own taps. Where the fused path writes no tap
// between ops (the gate and up products inside the SwiGLU GEMM, q, k and v inside the q/k/v + rotary GEMM), the
// fused group is checked whole, as GPT-NeoX's why does. At the first op past k × its floor the family's causes are
// scored as variants of the ops in it (the registry's fp64 forms take them as parameters: Fp64Args.variant, or the
// config a cause changes): RMSNorm — eps outside the root, the mean subtracted, no weight, computed in half; SwiGLU —
// gate and up swapped, another activation; attention — KV heads mapped interleaved, the window; rotary — theta off,
// the llama3/linear scaling skipped, GPT-J pairs; any op — its output rounded to half. A cause is named as the cause
// library names one (docs/CAUSES.md): within k × floor and not clearly beaten (2× its residual or one floor).

import { geluF64 } from '../kernels/cpu/gelu';
import { FP64_FORMS } from '../kernels/cpu/op-fp64';
import type { Precision } from '../numeric/precision';
import { type NumFormat, roundArray } from '../numeric/round';
import type { LlamaConfig, LlamaWeights, NeoXConfig } from '../numeric/types';
import { OPS } from '../ops/descriptors';
import { LLAMA_FAMILY, layerSteps } from '../ops/families';
import type { OpStep } from '../ops/types';
import type { Metric } from '../run/runspec';
import { anatomy } from './causes/anatomy';
import type { CauseFamily, CauseVerdict, OpData, OpKind, TestedCause } from './causes/types';
import { nonFiniteIn, ratioOf } from './floor';
import { type FullMetrics, fullMetrics } from './metrics';
import type { DeterminismResult, PathWhy } from './report';

export interface FamilyWhyInput {
  cfg: LlamaConfig;
  /** The dimensions the family shares with GPT-NeoX (the anatomy's heads). */
  shared: NeoXConfig;
  weights: LlamaWeights;
  tokens: readonly number[];
  layer: number;
  /** Each path's taps under the registry's names (`layers.{i}.{slot}`, `embed`). */
  fusedTaps: ReadonlyMap<string, Float32Array>;
  refTaps: ReadonlyMap<string, Float32Array>;
  metric: Metric;
  k: number;
  precision: Precision;
  determinism: DeterminismResult;
}

/** One way an op of the group could have been written: a config it reads, a variant its fp64 form takes, or both. */
interface Candidate {
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

interface Check {
  id: string;
  op: OpKind;
  what: string;
  /** The recorded slot checked, and the group's steps in forward order (the last computes it). */
  slot: string;
  steps: OpStep[];
}

/** A path's recorded slot of layer i ([heads, T, hd] for rotated q and k; v as rows [T, KV·hd]), or null. */
function recordedOf(taps: ReadonlyMap<string, Float32Array>, cfg: LlamaConfig, T: number, i: number) {
  return (slot: string): Float32Array | null => {
    if (slot === 'in') return taps.get(i === 0 ? 'embed' : `layers.${i - 1}.out`) ?? null;
    const t = taps.get(`layers.${i}.${slot}`);
    if (t) return t;
    const heads = slot === 'v' ? taps.get(`layers.${i}.v_heads`) : undefined;
    if (!heads) return null;
    // v_heads [KV, T, hd] -> v [T, KV·hd]
    const { numKvHeads: KV, headDim: hd } = cfg;
    const v = new Float32Array(heads.length);
    for (let j = 0; j < KV; j++)
      for (let t = 0; t < T; t++)
        for (let e = 0; e < hd; e++) v[t * KV * hd + j * hd + e] = heads[(j * T + t) * hd + e];
    return v;
  };
}

/** The report's op kind of a check (causes/types.ts OpKind: GPT-NeoX's names, which the page's words read). */
function opKindOf(slot: string, steps: readonly OpStep[]): OpKind {
  const fusedMlp = steps.some((s) => s.slot === 'gate');
  const kinds: Record<string, OpKind> = {
    ln1: 'ln1',
    ln2: 'ln2',
    ctx: 'attention',
    attn_out: 'dense',
    ln2_in: 'residual',
    out: 'residual',
    gate: 'fc1',
    up: 'fc1',
    swiglu: fusedMlp ? 'mlp_up' : 'act',
    mlp_out: 'fc2',
  };
  return kinds[slot] ?? 'qkv';
}

/**
 * The layer's checks for the slots the fused path records: each recorded slot with the steps that compute it from
 * recorded slots (itself, and the unrecorded steps it reads, transitively). A slot the reference lacks is skipped.
 */
export function familyChecks(
  cfg: LlamaConfig,
  i: number,
  fusedHas: (slot: string) => boolean,
  refHas: (slot: string) => boolean,
): Check[] {
  const steps = layerSteps(LLAMA_FAMILY, cfg);
  const bySlot = new Map(steps.map((s) => [s.slot, s]));
  const out: Check[] = [];
  for (const s of steps) {
    if (!fusedHas(s.slot) || !refHas(s.slot)) continue;
    const group = new Set<string>([s.slot]);
    const visit = (slot: string) => {
      for (const inp of bySlot.get(slot)?.inputs ?? [])
        if (inp !== 'in' && !fusedHas(inp) && !group.has(inp)) {
          group.add(inp);
          visit(inp);
        }
    };
    visit(s.slot);
    const members = steps.filter((x) => group.has(x.slot));
    const titles = [...new Set(members.map((x) => OPS[x.op].title))];
    const what =
      members.length === 1
        ? `${titles[0]}${s.module ? `, ${s.module}` : ''}`
        : `${titles.join(' and ')}, fused in one kernel`;
    out.push({
      id:
        members.length === 1
          ? `layers.${i}.${s.slot}`
          : `layers.${i}.${members.map((x) => x.slot).join('+')}`,
      op: opKindOf(s.slot, members),
      what,
      slot: s.slot,
      steps: members,
    });
  }
  return out;
}

/**
 * The check's group computed in fp64 from the path's recorded boundary slots, a candidate's way where given. `exact`
 * keeps the model's own step outputs of this path: a step the candidate leaves alone, on inputs it left alone, is
 * read from there instead of computed again (the gate and up products under each SwiGLU variant).
 */
function computeGroup(
  c: Check,
  x: FamilyWhyInput,
  recorded: (slot: string) => Float32Array | null,
  cand: Candidate | null,
  exact: Map<string, Float64Array> = new Map(),
): Float64Array {
  const values = new Map<string, Float64Array>();
  const changed = new Set<string>();
  const T = x.tokens.length;
  const get = (slot: string): Float64Array => {
    const v = values.get(slot);
    if (v) return v;
    const r = recorded(slot);
    if (!r) throw new Error(`layer ${x.layer}: ${c.id} reads '${slot}', which the path did not record`);
    const f = Float64Array.from(r);
    values.set(slot, f);
    return f;
  };
  let out: Float64Array = new Float64Array(0);
  for (const s of c.steps) {
    const v = cand?.applies(s) ? cand : null;
    const kept = exact.get(s.slot);
    if (!v && kept && !s.inputs.some((n) => changed.has(n))) {
      values.set(s.slot, kept);
      out = kept;
      continue;
    }
    let inputs = s.inputs.map(get);
    const halfIn = v?.half?.input ? v.half.format : null;
    if (halfIn) inputs = inputs.map((u) => roundArray(halfIn, u));
    const cfg = v?.cfg ? { ...x.cfg, ...v.cfg } : x.cfg;
    const w = s.weight ? (x.weights.layers[x.layer] as unknown as Record<string, unknown>)[s.weight] : null;
    if (v?.swiglu) {
      const [gate, up] = v.swiglu.swap ? [inputs[1], inputs[0]] : [inputs[0], inputs[1]];
      const act = v.swiglu.act;
      const a =
        act === 'gelu'
          ? geluF64(gate)
          : act === 'relu'
            ? gate.map((g) => Math.max(0, g))
            : gate.map((g) => g / (1 + Math.exp(-g)));
      out = a.map((u, j) => u * up[j]);
    } else
      out = FP64_FORMS[s.op]({
        cfg,
        T,
        layer: x.layer,
        step: s,
        inputs,
        weights: w,
        tokens: x.tokens,
        angles: 'exact',
        round: (u) => u,
        variant: v?.variant,
      });
    if (v?.half) out = roundArray(v.half.format, out);
    values.set(s.slot, out);
    if (v || s.inputs.some((n) => changed.has(n))) changed.add(s.slot);
    else exact.set(s.slot, out);
  }
  return out;
}

/** The family's causes for the ops of a group (each a variant of one of its steps), with their parameters. */
function candidatesFor(c: Check, cfg: LlamaConfig, layer: number): Candidate[] {
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

/** The "why" of the first born layer of a Llama-family compare. */
export function familyWhy(x: FamilyWhyInput): PathWhy {
  const { cfg, layer: i, k, metric, precision } = x;
  const T = x.tokens.length;
  const fusedRec = recordedOf(x.fusedTaps, cfg, T, i);
  const refRec = recordedOf(x.refTaps, cfg, T, i);
  const checks = familyChecks(
    cfg,
    i,
    (s) => fusedRec(s) !== null,
    (s) => refRec(s) !== null,
  );
  const scaleOf = (v: ArrayLike<number>) => {
    let m = 0;
    for (let j = 0; j < v.length; j++) m = Math.max(m, Math.abs(v[j]));
    return m;
  };
  const measured: PathWhy['checks'] = [];
  let born: {
    c: Check;
    recorded: Float32Array;
    exact: Float64Array;
    floor: FullMetrics;
    scale: number;
    kept: Map<string, Float64Array>;
  } | null = null;
  for (const c of checks) {
    const recorded = fusedRec(c.slot) as Float32Array;
    const kept = new Map<string, Float64Array>();
    const exact = computeGroup(c, x, fusedRec, null, kept);
    const refOut = refRec(c.slot) as Float32Array;
    const floor = fullMetrics(refOut, computeGroup(c, x, refRec, null), precision);
    const err = fullMetrics(recorded, exact, precision);
    const scale = scaleOf(exact);
    const ratio = ratioOf(err, floor, metric, precision, scale);
    const nonFinite = nonFiniteIn(err);
    measured.push({ id: c.id, op: c.op, what: c.what, ratio, nonFinite });
    if (!born && (ratio > k || nonFinite > 0)) born = { c, recorded, exact, floor, scale, kept };
  }
  const raced = x.determinism.differences.filter((d) => d.tensor === `layers.${i}`);
  const race = raced.length
    ? { tensors: raced.map((d) => d.tensor), elements: raced.reduce((s, d) => s + d.count, 0) }
    : null;
  const raceWords = race
    ? `; its bits change from run to run (${race.elements} elements of ${race.tensors.join(', ')}): a race, which no fixed variant can reproduce`
    : '';
  if (!born)
    return {
      layer: i,
      checks: measured,
      born: null,
      cause: null,
      anatomy: null,
      race,
      sentence: `Layer ${i}: no single op of the fused path is past ${k}× its floor; the layer's error comes from how they combine${raceWords}.`,
    };
  const one = measured.find((m) => m.id === born.c.id) as PathWhy['checks'][number];
  if (one.nonFinite > 0)
    return {
      layer: i,
      checks: measured,
      born: born.c.id,
      cause: null,
      anatomy: null,
      race,
      sentence: `Layer ${i}: ${born.c.what} (${born.c.id}) writes ${one.nonFinite} NaN/Inf values${raceWords}.`,
    };
  const t0 = performance.now();
  const b = born;
  const residualOf = (cand: Candidate) => {
    const out = computeGroup(b.c, x, fusedRec, cand, b.kept);
    const m = fullMetrics(b.recorded, out, precision);
    return nonFiniteIn(m) > 0 ? Number.POSITIVE_INFINITY : ratioOf(m, b.floor, metric, precision, b.scale);
  };
  const bestOf = new Map<string, TestedCause>();
  for (const cand of candidatesFor(b.c, cfg, i)) {
    const residual = residualOf(cand);
    const prev = bestOf.get(cand.id);
    if (!prev || residual < prev.residual)
      bestOf.set(cand.id, {
        id: cand.id,
        family: cand.family,
        words: cand.words,
        params: cand.params,
        residual,
      });
  }
  const cause = verdictOf([...bestOf.values()], one.ratio, k, performance.now() - t0);
  const data: OpData = {
    op: born.c.op === 'qkv' ? 'layer' : born.c.op,
    layer: i,
    cfg: x.shared,
    tokens: [...x.tokens],
    inputs: [],
    inputSlots: [],
    recorded: rowsOf(born.recorded, born.c, cfg, T),
    exact: Float64Array.from(rowsOf(Float32Array.from(born.exact), born.c, cfg, T)),
    weights: {},
    angles: 'exact',
    others: [],
    floor: born.floor,
    metric,
    k,
    precision,
    scale: born.scale,
  };
  const anat = anatomy(data);
  const clause = cause.named.length > 0 ? `probable cause: ${cause.words}` : `${cause.words}`;
  return {
    layer: i,
    checks: measured,
    born: born.c.id,
    cause,
    anatomy: anat,
    race,
    sentence: `Layer ${i}: the error is born at ${born.c.what} (${born.c.id}), ${one.ratio.toPrecision(3)}× its floor; ${clause}${raceWords}.`,
  };
}

/** A rotated q or k [heads, T, hd] as rows [T, heads·hd] (the anatomy reads rows); other slots are rows already. */
function rowsOf(v: Float32Array, c: Check, cfg: LlamaConfig, T: number): Float32Array {
  if (c.slot !== 'q_rot' && c.slot !== 'k_rot') return v;
  const hd = cfg.headDim;
  const heads = v.length / (T * hd);
  const out = new Float32Array(v.length);
  for (let h = 0; h < heads; h++)
    for (let t = 0; t < T; t++)
      for (let e = 0; e < hd; e++) out[t * heads * hd + h * hd + e] = v[(h * T + t) * hd + e];
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
