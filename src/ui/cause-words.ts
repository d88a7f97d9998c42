// The cause of an error and its anatomy (src/compare/causes) in the page's words: the one-line answer beside a
// verdict, the rows of "what was ruled out", the cells of the anatomy heatmap, the short cause a permalink carries
// and the lines an export gains. Pure; the components only lay these out.
import type { Anatomy } from '../compare/causes/anatomy';
import type { CauseVerdict, TestedCause } from '../compare/causes/types';
import type { PathWhy } from '../compare/report';

/** A ratio over the floor, short: "0.75×", "12×", "7.7e+6×", "∞". */
export function timesFloor(r: number): string {
  if (Number.isNaN(r)) return 'NaN';
  if (!Number.isFinite(r)) return '∞';
  if (r === 0) return '0×';
  if (r >= 1000 || r < 0.01) return `${r.toExponential(1)}×`;
  return `${Number(r.toPrecision(2))}×`;
}

export type CauseState = 'pending' | 'named' | 'unexplained' | 'race' | 'nonfinite' | 'combined' | 'absent';

/** What the page says about the cause of one born op. */
export interface CauseView {
  state: CauseState;
  /** The named causes' ids (empty unless named). */
  ids: string[];
  /** The answer in one line. */
  headline: string;
  /** How well it explains, or the closest candidate when none does. */
  detail: string | null;
}

/** A named cause, or "no known cause explains it" with the closest candidate tried. */
export function verdictView(c: CauseVerdict): CauseView {
  if (c.named.length > 0) {
    const both = c.named.length > 1 ? ' (they explain it equally)' : '';
    return {
      state: 'named',
      ids: c.named.map((n) => n.id),
      headline: c.named.map((n) => n.words).join('; or ') + both,
      // A residual of 0 (the cause reproduces the run bit for bit) is said as such, not as "all but 0×".
      detail: `${
        c.named[0].residual === 0
          ? 'explains all'
          : `explains all but ${timesFloor(c.named[0].residual)} the floor`
      } of an error ${timesFloor(c.error)} the floor${
        c.runnerUp ? `; the next best, ${c.runnerUp.id}, leaves ${timesFloor(c.runnerUp.residual)}` : ''
      }`,
    };
  }
  const closest = c.tested[0] ?? c.runnerUp;
  return {
    state: 'unexplained',
    ids: [],
    headline: 'no known cause explains it',
    detail: closest
      ? `the closest, ${closest.words} (${closest.id}), still leaves ${timesFloor(closest.residual)} the floor of an error ${timesFloor(c.error)} the floor`
      : `nothing could be tested at this op (its error is ${timesFloor(c.error)} the floor)`,
  };
}

/**
 * The two-path report's cause: `why` undefined while the run goes on is pending; null (no born layer, or the taps
 * skipped) is absent; a race is said as a race before any variant.
 */
export function pathCauseView(why: PathWhy | null | undefined, running: boolean): CauseView {
  if (why === undefined)
    return running
      ? {
          state: 'pending',
          ids: [],
          headline: "re-running the born layer's ops exactly from the fused path's own inputs",
          detail: null,
        }
      : { state: 'absent', ids: [], headline: '', detail: null };
  if (why === null) return { state: 'absent', ids: [], headline: '', detail: null };
  if (why.race)
    return {
      state: 'race',
      ids: [],
      headline: `a race: the bits of ${why.race.tensors.join(', ')} change from run to run`,
      detail: `${why.race.elements} elements differ between fused runs; no fixed variant of the op can reproduce that`,
    };
  if (why.born === null)
    return {
      state: 'combined',
      ids: [],
      headline: 'no single op is past its floor: the error comes from how the ops combine',
      detail: null,
    };
  if (!why.cause) {
    const op = why.checks.find((c) => c.id === why.born);
    return {
      state: 'nonfinite',
      ids: [],
      headline: `${why.born} writes ${op?.nonFinite ?? 'some'} NaN/Inf values`,
      detail: 'a cause is scored on finite values only',
    };
  }
  return verdictView(why.cause);
}

export interface TestedRow {
  id: string;
  family: string;
  words: string;
  residual: string;
  named: boolean;
}

