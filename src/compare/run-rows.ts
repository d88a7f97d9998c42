// Where in a run an op's error first appears: the first row (position) whose error passes k × the floor, from the
// per-row relative L2 error of the run's output against the exact op and the reference path's the same way. In a
// run of a generation (src/model/run-generation.ts) a row is a decode step: the finding is named by it.

import type { RunFile } from '../model/run-file';
import { type RunGeneration, rowWords } from '../model/run-generation';
import type { Precision } from '../numeric/precision';
import { storageUnitRoundoff } from '../numeric/precision';

/** The rows of a run past k × their floor: the first, and the last of the unbroken stretch from it. */
export interface RowsPast {
  first: number;
  /** Rows first … to all pass (to = first where the next row does not). */
  to: number;
}

/**
 * The first row whose relative L2 error passes k × its floor — the reference path's error at that row, never below
 * the reference's whole-tensor error nor one rounding of the run's storage — and how far the rows from it on keep
 * passing, or null (no per-row errors, or no row past it). NaN/Inf in a row counts as past.
 */
export function rowsPast(
  rows: ArrayLike<number> | null,
  floorRows: ArrayLike<number> | null,
  floorWhole: number,
  precision: Precision,
  k: number,
): RowsPast | null {
  if (!rows) return null;
  const base = Math.max(Number.isFinite(floorWhole) ? floorWhole : 0, storageUnitRoundoff(precision));
  const past = (r: number) => {
    const f = Math.max(base, floorRows && Number.isFinite(floorRows[r]) ? floorRows[r] : 0);
    return !(rows[r] <= k * f);
  };
  let first = 0;
  while (first < rows.length && !past(first)) first++;
  if (first === rows.length) return null;
  let to = first;
  while (to + 1 < rows.length && past(to + 1)) to++;
  return { first, to };
}

/** The first row past k × its floor (rowsPast), or null. */
export function firstRowPast(
  rows: ArrayLike<number> | null,
  floorRows: ArrayLike<number> | null,
  floorWhole: number,
  precision: Precision,
  k: number,
): number | null {
  return rowsPast(rows, floorRows, floorWhole, precision, k)?.first ?? null;
}

/** Where a check's rows past the floor lie, as the report holds them: its first row and the stretch's last. */
interface CheckRows {
  firstRow?: number | null;
  pastTo?: number | null;
}

/**
 * "decode step 5 (position 37), " / "every row of the prompt (the prefill, positions 0–5), " for a finding at a row
 * of a generation run of `T` rows (the stretch of rows past the floor said whole: run-generation.ts rowWords); ''
 * otherwise.
 */
export function stepPrefix(
  source: { generation?: RunGeneration | null },
  check: CheckRows,
  T: number,
): string {
  const g = source.generation;
  const row = check.firstRow;
  if (!g || row === null || row === undefined) return '';
  return `${rowWords(row, g.prefill, check.pastTo ?? row, T)}, `;
}

/**
 * A check's rows past the floor in words: in a run of a generation its decode steps and positions (rowWords), else
 * "position 3" / "positions 3–8" / "every position from 3 on".
 */
export function rowInWords(
  row: number,
  generation: RunGeneration | null | undefined,
  to = row,
  T = to + 1,
): string {
  if (generation) return rowWords(row, generation.prefill, to, T);
  if (to <= row) return `position ${row}`;
  return to >= T - 1 ? `every position from ${row} on` : `positions ${row}–${to}`;
}

/** The rows a runs analysis checks: from..T−1; the rows before were checked elsewhere, `note` says by whom. */
export interface CheckedRows {
  from: number;
  note: string;
}

/**
 * "only decode steps 1–8 (positions 128–135) checked here; positions 0–127: <note>" for a row range (its rows in
 * decode steps where they all come from the decode of a generation run).
 */
export function checkedRowsWords(
  rows: CheckedRows,
  T: number,
  generation: RunGeneration | null | undefined,
): string {
  const { from } = rows;
  const span = (what: string, a: number, b: number) => (a === b ? `${what} ${a}` : `${what}s ${a}–${b}`);
  const positions = span('position', from, T - 1);
  const checked =
    generation && from >= generation.prefill
      ? `${span('decode step', from - generation.prefill + 1, T - generation.prefill)} (${positions})`
      : positions;
  return `only ${checked} checked here; ${span('position', 0, from - 1)}: ${rows.note}`;
}

/** Rows from..T−1 of a [T, width] tensor (the tensor itself when from = 0). */
export function rowsOf<A extends Float32Array | Float64Array>(data: A, T: number, from: number): A {
  return from === 0 ? data : (data.subarray((from * data.length) / T) as A);
}

/**
 * The run's first `rows` rows (a parted pair's shared rows: run-generation.ts partedPair): its tokens, every slot's
 * rows, its generated ids up to the one the last kept row chose.
 */
export function runRows(file: RunFile, rows: number): RunFile {
  const T = file.tokens.length;
  if (rows === T) return file;
  const slots = new Map(
    [...file.slots].map(([slot, t]) => [
      slot,
      { ...t, data: t.data.subarray(0, (t.data.length / T) * rows) },
    ]),
  );
  const g = file.generation;
  const generation = g
    ? { prefill: g.prefill, generated: g.generated ? g.generated.slice(0, rows - g.prefill + 1) : null }
    : g;
  return { ...file, tokens: file.tokens.slice(0, rows), slots, generation };
}
