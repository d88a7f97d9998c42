// A run of a generation (tools/dump_run.py's dump_generation; docs/RUNS.md): the prefill over the prompt and every
// cached decode step, their rows concatenated along the token axis — a run over all positions. Its __metadata__
// adds `prefill` (the prompt's length: rows 0..prefill−1 come from the prefill, row prefill + s − 1 from decode
// step s) and, optionally, `generated` (every new id, the last one included, which no row reads).

import type { NeoXConfig } from '../numeric/types';
import { ModelLoadError } from './errors';

export interface RunGeneration {
  /** The prompt's length: the rows of the prefill. */
  prefill: number;
  /** Every new id, when the file names them. */
  generated: number[] | null;
}

function bad(file: string, detail: string): ModelLoadError {
  return new ModelLoadError(file, detail);
}

/** `__metadata__.prefill` / `generated` of a run of `tokens`, or null for a run of one forward. */
export function parseRunGeneration(
  meta: Record<string, string>,
  tokens: number[],
  cfg: Pick<NeoXConfig, 'vocabSize'>,
  file: string,
): RunGeneration | null {
  const raw = meta.prefill;
  if (raw === undefined) {
    if (meta.generated !== undefined)
      throw bad(file, "__metadata__ has 'generated' but no 'prefill' (the prompt's length)");
    return null;
  }
  const T = tokens.length;
  if (!/^\s*[1-9][0-9]*\s*$/.test(raw) || Number(raw) > T)
    throw bad(
      file,
      `__metadata__.prefill = ${JSON.stringify(raw.slice(0, 40))} must be the prompt's length, a whole number from 1 to the ${T} tokens`,
    );
  const prefill = Number(raw);
  let generated: number[] | null = null;
  if (meta.generated !== undefined) {
    let v: unknown;
    try {
      v = JSON.parse(meta.generated);
    } catch {
      throw bad(file, '__metadata__.generated is not JSON (expected the list of generated token ids)');
    }
    if (!Array.isArray(v) || v.some((id) => !Number.isInteger(id) || id < 0 || id >= cfg.vocabSize))
      throw bad(
        file,
        `__metadata__.generated must be a JSON list of token ids of this model (vocabulary ${cfg.vocabSize})`,
      );
    // Every generated id but the last is the input of a decode step: the tokens past the prefill.
    const fed = T - prefill;
    if (v.length < fed || v.slice(0, fed).some((id, i) => id !== tokens[prefill + i]))
      throw bad(
        file,
        `__metadata__.generated does not continue the prompt as __metadata__.tokens does (tokens ${prefill}.. are the generated ids fed back)`,
      );
    generated = v as number[];
  }
  return { prefill, generated };
}

/** Where row `row` of a generation run was computed: the prefill, or decode step s (1-based). */
export function rowStep(row: number, prefill: number): { phase: 'prefill' | 'decode'; step: number } {
  return row < prefill ? { phase: 'prefill', step: 0 } : { phase: 'decode', step: row - prefill + 1 };
}

/** "position 3" / "positions 3–5". */
const span = (a: number, b: number, one: string, many: string) =>
  a === b ? `${one} ${a}` : `${many} ${a}–${b}`;

/**
 * Rows `row` … `to` of a generation run of `T` rows in words, where those rows are an unbroken stretch past the
 * floor (run-rows.ts rowsPast; `to` = `row` for one row, or where the stretch is not known). The stretch is said
 * whole, so an error in every row of the prompt does not read as one wrong token:
 * - "decode step 5 (position 37)" / "the prefill (position 3)" — one row ("the prefill (positions 2–3)" short of
 *   the prompt's last row);
 * - "every row of the prompt (the prefill, positions 0–5)" / "the prefill from position 3 on (positions 3–5)", then
 *   " and every decode step after it" where the stretch runs to the last row (" and decode steps 1–2" short of it);
 * - "every row from decode step 2 (position 7) on" / "decode steps 2–3 (positions 7–8)".
 */
export function rowWords(row: number, prefill: number, to = row, T = to + 1): string {
  const end = Math.max(row, Math.min(to, T - 1));
  const s = rowStep(row, prefill);
  if (s.phase === 'decode') {
    const last = rowStep(end, prefill).step;
    if (end === row) return `decode step ${s.step} (position ${row})`;
    if (end === T - 1) return `every row from decode step ${s.step} (position ${row}) on`;
    return `decode steps ${s.step}–${last} (positions ${row}–${end})`;
  }
  if (end === row || end < prefill - 1) return `the prefill (${span(row, end, 'position', 'positions')})`;
  const head =
    row === 0
      ? `every row of the prompt (the prefill, ${span(0, prefill - 1, 'position', 'positions')})`
      : `the prefill from position ${row} on (${span(row, prefill - 1, 'position', 'positions')})`;
  if (end < prefill) return head;
  const steps = end - prefill + 1;
  if (end === T - 1) return `${head} and every decode step after it`;
  return `${head} and ${span(1, steps, 'decode step', 'decode steps')}`;
}

/** Two runs of generations whose texts part: compared on the rows they share (the prompt and the tokens up to the
 * parting), the last of which made the choice that parts them. */
export interface PartedPair {
  /** The rows both runs share: 0 … rows − 1 (their inputs are the same ids). */
  rows: number;
  /** The last shared row: its logits chose differently in A and B. */
  row: number;
  /** What each run chose there (the id after the shared rows), or null where the run does not say (no next id). */
  chose: { a: number | null; b: number | null };
}

interface GenerationRun {
  tokens: number[];
  generation?: RunGeneration | null;
}

/** The ids a run of a generation reads and chooses: its tokens, then its last generated id (which no row reads). */
function streamOf(r: GenerationRun): number[] {
  const g = r.generation!;
  const fed = r.tokens.length - g.prefill;
  return g.generated && g.generated.length > fed ? [...r.tokens, g.generated[fed]] : r.tokens;
}

/**
 * Where two runs of generations of the same prompt part (the rule every reader of a pair applies: run-file.ts
 * checkSameTokens, the analysis), or null where they are not such a pair: either is no generation, their prompts
 * (prefill) differ, or their texts never part and they hold the same rows (the same tokens: a plain pair).
 */
export function partedPair(a: GenerationRun, b: GenerationRun): PartedPair | null {
  const ga = a.generation;
  const gb = b.generation;
  if (!ga || !gb || ga.prefill !== gb.prefill) return null;
  const P = ga.prefill;
  const sa = streamOf(a);
  const sb = streamOf(b);
  let i = 0;
  while (i < sa.length && i < sb.length && sa[i] === sb[i]) i++;
  if (i < P) return null;
  const rows = Math.min(i, a.tokens.length, b.tokens.length);
  if (rows === a.tokens.length && rows === b.tokens.length && i >= Math.min(sa.length, sb.length))
    return null;
  return {
    rows,
    row: rows - 1,
    chose: { a: sa[rows] ?? null, b: sb[rows] ?? null },
  };
}
