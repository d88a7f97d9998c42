// A custom kernel in links and stored runs: its diff against the shipped kernel (what a viewer reads before
// agreeing to run GPU code that came with a link), the identity a consent is given to, and the link of a run
// that carries one (or, when the kernel makes it too long, why there is none).
import { structuredPatch } from 'diff';
import { textHash } from '../gpu/pipelines';
import { customSlot } from '../kernels/custom/slots';
import { LinkError } from './link-bytes';
import { encodeLink, LINK_LIMITS, type LinkPayload } from './permalink';
import type { CustomKernelSpec } from './runspec';

export interface DiffLine {
  kind: 'same' | 'add' | 'del' | 'hunk';
  text: string;
  /** 1-based line in the shipped file (del, same) or in the custom one (add); null for hunk headers. */
  line: number | null;
}

export interface KernelDiff {
  file: string;
  added: number;
  removed: number;
  lines: DiffLine[];
}

/** The unified diff (3 lines of context) from the shipped file to the custom source. */
export function kernelDiff(shipped: string, custom: CustomKernelSpec): KernelDiff {
  const file = customSlot(custom.slot).kernel.file;
  const patch = structuredPatch(`shaders/${file}`, `custom ${custom.slot}`, shipped, custom.source, '', '', {
    context: 3,
  });
  const lines: DiffLine[] = [];
  let added = 0;
  let removed = 0;
  for (const h of patch.hunks) {
    lines.push({
      kind: 'hunk',
      text: `@@ shipped lines ${h.oldStart}–${h.oldStart + Math.max(0, h.oldLines - 1)}, custom lines ${h.newStart}–${h.newStart + Math.max(0, h.newLines - 1)} @@`,
      line: null,
    });
    let o = h.oldStart;
    let n = h.newStart;
    for (const l of h.lines) {
      const text = l.slice(1);
      if (l.startsWith('+')) {
        lines.push({ kind: 'add', text, line: n++ });
        added++;
      } else if (l.startsWith('-')) {
        lines.push({ kind: 'del', text, line: o++ });
        removed++;
      } else if (l.startsWith(' ')) {
        lines.push({ kind: 'same', text, line: o++ });
        n++;
      }
    }
  }
  return { file, added, removed, lines };
}

/** What a viewer's consent is given to: this slot with exactly this source. */
export function consentKey(custom: CustomKernelSpec): string {
  return `${custom.slot}:${textHash(custom.source)}:${custom.source.length}`;
}

export type RunLink = { ok: true; link: string } | { ok: false; message: string; chars: number | null };

/**
 * The link of a run. A run with a custom kernel whose link would pass the 16 KiB fragment limit gets no link
 * (the kernel is never dropped from it silently): the message says how long it would be and what to do.
 */
export function runLink(payload: LinkPayload): RunLink {
  try {
    return { ok: true, link: encodeLink(payload) };
  } catch (e) {
    if (!(e instanceof LinkError)) throw e;
    const m = /\((\d+) characters/.exec(e.message);
    const chars = m ? Number(m[1]) : null;
    if (e.reason === 'too-long' && payload.spec.custom) {
      return {
        ok: false,
        chars,
        message:
          `With the custom ${payload.spec.custom.slot} kernel this run's link would be ${chars ?? 'over'} characters, ` +
          `more than the ${LINK_LIMITS.fragmentChars} a link may hold, so there is no link: the kernel is not ` +
          'dropped from it. Shorten the kernel (comments and blank lines count, compressed) or share its WGSL file.',
      };
    }
    return { ok: false, chars, message: e.message };
  }
}
