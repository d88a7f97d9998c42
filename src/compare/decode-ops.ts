// The op, not the layer, in the decode (issue 37 item 3). A fused path's recorded decode has no tap between the ops a
// fused kernel joins (the QKV projection and rotary, the MLP up-projection and its GELU, the down-projection and the
// residual add), so the runs analysis can check its layer only whole. Here the layer where the decode check finds the
// error is checked op by op as the two-path "why" checks the prompt (why-paths.ts layerChecks): each op re-run exactly
// (fp64) from the path's own recorded inputs, fused groups whole, on the decode steps' rows only (the attention still
// reads every position's keys and values), against the reference path's decode measured the same way (the floor).
// At the op where the error is born, the why (why.ts, as the runs analysis asks it): the anatomy of its error and
// the cause search on its recorded inputs and outputs, with the prompt's length as the prefill (causes scored on the
// rows from the first decode step on, the variant there and the exact op elsewhere); a fused group's causes are
// those of its op kind (attn_block: the attention's, rotary and KV cache included; mlp_up: the linear's and the
// activation's; mlp_residual: the linear's and the residual's).
import type { RecordedDecode } from '../engine/decode-record';
import type { Engine } from '../engine/engine';
import type { ProductsKit } from '../engine/oracle-products';
import { inputSlot } from '../model/run-names';
import type { Precision } from '../numeric/precision';
import { neoxSlotOfTap } from '../ops/families';
import type { Metric } from '../run/runspec';
import type { Anatomy } from './causes/anatomy';
import { gather } from './causes/arrays';
import { core } from './causes/exact-op';
import { FINAL, scoredColumns } from './causes/explain';
import type { CauseVerdict, OpData } from './causes/types';
import { nonFiniteIn, ratioOf } from './floor';
import { fullMetrics } from './metrics';
import { neighbours, opWeights, whyAt } from './why';
import { layerChecks } from './why-paths';

/** One op of the layer checked on the decode steps' rows. */
export interface DecodeOpCheck {
  id: string;
  op: string;
  what: string;
  /** The path's error on the decode rows over the reference path's (its floor), in the spec's metric. */
  ratio: number;
  nonFinite: number;
}

export interface DecodeOps {
  layer: number;
  checks: DecodeOpCheck[];
  /** The first op past k × its floor (or with NaN/Inf), or null: the layer's error comes from how its ops combine. */
  born: DecodeOpCheck | null;
  /** At the born op: the cause that explains its error on the decode rows, or that none does (null: no op is
   * born, or it writes NaN/Inf — a finding of its own, no variant's). */
  cause: CauseVerdict | null;
  anatomy: Anatomy | null;
  /** Wall time of the why at the born op (its weights, anatomy and cause search), ms; 0 where it did not run. */
  whyMs: number;
}

/** A recorded decode's tensors of layer `i` (and the layer's input) under the run-check slot names, on the CPU. */
async function layerSlots(rec: RecordedDecode, i: number): Promise<Map<string, Float32Array>> {
  const input = i === 0 ? 'embed' : `layers.${i - 1}.out`;
  const names = [...rec.taps.keys()].filter((n) => n.startsWith(`layers.${i}.`) || n === input);
  return namedSlots(rec, names, i, input);
}

/** The recorded tensors `names` under the run-check slot names (`input`: layer i's input). */
async function namedSlots(
  rec: RecordedDecode,
  names: string[],
  i: number,
  input: string,
): Promise<Map<string, Float32Array>> {
  const got = await rec.read(0, names);
  const out = new Map<string, Float32Array>();
  for (const [name, data] of got) {
    if (name === input) out.set(inputSlot(i), data);
    else out.set(neoxSlotOfTap(name), data);
  }
  return out;
}

/** Rows from..T−1 of a [T, width] array. */
const rowsFrom = (a: ArrayLike<number>, T: number, from: number) => {
  const width = a.length / T;
  return Float64Array.from({ length: (T - from) * width }, (_, j) => a[from * width + j]);
};

/**
 * Layer `layer` of a path's recorded decode (`path`, over `tokens`) checked op by op on rows from..T−1 against the
 * reference path's recorded decode (`floorPath`, over `floorTokens`), fused groups whole where the path has no tap.
 */
