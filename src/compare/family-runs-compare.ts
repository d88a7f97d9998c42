// The comparisons of a Llama-family runs analysis (family-runs.ts), every run's checks re-run (family-runs-stream.ts):
// each check's error against its exact re-run, its floor (the reference path's same check), their ratio, the first
// row past k × the floor; per layer the curves (each run and the fp32 reference path against the exact forward, B
// against A).
import type { Precision } from '../numeric/precision';
import type { Metric } from '../run/runspec';
import type { FedAnalysis } from './family-runs-stream';
import { effectiveFloor, nonFiniteIn, ratioOf } from './floor';
import { type FullMetrics, fullMetrics, perTokenRelL2 } from './metrics';
import { rowsPast } from './run-rows';
import type { RunCheckResult, RunCurve } from './runs-report';

const maxAbsOf = (v: ArrayLike<number>) => {
  let m = 0;
  for (let i = 0; i < v.length; i++) {
    const x = Math.abs(v[i]);
    if (x > m) m = x;
  }
  return m;
};

/** Every check's result and the curves, on T rows, with k and the metric. */
export function compareFed(
  fedAll: FedAnalysis,
  T: number,
  k: number,
  metric: Metric,
): { checks: RunCheckResult[]; curves: RunCurve[] } {
  const { runs, refs, exactTaps, ctx } = fedAll;
  const cfg = ctx.cfg;
  const checkExact = runs.map((_, j) => ({ own: fedAll.own[j], floor: fedAll.floor[j] }));
  const checks: RunCheckResult[] = runs.flatMap((r, j) =>
    r.checks.map((c, i) => {
      const P = r.precision;
      const recorded = r.slot(c.output)!;
      const refOut = refs.get(P)!.get(c.output)!;
      const exact = checkExact[j].own[i];
      const floorExact = checkExact[j].floor[i];
      const error = fullMetrics(recorded, exact, P);
      const floor = fullMetrics(refOut, floorExact, P);
      const scale = maxAbsOf(recorded);
      const ratio = ratioOf(error, floor, metric, P, scale);
      const nonFinite = nonFiniteIn(error);
      const width = recorded.length / T;
      const past = rowsPast(
        perTokenRelL2(recorded, exact, T, width),
        perTokenRelL2(refOut, floorExact, T, width),
        floor.relL2,
        P,
        k,
      );
      return {
        run: r.id,
        id: c.id,
        op: c.op,
        layer: c.layer,
        module: c.module,
        what: c.what,
        inputs: c.inputs.map(r.name),
        output: r.name(c.output),
        error,
        floor,
        floorValue: effectiveFloor(floor, metric, P, scale),
        ratio,
        nonFinite,
        born: ratio > k || nonFinite > 0,
        firstRow: past?.first ?? null,
        pastTo: past?.to ?? null,
      };
    }),
  );
  const ref32 = refs.get('fp32')!;
  const layerSlots = [
    'embed',
    ...Array.from({ length: cfg.numLayers }, (_, i) => `layers.${i}.out`),
    'final_norm',
    'logits',
  ];
  const lowest = runs.reduce<Precision>((p, r) => (r.precision === 'fp32' ? p : r.precision), 'fp32');
  const curves: RunCurve[] = layerSlots.flatMap((slot) => {
    const exact = exactTaps.get(slot);
    const ref = ref32.get(slot);
    if (!exact || !ref) return [];
    const floor = fullMetrics(ref, exact, 'fp32');
    const scale = maxAbsOf(ref);
    const point = (m: FullMetrics, P: Precision) => {
      const ratio = ratioOf(m, floor, metric, P, scale);
      return { metrics: m, ratio, diverged: ratio > k || nonFiniteIn(m) > 0 };
    };
    const got = runs.map((r) => r.slot(slot));
    const [ga, gb] = got;
    return [
      {
        slot,
        floor,
        floorValue: effectiveFloor(floor, metric, 'fp32', scale),
        runs: Object.fromEntries(
          runs.map((r, j) => {
            const g = got[j];
            return [r.id, g ? point(fullMetrics(g, exact, r.precision), r.precision) : null];
          }),
        ),
        bVsA: runs.length === 2 && ga && gb ? point(fullMetrics(gb, ga, lowest), lowest) : null,
      },
    ];
  });
  return { checks, curves };
}
