// One way to make a chart (STYLE.md 12): React owns the <svg>, d3 owns what is inside it. This hook holds
// the set-up every chart shares — the width that follows the container, the <svg> cleared and sized, the
// text-only tooltip — and calls `draw` whenever the size or the caller's dependencies change.
import { type Selection, select } from 'd3';
import { type DependencyList, useEffect, useRef } from 'react';
import { type ChartElements, type TooltipApi, tooltipFor, useWidth } from './ChartCard';

export interface ChartFrame {
  svg: Selection<SVGSVGElement, unknown, null, undefined>;
  width: number;
  height: number;
  tip: TooltipApi;
  /** The chart's body (tooltips and pointer positions are relative to it). */
  body: HTMLDivElement | null;
}

export interface ChartRefs extends ChartElements {
  width: number;
}

export function useChart(height: number, draw: (f: ChartFrame) => void, deps: DependencyList): ChartRefs {
  const [bodyRef, width] = useWidth<HTMLDivElement>();
  const svgRef = useRef<SVGSVGElement | null>(null);
  const tipRef = useRef<HTMLDivElement | null>(null);
  const drawRef = useRef(draw);
  drawRef.current = draw;
  useEffect(() => {
    const el = svgRef.current;
    if (!el) return;
    const body = bodyRef.current;
    const tip = tooltipFor(tipRef.current, body);
    const svg = select(el);
    // A redraw replaces every element: the one with the keyboard gets it back (found by its data attributes).
    const focused = document.activeElement;
    const key = focused && el.contains(focused) ? focusKey(focused) : null;
    svg.selectAll('*').remove();
    svg.attr('width', width).attr('height', height).attr('viewBox', `0 0 ${width} ${height}`);
    drawRef.current({ svg, width, height, tip, body });
    if (key)
      for (const c of el.querySelectorAll<SVGElement>('[tabindex]'))
        if (focusKey(c) === key) {
          c.focus({ preventScroll: true });
          break;
        }
    return () => tip.hide();
  }, [width, height, bodyRef, ...deps]);
  return { bodyRef, svgRef, tipRef, width };
}

/** What tells a chart's focusable element apart from the others (its test id and what it stands for). */
function focusKey(el: Element): string {
  return ['data-testid', 'data-layer', 'data-tap', 'data-kernel', 'aria-label']
    .map((a) => el.getAttribute(a) ?? '')
    .join('|');
}

/** The plot's group inside `margin` of a frame `width` × `height`, and its inner width (≥ 40) and height. */
export function plotIn(
  svg: ChartFrame['svg'],
  width: number,
  height: number,
  margin: { top: number; right: number; bottom: number; left: number },
) {
  const iw = Math.max(40, width - margin.left - margin.right);
  const ih = height - margin.top - margin.bottom;
  const plot = svg.append('g').attr('transform', `translate(${margin.left}, ${margin.top})`);
  return { plot, iw, ih };
}

/** The grid of a plot: a line per tick in a 'grid' group, at `at(tick)` = [x1, x2, y1, y2]. */
export function gridLines(
  plot: Selection<SVGGElement, unknown, null, undefined>,
  ticks: number[],
  at: (t: number) => [number, number, number, number],
): void {
  plot
    .append('g')
    .attr('class', 'grid')
    .selectAll('line')
    .data(ticks)
    .join('line')
    .attr('x1', (t) => at(t)[0])
    .attr('x2', (t) => at(t)[1])
    .attr('y1', (t) => at(t)[2])
    .attr('y2', (t) => at(t)[3]);
}
