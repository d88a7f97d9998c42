// (e) GPU time of the reference and the fused path from timestamp queries: per layer (grouped bars) and
// per fused kernel (one group each: the kernel's time beside the time of the reference ops it replaced,
// summed over layers; then the ops both paths share), with totals and the speedup. "Timing unavailable"
// when the adapter has no timestamp queries; a note on the timestamps' resolution when they come in steps
// (ops re-timed by repetition, and how to lift the steps in Chrome).
import { axisBottom, axisLeft, scaleBand, scaleLinear } from 'd3';
import { useMemo } from 'react';
import type { Report } from '../../compare/analyze';
import type { FusedKernelId } from '../../state/kernel-catalog';
import type { TimingSummary } from '../../worker/api';
import { formatNs, nsTickFormat } from '../format';
import { ChartCard, centerOf, localPoint } from './ChartCard';
import { timeGroups } from './kernels';
import { plotIn, useChart } from './useChart';

type FileBase = (what: string, ext: string) => string;

const PATHS = ['reference', 'fused'] as const;

interface KindRow {
  key: string;
  /** 'head' rows name a group (no bar). */
  type: 'head' | 'bar';
  path: (typeof PATHS)[number];
  label: string;
  ns: number;
  kernel: string;
}

function PerLayer({
  reference,
  fused,
  fileBase,
}: {
  reference: TimingSummary;
  fused: TimingSummary;
  fileBase: FileBase;
}) {
  const height = 260;
  const { bodyRef, svgRef, tipRef } = useChart(
    height,
    ({ svg, width, tip, body }) => {
      const margin = { top: 28, right: 16, bottom: 40, left: 72 };
      const { plot, iw, ih } = plotIn(svg, width, height, margin);
      const layers = reference.perLayer.map((_, i) => i);
      const x0 = scaleBand<number>().domain(layers).range([0, iw]).padding(0.2);
      const x1 = scaleBand<string>()
        .domain([...PATHS])
        .range([0, x0.bandwidth()])
        .padding(0.08);
      const max = Math.max(1, ...reference.perLayer, ...fused.perLayer);
      const y = scaleLinear().domain([0, max]).nice().range([ih, 0]);
      const tick = nsTickFormat(y.domain()[1]);
      plot
        .append('g')
        .attr('class', 'axis')
        .attr('transform', `translate(0, ${ih})`)
        .call(axisBottom(x0).tickFormat((d) => `layer ${d}`));
      plot
        .append('g')
        .attr('class', 'axis')
        .call(
          axisLeft(y)
            .ticks(5)
            .tickFormat((d) => tick(Number(d))),
        );
      const data = layers.flatMap((l) =>
        PATHS.map((p) => ({ layer: l, path: p, ns: (p === 'reference' ? reference : fused).perLayer[l] })),
      );
      plot
        .append('g')
        .selectAll('rect')
        .data(data)
        .join('rect')
        .attr('class', (d) => `bar ${d.path === 'reference' ? 'ref' : 'fused'}`)
        .attr('x', (d) => (x0(d.layer) ?? 0) + (x1(d.path) ?? 0))
        .attr('width', x1.bandwidth())
        .attr('y', (d) => y(d.ns))
        .attr('height', (d) => ih - y(d.ns))
        .attr('tabindex', 0)
        .attr('role', 'img')
        .attr('aria-label', (d) => `layer ${d.layer}, ${d.path}: ${formatNs(d.ns)}`)
        .on('mouseenter mousemove', (ev: MouseEvent, d) => {
          const [px, py] = localPoint(ev, body);
          tip.show([`Layer ${d.layer}, ${d.path} path`, formatNs(d.ns)], px, py);
        })
        .on('focus', (ev: FocusEvent, d) => {
          const [px, py] = centerOf(ev.target as Element, body);
          tip.show([`Layer ${d.layer}, ${d.path} path`, formatNs(d.ns)], px, py);
        })
        .on('mouseleave blur', () => tip.hide());
      const legend = svg.append('g').attr('class', 'legend').attr('transform', 'translate(8, 6)');
      PATHS.forEach((p, i) => {
        const g = legend.append('g').attr('transform', `translate(${i * 120}, 0)`);
        g.append('rect')
          .attr('class', `bar ${p === 'reference' ? 'ref' : 'fused'}`)
          .attr('width', 14)
          .attr('height', 12)
          .attr('y', 2);
        g.append('text').attr('x', 20).attr('y', 12).text(`${p} path`);
      });
    },
    [reference, fused],
  );
  return (
    <ChartCard
      title="GPU time per layer"
      name="timing-layers"
      fileBase={fileBase}
      refs={{ svgRef, bodyRef, tipRef }}
      description="GPU time per layer, reference and fused path, grouped bars."
    />
  );
}

