// (c) The ops of one layer: each tap's error vs the reference (bar, log axis) beside the reference's own
// distance from fp64 (the op's noise floor, a tick). Bars are coloured by how far above their own floor they
// are, so the culprit stands out; the ops a fused kernel replaced are bracketed under its name; taps the
// fused plan never writes out are "fused away", with the kernel and the op whose error carries theirs.
// A compared tap is keyboard-operable and selects it for the histogram. The margins are measured from the labels
// as the page's CSS draws them (measure.ts) and the ticks thinned to what their labels leave room for, so Large type
// on a narrow card keeps the bars wide and every label whole.
import { axisTop, scaleBand, scaleLog, select } from 'd3';
import { useEffect, useMemo, useRef } from 'react';
import type { Report, TapResult } from '../../compare/analyze';
import type { Metric } from '../../run/runspec';
import { formatMetric, formatRatio, METRIC_LABELS } from '../format';
import { Term } from '../Glossary';
import { llamaKernelOfSlot } from '../kernel-words';
import { ChartCard, centerOf, localPoint } from './ChartCard';
import { aboveFloor, bandOf, carrierOf, kernelOfTap } from './kernels';
import { pickKeys, rovingTabStop } from './keys';
import { axisLabelWidth, fitText, textWidth, ticksThatFit } from './measure';
import { axisTick, clampToDomain, decadeTicks, errorValue, fromErrorValue, logDomain } from './scales';
import { gridLines, useChart } from './useChart';

export interface DrilldownProps {
  report: Report;
  layer: number;
  metric: Metric;
  selectedTap: string | null;
  onSelectTap: (name: string) => void;
  onClose: () => void;
  fileBase: (what: string, ext: string) => string;
  /** Height of one op's row in px (presenter mode makes them taller). */
  row?: number;
  /**
   * Text size ÷ the page's 12 px chart text: the axis' room above the rows grows with it (Large type, presenter
   * mode); the label columns are measured from the labels as drawn.
   */
  scale?: number;
}

export function layerTaps(report: Report, layer: number): TapResult[] {
  return report.taps.filter((t) => t.layer === layer);
}

/** The op rows that answer the keyboard (compared taps), top to bottom. */
export const OP_ROWS = 'g.tap-row.compared';