/** Every cause tried, best first, each with its residual over the floor; the named ones marked. */
export function testedRows(c: CauseVerdict): TestedRow[] {
  const named = new Set(c.named.map((n) => n.id));
  return c.tested.map((t: TestedCause) => ({
    id: t.id,
    family: t.family,
    words: t.words,
    residual: timesFloor(t.residual),
    named: named.has(t.id),
  }));
}

/** The sentence of a runs finding without its "probable cause" clause (the page shows the cause beside it). */
export function withoutCauseClause(sentence: string, words: string | undefined): string {
  if (!words) return sentence;
  const clause = `; probable cause: ${words}.`;
  return sentence.endsWith(clause) ? `${sentence.slice(0, -clause.length)}.` : sentence;
}

/** The why's sentence without its "probable cause" clause (the page shows the cause on its own line below it). */
export function whySentenceShown(sentence: string): string {
  const at = sentence.lastIndexOf('; probable cause: ');
  return at < 0 ? sentence : `${sentence.slice(0, at)}.`;
}

export interface AnatomyCell {
  row: number;
  col: number;
  value: number;
}

/** The heatmap's cells (rows × column groups, row-major), dropping none; null when the shape does not match. */
export function anatomyCells(a: Anatomy): AnatomyCell[] | null {
  const R = a.heatmap.rowLabels.length;
  const C = a.heatmap.colLabels.length;
  if (R === 0 || C === 0 || a.heatmap.values.length !== R * C) return null;
  return a.heatmap.values.map((value, i) => ({ row: Math.floor(i / C), col: i % C, value }));
}

/** The largest finite cell, and where it is, in words. */
export function hottestCell(a: Anatomy): string | null {
  const cells = anatomyCells(a);
  if (!cells) return null;
  let best: AnatomyCell | null = null;
  for (const c of cells) if (Number.isFinite(c.value) && (!best || c.value > best.value)) best = c;
  if (!best || best.value === 0) return null;
  return `the largest cell: rows ${a.heatmap.rowLabels[best.row]}, ${a.heatmap.colLabels[best.col]}, ${timesFloor(best.value)} the floor`;
}

/** What a permalink carries of the sharer's cause: the first named id and its words (short), or none. */
export const SHARER_CAUSE_LIMITS = { id: 64, words: 200 } as const;

export function shortCause(why: PathWhy | null | undefined): { id: string; words: string } | null {
  if (!why) return null;
  const v = pathCauseView(why, false);
  if (v.state === 'absent' || v.state === 'pending') return null;
  const id = v.state === 'named' ? v.ids[0] : v.state;
  const words = v.headline.length > SHARER_CAUSE_LIMITS.words ? `${v.headline.slice(0, 199)}…` : v.headline;
  return { id: id.slice(0, SHARER_CAUSE_LIMITS.id), words };
}

/** The lines an export gains: where the error is born and its cause, in words (none when nothing is born). */
export function causeExportLines(why: PathWhy | null | undefined): string[] {
  if (!why) return [];
  const v = pathCauseView(why, false);
  const lines = [`Why: ${why.sentence}`];
  if (v.state === 'named' || v.state === 'unexplained')
    lines.push(`Cause: ${v.headline}${v.ids.length ? ` [${v.ids.join(', ')}]` : ''} (${v.detail})`);
  else if (v.state !== 'absent') lines.push(`Cause: ${v.headline}`);
  if (why.anatomy) lines.push(`Anatomy: ${why.anatomy.sentence}`);
  return lines;
}

/** What a classroom scenario says once its run is done: the cause the explorer found, in one sentence. */
export function foundCauseSentence(why: PathWhy | null | undefined): string | null {
  if (!why) return null;
  const v = pathCauseView(why, false);
  const at = why.born ? ` at ${why.born}` : ` in layer ${why.layer}`;
  switch (v.state) {
    case 'named':
      return `The explorer found the cause${at}: ${v.headline} (${v.ids.join(', ')}; ${v.detail}).`;
    case 'unexplained':
      return `The explorer tested every known cause${at} and none explains it: ${v.detail}.`;
    case 'race':
      return `The explorer found${at} ${v.headline}: a race, which no fixed variant reproduces.`;
    case 'nonfinite':
      return `The explorer found that ${v.headline}.`;
    case 'combined':
      return `The explorer found that in layer ${why.layer} ${v.headline}.`;
    default:
      return null;
  }
}
