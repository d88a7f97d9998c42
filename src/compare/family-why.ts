// The two-path report's "why" for a Llama-family model (DESIGN.md, "Why, not only where"): at the first born layer,
// each op of the fused path's layer is re-run exactly (the op registry's fp64 forms, kernels/cpu/op-fp64.ts) from
// the fused path's own recorded inputs (LlamaFused.forwardTaps) and compared with what it recorded, against that
// op's floor — the reference path's op measured the same way from its own taps. Where the fused path writes no tap
// between ops (the gate and up products inside the SwiGLU GEMM, q, k and v inside the q/k/v + rotary GEMM), the
// fused group is checked whole, as GPT-NeoX's why does. At the first op past k × its floor the family's causes
// (family-causes.ts: RMSNorm, SwiGLU, attention and rotary variants, any op's output in half) are scored as variants
// of the ops in it — the registry's fp64 forms take them as parameters (Fp64Args.variant, or the config a cause
// changes), first on the rows where the error lives and the finalists on every row (family-causes-rows.ts) — and one
// is named as the cause library names one (docs/CAUSES.md): within k × floor and not clearly beaten (2× its residual
// or one floor). The anatomy of the born op's error is causes/anatomy.ts's.

import type { Precision } from '../numeric/precision';
import type { LlamaConfig, LlamaWeights, NeoXConfig } from '../numeric/types';
import { OPS } from '../ops/descriptors';
import { anatomyOpOf, LLAMA_FAMILY, layerSteps, libraryOpOf } from '../ops/families';
import type { OpStep } from '../ops/types';
import { headsOf } from '../ops/widths';
import type { Metric } from '../run/runspec';
import { anatomy } from './causes/anatomy';
import type { OpData, OpKind } from './causes/types';
import { type Candidate, candidatesFor, verdictOf } from './family-causes';
import { pickRows, pickRowsF32, scoreOnRowsNow } from './family-causes-rows';
import { computeSteps } from './family-group';
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
  /** In a run of a generation: its first decode row (the decode's causes are tried from there). */
  decodeFrom?: number;
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
    const [KV, hd] = [headsOf(cfg, 'kv'), cfg.headDim];
    const v = new Float32Array(heads.length);
    for (let j = 0; j < KV; j++)
      for (let t = 0; t < T; t++)
        for (let e = 0; e < hd; e++) v[t * KV * hd + j * hd + e] = heads[(j * T + t) * hd + e];
    return v;
  };
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
      op: libraryOpOf(members),
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
export function computeGroup(
  c: Check,
  x: FamilyWhyInput,
  recorded: (slot: string) => Float32Array | null,
  cand: Candidate | null,
  exact: Map<string, Float64Array> = new Map(),
): Float64Array {
  return computeSteps(
    c.steps,
    {
      cfg: x.cfg,
      tokens: x.tokens,
      layer: x.layer,
      angles: 'exact',
      weights: x.weights.layers[x.layer] as unknown as Record<string, unknown>,
      recorded,
      unrecorded: (slot) => `layer ${x.layer}: ${c.id} reads '${slot}', which the path did not record`,
    },
    cand,
    exact,
  );
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
  // Each candidate on the rows where the error lives first, the finalists on every row (family-causes-rows.ts).
  const { tested, sampled } = scoreOnRowsNow(
    candidatesFor(b.c, cfg, i, { decodeFrom: x.decodeFrom, rows: T }),
    {
      T,
      steps: b.c.steps,
      recorded: b.recorded,
      exact: b.exact,
      compute: (cand, rows) => {
        if (!rows) return computeGroup(b.c, x, fusedRec, cand, b.kept);
        const sub = new Map([...b.kept].map(([k, v]) => [k, pickRows(v, T, rows)]));
        const rec = (s: string) => {
          const v = fusedRec(s);
          return v && pickRowsF32(v, T, rows);
        };
        return computeGroup(b.c, { ...x, tokens: rows.map((t) => x.tokens[t]) }, rec, cand, sub);
      },
      residual: (out) => {
        const m = fullMetrics(b.recorded, out, precision);
        return nonFiniteIn(m) > 0
          ? Number.POSITIVE_INFINITY
          : ratioOf(m, b.floor, metric, precision, b.scale);
      },
      ratio: one.ratio,
      k,
    },
  );
  const cause = { ...verdictOf(tested, one.ratio, k, performance.now() - t0), sampled };
  const data: OpData = {
    op: anatomyOpOf(born.c.steps, born.c.op),
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

/**
 * A slot laid out per head [heads, T, hd] (its step's width `*_heads`: the rotated q and k) as rows [T, heads·hd] (the
 * anatomy reads rows); other slots are rows already.
 */
function rowsOf(v: Float32Array, c: Check, cfg: LlamaConfig, T: number): Float32Array {
  if (!c.steps[c.steps.length - 1].width.endsWith('_heads')) return v;
  const hd = cfg.headDim;
  const heads = v.length / (T * hd);
  const out = new Float32Array(v.length);
  for (let h = 0; h < heads; h++)
    for (let t = 0; t < T; t++)
      for (let e = 0; e < hd; e++) out[t * heads * hd + h * hd + e] = v[(h * T + t) * hd + e];
  return out;
}
