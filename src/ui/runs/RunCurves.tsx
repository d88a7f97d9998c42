// Per-layer curves of runs from elsewhere on a log axis, as ratios to the noise floor: run A and run B against the
// exact forward, B against A, and the divergence threshold k. Points are keyboard-operable (arrows move, Enter opens
// that layer's checks). The legend wraps its entries in rows that fit the chart (its height sets the plot's top);
// B against A is drawn first, dashed with hollow squares, so that run B's line (where A is clean the two coincide)
// stays visible on top of it.
import { axisBottom, axisLeft, line, type Selection, scaleLog, scalePoint } from 'd3';
import { useMemo, useRef } from 'react';
import type { RunsReport } from '../../compare/runs-report';
import { ChartCard, centerOf } from '../charts/ChartCard';
import { decadeTicks } from '../charts/scales';
import { useChart } from '../charts/useChart';

const HEIGHT = 320;

function label(slot: string): string {
  const m = /^layers\.(\d+)\.out$/.exec(slot);
  return m ? m[1] : slot === 'final_norm' ? 'norm' : slot;
}

interface Series {
  key: string;
  name: string;
  cls: string;
  points: { slot: string; ratio: number }[];
}

type Svg = Selection<SVGSVGElement, unknown, null, undefined>;
type G = Selection<SVGGElement, unknown, null, undefined>;

/** A series' point in the legend: a filled circle for a run, a hollow square for B against A. */
function legendMark(g: G, cls: string, cx: number, cy: number): void {
  if (cls === 'run-ba')
    g.append('rect')
      .attr('class', 'run-mark')
      .attr('x', cx - 5)
      .attr('y', cy - 5)
      .attr('width', 10)
      .attr('height', 10);
  else g.append('circle').attr('class', 'run-mark').attr('cx', cx).attr('cy', cy).attr('r', 4.5);
}

/**
 * The legend in rows that fit `width` (an entry wider than the chart alone is cut with "…" and keeps its whole name
 * in a title); returns the y below its last row.
 */
function drawRunsLegend(svg: Svg, series: Series[], width: number, em: number): number {
  const step = Math.max(20, Math.round(em * 1.5));
  const top = 8 + Math.max(0, Math.round(em * 0.6 - 8));
  const legend = svg
    .append('g')
    .attr('class', 'legend runs-legend')
    .attr('transform', `translate(8, ${top})`);
  const room = width - 16;
  let lx = 0;
  let ly = 0;
  // The runs first, then B against A (drawn first, under them, but read after them).
  const ordered = [...series.filter((s) => s.cls !== 'run-ba'), ...series.filter((s) => s.cls === 'run-ba')];
  for (const s of ordered) {
    const g = legend.append('g').attr('class', `series ${s.cls}`).attr('data-testid', `legend-${s.cls}`);
    g.append('line').attr('class', 'run-line').attr('x1', 0).attr('x2', 24).attr('y1', 9).attr('y2', 9);
    legendMark(g, s.cls, 12, 9);
    const text = g.append('text').attr('x', 30).attr('y', 9).attr('dy', '0.35em').text(s.name);
    const node = text.node();
    const len = () => node?.getComputedTextLength() ?? s.name.length * em * 0.55;
    if (30 + len() > room) {
      g.append('title').text(s.name);
      let cut = s.name.length;
      while (cut > 1 && 30 + len() > room) text.text(`${s.name.slice(0, --cut)}…`);
    }
    const w = 30 + len() + 20;
    if (lx > 0 && lx + w > room) {
      lx = 0;
      ly += step;
    }
    g.attr('transform', `translate(${lx}, ${ly})`);
    lx += w;
  }
  return top + ly + step;
}

