// The rows an op's error lives in (the anatomy's rows: those whose RMS error passes k × the floor's), as the span the
// cause search scores a variant on: from the first such row to the last (or to the end when they run to it). In a
// run of a generation whose prefill is clean, the span starts at the first decode step: a decode kernel's fault
// lives from there on, even where its first steps stay under the bar.
import { effectiveFloor } from '../floor';
import { widthOf } from './exact-op';
import type { OpData } from './types';

export interface RowSpan {
  from: number;
  to: number;
}

/** The rows whose RMS error passes k × the floor's (absolute: the relative floor times the exact output's RMS). */
export function badRows(d: OpData): number[] {
  const T = d.tokens.length;
  const w = widthOf(d);
  let sq = 0;
  for (let i = 0; i < T * w; i++) sq += d.exact[i] * d.exact[i];
  const floorAbs = Math.max(
    effectiveFloor(d.floor, 'relL2', d.precision, 0) * Math.sqrt(sq / Math.max(1, T * w)),
    Number.MIN_VALUE,
  );
  const bad: number[] = [];
  for (let t = 0; t < T; t++) {
    let e = 0;
    for (let c = 0; c < w; c++) e += (d.recorded[t * w + c] - d.exact[t * w + c]) ** 2;
    if (!(Math.sqrt(e / w) <= d.k * floorAbs)) bad.push(t);
  }
  return bad;
}

/**
 * The spans of rows the error lives in (none where it is every row, or no row): from the first bad row to the last
 * bad one, or to the end when the bad rows reach the last row or are scattered past the first; in a generation whose
 * prefill is clean and whose first bad row comes later, from its first decode step too (a decode kernel's fault whose
 * first steps stay under the bar).
 */
export function errorSpans(d: OpData): RowSpan[] {
  const T = d.tokens.length;
  const bad = badRows(d);
  if (bad.length === 0) return [];
  const first = bad[0];
  const last = bad[bad.length - 1];
  const contiguous = last - first + 1 === bad.length;
  const to = contiguous ? last + 1 : T;
  const spans = first === 0 && to === T ? [] : [{ from: first, to }];
  if (d.prefill !== undefined && d.prefill > 0 && d.prefill < first && to === T)
    spans.push({ from: d.prefill, to });
  return spans;
}

/** A row in words: "decode step 1 (position 12)" in a generation's decode, else "row 12". */
export function rowWords(row: number, d: OpData): string {
  return d.prefill !== undefined && row >= d.prefill
    ? `decode step ${row - d.prefill + 1} (position ${row})`
    : `row ${row}`;
}

/** The span in words, for a cause's: "from decode step 1 (position 12) on", "on rows 7–9 only". */
export function spanWords(span: RowSpan, d: OpData): string {
  const T = d.tokens.length;
  const P = d.prefill;
  if (span.to >= T) {
    if (P !== undefined && span.from >= P)
      return `from decode step ${span.from - P + 1} (position ${span.from}) on, the prompt's rows exact`;
    return `from row ${span.from} on, the rows before exact`;
  }
  return span.to - span.from === 1 ? `on row ${span.from} only` : `on rows ${span.from}–${span.to - 1} only`;
}
