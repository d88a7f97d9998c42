// (b) Layer × token heatmap of the propagated error per token (relative L2 of each token's row), on a log
// colour scale (viridis: readable with every common colour-vision deficiency and in greyscale). A row is
// keyboard-operable and opens that layer's drill-down.
import {
  axisLeft,
  axisTop,
  interpolateViridis,
  scaleBand,
  scaleLinear,
  scaleSequentialLog,
  select,
} from 'd3';
import { useEffect, useMemo, useRef } from 'react';
import type { Report } from '../../compare/analyze';
import { formatSci } from '../format';
import { ChartCard, centerOf, localPoint } from './ChartCard';
import { pickKeys, rovingTabStop } from './keys';
import { axisTick, decadeTicks, type HeatCell, heatCells, logDomain } from './scales';
import { useChart } from './useChart';

export interface HeatmapProps {
  report: Report;
  selectedLayer: number | null;
  onSelect: (layer: number) => void;
  fileBase: (what: string, ext: string) => string;
  /** A short label for token i (its text when the tokenizer is byte-level), or null. */
  tokenText: (i: number) => string | null;
  /** Room for the layer rows in px (presenter mode gives it the screen). */
  rowsHeight?: number;
}

/** The largest per-token error (NaN ignored). */
function worstOf(values: readonly number[]): number {
  return values.reduce((m, v) => (Number.isNaN(v) ? m : Math.max(m, v)), 0);
}

