// The two-path report's "why": in the first layer whose error is born, which op of the fused path it is born at and
// what would explain it. Each op of the fused path's layer (its taps from the main phases) is re-run exactly (fp64,
// causes/exact-op.ts) from the fused path's own recorded inputs and compared against its floor — the reference
// kernel's op measured the same way — and at
// the first op past k × floor the anatomy and the cause search run. Where the fused path writes no tap between two
// ops, the fused group is checked whole. An op whose bits change from run to run is a race, said as such.
import type { GpuTap } from '../engine/batch';
import { recordReadbackPacked } from '../gpu/readback';
import { inputSlot } from '../model/run-names';
import type { NeoXConfig } from '../numeric/types';
import { neoxSlotOfTap } from '../ops/families';
import { type AnalysisContext, dumpName, type EngineRuns } from './analysis-phases';
import { gather } from './causes/arrays';
import { core } from './causes/exact-op';
import { FINAL, scoredColumns } from './causes/explain';
import type { OpData, OpKind } from './causes/types';
import { nonFiniteIn, ratioOf } from './floor';
import { fullMetrics } from './metrics';
import type { DeterminismResult, PathWhy, Report } from './report';
import { runChecks } from './run-checks';
import { neighbours, opWeights, whyAt } from './why';
import { exactProducts, holdExact, holdsProduct } from './why-gpu';
import { causeClause } from './why-runs';

export interface PathCheck {
  id: string;
  op: OpKind;
  what: string;
  inputs: string[];
  output: string;
}

/** The layer's checks for a path that records the slots `has` says, fused groups whole where a tap is missing. */
export function layerChecks(cfg: NeoXConfig, layer: number, has: (slot: string) => boolean): PathCheck[] {
  const p = `layers.${layer}`;
  const s = (n: string) => `${p}.${n}`;
  const x = inputSlot(layer);
  const single = runChecks(cfg, has)
    .checks.filter((c) => c.layer === layer && c.op !== 'layer')
    .map((c) => ({ id: c.id, op: c.op as OpKind, what: c.what, inputs: c.inputs, output: c.output }));
  const all = (...slots: string[]) => slots.every(has);
  const groups: (PathCheck & { at: string })[] = [];
  if (!has(s('qkv')) && all(s('ln1'), s('ctx')))
    groups.push({
      at: 'dense',
      id: s('attn_block'),
      op: 'attn_block',
      what: 'the QKV projection and the attention core (fused)',
      inputs: [s('ln1')],
      output: s('ctx'),
    });
  if (!has(s('fc1')) && all(s('ln2'), s('gelu')))
    groups.push({
      at: 'fc2',
      id: s('mlp_up'),
      op: 'mlp_up',
      what: 'mlp.dense_h_to_4h and its GELU (fused)',
      inputs: [s('ln2')],
      output: s('gelu'),
    });
  const terms = cfg.useParallelResidual ? [s('gelu'), s('attn_out'), x] : [s('gelu'), s('ln2_in')];
  if (!has(s('mlp_out')) && all(...terms, s('out')))
    groups.push({
      at: 'end',
      id: s('mlp_residual'),
      op: 'mlp_residual',
      what: 'mlp.dense_4h_to_h and the residual add (fused)',
      inputs: terms,
      output: s('out'),
    });
  // Each group goes before the first single check that follows it in the forward.
  const out: PathCheck[] = [];
  for (const c of single) {
    for (const g of groups) if (c.id === s(g.at)) out.push(g);
    out.push(c);
  }
  for (const g of groups) if (g.at === 'end' || !single.some((c) => c.id === s(g.at))) out.push(g);
  return out;
}

/** max |x| (NaN where any element is NaN, as Math.max gives): a loop, which V8 runs several times faster than reduce. */
function largestMagnitude(a: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]));
  return m;
}

/** A path's taps of layer `i` and the layer's input, under the run-check slot names (to be read back). */
function slotsOf(taps: Map<string, GpuTap>, i: number): [string, string, GpuTap][] {
  const wanted: [string, string, GpuTap][] = [];
  for (const [name, tap] of taps)
    if (name.startsWith(`layers.${i}.`)) wanted.push([neoxSlotOfTap(name), name, tap]);
  const input = dumpName(i - 1);
  const tap = taps.get(input);
  if (tap) wanted.push([inputSlot(i), input, tap]);
  return wanted;
}

/** The taps read back: the whole ones in one copy and one map (a GPU round trip each would cost more than the
 * bytes), a tap split in column pieces by the batch. */