function PerKind({
  reference,
  fused,
  fusedOn,
  fileBase,
}: {
  reference: TimingSummary;
  fused: TimingSummary;
  fusedOn: readonly FusedKernelId[];
  fileBase: FileBase;
}) {
  const rows = useMemo((): KindRow[] => {
    const out: KindRow[] = [];
    for (const g of timeGroups(reference.perKind, fused.perKind, fusedOn)) {
      const id = g.kernel?.id ?? 'shared';
      const n = g.replaced.length;
      out.push({
        key: `${id}:head`,
        type: 'head',
        path: 'fused',
        kernel: id,
        ns: 0,
        label: g.kernel
          ? `${g.kernel.title}: ${formatNs(g.fusedNs)} fused vs ${formatNs(g.referenceNs)} for the ${n} reference op${n === 1 ? '' : 's'} it replaced`
          : 'Ops both paths run the same way',
      });
      out.push({
        key: `${id}:fused`,
        type: 'bar',
        path: 'fused',
        kernel: id,
        ns: g.fusedNs,
        label: g.kernel ? `fused · ${g.kernel.id}` : 'fused · same ops',
      });
      for (const r of g.replaced)
        out.push({
          key: `${id}:${r.op}`,
          type: 'bar',
          path: 'reference',
          kernel: id,
          ns: r.ns,
          label: `ref · ${r.op}`,
        });
    }
    return out;
  }, [reference, fused, fusedOn]);
  const ROW = 20;
  const height = 24 + rows.length * ROW + 28;
  const { bodyRef, svgRef, tipRef } = useChart(
    height,
    ({ svg, width, tip, body }) => {
      const margin = { top: 24, right: 90, bottom: 28, left: 200 };
      const iw = Math.max(40, width - margin.left - margin.right);
      const plot = svg.append('g').attr('transform', `translate(${margin.left}, ${margin.top})`);
      const y = scaleBand<string>()
        .domain(rows.map((r) => r.key))
        .range([0, rows.length * ROW])
        .padding(0.15);
      const bars = rows.filter((r) => r.type === 'bar');
      const x = scaleLinear()
        .domain([0, Math.max(1, ...bars.map((r) => r.ns))])
        .nice()
        .range([0, iw]);
      plot
        .append('g')
        .attr('class', 'axis')
        .attr('transform', `translate(0, ${rows.length * ROW})`)
        .call(
          axisBottom(x)
            .ticks(Math.max(2, Math.floor(iw / 90)))
            .tickFormat((d) => nsTickFormat(x.domain()[1])(Number(d))),
        );
      plot
        .append('g')
        .selectAll('text')
        .data(rows.filter((r) => r.type === 'head'))
        .join('text')
        .attr('class', 'group-label')
        .attr('data-testid', 'timing-group')
        .attr('data-kernel', (r) => r.kernel)
        .attr('x', -margin.left + 8)
        .attr('y', (r) => (y(r.key) ?? 0) + y.bandwidth() / 2)
        .attr('dy', '0.35em')
        .text((r) => r.label);
      const g = plot
        .append('g')
        .selectAll('g')
        .data(bars)
        .join('g')
        .attr('data-testid', 'timing-row')
        .attr('data-kernel', (r) => r.kernel)
        .attr('data-path', (r) => r.path)
        .attr('transform', (r) => `translate(0, ${y(r.key) ?? 0})`);
      g.append('text')
        .attr('class', 'row-label')
        .attr('x', -8)
        .attr('y', y.bandwidth() / 2)
        .attr('dy', '0.35em')
        .attr('text-anchor', 'end')
        .text((r) => r.label);
      g.append('rect')
        .attr('class', (r) => `bar ${r.path === 'reference' ? 'ref' : 'fused'}`)
        .attr('height', y.bandwidth())
        .attr('width', (r) => Math.max(1, x(r.ns)))
        .on('mouseenter mousemove', (ev: MouseEvent, r) => {
          const [px, py] = localPoint(ev, body);
          tip.show([`${r.label} (${r.path} path)`, `${formatNs(r.ns)} summed over layers`], px, py);
        })
        .on('mouseleave', () => tip.hide());
      g.append('text')
        .attr('class', 'row-value')
        .attr('x', (r) => Math.max(1, x(r.ns)) + 6)
        .attr('y', y.bandwidth() / 2)
        .attr('dy', '0.35em')
        .text((r) => formatNs(r.ns));
    },
    [rows],
  );
  return (
    <ChartCard
      title="GPU time per fused kernel"
      name="timing-ops"
      fileBase={fileBase}
      refs={{ svgRef, bodyRef, tipRef }}
      description="GPU time of each fused kernel beside the reference ops it replaced, summed over layers."
      note="One group per fused kernel: its time (fused path) above the time of the reference ops it replaced."
    />
  );
}

