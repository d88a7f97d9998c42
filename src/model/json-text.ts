// Checks on JSON text that JSON.parse cannot make: a leading UTF-8 byte-order mark, the nesting depth (deep
// input overflows the stack of whoever walks the parsed value), and duplicate keys (JSON.parse keeps the last).

import { ModelLoadError, quoteName } from './errors';

/** The text without one leading U+FEFF (a UTF-8 BOM decoded), which JSON.parse refuses. */
export function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** The deepest nesting of arrays and objects in JSON text (strings skipped; malformed text still gets a number). */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // a string: skip to its closing quote, past escapes
      for (i++; i < text.length; i++) {
        const s = text.charCodeAt(i);
        if (s === 0x5c) i++;
        else if (s === 0x22) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > max) max = depth;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/** Refuses JSON text nested deeper than `limit` (before it is parsed or walked), naming the file. */
export function checkJsonDepth(text: string, limit: number, file: string): void {
  const d = jsonDepth(text);
  if (d > limit) {
    throw new ModelLoadError(
      file,
      `JSON is nested ${d} levels deep, more than the ${limit} this file can have`,
    );
  }
}

/**
 * The first key that appears twice in the top-level object of JSON text, or null. The text must be valid JSON
 * (call after JSON.parse succeeded); keys are compared after unescaping.
 */
export function duplicateTopLevelKey(text: string): string | null {
  const seen = new Set<string>();
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const start = i;
      for (i++; i < text.length; i++) {
        const s = text.charCodeAt(i);
        if (s === 0x5c) i++;
        else if (s === 0x22) break;
      }
      if (depth !== 1) continue;
      // a string at depth 1 is a key when a ':' follows it
      let j = i + 1;
      while (j < text.length && /\s/.test(text[j])) j++;
      if (text[j] !== ':') continue;
      const key = JSON.parse(text.slice(start, i + 1)) as string;
      if (seen.has(key)) return key;
      seen.add(key);
    } else if (c === 0x5b || c === 0x7b) depth++;
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return null;
}

/** Refuses a top-level object that names a key twice (which copy wins differs between readers). */
export function checkNoDuplicateKeys(text: string, file: string, what: string): void {
  const dup = duplicateTopLevelKey(text);
  if (dup !== null) {
    throw new ModelLoadError(
      file,
      `${what} ${quoteName(dup)} appears twice (readers disagree on which copy wins)`,
      dup,
    );
  }
}