async function readTaps(
  device: GPUDevice,
  read: (t: GpuTap) => Promise<Float32Array>,
  lists: [string, string, GpuTap][][],
): Promise<Map<string, { name: string; data: Float32Array }>[]> {
  const whole = lists.flat().filter(([, , t]) => !t.parts);
  const encoder = device.createCommandEncoder({ label: 'why-taps' });
  const finish = recordReadbackPacked(
    device,
    encoder,
    whole.map(([, , t]) => ({ src: t.buffer, bytes: t.floats * 4 })),
  );
  device.queue.submit([encoder.finish()]);
  const got = new Map<GpuTap, Float32Array>();
  const [packed] = await Promise.all([
    finish(),
    ...lists.flat().map(async ([, , t]) => {
      if (t.parts) got.set(t, await read(t));
    }),
  ]);
  whole.forEach(([, , t], j) => {
    got.set(t, packed[j]);
  });
  return lists.map((l) => new Map(l.map(([slot, name, t]) => [slot, { name, data: got.get(t)! }])));
}

/** The "why" of the first born layer (null when no layer is born or the taps were skipped). */
export async function whyOfPaths(
  c: AnalysisContext,
  runs: EngineRuns,
  report: Report,
  determinism: DeterminismResult,
  oracle: { kind: 'gpu' | 'cpu'; dfFma: boolean },
): Promise<PathWhy | null> {
  const i = report.firstBornLayer;
  if (i === null || c.taps !== 'all') return null;
  const { engine, spec, tokens } = c;
  const cfg = engine.modelInfo!.config;
  const T = tokens.length;
  const t0 = performance.now();
  const read = (t: GpuTap) => runs.batch.read(t, T);
  const lists = [
    slotsOf(runs.fused.taps, i),
    slotsOf(runs.ref.taps, i),
    i > 0 ? slotsOf(runs.fused.taps, i - 1) : [],
  ];
  const tapOf = lists.slice(0, 2).map((l) => new Map(l.map(([slot, , t]) => [slot, t])));
  const checks = layerChecks(cfg, i, (slot) => tapOf[0].has(slot) && tapOf[1].has(slot));
  const kit =
    oracle.kind === 'gpu'
      ? { ...engine.gpuParts(), dfFma: oracle.dfFma, maxBindingBytes: engine.maxBindingBytes }
      : null;
  // The taps' copy is submitted first; where the oracle runs on the GPU, every op's product (a linear op's, a fused
  // group's) on each path's own input is multiplied there right after it, whole, in one submit, from the taps where
  // they lie: the GPU multiplies while the CPU takes the taps up, and the exact ops below cost the CPU only what
  // follows a product.
  const reading = readTaps(engine.gpuParts().device, read, lists);
  const exacts = kit
    ? exactProducts(
        kit,
        kit.model,
        T,
        checks.flatMap((pc) =>
          tapOf.map((m) => {
            const t = m.get(pc.inputs[0]);
            return { op: pc.op, layer: i, x: t && !t.parts ? { gpu: t.buffer, n: t.floats } : null };
          }),
        ),
      )
    : null;
  exacts?.catch(() => undefined); // (awaited below, after the taps)
  const [fused, ref, before] = await reading;
  // Each op's weights read once for both paths (from the GPU when the engine holds no CPU copy); an op whose product
  // the GPU oracle multiplies from the model's own weights needs none here (read below if it is not held).
  const weightsOf = new Map<OpKind, ReturnType<typeof opWeights>>();
  const weightsFor = (op: OpKind) => {
    if (!weightsOf.has(op)) weightsOf.set(op, opWeights(engine, op, i));
    return weightsOf.get(op)!;
  };
  const opData = async (pc: PathCheck, slots: typeof fused): Promise<OpData> => {
    const recorded = slots.get(pc.output)!.data;
    const d: OpData = {
      op: pc.op,
      layer: i,
      cfg,
      tokens,
      inputs: pc.inputs.map((s) => slots.get(s)!.data),
      inputSlots: pc.inputs,
      recorded,
      exact: new Float64Array(recorded.length),
      weights: kit && holdsProduct(kit.model, pc.op, i) ? {} : await weightsFor(pc.op),
      angles: 'exact',
      others: [],
      floor: fullMetrics([0], [1], 'fp32'),
      metric: spec.metric,
      k: spec.k,
      precision: spec.precision,
      scale: largestMagnitude(recorded),
    };
    return d;
  };
  const paths: { pc: PathCheck; f: OpData; r: OpData }[] = [];
  for (const pc of checks) paths.push({ pc, f: await opData(pc, fused), r: await opData(pc, ref) });
  const t1 = performance.now();
  const exactOf = new Map<OpData, Float64Array>();
  if (exacts) {
    const got = await exacts;
    const all = paths.flatMap((p) => [p.f, p.r]);
    for (const [j, d] of all.entries()) {
      const e = got[j];
      if (e && e.product.length === T * e.n) {
        holdExact(d, e);
        if (e.exact) exactOf.set(d, e.exact);
      } else if (Object.keys(d.weights).length === 0) d.weights = await weightsFor(d.op);
    }
  }
  const t2 = performance.now();
  const measured = [];
  let born: { pc: PathCheck; d: OpData } | null = null;
  for (const { pc, f, r } of paths) {
    // Each op checked on the same sample of its output columns on both paths (the whole output of a small op; a
    // large one's columns where the paths differ most and an even spread, every row), exactly in fp64 from each
    // path's own inputs.
    const width = f.recorded.length / T;
    // (the columns ranked by where the two paths' outputs differ most)
    const cols = scoredColumns({ ...f, exact: Float64Array.from(r.recorded) }, FINAL);
    // (the exact output on those columns: the GPU oracle's where it computed it whole, else from the held product)
    const exactAt = (d: OpData) => {
      const held = exactOf.get(d);
      return held ? gather(held, T, width, cols) : core(d, {}, cols);
    };
    const floor = fullMetrics(gather(r.recorded, T, width, cols), exactAt(r), spec.precision);
    const err = fullMetrics(gather(f.recorded, T, width, cols), exactAt(f), spec.precision);
    const ratio = ratioOf(err, floor, spec.metric, spec.precision, f.scale);
    const nonFinite = nonFiniteIn(err);
    measured.push({ id: pc.id, op: pc.op, what: pc.what, ratio, nonFinite });
    if (!born && (ratio > spec.k || nonFinite > 0)) {
      // The born op's exact output in full: its anatomy and the cause search read every element.
      f.exact = exactOf.get(f) ?? core(f, {}, null);
      born = { pc, d: { ...f, floor } };
    }
  }
  const t3 = performance.now();
  c.durations['why.read'] = t1 - t0;
  c.durations['why.exact'] = t2 - t1;
  c.durations['why.checks'] = t3 - t2;
  const raced = determinism.differences.filter((x) => x.tensor.startsWith(`layers.${i}.`));
  const race = raced.length
    ? { tensors: [...new Set(raced.map((x) => x.tensor))], elements: raced.reduce((s, x) => s + x.count, 0) }
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
      sentence: `Layer ${i}: no single op of the fused path is past ${spec.k}× its floor; the layer's error comes from how they combine${raceWords}.`,
    };
  const one = measured.find((m) => m.id === born!.pc.id)!;
  if (one.nonFinite > 0)
    return {
      layer: i,
      checks: measured,
      born: born.pc.id,
      cause: null,
      anatomy: null,
      race,
      sentence: `Layer ${i}: ${born.pc.what} (${born.pc.id}) writes ${one.nonFinite} NaN/Inf values${raceWords}.`,
    };
  const why = await whyAt({
    engine,
    op: born.pc.op,
    layer: i,
    tokens,
    inputs: born.d.inputs,
    inputSlots: born.d.inputSlots,
    recorded: born.d.recorded,
    exact: born.d.exact,
    // The previous layer's tensors too (from the whole fused run): a stale buffer holds one of them.
    others: neighbours(new Map([...before, ...fused]), i, [...born.pc.inputs, born.pc.output]),
    floor: born.d.floor,
    metric: spec.metric,
    k: spec.k,
    precision: spec.precision,
    scale: born.d.scale,
    angles: 'exact',
    // The born op's variants multiplied on the GPU oracle where the analysis runs it there.
    products: kit,
  });
  // (as the runs analysis names them: the born op's weights, anatomy and cause search, of which its products)
  c.durations['why.weights'] = why.ms.weights;
  c.durations['why.anatomy'] = why.ms.anatomy;
  c.durations['why.cause'] = why.ms.cause;
  c.durations['why.products'] = why.ms.products;
  c.durations['why.productsGpu'] = why.ms.productsGpu;
  const causeWords = race
    ? `a race (the op's bits change from run to run), not a fixed variant`
    : why.cause.words;
  return {
    layer: i,
    checks: measured,
    born: born.pc.id,
    cause: why.cause,
    anatomy: why.anatomy,
    race,
    sentence: `Layer ${i}: the error is born at ${born.pc.what} (${born.pc.id}), ${one.ratio.toPrecision(2)}× its floor on the fused path's own inputs; ${causeClause(causeWords)}.`,
  };
}
