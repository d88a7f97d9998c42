// How the CLI ends on an error: one line on stderr, and an exit status chosen by the error's kind (never by
// its message): 2 for bad input (a model file, the command line, a spec, a limit, a Hub repository that is not
// there or is gated), 4 for the network or the Hub (unreachable, timed out, cut short, rate-limited, an answer
// that is garbage or more bytes than listed), 3 for everything else (the GPU, a bug).
import { oneLine } from '../model/errors';

/** The kinds that mean bad input. */
const INPUT_KINDS = new Set(['input', 'model']);

/** The error's kind: the `kind` field our error classes carry, or 'input' for node:util's parseArgs errors. */
export function errorKind(e: unknown): string {
  const kind = (e as { kind?: unknown } | null)?.kind;
  if (typeof kind === 'string') return kind;
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) return 'input';
  return 'internal';
}

export function exitCodeFor(e: unknown): number {
  const kind = errorKind(e);
  if (kind === 'network') return 4;
  return INPUT_KINDS.has(kind) ? 2 : 3;
}

/** `error: <one line>`: control characters escaped, whatever the message held. */
export function formatError(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  return `error: ${oneLine(msg)}`;
}