export function RunCurves(p: {
  report: RunsReport;
  onSelect: (slot: string) => void;
  fileBase: (what: string, ext: string) => string;
}) {
  const { report } = p;
  const series = useMemo<Series[]>(() => {
    const of = (
      key: string,
      name: string,
      cls: string,
      get: (c: RunsReport['curves'][number]) => number | null,
    ) => ({
      key,
      name,
      cls,
      points: report.curves.flatMap((c) => {
        const r = get(c);
        return r === null ? [] : [{ slot: c.slot, ratio: r }];
      }),
    });
    const out = report.runs.map((r, i) =>
      of(
        r.id,
        `run ${r.id}${r.label ? ` (${r.label})` : ''} vs exact`,
        i === 0 ? 'run-a' : 'run-b',
        (c) => c.runs[r.id]?.ratio ?? null,
      ),
    );
    // B against A first: drawn under the runs, so that run B's line is not hidden where the two coincide.
    if (report.runs.length === 2) out.unshift(of('BA', 'B vs A', 'run-ba', (c) => c.bVsA?.ratio ?? null));
    return out.filter((s) => s.points.length > 0);
  }, [report]);
  const onSelectRef = useRef(p.onSelect);
  onSelectRef.current = p.onSelect;
  const { bodyRef, svgRef, tipRef } = useChart(
    HEIGHT,
    ({ svg, width, tip, body }) => {
      const em = Number.parseFloat(getComputedStyle(svg.node() as Element).fontSize) || 13;
      // The bottom holds the layer names and, under them, the axis' label: both a line of the chart's text (Large type).
      const m = {
        top: drawRunsLegend(svg, series, width, em) + 8,
        right: 16,
        bottom: Math.max(44, Math.ceil(16 + 2 * em)),
        left: 64,
      };
      const x = scalePoint<string>()
        .domain(report.curves.map((c) => c.slot))
        .range([m.left, width - m.right])
        .padding(0.5);
      const all = series
        .flatMap((s) => s.points.map((q) => q.ratio))
        .filter((v) => v > 0 && Number.isFinite(v));
      const lo = Math.min(0.1, ...all);
      const hi = Math.max(report.k * 10, ...all);
      const y = scaleLog()
        .domain([lo, hi])
        .range([HEIGHT - m.bottom, m.top])
        .clamp(true);
      const ticks = decadeTicks([lo, hi]);
      svg
        .append('g')
        .attr('class', 'axis')
        .attr('transform', `translate(0,${HEIGHT - m.bottom})`)
        .call(axisBottom(x).tickFormat(label));
      svg
        .append('g')
        .attr('class', 'axis')
        .attr('transform', `translate(${m.left},0)`)
        .call(
          axisLeft(y)
            .tickValues(ticks)
            .tickFormat((v) => `${Number(v).toExponential(0)}×`),
        );
      svg
        .append('text')
        .attr('class', 'axis-label')
        .attr('x', (m.left + width - m.right) / 2)
        .attr('y', HEIGHT - 8)
        .attr('text-anchor', 'middle')
        .text('layer (output of)');
      svg
        .append('line')
        .attr('class', 'threshold')
        .attr('x1', m.left)
        .attr('x2', width - m.right)
        .attr('y1', y(report.k))
        .attr('y2', y(report.k));
      for (const s of series) {
        const g = svg.append('g').attr('class', `series ${s.cls}`).attr('data-testid', `curve-${s.cls}`);
        const pts = s.points.map((q) => ({ ...q, y: y(Math.max(q.ratio, lo)) }));
        g.append('path')
          .attr('class', 'run-line')
          .attr('fill', 'none')
          .attr(
            'd',
            line<{ slot: string; y: number }>()
              .x((q) => x(q.slot)!)
              .y((q) => q.y)(pts),
          );
        const square = s.cls === 'run-ba';
        const marks = g
          .selectAll<SVGElement, (typeof pts)[number]>('.run-mark')
          .data(pts)
          .join(square ? 'rect' : 'circle')
          .attr('class', 'run-mark');
        if (square)
          marks
            .attr('x', (q) => x(q.slot)! - 5)
            .attr('y', (q) => q.y - 5)
            .attr('width', 10)
            .attr('height', 10);
        else
          marks
            .attr('cx', (q) => x(q.slot)!)
            .attr('cy', (q) => q.y)
            .attr('r', 4.5);
        marks
          .attr('tabindex', 0)
          .attr('role', 'button')
          .attr('aria-label', (q) => `${s.name}, ${q.slot}: ${q.ratio.toPrecision(3)} times the floor`)
          .on('focus', function (_e, q) {
            const [cx, cy] = centerOf(this as Element, body);
            tip.show([`${s.name} · ${q.slot}`, `${q.ratio.toPrecision(3)}× the noise floor`], cx, cy);
          })
          .on('blur', () => tip.hide())
          .on('click', (_e, q) => onSelectRef.current(q.slot))
          .on('keydown', function (e: KeyboardEvent, q) {
            if (e.key === 'Enter' || e.key === ' ') {
              e.preventDefault();
              onSelectRef.current(q.slot);
            } else if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
              e.preventDefault();
              const sib =
                e.key === 'ArrowRight'
                  ? (this as Element).nextElementSibling
                  : (this as Element).previousElementSibling;
              (sib as HTMLElement | null)?.focus();
            }
          });
      }
    },
    [series, report],
  );
  return (
    <ChartCard
      title="Each run against the exact forward, per layer"
      name="run-curves"
      fileBase={p.fileBase}
      refs={{ svgRef, bodyRef, tipRef }}
      description="Ratio of each run's error to the noise floor, per layer, on a log axis; the dashed line is k."
      note={`Error over the noise floor (the explorer's fp32 reference path against the exact forward); the line is k = ${report.k}.`}
    />
  );
}
