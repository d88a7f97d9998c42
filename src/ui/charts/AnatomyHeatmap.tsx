// The anatomy of an error at its born op: a small rows (token positions) × column groups (heads, q/k/v, stretches
// of the MLP width) heatmap of the RMS error over the op's floor, on a log colour scale (viridis, as the layer ×
// token heatmap), with a legend in "× floor" and the anatomy's sentence and parts beside it.
import { axisLeft, axisTop, interpolateViridis, scaleBand, scaleLinear, scaleSequentialLog } from 'd3';
import { useMemo } from 'react';
import type { Anatomy } from '../../compare/causes/anatomy';
import { type AnatomyCell, anatomyCells, hottestCell, timesFloor } from '../cause-words';
import { ChartCard, localPoint } from './ChartCard';
import { decadeTicks, logDomain } from './scales';
import { useChart } from './useChart';

export interface AnatomyHeatmapProps {
  anatomy: Anatomy;
  /** The op the anatomy is of, in words (its id or module path). */
  op: string;
  /** k: the cells past k × floor are where the error is born. */
  k: number;
  fileBase: (what: string, ext: string) => string;
  testId?: string;
  /** Text size ÷ 12 px (Large type, presenter mode). */
  scale?: number;
}

/** A legend tick: "1×", "10×", "1e+3×". */
function floorTick(v: number): string {
  return v >= 1000 || v < 0.01 ? `${v.toExponential(0)}×` : `${v}×`;
}

