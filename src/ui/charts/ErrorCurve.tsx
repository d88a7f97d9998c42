// (a) Per-layer error curves on a log axis: the fused path vs the reference (propagated), the fused layer
// alone on the reference's input (local), the noise floor (reference vs fp64) as a band, the divergence
// threshold (k × floor) and a marker at the first divergent layer. Points are keyboard-operable: Enter or
// Space opens that layer's drill-down.
import { area, axisBottom, axisLeft, line, scaleLog, scalePoint, select } from 'd3';
import { useEffect, useMemo, useRef } from 'react';
import type { Report } from '../../compare/analyze';
import type { Metric } from '../../run/runspec';
import { formatMetric, formatRatio, METRIC_LABELS } from '../format';
import { Term } from '../Glossary';
import { ChartCard, centerOf, localPoint } from './ChartCard';
import { curveLegend, drawBornMarks, drawDivergenceMarker, drawLegend, drawSharer } from './curve-marks';
import { pickKeys, rovingTabStop } from './keys';
import {
  axisTick,
  type CurveRow,
  clampToDomain,
  curveRows,
  decadeTicks,
  fromErrorValue,
  logDomain,
} from './scales';
import { gridLines, useChart } from './useChart';

export interface ErrorCurveProps {
  report: Report;
  metric: Metric;
  selectedLayer: number | null;
  onSelect: (layer: number) => void;
  fileBase: (what: string, ext: string) => string;
  controls?: React.ReactNode;
  /**
   * The sharer's per-layer ratios to the noise floor (from a permalink), drawn as a series of their own at
   * ratio × this run's floor — only in the metric the ratios are in (the report's).
   */
  sharer?: { ratios: readonly (number | null)[]; metric: Metric } | null;
  /** The chart's height in px (presenter mode makes it fill the screen). */
  height?: number;
}

const DEFAULT_HEIGHT = 340;
/** The chart's points (one per layer), in layer order. */
const POINTS = 'circle[data-testid="curve-point"]';

function valueText(v: number, metric: Metric): string {
  return formatMetric(fromErrorValue(v, metric), metric);
}

