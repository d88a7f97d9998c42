// Exports: the report as JSON (nothing stripped — the why, its cause and anatomy included; ∞ and NaN as the
// strings "Infinity", "-Infinity", "NaN" since JSON has no such numbers), the per-layer table as CSV (d3's
// formatter; the run's details, and where the error is born with its cause and anatomy, as '#' comment lines
// above the header), and a chart as SVG (styles inlined so it stands alone) or PNG (the SVG
// drawn onto a canvas), both with a title and the run's details above the chart. The string builders are
// pure and unit-tested.
import { csvFormatRows } from 'd3';
import type { Report } from '../compare/analyze';
import type { FullMetrics } from '../compare/metrics';
import { causeExportLines } from './cause-words';
import { fileSafe } from './format';
import { faultWords, fusedWords, modelWords, promptWords } from './spec-words';

/**
 * What a figure or a table needs to travel alone: model, prompt, fused kernels, faults, precision, k and
 * metric, the adapter and the date (one line each).
 */
export function runDetails(report: Report): string[] {
  const s = report.spec;
  const adapter =
    report.adapter.description || [report.adapter.vendor, report.adapter.architecture].join(' ');
  return [
    `Model: ${modelWords(s.model)}`,
    `Prompt: ${promptWords(s).slice(0, 160)}`,
    `Fused kernels: ${fusedWords(s)}`,
    `Fault: ${faultWords(s)}`,
    `Precision: ${s.precision}; diverged = error > ${s.k} × noise floor (${s.metric}); generated ${s.generate} tokens`,
    `Adapter: ${adapter}`,
    `Date: ${report.createdAt}`,
  ];
}

/** JSON.stringify replacer: non-finite numbers become "Infinity", "-Infinity" or "NaN". */
export function nonFiniteAsString(_key: string, value: unknown): unknown {
  return typeof value === 'number' && !Number.isFinite(value) ? String(value) : value;
}

export function reportToJson(report: Report): string {
  return JSON.stringify(report, nonFiniteAsString, 2);
}

/** The numeric FullMetrics fields, in the CSV's column order. */
export const CSV_METRIC_FIELDS = [
  'maxAbs',
  'meanAbs',
  'relL2',
  'cosineDistance',
  'sqnrDb',
  'maxUlp',
  'nanCount',
  'infCount',
  'mismatchedNonFinite',
] as const satisfies readonly (keyof FullMetrics)[];

const CSV_GROUPS = ['propagated', 'floor', 'local', 'localFloor', 'fusedVsOracle'] as const;

/**
 * A number as it is read back: d3.autoType and pandas (≥ 1.0) both read "Infinity", "-Infinity" and "NaN"
 * (d3.autoType would keep "inf" as text), so those are the spellings; other numbers in full precision.
 */
export function csvNumber(v: number): string {
  return String(v);
}

/** One CSV field (quoting is d3's csvFormatRows'). */
export function csvField(v: string | number | boolean | null): string {
  if (v === null) return '';
  if (typeof v === 'number') return csvNumber(v);
  return String(v);
}

/**
 * One row per layer: verdict flags, ratios, then every metric of each comparison, plus per-token errors.
 * Above the header, '#' comment lines carry the run (pandas: read_csv(f, comment='#')).
 */
export function layersToCsv(report: Report): string {
  const header = [
    'layer',
    'diverged',
    'born',
    'ratio',
    'localRatio',
    ...CSV_GROUPS.flatMap((g) => CSV_METRIC_FIELDS.map((f) => `${g}.${f}`)),
    'perToken.max',
  ];
  const rows = report.layers.map((l) => [
    l.layer,
    l.diverged,
    l.born,
    l.ratio,
    l.localRatio,
    ...CSV_GROUPS.flatMap((g) => CSV_METRIC_FIELDS.map((f) => l[g][f] as number)),
    l.perToken.length ? Math.max(...l.perToken) : null,
  ]);
  const comments = [
    `Divergence explorer: per-layer errors, fused vs reference (verdict ${report.verdict})`,
    ...runDetails(report),
    ...causeExportLines(report.why),
    "Read with pandas.read_csv(f, comment='#') or d3.csvParse(text without the '#' lines, d3.autoType)",
  ].map((l) => `# ${l.replace(/[\r\n]+/g, ' ')}`);
  const table = csvFormatRows([header, ...rows.map((r) => r.map(csvField))]);
  return `${[...comments, ...table.split('\n')].join('\r\n')}\r\n`;
}

/** A file name for an export of this report: divergence-<model>-<time>-<what>.<ext>. */
export function exportName(report: Report, what: string, ext: string): string {
  const t = report.createdAt.replace(/[:.]/g, '-').replace(/Z$/, '');
  return `divergence-${fileSafe(report.model.name)}-${fileSafe(t)}-${fileSafe(what)}.${ext}`;
}