export function AnatomyHeatmap({
  anatomy,
  op,
  k,
  fileBase,
  testId = 'anatomy',
  scale = 1,
}: AnatomyHeatmapProps) {
  const cells = useMemo(() => anatomyCells(anatomy) ?? [], [anatomy]);
  const domain = useMemo(
    () =>
      logDomain(
        cells.map((c) => c.value),
        [0.1, 10],
      ),
    [cells],
  );
  const kShown = k > domain[0] && k < domain[1];
  const rows = anatomy.heatmap.rowLabels;
  const cols = anatomy.heatmap.colLabels;
  const R = rows.length;
  const C = cols.length;
  const rowH = Math.round(Math.max(12, Math.min(24, 320 / Math.max(1, R))) * Math.min(scale, 1.3));
  // Column labels read sideways when they are many or long ("h11 q", "1024–1087").
  const longest = cols.reduce((m, l) => Math.max(m, l.length), 0);
  const slanted = C > 8 || longest > 4;
  const top = (slanted ? 14 + longest * 6.2 : 28) * scale;
  // (the bottom holds half a legend label below the colour bar's end)
  const margin = { top, right: 92 * scale, bottom: 10 * scale, left: 64 * scale };
  const height = margin.top + margin.bottom + rowH * Math.max(1, R);

  const { bodyRef, svgRef, tipRef } = useChart(
    height,
    ({ svg, width, tip, body }) => {
      if (cells.length === 0) return;
      const room = Math.max(60, width - margin.left - margin.right);
      const iw = Math.min(room, C * 56 * scale);
      const ih = rowH * R;
      const plot = svg.append('g').attr('transform', `translate(${margin.left}, ${margin.top})`);
      const x = scaleBand<number>()
        .domain(cols.map((_, i) => i))
        .range([0, iw])
        .padding(0.06);
      const y = scaleBand<number>()
        .domain(rows.map((_, i) => i))
        .range([0, ih])
        .padding(0.06);
      const color = scaleSequentialLog(interpolateViridis).domain(domain).clamp(true);
      const lines = (c: AnatomyCell) => [
        `rows ${rows[c.row]}, ${cols[c.col]}`,
        `RMS error ${timesFloor(c.value)} the op's floor${c.value > k ? ` (past k = ${k})` : ''}`,
      ];
      plot
        .append('g')
        .selectAll('rect')
        .data(cells)
        .join('rect')
        .attr('class', (c) => (c.value === 0 ? 'cell zero' : Number.isFinite(c.value) ? 'cell' : 'cell inf'))
        .attr('data-testid', 'anatomy-cell')
        .attr('data-row', (c) => c.row)
        .attr('data-col', (c) => c.col)
        .attr('data-value', (c) => c.value)
        .attr('x', (c) => x(c.col) ?? 0)
        .attr('y', (c) => y(c.row) ?? 0)
        .attr('width', x.bandwidth())
        .attr('height', y.bandwidth())
        .attr('fill', (c) => (c.value > 0 && Number.isFinite(c.value) ? color(c.value) : null))
        .on('mouseenter mousemove', (ev: MouseEvent, c) => {
          const [px, py] = localPoint(ev, body);
          tip.show(lines(c), px, py);
        })
        .on('mouseleave', () => tip.hide());
      const every = Math.max(1, Math.ceil(R / Math.max(1, Math.floor(ih / (13 * scale)))));
      plot
        .append('g')
        .attr('class', 'axis')
        .call(
          axisLeft(y)
            .tickValues(y.domain().filter((i) => i % every === 0))
            .tickFormat((i) => rows[i]),
        );
      const xAxis = plot
        .append('g')
        .attr('class', 'axis')
        .call(axisTop(x).tickFormat((i) => cols[i]));
      if (slanted)
        xAxis
          .selectAll('text')
          .attr('text-anchor', 'start')
          .attr('transform', 'rotate(-50)')
          .attr('dx', '0.4em')
          .attr('dy', '0.3em');
      plot
        .append('text')
        .attr('class', 'axis-label')
        .attr('x', -margin.left + 4)
        .attr('y', -6)
        .text('row ↓');

      // The legend: a colour bar in "× floor", with the k line.
      const barX = iw + 18;
      const barH = Math.max(48, ih);
      const gid = `anat-grad-${Math.random().toString(36).slice(2, 8)}`;
      const grad = svg
        .append('defs')
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
      const legend = plot.append('g').attr('data-testid', 'anatomy-legend');
      legend
        .append('rect')
        .attr('x', barX)
        .attr('y', 0)
        .attr('width', 12)
        .attr('height', barH)
        .attr('fill', `url(#${gid})`);
      const cy = scaleLinear()
        .domain([Math.log10(domain[0]), Math.log10(domain[1])])
        .range([barH, 0]);
      legend
        .append('g')
        .attr('class', 'axis')
        .attr('transform', `translate(${barX + 12}, 0)`)
        .call(
          (axisLeft(cy) as ReturnType<typeof axisLeft<number>>)
            .tickValues(decadeTicks(domain, Math.max(2, Math.floor(barH / 18))).map((t) => Math.log10(t)))
            .tickFormat((d) => floorTick(10 ** Number(d)))
            .tickSize(-4),
        )
        .selectAll('text')
        .attr('x', 8)
        .attr('text-anchor', 'start');
      if (kShown)
        legend
          .append('line')
          .attr('class', 'k-line')
          .attr('x1', barX - 3)
          .attr('x2', barX + 15)
          .attr('y1', cy(Math.log10(k)))
          .attr('y2', cy(Math.log10(k)));
    },
    [cells, domain, kShown, rows, cols, k, rowH, margin.left, margin.right, margin.top, scale],
  );

  const hot = hottestCell(anatomy);
  return (
    <div className="anatomy" data-testid={testId}>
      <ChartCard
        title={`Where in ${op} the error lives`}
        name={`anatomy-${op}`}
        fileBase={fileBase}
        testId={`${testId}-chart`}
        refs={{ svgRef, bodyRef, tipRef }}
        description={`Heatmap of the error of ${op}: ${R} row bins by ${C} ${anatomy.groups.axis}, RMS error over the op's floor, log colour scale. ${anatomy.sentence}`}
        note={
          <>
            RMS error of each cell over the op's floor, log colour scale from dark purple (
            {timesFloor(domain[0])}) to yellow ({timesFloor(domain[1])})
            {kShown
              ? `; the white tick on the bar is k = ${k}`
              : `; every cell is ${domain[0] >= k ? 'past' : 'under'} k = ${k}`}
            ; rows are token positions, columns{' '}
            {anatomy.groups.axis === 'columns' ? 'equal stretches of the output width' : anatomy.groups.axis}.
          </>
        }
      />
      <div className="anatomy-words">
        <p data-testid={`${testId}-sentence`}>{anatomy.sentence}</p>
        <ul className="plain small">
          <li>
            <strong>Rows:</strong> {anatomy.rows.words} ({anatomy.rows.count} of {anatomy.rows.of} past k ×
            floor)
          </li>
          <li>
            <strong>Columns:</strong> {anatomy.groups.words}
          </li>
          {anatomy.parts.length > 0 && (
            <li data-testid={`${testId}-parts`}>
              <strong>Parts:</strong>{' '}
              {anatomy.parts.map((p) => `${p.label} ${Math.round(100 * p.share)} %`).join(', ')}
            </li>
          )}
          <li>
            <strong>Shape:</strong> {anatomy.shape.words}
          </li>
          <li>
            <strong>Size:</strong> {anatomy.size.words}
          </li>
          {hot && <li className="muted">{hot}</li>}
        </ul>
      </div>
    </div>
  );
}