export function ErrorCurve({
  report,
  metric,
  selectedLayer,
  onSelect,
  fileBase,
  controls,
  sharer,
  height: HEIGHT = DEFAULT_HEIGHT,
}: ErrorCurveProps) {
  const rows = useMemo(() => curveRows(report, metric), [report, metric]);
  // The sharer's points, in errorValue units: their ratio × the floor this report divided by.
  const sharerRows = useMemo(() => {
    if (!sharer || sharer.metric !== metric || metric !== report.metric) return null;
    return rows.flatMap((r) => {
      const ratio = sharer.ratios[r.layer];
      return typeof ratio === 'number'
        ? [{ layer: r.layer, ratio, value: (r.threshold / report.k) * ratio }]
        : [];
    });
  }, [sharer, rows, metric, report]);
  const onSelectRef = useRef(onSelect);
  onSelectRef.current = onSelect;

  const { bodyRef, svgRef, tipRef, width } = useChart(
    HEIGHT,
    ({ svg, width, tip, body }) => {
      // Legend first: its height sets the plot's top margin.
      // Rows, offsets and margins follow the chart's text size (13 px, 17 px in Large type, 24 px presenting).
      const em = Number.parseFloat(getComputedStyle(svg.node() as Element).fontSize) || 13;
      const legendBottom = drawLegend(svg, curveLegend(report, sharerRows !== null), width, em);
      // Under the legend's last row: room for the "first divergent layer" label above the plot.
      const margin = {
        top: legendBottom + 9 + Math.round(em * 0.6) + 12 + Math.round(em * 1.2),
        right: 20,
        bottom: 20 + Math.round(em * 2.3),
        left: 48 + Math.round(em * 2.4),
      };
      const iw = Math.max(40, width - margin.left - margin.right);
      const ih = Math.max(60, HEIGHT - margin.top - margin.bottom);
      const plot = svg.append('g').attr('transform', `translate(${margin.left}, ${margin.top})`);

      const layers = rows.map((r) => r.layer);
      const x = scalePoint<number>().domain(layers).range([0, iw]).padding(0.5);
      const domain = logDomain([
        ...rows.flatMap((r) => [r.propagated, r.local, r.floor, r.threshold]),
        ...(sharerRows ?? []).map((r) => r.value),
      ]);
      const y = scaleLog().domain(domain).range([ih, 0]);
      const yOf = (v: number) => {
        const p = clampToDomain(v, domain);
        return p ? y(p.y) : null;
      };
      const xOf = (l: number) => x(l) ?? 0;

      // Selection column (moved by the selection effect below).
      plot
        .append('rect')
        .attr('class', 'sel-col')
        .attr('y', 0)
        .attr('height', ih)
        .attr('width', Math.max(8, x.step() * 0.8))
        .attr('x', -1000)
        .attr('data-testid', 'curve-selection');

      // Axes and grid.
      const ticks = decadeTicks(domain);
      gridLines(plot, ticks, (t) => [0, iw, y(t), y(t)]);
      plot
        .append('g')
        .attr('class', 'axis')
        .attr('transform', `translate(0, ${ih})`)
        .call(axisBottom(x).tickFormat((d) => String(d)));
      plot
        .append('g')
        .attr('class', 'axis')
        .call(
          axisLeft(y)
            .tickValues(ticks)
            .tickFormat((d) => axisTick(Number(d), metric)),
        );
      plot
        .append('text')
        .attr('class', 'axis-label')
        .attr('x', iw / 2)
        .attr('y', ih + 10 + Math.round(em * 1.9))
        .attr('text-anchor', 'middle')
        .text('layer');
      plot
        .append('text')
        .attr('class', 'axis-label')
        .attr('transform', `translate(${-margin.left + Math.round(em * 0.95)}, ${ih / 2}) rotate(-90)`)
        .attr('text-anchor', 'middle')
        .text(metric === 'sqnrDb' ? 'SQNR (dB, up = more error)' : METRIC_LABELS[metric]);

      // Noise-floor band: from the bottom up to the floor.
      const bandPts = rows.map((r) => [xOf(r.layer), yOf(r.floor) ?? ih] as const);
      if (bandPts.length) {
        const half = x.step() / 2;
        const pts: [number, number][] = [];
        bandPts.forEach(([px, py], i) => {
          pts.push([i === 0 ? px - half : px, py]);
          if (i === bandPts.length - 1) pts.push([px + half, py]);
        });
        const band = area<[number, number]>()
          .x((p) => p[0])
          .y0(ih)
          .y1((p) => p[1]);
        plot.append('path').attr('class', 'floor-band').attr('d', band(pts));
      }
      const lineOf = (f: (r: CurveRow) => number) =>
        line<CurveRow>()
          .defined((r) => yOf(f(r)) !== null)
          .x((r) => xOf(r.layer))
          .y((r) => yOf(f(r)) ?? 0);
      plot
        .append('path')
        .attr('class', 'threshold-line')
        .attr('d', lineOf((r) => r.threshold)(rows));
      plot
        .append('path')
        .attr('class', 'local-line')
        .attr('d', lineOf((r) => r.local)(rows));
      plot
        .append('path')
        .attr('class', 'propagated-line')
        .attr('d', lineOf((r) => r.propagated)(rows));

      // The sharer's series (diamonds on a dotted line), set a little to the right of the viewer's own points
      // so that both stay visible when they agree.
      if (sharerRows?.length) drawSharer(plot, sharerRows, xOf, yOf, Math.min(10, x.step() * 0.12));

      // First divergent layer.
      const fdl = report.firstDivergentLayer;
      if (fdl !== null && x(fdl) !== undefined) drawDivergenceMarker(plot, fdl, xOf(fdl), ih, iw);
      // Local points (squares), then propagated points (circles, the interactive ones).
      plot
        .append('g')
        .selectAll('rect')
        .data(rows.filter((r) => yOf(r.local) !== null))
        .join('rect')
        .attr('class', (r) => `pt local${r.born ? ' born' : ''}`)
        .attr('x', (r) => xOf(r.layer) - 4)
        .attr('y', (r) => (yOf(r.local) ?? 0) - 4)
        .attr('width', 8)
        .attr('height', 8);

      const linesFor = (r: CurveRow): string[] => [
        `Layer ${r.layer}${r.diverged ? ' — diverged' : ''}${r.born ? ' (born here)' : ''}`,
        `propagated: ${valueText(r.propagated, metric)}`,
        `local: ${valueText(r.local, metric)}`,
        `noise floor: ${valueText(r.floor, metric)}`,
        `threshold: ${valueText(r.threshold, metric)}`,
        `ratio to floor (${METRIC_LABELS[report.metric]}): ${formatRatio(r.ratio)}; local ${formatRatio(r.localRatio)}`,
        ...(sharerRows
          ? [
              `the sharer's ratio: ${(() => {
                const sr = sharerRows.find((x) => x.layer === r.layer);
                return sr ? formatRatio(sr.ratio) : '—';
              })()}`,
            ]
          : []),
      ];
      plot
        .append('g')
        .selectAll('circle')
        .data(rows)
        .join('circle')
        .attr('class', (r) => `pt propagated${r.diverged ? ' diverged' : ''}`)
        .attr('data-testid', 'curve-point')
        .attr('data-layer', (r) => r.layer)
        .attr('data-diverged', (r) => (r.diverged ? 'yes' : 'no'))
        .attr('cx', (r) => xOf(r.layer))
        .attr('cy', (r) => yOf(r.propagated) ?? ih)
        .attr('r', 7)
        .attr('tabindex', 0)
        .attr('role', 'button')
        .attr('aria-pressed', 'false')
        .attr('aria-label', (r) => `${linesFor(r).join('; ')}. Press Enter to open this layer's ops.`)
        .on('click', (_ev, r) => onSelectRef.current(r.layer))
        .on(
          'keydown',
          pickKeys((r: CurveRow) => onSelectRef.current(r.layer), POINTS),
        )
        .on('mouseenter mousemove', (ev: MouseEvent, r) => {
          const [px, py] = localPoint(ev, body);
          tip.show(linesFor(r), px, py);
        })
        .on('focus', (ev: FocusEvent, r) => {
          const [px, py] = centerOf(ev.target as Element, body);
          tip.show(linesFor(r), px, py);
        })
        .on('mouseleave blur', () => tip.hide());

      // "Born here", drawn last so the propagated circle at the same layer never hides it.
      drawBornMarks(plot, rows, xOf, yOf);
    },
    [rows, metric, report, sharerRows],
  );

  // Selection: moves the column and marks the point, without redrawing (keeps keyboard focus).
  // biome-ignore lint/correctness/useExhaustiveDependencies: re-applied after every redraw of the chart
  useEffect(() => {
    const svgEl = svgRef.current;
    if (!svgEl) return;
    const svg = select(svgEl);
    svg
      .selectAll<SVGCircleElement, CurveRow>('circle[data-testid="curve-point"]')
      .attr('aria-pressed', (r) => (r.layer === selectedLayer ? 'true' : 'false'))
      .classed('selected', (r) => r.layer === selectedLayer);
    const sel = svg.select<SVGRectElement>('rect.sel-col');
    const pt = svg.select<SVGCircleElement>(
      `circle[data-testid="curve-point"][data-layer="${selectedLayer ?? -1}"]`,
    );
    rovingTabStop(svgEl, POINTS, pt.node());
    if (selectedLayer === null || pt.empty()) sel.attr('x', -1000);
    else {
      const cx = Number(pt.attr('cx'));
      const w = Number(sel.attr('width'));
      sel.attr('x', cx - w / 2);
    }
  }, [selectedLayer, rows, width, metric, report]);

  const L = report.layers.length;
  return (
    <ChartCard
      title="Error per layer"
      name="error-curve"
      fileBase={fileBase}
      refs={{ svgRef, bodyRef, tipRef }}
      controls={controls}
      description={`Error of the fused path per layer, ${L} layers, log scale, ${METRIC_LABELS[metric]}.`}
      note={
        <>
          Up = more error. Circles: <Term id="propagated" />; squares: <Term id="local" />. Filled points
          exceed the <Term id="threshold">threshold</Term>; filled squares mark layers where the error is{' '}
          <Term id="born">born</Term> (local error above {report.k} × the local floor). Click a point — or
          focus it and press Enter — to open that layer's ops.
        </>
      }
    />
  );
}