export async function decodeOpsOf(
  engine: Engine,
  path: RecordedDecode,
  tokens: number[],
  floorPath: RecordedDecode,
  floorTokens: number[],
  layer: number,
  from: number,
  o: {
    metric: Metric;
    k: number;
    precision: Precision;
    /** The GPU oracle's products, where the analysis runs its oracle there: the born op's variants multiplied on
     * it (why-gpu.ts); else in fp64 on the CPU. */
    products?: ProductsKit | null;
  },
): Promise<DecodeOps> {
  const cfg = engine.modelInfo!.config;
  const T = tokens.length;
  const mine = await layerSlots(path, layer);
  const ref = await layerSlots(floorPath, layer);
  const checks = layerChecks(cfg, layer, (slot) => mine.has(slot) && ref.has(slot));
  const out: DecodeOpCheck[] = [];
  let born: DecodeOpCheck | null = null;
  let bornData: {
    d: OpData;
    floor: ReturnType<typeof fullMetrics>;
    inputs: string[];
    output: string;
  } | null = null;
  for (const pc of checks) {
    const weights = await opWeights(engine, pc.op, layer);
    const data = (slots: Map<string, Float32Array>, toks: number[]): OpData => {
      const recorded = slots.get(pc.output)!;
      return {
        op: pc.op,
        layer,
        cfg,
        tokens: toks,
        inputs: pc.inputs.map((s) => slots.get(s)!),
        inputSlots: pc.inputs,
        recorded,
        exact: new Float64Array(0),
        weights,
        angles: 'exact',
        others: [],
        floor: fullMetrics([0], [1], 'fp32'),
        metric: o.metric,
        k: o.k,
        precision: o.precision,
        scale: recorded.reduce((m, x) => Math.max(m, Math.abs(x)), 0),
        prefill: from,
      };
    };
    const f = data(mine, tokens);
    const r = data(ref, floorTokens);
    const width = f.recorded.length / T;
    // Each op on the same sample of its output columns on both paths (a large op's where the paths differ most and
    // an even spread), every row computed (attention reads all positions), the decode rows compared.
    const cols = scoredColumns({ ...f, exact: Float64Array.from(r.recorded) }, FINAL);
    const errOf = (d: OpData) =>
      fullMetrics(
        rowsFrom(gather(d.recorded, T, width, cols), T, from),
        rowsFrom(core(d, {}, cols), T, from),
        o.precision,
      );
    const err = errOf(f);
    const floor = errOf(r);
    const scale = rowsFrom(gather(f.recorded, T, width, cols), T, from).reduce(
      (m, x) => Math.max(m, Math.abs(x)),
      0,
    );
    const check: DecodeOpCheck = {
      id: pc.id,
      op: pc.op,
      what: pc.what,
      ratio: ratioOf(err, floor, o.metric, o.precision, scale),
      nonFinite: nonFiniteIn(err),
    };
    out.push(check);
    if (!born && (check.ratio > o.k || check.nonFinite > 0)) {
      born = check;
      bornData = { d: f, floor, inputs: pc.inputs, output: pc.output };
    }
  }
  if (!born || !bornData || born.nonFinite > 0)
    return { layer, checks: out, born, cause: null, anatomy: null, whyMs: 0 };
  const { d, floor, inputs, output } = bornData;
  // What a wrong-tensor cause may have read: this layer's and the one before's tensors, every layer's QKV
  // projection (another layer's KV cache), as the runs analysis offers them.
  const near = [...path.taps.keys()].filter((n) => {
    const m = /^layers\.(\d+)\./.exec(n);
    return (
      n === 'embed' || /^layers\.\d+\.qkv$/.test(n) || (m !== null && Math.abs(Number(m[1]) - layer) <= 1)
    );
  });
  const t0 = performance.now();
  const others = await namedSlots(path, near, layer, layer === 0 ? 'embed' : `layers.${layer - 1}.out`);
  const why = await whyAt({
    engine,
    op: d.op,
    layer,
    tokens,
    inputs: d.inputs,
    inputSlots: inputs,
    recorded: d.recorded,
    // (the born op's exact output over every row: the anatomy and the cause search read every element)
    exact: core(d, {}, null),
    others: neighbours(
      [...others].map(
        ([slot, data]) => [slot, { name: slot, data }] as [string, { name: string; data: Float32Array }],
      ),
      layer,
      [...inputs, output],
    ),
    floor,
    metric: o.metric,
    k: o.k,
    precision: o.precision,
    scale: d.scale,
    angles: 'exact',
    products: o.products ?? null,
    prefill: from,
  });
  return { layer, checks: out, born, cause: why.cause, anatomy: why.anatomy, whyMs: performance.now() - t0 };
}
