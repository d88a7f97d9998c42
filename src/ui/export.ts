// Exports: the report as JSON (nothing stripped; ∞ and NaN as the strings "Infinity", "-Infinity", "NaN"
// since JSON has no such numbers), the per-layer table as CSV, and a chart as SVG (styles inlined so it
// stands alone) or PNG (the SVG drawn onto a canvas). The string builders are pure and unit-tested.
import type { Report } from '../compare/analyze';
import type { FullMetrics } from '../compare/metrics';
import { fileSafe } from './format';

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

/** One CSV field: numbers in full precision (∞/NaN spelled like the JSON), text quoted when it must be. */
export function csvField(v: string | number | boolean | null): string {
  if (v === null) return '';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return /[",\n\r]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
}

/** One row per layer: verdict flags, ratios, then every metric of each comparison, plus per-token errors. */
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
  return `${[header, ...rows].map((r) => r.map(csvField).join(',')).join('\r\n')}\r\n`;
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
