// The frame every chart shares: a title, a note, SVG/PNG export buttons, a width that follows the
// container (ResizeObserver), and a tooltip whose content is set as text (never HTML).
import {
  createContext,
  type ReactNode,
  type RefObject,
  useContext,
  useEffect,
  useRef,
  useState,
} from 'react';
import { download, exportSvg, svgToPng } from '../export';
import { chartWidth } from './scales';

/** The run's details written above an exported chart (runDetails of the report shown). */
export const ExportDetails = createContext<readonly string[]>([]);

/** Measures an element's content width and follows it. */
export function useWidth<T extends HTMLElement>(): [RefObject<T | null>, number] {
  const ref = useRef<T | null>(null);
  const [width, setWidth] = useState(0);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    setWidth(el.clientWidth);
    const ro = new ResizeObserver((entries) => {
      for (const e of entries) setWidth(Math.floor(e.contentRect.width));
    });
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  return [ref, chartWidth(width)];
}

export interface TooltipApi {
  /** Shows lines of text near (x, y) in the chart body's coordinates. */
  show(lines: string[], x: number, y: number): void;
  hide(): void;
}

/** A tooltip bound to a div: text only, kept inside the chart's box. */
export function tooltipFor(div: HTMLDivElement | null, box: HTMLElement | null): TooltipApi {
  return {
    show(lines, x, y) {
      if (!div || !box) return;
      div.replaceChildren(
        ...lines.map((l, i) => {
          const p = document.createElement(i === 0 ? 'strong' : 'span');
          p.textContent = l;
          return p;
        }),
      );
      div.hidden = false;
      const bw = box.clientWidth;
      const w = div.offsetWidth;
      const left = Math.max(0, Math.min(bw - w, x + 12));
      div.style.left = `${left}px`;
      div.style.top = `${Math.max(0, y + 12)}px`;
    },
    hide() {
      if (div) div.hidden = true;
    },
  };
}

/** Mouse position relative to an element. */
export function localPoint(ev: MouseEvent, el: HTMLElement | null): [number, number] {
  if (!el) return [0, 0];
  const r = el.getBoundingClientRect();
  return [ev.clientX - r.left, ev.clientY - r.top];
}

/** An element's centre relative to another (for tooltips on keyboard focus). */
export function centerOf(target: Element, el: HTMLElement | null): [number, number] {
  if (!el) return [0, 0];
  const r = el.getBoundingClientRect();
  const t = target.getBoundingClientRect();
  return [t.left + t.width / 2 - r.left, t.top + t.height / 2 - r.top];
}

/** The refs of a chart's body, <svg> and tooltip (useChart makes them; ChartCard renders the elements). */
export interface ChartElements {
  bodyRef: RefObject<HTMLDivElement | null>;
  svgRef: RefObject<SVGSVGElement | null>;
  tipRef: RefObject<HTMLDivElement | null>;
}

export interface ChartCardProps {
  title: string;
  /** File-name part of exports, e.g. 'error-curve'. */
  name: string;
  /** Base of the export file names (exportName(report, name, ext) without the suffix). */
  fileBase: (what: string, ext: string) => string;
  /** The figure's data-testid (default: `name`). */
  testId?: string;
  /** The chart's elements, as useChart made them. */
  refs: ChartElements;
  note?: ReactNode;
  controls?: ReactNode;
  children?: ReactNode;
  /** Accessible description of the chart as a whole. */
  description: string;
}

export function ChartCard(p: ChartCardProps) {
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<string | null>(null);
  const details = useContext(ExportDetails);
  /** The chart with its title and the run's details above it, in the card's colours. */
  const standalone = (svg: SVGSVGElement) => {
    const card = svg.closest('.card');
    const cs = card ? getComputedStyle(card) : null;
    return exportSvg(svg, cs?.backgroundColor ?? '#ffffff', p.title, details, cs?.color ?? '#000000');
  };
  const saveSvg = () => {
    const svg = p.refs.svgRef.current;
    if (!svg) return;
    download(new Blob([standalone(svg).text], { type: 'image/svg+xml' }), p.fileBase(p.name, 'svg'));
  };
  const exportPng = async () => {
    const svg = p.refs.svgRef.current;
    if (!svg) return;
    setBusy(true);
    setErr(null);
    try {
      const out = standalone(svg);
      const png = await svgToPng(out.text, out.width, out.height, 2);
      download(png, p.fileBase(p.name, 'png'));
    } catch (e) {
      setErr((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <figure className="chart" data-testid={p.testId ?? p.name}>
      <figcaption className="chart-head">
        <h3 className="chart-title">{p.title}</h3>
        <div className="chart-tools">
          {p.controls}
          <button
            type="button"
            className="small-btn"
            onClick={saveSvg}
            aria-label={`Download ${p.title} as SVG`}
          >
            SVG
          </button>
          <button
            type="button"
            className="small-btn"
            onClick={() => void exportPng()}
            disabled={busy}
            aria-label={`Download ${p.title} as PNG`}
          >
            PNG
          </button>
        </div>
      </figcaption>
      {p.note && <p className="chart-note muted small">{p.note}</p>}
      <div className="chart-body" ref={p.refs.bodyRef}>
        <svg ref={p.refs.svgRef} aria-label={p.description} />
        <div className="tooltip" ref={p.refs.tipRef} hidden role="status" />
      </div>
      {p.children}
      {err && <p className="muted small">Export failed: {err}</p>}
    </figure>
  );
}
