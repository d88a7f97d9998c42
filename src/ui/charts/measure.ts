// Text measured as the chart draws it: an SVG <text> of the chart's own classes, inside the chart's <svg>, so the
// page's CSS (the chart's size, Large type, the presenter's) sets its font. A chart sizes its margins and thins its
// ticks from these widths instead of from a guess per font size.
import type { Axis, AxisDomain, Selection } from 'd3';

type Svg = Selection<SVGSVGElement, unknown, null, undefined>;

/** The widest of `texts` (px) drawn in `svg` as a <text class={cls}>; 0 for no texts. */
export function textWidth(svg: Svg, texts: readonly string[], cls: string): number {
  if (texts.length === 0) return 0;
  const g = svg.append('g').attr('aria-hidden', 'true').style('visibility', 'hidden');
  let w = 0;
  for (const t of new Set(texts)) {
    const el = g.append('text').attr('class', cls).text(t).node();
    w = Math.max(w, el?.getComputedTextLength() ?? 0);
  }
  g.remove();
  return w;
}

/**
 * `text` in one line of at most `room` px as a <text> of class `cls` draws it: the first of `choices` (the full
 * words, then shorter ones) that fits, else the last cut with "…" to fit.
 */
export function fitText(svg: Svg, choices: readonly string[], cls: string, room: number): string {
  for (const c of choices) if (textWidth(svg, [c], cls) <= room) return c;
  const last = choices[choices.length - 1] ?? '';
  let lo = 0;
  let hi = last.length;
  // the longest prefix whose "prefix…" fits (binary search: widths grow with the prefix)
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (textWidth(svg, [`${last.slice(0, mid).trimEnd()}…`], cls) <= room) lo = mid;
    else hi = mid - 1;
  }
  return lo === 0 ? '' : `${last.slice(0, lo).trimEnd()}…`;
}

/**
 * The widest tick label of `axis` as it draws in `svg` (d3's axis sets its own font attributes on its group, which
 * a bare <text> would not have): drawn hidden in a group of class 'axis', measured, removed.
 */
export function axisLabelWidth<D extends AxisDomain>(svg: Svg, axis: Axis<D>): number {
  const g = svg.append('g').attr('class', 'axis').attr('aria-hidden', 'true').style('visibility', 'hidden');
  g.call(axis);
  let w = 0;
  g.selectAll<SVGTextElement, unknown>('text').each(function () {
    w = Math.max(w, this.getComputedTextLength());
  });
  g.remove();
  return w;
}

/** At most how many ticks a `width` px axis can label without two labels of `label` px touching (at least 1). */
export function ticksThatFit(width: number, label: number, gap = 12): number {
  return Math.max(1, Math.floor(width / (label + gap)));
}