export function Heatmap({
  report,
  selectedLayer,
  onSelect,
  fileBase,
  tokenText,
  rowsHeight = 360,
}: HeatmapProps) {
  const cells = useMemo(() => heatCells(report), [report]);
  const onSelectRef = useRef(onSelect);
  onSelectRef.current = onSelect;
  const tokenTextRef = useRef(tokenText);
  tokenTextRef.current = tokenText;
  const L = report.layers.length;
  const T = report.tokens.length;
  const rowH = Math.max(16, Math.min(rowsHeight === 360 ? 34 : 120, Math.floor(rowsHeight / Math.max(1, L))));
  const margin = { top: 40, right: 96, bottom: 12, left: 72 };
  const height = margin.top + margin.bottom + rowH * L;

  const { bodyRef, svgRef, tipRef, width } = useChart(
    height,
    ({ svg, width, tip, body }) => {
      const iw = Math.max(40, width - margin.left - margin.right);
      const ih = rowH * L;
      const plot = svg.append('g').attr('transform', `translate(${margin.left}, ${margin.top})`);
      const x = scaleBand<number>()
        .domain(Array.from({ length: T }, (_, i) => i))
        .range([0, iw])
        .padding(0.04);
      const y = scaleBand<number>()
        .domain(report.layers.map((l) => l.layer))
        .range([0, ih])
        .padding(0.06);
      const domain = logDomain(cells.map((c) => c.value));
      const color = scaleSequentialLog(interpolateViridis).domain(domain).clamp(true);
      const fill = (c: HeatCell) => (c.value > 0 && Number.isFinite(c.value) ? color(c.value) : null);
      const label = (c: HeatCell): string[] => {
        const t = tokenTextRef.current(c.token);
        return [
          `Layer ${c.layer}, token ${c.token}${t === null ? '' : ` “${t}”`} (id ${report.tokens[c.token]})`,
          `relative L2 of that token's row: ${formatSci(c.value)}`,
        ];
      };
      plot
        .append('g')
        .selectAll('rect')
        .data(cells)
        .join('rect')
        .attr('class', (c) => (c.value === 0 ? 'cell zero' : Number.isFinite(c.value) ? 'cell' : 'cell inf'))
        .attr('x', (c) => x(c.token) ?? 0)
        .attr('y', (c) => y(c.layer) ?? 0)
        .attr('width', x.bandwidth())
        .attr('height', y.bandwidth())
        .attr('fill', (c) => fill(c))
        .on('mouseenter mousemove', (ev: MouseEvent, c) => {
          const [px, py] = localPoint(ev, body);
          tip.show(label(c), px, py);
        })
        .on('mouseleave', () => tip.hide())
        .on('click', (_ev, c) => onSelectRef.current(c.layer));

      // One focusable row outline per layer (keyboard access to the drill-down).
      plot
        .append('g')
        .selectAll('rect')
        .data(report.layers)
        .join('rect')
        .attr('class', 'heat-row')
        .attr('data-testid', 'heat-row')
        .attr('data-layer', (l) => l.layer)
        .attr('x', -2)
        .attr('y', (l) => (y(l.layer) ?? 0) - 1)
        .attr('width', iw + 4)
        .attr('height', y.bandwidth() + 2)
        .attr('tabindex', 0)
        .attr('role', 'button')
        .attr('aria-label', (l) => {
          const worst = worstOf(l.perToken);
          return `Layer ${l.layer}: worst token error ${formatSci(worst)}. Press Enter to open this layer's ops.`;
        })
        .on(
          'keydown',
          pickKeys((l: Report['layers'][number]) => onSelectRef.current(l.layer), 'rect.heat-row'),
        )
        .on('focus', (ev: FocusEvent, l) => {
          const worst = worstOf(l.perToken);
          const [px, py] = centerOf(ev.target as Element, body);
          tip.show([`Layer ${l.layer}`, `worst token: ${formatSci(worst)}`], px, py);
        })
        .on('blur', () => tip.hide());
      const svgNode = svg.node();
      if (svgNode) rovingTabStop(svgNode, 'rect.heat-row');

      plot
        .append('g')
        .attr('class', 'axis')
        .call(axisLeft(y).tickFormat((d) => `layer ${d}`));
      const every = Math.max(1, Math.ceil(T / Math.max(1, Math.floor(iw / 28))));
      plot
        .append('g')
        .attr('class', 'axis')
        .call(
          axisTop(x)
            .tickValues(x.domain().filter((i) => i % every === 0))
            .tickFormat((i) => {
              const t = tokenTextRef.current(i);
              return t !== null && t.length <= 2 && every === 1 ? t : String(i);
            }),
        );
      plot.append('text').attr('class', 'axis-label').attr('x', 0).attr('y', -28).text('token →');

      // Colour bar.
      const barX = iw + 24;
      const barH = Math.max(40, ih);
      const defs = svg.append('defs');
      const gid = `heat-grad-${Math.random().toString(36).slice(2, 8)}`;
      const grad = defs
        .append('linearGradient')
        .attr('id', gid)
        .attr('x1', 0)
        .attr('x2', 0)
        .attr('y1', 1)
        .attr('y2', 0);
      for (let i = 0; i <= 10; i++)
        grad
          .append('stop')
          .attr('offset', `${i * 10}%`)
          .attr('stop-color', interpolateViridis(i / 10));
      plot
        .append('rect')
        .attr('x', barX)
        .attr('y', 0)
        .attr('width', 12)
        .attr('height', barH)
        .attr('fill', `url(#${gid})`);
      const cy = scaleLinear()
        .domain([Math.log10(domain[0]), Math.log10(domain[1])])
        .range([barH, 0]);
      const ticks = decadeTicks(domain, 5);
      plot
        .append('g')
        .attr('class', 'axis')
        .attr('transform', `translate(${barX + 12}, 0)`)
        .call(
          (axisLeft(cy) as ReturnType<typeof axisLeft<number>>)
            .tickValues(ticks.map((t) => Math.log10(t)))
            .tickFormat((d) => axisTick(10 ** Number(d), 'relL2'))
            .tickSize(-4),
        )
        .selectAll('text')
        .attr('x', 8)
        .attr('text-anchor', 'start');
    },
    [cells, report, L, T, rowH, margin.left, margin.right, margin.top],
  );

  // biome-ignore lint/correctness/useExhaustiveDependencies: re-applied after every redraw of the chart
  useEffect(() => {
    const svgEl = svgRef.current;
    if (!svgEl) return;
    select(svgEl)
      .selectAll<SVGRectElement, Report['layers'][number]>('rect.heat-row')
      .classed('selected', (l) => l.layer === selectedLayer)
      .attr('aria-pressed', (l) => (l.layer === selectedLayer ? 'true' : 'false'));
  }, [selectedLayer, cells, width, height]);

  return (
    <ChartCard
      title="Error per layer and token"
      name="heatmap"
      fileBase={fileBase}
      refs={{ svgRef, bodyRef, tipRef }}
      description={`Heatmap of the propagated error, ${L} layers by ${T} tokens, log colour scale.`}
      note={
        <>
          Relative L2 of the fused path's error per token (row of the residual stream), log colour scale: dark
          purple = tiny, yellow = large; <span className="swatch zero" aria-hidden="true" /> grey = exactly
          zero (identical); <span className="swatch inf" aria-hidden="true" /> pink = infinite or NaN.
        </>
      }
    />
  );
}