/** Saves a blob as a download (a temporary object URL on a temporary link). */
export function download(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.rel = 'noopener';
  a.style.display = 'none';
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Presentation properties copied from the computed style into each element of an exported SVG (all are
 * SVG presentation attributes). */
const INLINE_PROPS = [
  'fill',
  'fill-opacity',
  'stroke',
  'stroke-width',
  'stroke-dasharray',
  'stroke-opacity',
  'opacity',
  'font-family',
  'font-size',
  'font-weight',
  'font-style',
  'text-anchor',
  'dominant-baseline',
  'paint-order',
  'visibility',
] as const;

/**
 * A standalone SVG document of a chart: every element's computed presentation style written out (so CSS
 * variables and the theme survive outside the page), a background rectangle, explicit width/height and
 * the SVG namespace. Focus rings and interaction attributes are dropped.
 */
export function serializeSvg(svg: SVGSVGElement, background: string): string {
  const clone = svg.cloneNode(true) as SVGSVGElement;
  const src = [svg, ...svg.querySelectorAll('*')];
  const dst = [clone, ...clone.querySelectorAll('*')];
  src.forEach((el, i) => {
    const out = dst[i] as SVGElement;
    const cs = getComputedStyle(el);
    // As SVG presentation attributes, not a style attribute: the page's Content-Security-Policy
    // (style-src 'self') blocks style attributes, and these mean the same in a standalone file.
    for (const p of INLINE_PROPS) {
      const v = cs.getPropertyValue(p);
      if (v !== '' && v !== 'normal' && v !== 'auto') out.setAttribute(p, v);
    }
    out.removeAttribute('tabindex');
    out.removeAttribute('class');
  });
  const { width, height } = svg.getBoundingClientRect();
  const w = Math.max(1, Math.round(width));
  const h = Math.max(1, Math.round(height));
  clone.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  clone.setAttribute('width', String(w));
  clone.setAttribute('height', String(h));
  if (!clone.getAttribute('viewBox')) clone.setAttribute('viewBox', `0 0 ${w} ${h}`);
  const bg = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
  bg.setAttribute('width', '100%');
  bg.setAttribute('height', '100%');
  bg.setAttribute('fill', background);
  clone.insertBefore(bg, clone.firstChild);
  return `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(clone)}`;
}

export interface ExportedSvg {
  text: string;
  width: number;
  height: number;
}

const HEAD_TITLE = 20;
const HEAD_LINE = 15;

/**
 * The chart as a standalone SVG with a title and the run's details above it (so a figure pasted into a
 * slide or a bug report still says what it shows). Returns the text and its size.
 */
export function exportSvg(
  svg: SVGSVGElement,
  background: string,
  title: string,
  details: readonly string[],
  textColor: string,
): ExportedSvg {
  const inner = new DOMParser().parseFromString(serializeSvg(svg, background), 'image/svg+xml')
    .documentElement as unknown as SVGSVGElement;
  const w = Number(inner.getAttribute('width'));
  const h = Number(inner.getAttribute('height'));
  const head = 12 + HEAD_TITLE + HEAD_LINE * details.length + 8;
  const NS = 'http://www.w3.org/2000/svg';
  const doc = document.implementation.createDocument(NS, 'svg', null);
  const out = doc.documentElement;
  const width = Math.max(w, 480);
  out.setAttribute('width', String(width));
  out.setAttribute('height', String(h + head));
  out.setAttribute('viewBox', `0 0 ${width} ${h + head}`);
  const bg = doc.createElementNS(NS, 'rect');
  bg.setAttribute('width', '100%');
  bg.setAttribute('height', '100%');
  bg.setAttribute('fill', background);
  out.append(bg);
  const text = (y: number, size: number, weight: string, s: string) => {
    const t = doc.createElementNS(NS, 'text');
    t.setAttribute('x', '8');
    t.setAttribute('y', String(y));
    t.setAttribute('font-family', 'system-ui, sans-serif');
    t.setAttribute('font-size', String(size));
    t.setAttribute('font-weight', weight);
    t.setAttribute('fill', textColor);
    t.textContent = s;
    out.append(t);
  };
  text(12 + HEAD_TITLE - 4, 16, '600', title);
  details.forEach((d, i) => {
    text(12 + HEAD_TITLE + HEAD_LINE * (i + 1) - 4, 11, '400', d);
  });
  inner.setAttribute('x', '0');
  inner.setAttribute('y', String(head));
  out.append(doc.importNode(inner, true));
  return {
    text: `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(out)}`,
    width,
    height: h + head,
  };
}

/** Renders SVG text to a PNG blob at `scale` × its size (canvas drawImage of the SVG as an image). */
export async function svgToPng(svgText: string, width: number, height: number, scale = 2): Promise<Blob> {
  const url = URL.createObjectURL(new Blob([svgText], { type: 'image/svg+xml' }));
  try {
    const img = new Image();
    img.decoding = 'async';
    await new Promise<void>((resolve, reject) => {
      img.onload = () => resolve();
      img.onerror = () => reject(new Error('the chart could not be drawn as an image'));
      img.src = url;
    });
    const canvas = document.createElement('canvas');
    canvas.width = Math.max(1, Math.round(width * scale));
    canvas.height = Math.max(1, Math.round(height * scale));
    const ctx = canvas.getContext('2d');
    if (!ctx) throw new Error('no 2D canvas');
    ctx.setTransform(scale, 0, 0, scale, 0, 0);
    ctx.drawImage(img, 0, 0, width, height);
    return await new Promise<Blob>((resolve, reject) =>
      canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('PNG encoding failed'))), 'image/png'),
    );
  } finally {
    URL.revokeObjectURL(url);
  }
}
