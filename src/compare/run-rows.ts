// Where in a run an op's error first appears: the first row (position) whose error passes k × the floor, from the
// per-row relative L2 error of the run's output against the exact op and the reference path's the same way. In a
// run of a generation (src/model/run-generation.ts) a row is a decode step: the finding is named by it.

import type { RunFile } from '../model/run-file';
import { type RunGeneration, rowWords } from '../model/run-generation';
import type { Precision } from '../numeric/precision';
import { storageUnitRoundoff } from '../numeric/precision';

/**
 * The first row whose relative L2 error passes k × its floor — the reference path's error at that row, never below
 * the reference's whole-tensor error nor one rounding of the run's storage — or null (no per-row errors, or no
 * row past it). NaN/Inf in a row counts as past.
 */
export function firstRowPast(
  rows: ArrayLike<number> | null,
  floorRows: ArrayLike<number> | null,
  floorWhole: number,
  precision: Precision,
  k: number,
): number | null {
  if (!rows) return null;
  const base = Math.max(Number.isFinite(floorWhole) ? floorWhole : 0, storageUnitRoundoff(precision));
  for (let r = 0; r < rows.length; r++) {
    const f = Math.max(base, floorRows && Number.isFinite(floorRows[r]) ? floorRows[r] : 0);
    const e = rows[r];
    if (!(e <= k * f)) return r;
  }
  return null;
}

/** "decode step 5 (position 37), " for a finding at a row of a generation run; '' otherwise. */
export function stepPrefix(
  source: { generation?: RunGeneration | null },
  row: number | null | undefined,
): string {
  const g = source.generation;
  if (!g || row === null || row === undefined) return '';
  return `${rowWords(row, g.prefill)}, `;
}

/** A row of a run in words: its decode step and position in a run of a generation, else its position. */
export function rowInWords(row: number, generation: RunGeneration | null | undefined): string {
  return generation ? rowWords(row, generation.prefill) : `position ${row}`;
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
