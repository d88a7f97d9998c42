// The columns of a Llama-family run's check grid (the page's RunsResults): each layer check's slot or group (its id
// after `layers.{i}.`), in forward order, with the words its column is headed by. Pure words: the page reads them.
import { LLAMA_FAMILY } from '../ops/families';
import type { RunCheckResult } from './runs-report';

/** Each layer step's column words by slot (the registry's OpStep.words and groupWords). */
const STEPS = new Map(LLAMA_FAMILY.layer.map((s) => [s.slot, s]));

/** The column of a layer check: its id after `layers.{i}.` ('q_rot+k_rot+ctx', 'ln2'). */
export function familyColumnOf(c: Pick<RunCheckResult, 'id' | 'layer'>): string {
  return c.id.slice(`layers.${c.layer}.`.length);
}

/**
 * A column's heading: its step's words (ops/families.ts), a group's last step's with the count of steps it takes in,
 * or that step's own words for the group ("rotary + attention").
 */
export function familyColumnWords(column: string): string {
  if (column === 'layer') return 'whole layer';
  const parts = column.split('+');
  const last = STEPS.get(parts[parts.length - 1]);
  const head = last?.words ?? parts[parts.length - 1];
  if (parts.length === 1) return head;
  return last?.groupWords ?? `${head} (+${parts.length - 1})`;
}

/** The layer checks' columns of a Llama-family run's checks, in the order they are first met (forward order). */
export function familyColumns(checks: readonly Pick<RunCheckResult, 'id' | 'layer'>[]): string[] {
  const out: string[] = [];
  for (const c of checks) {
    if (c.layer === null) continue;
    const col = familyColumnOf(c);
    if (!out.includes(col)) out.push(col);
  }
  return out;
}
