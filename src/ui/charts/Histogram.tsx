// (d) Histogram of the element errors of one tap: counts of log10 |fused − reference| on fixed bins
// (so tensors and precisions line up), with exact matches and non-finite values counted beside it.
import { axisBottom, axisLeft, scaleLinear } from 'd3';
import { useMemo } from 'react';
import type { TapResult } from '../../compare/analyze';
import { ChartCard, localPoint } from './ChartCard';
import { binWords, exponentTicks, type HistBar, histBars, powerWords } from './scales';
import { plotIn, useChart } from './useChart';

export interface HistogramProps {
  tap: TapResult;
  fileBase: (what: string, ext: string) => string;
}

const HEIGHT = 240;

export function Histogram({ tap, fileBase }: HistogramProps) {
  const bars = useMemo(() => (tap.histogram ? histBars(tap.histogram) : []), [tap]);

  const { bodyRef, svgRef, tipRef } = useChart(
    HEIGHT,
    ({ svg, width, tip, body }) => {
      const margin = { top: 16, right: 20, bottom: 44, left: 64 };
      const { plot, iw, ih } = plotIn(svg, width, HEIGHT, margin);
      if (bars.length === 0) {
        plot
          .append('text')
          .attr('class', 'empty-label')
          .attr('x', iw / 2)
          .attr('y', ih / 2)
          .attr('text-anchor', 'middle')
          .text('every compared element is identical (or non-finite)');
        return;
      }
      const lo = bars[0].x0;
      const hi = bars[bars.length - 1].x1;
      const x = scaleLinear().domain([lo, hi]).range([0, iw]);
      const decades = exponentTicks(lo, hi, Math.max(2, Math.floor(iw / 60)));
      // A range inside one decade has no whole-decade tick: label its ends instead.
      const ticks = decades.length > 0 ? decades : [lo, hi];
      const y = scaleLinear()
        .domain([0, Math.max(1, ...bars.map((b) => b.count))])
        .nice()
        .range([ih, 0]);
      plot
        .append('g')
        .attr('class', 'axis')
        .attr('transform', `translate(0, ${ih})`)
        .call(
          axisBottom(x)
            .tickValues(ticks)
            .tickFormat((d) => powerWords(Number(d))),
        );
      plot.append('g').attr('class', 'axis').call(axisLeft(y).ticks(5));
      plot
        .append('text')
        .attr('class', 'axis-label')
        .attr('x', iw / 2)
        .attr('y', ih + 36)
        .attr('text-anchor', 'middle')
        .text('|fused − reference| per element (log scale)');
      plot
        .append('text')
        .attr('class', 'axis-label')
        .attr('transform', `translate(-48, ${ih / 2}) rotate(-90)`)
        .attr('text-anchor', 'middle')
        .text('elements');
      plot
        .append('g')
        .selectAll('rect')
        .data(bars)
        .join('rect')
        .attr('class', 'bar hist')
        .attr('data-testid', 'hist-bar')
        .attr('x', (b) => x(b.x0) + 0.5)
        .attr('width', (b) => Math.max(1, x(b.x1) - x(b.x0) - 1))
        .attr('y', (b) => y(b.count))
        .attr('height', (b) => ih - y(b.count))
        .on('mouseenter mousemove', (ev: MouseEvent, b: HistBar) => {
          const [px, py] = localPoint(ev, body);
          tip.show([`${b.count} elements`, `|fused − reference| from ${binWords(b.x0, b.x1)}`], px, py);
        })
        .on('mouseleave', () => tip.hide());
    },
    [bars],
  );

  const h = tap.histogram;
  return (
    <ChartCard
      title={`Element errors: ${tap.name}`}
      name={`hist-${tap.name}`}
      fileBase={fileBase}
      testId="histogram"
      refs={{ svgRef, bodyRef, tipRef }}
      description={`Histogram of per-element errors of ${tap.name}.`}
      note={
        h ? (
          <>
            {tap.shape} elements: {h.zeros} identical, {h.nonFinite} non-finite,{' '}
            {tap.shape - h.zeros - h.nonFinite} differ (the bars). Errors beyond the range are counted in the
            end bins.
          </>
        ) : (
          'No histogram: this intermediate is fused away.'
        )
      }
    />
  );
}
