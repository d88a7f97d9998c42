// The columns of a Llama-family run's check grid (the page's RunsResults): each layer check's slot or group (its id
// after `layers.{i}.`), in forward order, with the words its column is headed by. Pure words: the page reads them.
import type { RunCheckResult } from './runs-report';

const WORDS: Record<string, string> = {
  ln1: 'ln1',
  q: 'q',
  k: 'k',
  v: 'v',
  q_norm: 'q norm',
  k_norm: 'k norm',
  ctx: 'attention core',
  attn_out: 'o_proj',
  ln2_in: 'add (attn)',
  ln2: 'ln2',
  gate: 'gate',
  up: 'up',
  swiglu: 'SwiGLU',
  mlp_out: 'down',
  out: 'add (mlp)',
  layer: 'whole layer',
};

/** The column of a layer check: its id after `layers.{i}.` ('q_rot+k_rot+ctx', 'ln2'). */
export function familyColumnOf(c: Pick<RunCheckResult, 'id' | 'layer'>): string {
  return c.id.slice(`layers.${c.layer}.`.length);
}

/** A column's heading: a slot's short name, a group's last slot's with the steps it takes in ("rotary + attention"). */
export function familyColumnWords(column: string): string {
  const parts = column.split('+');
  const last = parts[parts.length - 1];
  const rotary = parts.some((s) => s.endsWith('_rot'));
  const head = WORDS[last] ?? last;
  return rotary && last === 'ctx'
    ? 'rotary + attention'
    : parts.length > 1
      ? `${head} (+${parts.length - 1})`
      : head;
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
