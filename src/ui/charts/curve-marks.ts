// The marks of the error-per-layer chart (ErrorCurve.tsx) that are drawn apart from its axes and curves: the
// legend (its height sets the plot's top margin), the sharer's series, the first-divergent-layer marker and the
// "born here" marks.
import { line, type Selection, select } from 'd3';
import type { Report } from '../../compare/analyze';
import { formatRatio } from '../format';
import type { CurveRow } from './scales';

type Svg = Selection<SVGSVGElement, unknown, null, undefined>;
type Plot = Selection<SVGGElement, unknown, null, undefined>;
type Px = (v: number) => number | null;

interface LegendItem {
  cls: string;
  label: string;
  shape: 'line' | 'dash' | 'band' | 'vline';
}

/** The legend's entries for a report (the marker only when a layer diverged, the sharer's only with a link's). */
export function curveLegend(report: Report, withSharer: boolean): LegendItem[] {
  const items: LegendItem[] = [
    { cls: 'propagated', label: 'fused vs reference (propagated)', shape: 'line' },
    { cls: 'local', label: 'fused layer on reference input (local)', shape: 'dash' },
    { cls: 'floor-band', label: 'noise floor: reference vs fp64', shape: 'band' },
    { cls: 'threshold', label: `divergence threshold: ${report.k} × floor`, shape: 'dash' },
  ];
  if (report.firstDivergentLayer !== null)
    items.push({ cls: 'marker', label: 'first divergent layer', shape: 'vline' });
  if (withSharer)
    items.push({
      cls: 'sharer',
      label: 'the sharer’s run (their ratio × your floor)',
      shape: 'line',
    });
  return items;
}

/** Appends a `tag` element to `g` with these attributes. */
function put(
  g: Selection<SVGGElement, unknown, null, undefined>,
  tag: string,
  attrs: Record<string, string | number>,
) {
  const el = g.append(tag);
  for (const [k, v] of Object.entries(attrs)) el.attr(k, v);
  return el;
}

/** Draws the legend in rows that fit `width`; returns the y of its last row's top. */
export function drawLegend(svg: Svg, items: LegendItem[], width: number, em: number): number {
  const rowStep = Math.max(20, Math.round(em * 1.45));
  const legendTop = 6 + Math.max(0, Math.round(em * 0.6 - 9));
  const legend = svg.append('g').attr('class', 'legend').attr('transform', `translate(8, ${legendTop})`);
  let lx = 0;
  let ly = 0;
  for (const item of items) {
    const g = legend.append('g');
    // The item's swatch: a band, a vertical marker or a line (plain or dashed by its class), and its point.
    if (item.shape === 'band') put(g, 'rect', { class: item.cls, x: 0, y: 4, width: 22, height: 10 });
    else if (item.shape === 'vline')
      put(g, 'line', { class: `${item.cls}-line`, x1: 11, x2: 11, y1: 2, y2: 16 });
    else put(g, 'line', { class: `${item.cls}-line`, x1: 0, x2: 22, y1: 9, y2: 9 });
    if (item.cls === 'propagated') put(g, 'circle', { class: 'pt propagated', cx: 11, cy: 9, r: 4 });
    if (item.cls === 'sharer') put(g, 'path', { class: 'pt sharer', d: 'M11,4 L16,9 L11,14 L6,9 Z' });
    if (item.cls === 'local') put(g, 'rect', { class: 'pt local', x: 8, y: 6, width: 6, height: 6 });
    const text = g.append('text').attr('x', 28).attr('y', 9).attr('dy', '0.35em').text(item.label);
    const w = 28 + (text.node()?.getComputedTextLength() ?? item.label.length * 7) + 18;
    if (lx > 0 && lx + w > width - 16) {
      lx = 0;
      ly += rowStep;
    }
    g.attr('transform', `translate(${lx}, ${ly})`);
    lx += w;
  }
  return legendTop + ly;
}

/** The sharer's per-layer points, their ratio × this run's floor, `dodge` px right of the viewer's own. */
export function drawSharer(
  plot: Plot,
  sharerRows: { layer: number; ratio: number; value: number }[],
  xOf: (l: number) => number,
  yOf: Px,
  dodge: number,
): void {
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

/** The vertical marker at the first divergent layer (x = mx) with its label, kept inside the plot's width. */
export function drawDivergenceMarker(plot: Plot, fdl: number, mx: number, ih: number, iw: number): void {
  const g = plot
    .append('g')
    .attr('class', 'marker')
    .attr('data-testid', 'divergence-marker')
    .attr('data-layer', fdl);
  g.append('line').attr('class', 'marker-line').attr('x1', mx).attr('x2', mx).attr('y1', -8).attr('y2', ih);
  const label = g
    .append('text')
    .attr('class', 'marker-label')
    .attr('y', -12)
    .text(`first divergent layer: ${fdl}`);
  const lw = label.node()?.getComputedTextLength() ?? 150;
  const right = mx + 6 + lw <= iw;
  label.attr('x', right ? mx + 6 : mx - 6).attr('text-anchor', right ? 'start' : 'end');
}

/**
 * "Born here": the filled square again, on top of the propagated circle at the same layer, with a word above it
 * (the layer where the error is made, not carried in), never over the first-divergent-layer label.
 */
export function drawBornMarks(plot: Plot, rows: CurveRow[], xOf: (l: number) => number, yOf: Px): void {
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
}
