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
import { moveAmong, rovingTabStop } from './keys';
import {
  axisTick,
  type CurveRow,
  clampToDomain,
  curveRows,
  decadeTicks,
  fromErrorValue,
  logDomain,
} from './scales';
import { useChart } from './useChart';

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

interface LegendItem {
  cls: string;
  label: string;
  shape: 'line' | 'dash' | 'band' | 'vline';
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
      const legendItems: LegendItem[] = [
        { cls: 'propagated', label: 'fused vs reference (propagated)', shape: 'line' },
        { cls: 'local', label: 'fused layer on reference input (local)', shape: 'dash' },
        { cls: 'floor-band', label: 'noise floor: reference vs fp64', shape: 'band' },
        { cls: 'threshold', label: `divergence threshold: ${report.k} × floor`, shape: 'dash' },
      ];
      if (report.firstDivergentLayer !== null)
        legendItems.push({ cls: 'marker', label: 'first divergent layer', shape: 'vline' });
      if (sharerRows)
        legendItems.push({
          cls: 'sharer',
          label: 'the sharer’s run (their ratio × your floor)',
          shape: 'line',
        });
      // Rows, offsets and margins follow the chart's text size (13 px, 17 px in Large type, 24 px presenting).
      const em = Number.parseFloat(getComputedStyle(svg.node() as Element).fontSize) || 13;
      const rowStep = Math.max(20, Math.round(em * 1.45));
      const legendTop = 6 + Math.max(0, Math.round(em * 0.6 - 9));
      const legend = svg.append('g').attr('class', 'legend').attr('transform', `translate(8, ${legendTop})`);
      let lx = 0;
      let ly = 0;
      for (const item of legendItems) {
        const g = legend.append('g');
        if (item.shape === 'band')
          g.append('rect')
            .attr('class', item.cls)
            .attr('x', 0)
            .attr('y', 4)
            .attr('width', 22)
            .attr('height', 10);
        else if (item.shape === 'vline')
          g.append('line')
            .attr('class', `${item.cls}-line`)
            .attr('x1', 11)
            .attr('x2', 11)
            .attr('y1', 2)
            .attr('y2', 16);
        else
          g.append('line')
            .attr('class', `${item.cls}-line`)
            .attr('x1', 0)
            .attr('x2', 22)
            .attr('y1', 9)
            .attr('y2', 9);
        if (item.cls === 'propagated')
          g.append('circle').attr('class', 'pt propagated').attr('cx', 11).attr('cy', 9).attr('r', 4);
        if (item.cls === 'sharer')
          g.append('path').attr('class', 'pt sharer').attr('d', 'M11,4 L16,9 L11,14 L6,9 Z');
        if (item.cls === 'local')
          g.append('rect')
            .attr('class', 'pt local')
            .attr('x', 8)
            .attr('y', 6)
            .attr('width', 6)
            .attr('height', 6);
        const text = g.append('text').attr('x', 28).attr('y', 9).attr('dy', '0.35em').text(item.label);
        const w = 28 + (text.node()?.getComputedTextLength() ?? item.label.length * 7) + 18;
        if (lx > 0 && lx + w > width - 16) {
          lx = 0;
          ly += rowStep;
        }
        g.attr('transform', `translate(${lx}, ${ly})`);
        lx += w;
      }
      // Under the legend's last row: room for the "first divergent layer" label above the plot.
      const margin = {
        top: legendTop + ly + 9 + Math.round(em * 0.6) + 12 + Math.round(em * 1.2),
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
      plot
        .append('g')
        .attr('class', 'grid')
        .selectAll('line')
        .data(ticks)
        .join('line')
        .attr('x1', 0)
        .attr('x2', iw)
        .attr('y1', (d) => y(d))
        .attr('y2', (d) => y(d));
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
      const dodge = Math.min(10, x.step() * 0.12);
      if (sharerRows?.length) {
        plot
          .append('path')
          .attr('class', 'sharer-line')
          .attr(
            'd',
            line<{ layer: number; value: number }>()
              .defined((r) => yOf(r.value) !== null)
              .x((r) => xOf(r.layer) + dodge)
              .y((r) => yOf(r.value) ?? 0)(sharerRows),
          );
        plot
          .append('g')
          .selectAll('path')
          .data(sharerRows.filter((r) => yOf(r.value) !== null))
          .join('path')
          .attr('class', 'pt sharer')
          .attr('data-testid', 'sharer-point')
          .attr('data-layer', (r) => r.layer)
          .attr('data-ratio', (r) => r.ratio)
          .attr('d', (r) => {
            const cx = xOf(r.layer) + dodge;
            const cy = yOf(r.value) ?? 0;
            return `M${cx},${cy - 6} L${cx + 6},${cy} L${cx},${cy + 6} L${cx - 6},${cy} Z`;
          })
          .append('title')
          .text((r) => `Layer ${r.layer}: the sharer's ratio to the floor ${formatRatio(r.ratio)}`);
      }

      // First divergent layer.
      const fdl = report.firstDivergentLayer;
      if (fdl !== null && x(fdl) !== undefined) {
        const mx = xOf(fdl);
        const g = plot
          .append('g')
          .attr('class', 'marker')
          .attr('data-testid', 'divergence-marker')
          .attr('data-layer', fdl);
        g.append('line')
          .attr('class', 'marker-line')
          .attr('x1', mx)
          .attr('x2', mx)
          .attr('y1', -8)
          .attr('y2', ih);
        const label = g
          .append('text')
          .attr('class', 'marker-label')
          .attr('y', -12)
          .text(`first divergent layer: ${fdl}`);
        const lw = label.node()?.getComputedTextLength() ?? 150;
        const right = mx + 6 + lw <= iw;
        label.attr('x', right ? mx + 6 : mx - 6).attr('text-anchor', right ? 'start' : 'end');
      }
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
        .on('keydown', (ev: KeyboardEvent, r) => {
          if (ev.key === 'Enter' || ev.key === ' ') {
            ev.preventDefault();
            onSelectRef.current(r.layer);
          } else moveAmong(ev, POINTS);
        })
        .on('mouseenter mousemove', (ev: MouseEvent, r) => {
          const [px, py] = localPoint(ev, body);
          tip.show(linesFor(r), px, py);
        })
        .on('focus', (ev: FocusEvent, r) => {
          const [px, py] = centerOf(ev.target as Element, body);
          tip.show(linesFor(r), px, py);
        })
        .on('mouseleave blur', () => tip.hide());

      // "Born here", drawn last so the propagated circle at the same layer never hides it: the filled square
      // again, on top, with a word above it (the layer where the error is made, not carried in).
      const bornMarks = plot
        .append('g')
        .attr('class', 'born-marks')
        .selectAll('g')
        .data(rows.filter((r) => r.born && yOf(r.local) !== null))
        .join('g')
        .attr('data-testid', 'born-marker')
        .attr('data-layer', (r) => r.layer)
        .attr('transform', (r) => `translate(${xOf(r.layer)}, ${yOf(r.local) ?? 0})`);
      bornMarks
        .append('rect')
        .attr('class', 'pt local born')
        .attr('x', -5)
        .attr('y', -5)
        .attr('width', 10)
        .attr('height', 10);
      const bornLabels = bornMarks
        .append('text')
        .attr('class', 'born-label')
        .attr('y', (r) => ((yOf(r.propagated) ?? 0) < (yOf(r.local) ?? 0) ? 20 : -11))
        .attr('text-anchor', 'middle')
        .text('born here');
      // Never over the "first divergent layer" label (they meet when the local error is near the top): the
      // word goes to the square's other side.
      const markerBox = (plot.select<SVGTextElement>('text.marker-label').node() ?? null)?.getBBox();
      if (markerBox)
        bornLabels.each(function (r) {
          const hits = () => {
            const b = this.getBBox();
            const x0 = b.x + xOf(r.layer);
            const y0 = b.y + (yOf(r.local) ?? 0);
            return (
              x0 < markerBox.x + markerBox.width &&
              markerBox.x < x0 + b.width &&
              y0 < markerBox.y + markerBox.height &&
              markerBox.y < y0 + b.height
            );
          };
          if (hits()) select(this).attr('y', Number(this.getAttribute('y')) < 0 ? 20 : -11);
        });
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
      testId="error-curve"
      svgRef={svgRef}
      bodyRef={bodyRef}
      tipRef={tipRef}
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
