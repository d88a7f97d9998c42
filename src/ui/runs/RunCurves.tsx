// Per-layer curves of runs from elsewhere on a log axis, as ratios to the noise floor: run A and run B against the
// exact forward, B against A, and the divergence threshold k. Points are keyboard-operable (arrows move, Enter opens
// that layer's checks).
import { axisBottom, axisLeft, line, scaleLog, scalePoint } from 'd3';
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
    if (report.runs.length === 2) out.push(of('BA', 'B vs A', 'run-ba', (c) => c.bVsA?.ratio ?? null));
    return out.filter((s) => s.points.length > 0);
  }, [report]);
  const onSelectRef = useRef(p.onSelect);
  onSelectRef.current = p.onSelect;
  const { bodyRef, svgRef, tipRef } = useChart(
    HEIGHT,
    ({ svg, width, tip, body }) => {
      const m = { top: 16 + 22 * Math.ceil(series.length / 2), right: 16, bottom: 44, left: 64 };
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
      series.forEach((s, i) => {
        const g = svg.append('g').attr('class', `series ${s.cls}`);
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
        g.selectAll('circle')
          .data(pts)
          .join('circle')
          .attr('cx', (q) => x(q.slot)!)
          .attr('cy', (q) => q.y)
          .attr('r', 5)
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
        const lx = m.left + (i % 2) * Math.max(260, (width - m.left) / 2);
        const ly = 14 + 22 * Math.floor(i / 2);
        svg
          .append('circle')
          .attr('class', `legend-dot ${s.cls}`)
          .attr('cx', lx)
          .attr('cy', ly - 4)
          .attr('r', 5);
        svg
          .append('text')
          .attr('class', 'legend')
          .attr('x', lx + 10)
          .attr('y', ly)
          .text(s.name);
      });
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