/** Microseconds or nanoseconds of one timestamp step, for the note. */
function stepText(ns: number): string {
  return ns >= 1e3 ? `${(ns / 1e3).toPrecision(3)} µs` : `${Math.round(ns)} ns`;
}

/** Steps at or below this are a GPU's own timestamp resolution, not a browser's or Dawn's quantization. */
const FULL_RESOLUTION_NS = 1000;

/**
 * What the timestamps could resolve: the adapter's step, how many ops were timed by repetition, whether some
 * times are still only step counts, and how to get full resolution in Chrome. Nothing for reports made before
 * the step was recorded.
 */
export function TimingResolution({ reference, fused }: { reference: TimingSummary; fused: TimingSummary }) {
  if (reference.quantumNs === undefined && fused.quantumNs === undefined) return null;
  const steps = [reference.quantumNs, fused.quantumNs].filter((q): q is number => typeof q === 'number');
  const step = steps.length ? Math.max(...steps) : null;
  const repeated = (reference.repeatedOps ?? 0) + (fused.repeatedOps ?? 0);
  const quantized = !!(reference.quantized || fused.quantized);
  if (step !== null && step <= FULL_RESOLUTION_NS && !quantized) {
    return (
      <p className="muted small" data-testid="timing-resolution">
        Timestamps at full resolution on this adapter (steps of {stepText(step)}).
      </p>
    );
  }
  return (
    <p className="muted small" data-testid="timing-quantized">
      {step === null
        ? 'The step of this adapter’s timestamps could not be told. '
        : `GPU timestamps on this adapter come in steps of ${stepText(step)}, so an op shorter than a few steps reads 0 or one step. `}
      {repeated > 0 &&
        `${repeated} op${repeated === 1 ? ' was' : 's were'} timed by repetition instead (the same dispatch run many times in one pass, the total divided). `}
      {quantized &&
        'Some times are still within a few steps even so: read them as step counts, not measurements. '}
      In Chrome, turn on <code>chrome://flags/#enable-webgpu-developer-features</code> (“WebGPU Developer
      Features”) and reload for full-resolution timestamps.
    </p>
  );
}

export function TimingPanel({ report, fileBase }: { report: Report; fileBase: FileBase }) {
  const { reference, fused, speedup } = report.timing;
  if ((!reference || !fused) && report.model.family === 'llama')
    return (
      <p className="muted" data-testid="timing-unavailable">
        Per-op GPU times are not yet measured for the Llama family.
      </p>
    );
  if (!reference || !fused) {
    return (
      <p className="muted" data-testid="timing-unavailable">
        Timing unavailable: this GPU adapter does not offer timestamp queries (the{' '}
        <code>timestamp-query</code> feature), so per-op GPU times cannot be measured here.
      </p>
    );
  }
  return (
    <>
      <dl className="facts timing-facts" data-testid="timing-summary">
        <dt>Reference path</dt>
        <dd>{formatNs(reference.totalNs)}</dd>
        <dt>Fused path</dt>
        <dd>{formatNs(fused.totalNs)}</dd>
        <dt>Speedup</dt>
        <dd data-testid="speedup">
          {speedup === null
            ? '—'
            : `${speedup.toFixed(2)}× ${speedup >= 1 ? 'faster' : '(the fused path is slower)'}`}
        </dd>
      </dl>
      <p className="muted small">
        GPU time of one forward pass from timestamp queries, one compute pass per op. On a software adapter
        (SwiftShader) these numbers say nothing about a real GPU.
      </p>
      <TimingResolution reference={reference} fused={fused} />
      <PerLayer reference={reference} fused={fused} fileBase={fileBase} />
      <PerKind reference={reference} fused={fused} fusedOn={report.spec.fused} fileBase={fileBase} />
    </>
  );
}