export function Drilldown({
  report,
  layer,
  metric,
  selectedTap,
  onSelectTap,
  onClose,
  fileBase,
  row: ROW = 26,
  scale = 1,
}: DrilldownProps) {
  const taps = useMemo(() => layerTaps(report, layer), [report, layer]);
  const onSelectRef = useRef(onSelectTap);
  onSelectRef.current = onSelectTap;

  // The top holds the axis (its labels follow the chart's text size); the sides are measured from the labels.
  const top = 36 * scale;
  const height = top + 10 + ROW * Math.max(1, taps.length);
  const l = report.layers.find((x) => x.layer === layer) ?? null;

  const { bodyRef, svgRef, tipRef, width } = useChart(
    height,
    ({ svg, width, tip, body }) => {
      const fusedOn = report.spec.fused;
      // A Llama-family layer's rows are named by their slot (q_rot, gate, up: its op kinds repeat) and bracketed
      // under the family's own kernels.
      const llama = report.model.family === 'llama';
      const slotOf = (t: TapResult) => t.name.slice(`layers.${layer}.`.length);
      const label = (t: TapResult) => (llama ? slotOf(t) : t.op);
      const kernelOf = (t: TapResult) =>
        llama ? llamaKernelOfSlot(slotOf(t), fusedOn) : kernelOfTap(t.op, fusedOn);
      const ratioOf = (t: TapResult) =>
        t.vsReference && t.refVsOracle
          ? aboveFloor(errorValue(t.vsReference, metric), errorValue(t.refVsOracle, metric))
          : Number.NaN;
      const awayWords = (t: TapResult): string => {
        const k = kernelOf(t);
        const carrier = carrierOf(
          taps.map((x) => ({ op: label(x), status: x.status })),
          taps.indexOf(t),
        );
        return k
          ? `inside ${k.title}${carrier ? `: its error shows in ${carrier}` : ''}`
          : 'never written out by the fused path';
      };
      const linesFor = (t: TapResult): string[] =>
        t.status === 'fused-away'
          ? [
              `${t.name}`,
              `fused away: ${awayWords(t)} (the fused kernel never writes this intermediate out)`,
              `${t.shape} elements`,
            ]
          : [
              t.name,
              ...(kernelOf(t) ? [`computed by the fused kernel ${kernelOf(t)?.title}`] : []),
              `${formatRatio(ratioOf(t))} its own noise floor`,
              `fused vs reference: ${formatMetric(fromErrorValue(errorValue(t.vsReference!, metric), metric), metric)}`,
              `reference vs fp64 (floor): ${t.refVsOracle ? formatMetric(fromErrorValue(errorValue(t.refVsOracle, metric), metric), metric) : '—'}`,
              `${t.shape} elements; max ULP ${t.vsReference!.maxUlp}`,
            ];
      /** What a compared row shows at its right: its error and its ratio to its floor. */
      const valueText = (t: TapResult): string => {
        const v = errorValue(t.vsReference!, metric);
        return v === 0
          ? 'identical'
          : `${formatMetric(fromErrorValue(v, metric), metric)} · ${formatRatio(ratioOf(t))} floor`;
      };
      // The ops each fused kernel replaced, bracketed under its name (consecutive rows of one kernel).
      // Labelled by the kernel's name in the loaded family (a Llama model's 'swiglu', not the switch 'linear_gelu').
      const segments: { kernel: string; name: string; title: string; from: number; to: number }[] = [];
      taps.forEach((t, i) => {
        const k = kernelOf(t);
        const last = segments.at(-1);
        if (k && last && last.kernel === k.id && last.to === i - 1) last.to = i;
        else if (k)
          segments.push({ kernel: k.id, name: 'name' in k ? k.name : k.id, title: k.title, from: i, to: i });
      });
      // The margins from the labels' own widths as the page's CSS draws them (Large type, the presenter): on the left
      // the kernels' names, their brackets and the ops' names; on the right each compared op's value.
      const GAP = 10;
      const kernelW = textWidth(
        svg,
        segments.map((g) => g.name),
        'kernel-label',
      );
      const bracketX = segments.length ? 8 + kernelW + GAP + 6 : 0;
      const left = Math.ceil(bracketX + GAP + textWidth(svg, taps.map(label), 'row-label') + 8);
      const comparedTaps = taps.filter((t) => t.status === 'compared');
      const right = Math.ceil(textWidth(svg, comparedTaps.map(valueText), 'row-value') + 16);
      const margin = { top, right, left };
      const iw = Math.max(60, width - margin.left - margin.right);
      const plot = svg.append('g').attr('transform', `translate(${margin.left}, ${margin.top})`);
      const y = scaleBand<string>()
        .domain(taps.map((t) => t.name))
        .range([0, ROW * taps.length])
        .padding(0.2);
      const vals = taps.flatMap((t) => [
        t.vsReference ? errorValue(t.vsReference, metric) : Number.NaN,
        t.refVsOracle ? errorValue(t.refVsOracle, metric) : Number.NaN,
      ]);
      const domain = logDomain(vals);
      const x = scaleLog().domain(domain).range([0, iw]);
      const xOf = (v: number) => {
        const p = clampToDomain(v, domain);
        return p ? x(p.y) : null;
      };
      // As many decade ticks as their labels leave room for (never two labels touching).
      const axisOf = (ticks: number[]) =>
        axisTop(x)
          .tickValues(ticks)
          .tickFormat((d) => axisTick(Number(d), metric));
      const tickW = axisLabelWidth(svg, axisOf(decadeTicks(domain, 64)));
      const ticks = decadeTicks(domain, ticksThatFit(iw, tickW));
      gridLines(plot, ticks, (t) => [x(t), x(t), 0, ROW * taps.length]);
      plot.append('g').attr('class', 'axis').call(axisOf(ticks));
      const rows = plot
        .append('g')
        .selectAll<SVGGElement, TapResult>('g')
        .data(taps)
        .join('g')
        .attr('class', (t) => `tap-row ${t.status}`)
        .attr('data-testid', 'tap-row')
        .attr('data-kernel', (t) => kernelOf(t)?.id ?? '')
        .attr('data-band', (t) => (t.status === 'compared' ? bandOf(ratioOf(t), report.k) : ''))
        .attr('data-tap', (t) => t.name)
        .attr('data-status', (t) => t.status)
        .attr('transform', (t) => `translate(0, ${y(t.name) ?? 0})`);
      rows
        .append('rect')
        .attr('class', 'row-hit')
        .attr('x', -margin.left + 4)
        .attr('y', -2)
        .attr('width', iw + margin.left + margin.right - 8)
        .attr('height', y.bandwidth() + 4)
        .attr('rx', 4);
      rows
        .append('text')
        .attr('class', 'row-label')
        .attr('x', -8)
        .attr('y', y.bandwidth() / 2)
        .attr('dy', '0.35em')
        .attr('text-anchor', 'end')
        // The trailing space keeps the op apart from its value in the row's text (what a screen reader's
        // name is checked against); SVG does not draw it.
        .text((t) => `${label(t)} `);
      const compared = rows.filter((t) => t.status === 'compared');
      compared
        .append('rect')
        .attr('class', (t) => `bar drill band-${bandOf(ratioOf(t), report.k)}`)
        .attr('x', 0)
        .attr('y', 0)
        .attr('height', y.bandwidth())
        .attr('width', (t) => Math.max(1, xOf(errorValue(t.vsReference!, metric)) ?? 0));
      compared
        .filter((t) => t.refVsOracle !== null)
        .append('line')
        .attr('class', 'floor-tick')
        .attr('x1', (t) => xOf(errorValue(t.refVsOracle!, metric)) ?? 0)
        .attr('x2', (t) => xOf(errorValue(t.refVsOracle!, metric)) ?? 0)
        .attr('y1', -3)
        .attr('y2', y.bandwidth() + 3);
      compared
        .append('text')
        .attr('class', 'row-value')
        .attr('x', iw + 8)
        .attr('y', y.bandwidth() / 2)
        .attr('dy', '0.35em')
        .text(valueText);
      const away = rows.filter((t) => t.status === 'fused-away');
      away
        .append('text')
        .attr('class', 'fused-away-label')
        .attr('x', 4)
        .attr('y', y.bandwidth() / 2)
        .attr('dy', '0.35em')
        .text('fused away');
      // Its why after it, in what is left of the row: the whole words, else the kernel alone (the tooltip and the
      // row's name keep the whole), else cut with "…".
      const whyX = 4 + textWidth(svg, ['fused away'], 'fused-away-label') + GAP;
      const whyRoom = iw + margin.right - whyX - 4;
      away
        .append('text')
        .attr('class', 'fused-away-why')
        .attr('data-testid', 'fused-away-why')
        .attr('data-words', (t) => awayWords(t))
        .attr('x', whyX)
        .attr('y', y.bandwidth() / 2)
        .attr('dy', '0.35em')
        .text((t) => {
          const k = kernelOf(t);
          return fitText(
            svg,
            k ? [awayWords(t), `inside ${k.title}`] : [awayWords(t)],
            'fused-away-why',
            whyRoom,
          );
        });
      const groups = plot
        .append('g')
        .attr('class', 'kernel-groups')
        .selectAll('g')
        .data(segments)
        .join('g')
        .attr('data-testid', 'kernel-group')
        .attr('data-kernel', (g) => g.kernel)
        .attr('data-ops', (g) =>
          taps
            .slice(g.from, g.to + 1)
            .map((t) => label(t))
            .join(' '),
        );
      const bx = -margin.left + 8;
      groups
        .append('path')
        .attr('class', 'kernel-bracket')
        .attr('d', (g) => {
          const y0 = (y(taps[g.from].name) ?? 0) + 2;
          const y1 = (y(taps[g.to].name) ?? 0) + y.bandwidth() - 2;
          const xr = -margin.left + bracketX;
          return `M${xr},${y0} H${xr - 6} V${y1} H${xr}`;
        });
      groups
        .append('text')
        .attr('class', 'kernel-label')
        .attr('x', bx)
        .attr('y', (g) => ((y(taps[g.from].name) ?? 0) + (y(taps[g.to].name) ?? 0) + y.bandwidth()) / 2)
        .attr('dy', '0.35em')
        .text((g) => g.name);
      compared
        .attr('tabindex', 0)
        .attr('role', 'button')
        .attr('aria-pressed', 'false')
        // The name starts with the row's visible text (its op and value), then the details.
        .attr(
          'aria-label',
          (t) =>
            `${label(t)} ${valueText(t)}: ${linesFor(t).join('; ')}. Press Enter to show its error histogram.`,
        )
        .on('click', (_ev, t) => onSelectRef.current(t.name))
        .on(
          'keydown',
          pickKeys((t: TapResult) => onSelectRef.current(t.name), OP_ROWS),
        )
        .on('focus', (ev: FocusEvent, t) => {
          const [px, py] = centerOf(ev.target as Element, body);
          tip.show(linesFor(t), px, py);
        })
        .on('blur', () => tip.hide());
      rows
        .filter((t) => t.status === 'fused-away')
        .attr('role', 'group')
        .attr('aria-label', (t) => linesFor(t).join('; '));
      rows
        .on('mouseenter mousemove', (ev: MouseEvent, t) => {
          const [px, py] = localPoint(ev, body);
          tip.show(linesFor(t), px, py);
        })
        .on('mouseleave', () => tip.hide());
    },
    [taps, metric, top, report, ROW],
  );

  // biome-ignore lint/correctness/useExhaustiveDependencies: re-applied after every redraw of the chart
  useEffect(() => {
    const svgEl = svgRef.current;
    if (!svgEl) return;
    const rows = select(svgEl)
      .selectAll<SVGGElement, TapResult>(OP_ROWS)
      .classed('selected', (t) => t.name === selectedTap)
      .attr('aria-pressed', (t) => (t.name === selectedTap ? 'true' : 'false'));
    rovingTabStop(svgEl, OP_ROWS, rows.filter((t) => t.name === selectedTap).node());
  }, [selectedTap, taps, width, height, metric]);

  const fusedAway = taps.filter((t) => t.status === 'fused-away').length;
  return (
    <ChartCard
      title={`Layer ${layer}: error per op`}
      name={`layer-${layer}-ops`}
      fileBase={fileBase}
      testId="drilldown"
      refs={{ svgRef, bodyRef, tipRef }}
      description={`Error of each op of layer ${layer} vs the reference, ${METRIC_LABELS[metric]}, log scale.`}
      controls={
        <button type="button" className="small-btn" onClick={onClose} aria-label="Close the layer drill-down">
          Close
        </button>
      }
      note={
        <>
          {l && (
            <span data-testid="drilldown-summary">
              {l.diverged ? 'Diverged' : 'Within tolerance'}
              {l.born ? ', born in this layer' : l.diverged ? ', carried in from earlier layers' : ''}.{' '}
            </span>
          )}
          Bars: fused vs reference per <Term id="tap">tap</Term>, coloured by how far above the op's own{' '}
          <Term id="floor" /> (the tick: reference vs fp64) —{' '}
          <span className="key band-floor">at or under it</span>,{' '}
          <span className="key band-above">up to {report.k} ×</span>,{' '}
          <span className="key band-far">more than {report.k} ×</span>. Brackets on the left: the reference
          ops each fused kernel replaced. {fusedAway} of {taps.length} intermediates are{' '}
          <Term id="fusedAway" /> (never written out; their error shows in the kernel's output). Select an op
          for its histogram.
        </>
      }
    />
  );
}
