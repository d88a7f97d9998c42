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

/** "decode step 5 (position 37)" / "the prefill (position 3)". */
export function rowWords(row: number, prefill: number): string {
  const s = rowStep(row, prefill);
  return s.phase === 'prefill' ? `the prefill (position ${row})` : `decode step ${s.step} (position ${row})`;
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
