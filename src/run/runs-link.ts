// A link to an analysis of runs from elsewhere (docs/PERMALINKS.md, "#u1="): run files are too large for a link,
// so it carries the model reference, each run's file name, sha256 and label, k, and the sharer's findings. Whoever
// opens it is asked for the same files (checked by hash when read) and sees the sharer's numbers beside their own.
// Same encoding as run links (raw DEFLATE, base64url); everything validated, nothing from it executed or injected.
import { deflateSync } from 'fflate';
import { base64urlDecode, base64urlEncode, inflateBounded, LinkError } from './link-bytes';
import { adapterLine, LINK_LIMITS } from './permalink';
import { type ModelRef, parseModel } from './runspec';

export const RUNS_PREFIX = 'u1=';

export interface RunsLinkPayload {
  v: 1;
  model: ModelRef;
  runs: { name: string; sha256: string; label: string | null }[];
  k: number;
  sharer?: {
    adapter: string;
    /** Per run: the first divergent check (null: agrees) and its ratio to the floor. */
    findings: { run: string; check: string | null; layer: number | null; ratio: number | null }[];
  };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const bad = (what: string): never => {
  throw new LinkError('payload', `The link is damaged: ${what}.`);
};
const SHA = /^[0-9a-f]{64}$/;
const CHECK = /^(embed|final_norm|lm_head|layers\.\d{1,4}\.[a-z_0-9]{1,20})$/;

function text(v: unknown, what: string, max: number): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are refused
  if (typeof v !== 'string' || v.length > max || /[\u0000-\u001f\u007f]/.test(v))
    return bad(`${what} is not a short line of text`);
  return v;
}

export function parseRunsLink(v: unknown): RunsLinkPayload {
  if (!isObj(v) || v.v !== 1) return bad('not a runs link of version 1');
  for (const k of Object.keys(v))
    if (!['v', 'model', 'runs', 'k', 'sharer'].includes(k)) bad(`unknown key '${k.slice(0, 20)}'`);
  let model: ModelRef;
  try {
    model = parseModel(v.model);
  } catch (e) {
    throw new LinkError('spec', `The link's model is not valid: ${(e as Error).message}`);
  }
  if (!Array.isArray(v.runs) || v.runs.length < 1 || v.runs.length > 2) bad('it must name one or two runs');
  const runs = (v.runs as unknown[]).map((r, i) => {
    if (!isObj(r)) return bad(`run ${i} is not an object`);
    if (typeof r.sha256 !== 'string' || !SHA.test(r.sha256)) bad(`run ${i} has no sha256`);
    return {
      name: text(r.name, `run ${i}'s name`, 200),
      sha256: r.sha256 as string,
      label: r.label === null ? null : text(r.label, `run ${i}'s label`, 200),
    };
  });
  if (typeof v.k !== 'number' || !(v.k >= 1 && v.k <= 1e6)) bad('k is not a number in [1, 1e6]');
  const out: RunsLinkPayload = { v: 1, model, runs, k: v.k as number };
  if (v.sharer !== undefined) {
    const s = v.sharer;
    if (!isObj(s) || !Array.isArray(s.findings) || s.findings.length > 2)
      return bad('the sharer part is malformed');
    out.sharer = {
      adapter: text(s.adapter, "the sharer's adapter", LINK_LIMITS.adapterChars),
      findings: (s.findings as unknown[]).map((f) => {
        if (!isObj(f) || (f.run !== 'A' && f.run !== 'B')) return bad('a finding names no run');
        if (f.check !== null && (typeof f.check !== 'string' || !CHECK.test(f.check)))
          bad('a finding names no check');
        const layer =
          f.layer === null ||
          (Number.isInteger(f.layer) && (f.layer as number) >= 0 && (f.layer as number) <= LINK_LIMITS.layer)
            ? f.layer
            : bad('a finding has a bad layer');
        const ratio =
          f.ratio === null || (typeof f.ratio === 'number' && f.ratio >= 0 && Number.isFinite(f.ratio))
            ? f.ratio
            : bad('a finding has a bad ratio');
        return {
          run: f.run as string,
          check: f.check as string | null,
          layer: layer as number | null,
          ratio: ratio as number | null,
        };
      }),
    };
  }
  return out;
}

/** What a link reads of an analysis' report (src/compare/runs-report.ts). */
export interface LinkableAnalysis {
  k: number;
  adapter: Parameters<typeof adapterLine>[0];
  runs: { file: string; sha256: string | null; label: string | null }[];
  findings: { run: string; check: string | null; layer: number | null }[];
  checks: { run: string; id: string; ratio: number }[];
}

/** The link of an analysis: the report's runs (with their sha256) and the sharer's findings. */
export function runsLinkOf(report: LinkableAnalysis, model: ModelRef): string {
  const payload: RunsLinkPayload = {
    v: 1,
    model,
    runs: report.runs.map((r) => {
      if (!r.sha256) throw new LinkError('internal', 'A run without its sha256 cannot be linked.');
      return { name: r.file.slice(0, 200), sha256: r.sha256, label: r.label?.slice(0, 200) ?? null };
    }),
    k: report.k,
    sharer: {
      adapter: adapterLine(report.adapter),
      findings: report.findings.map((f) => {
        const c = report.checks.find((x) => x.run === f.run && x.id === f.check);
        const ratio = c && Number.isFinite(c.ratio) ? Number(c.ratio.toPrecision(4)) : null;
        return { run: f.run, check: f.check, layer: f.layer, ratio };
      }),
    },
  };
  const clean = parseRunsLink(JSON.parse(JSON.stringify(payload)));
  const bytes = deflateSync(new TextEncoder().encode(JSON.stringify(clean)), { level: 9 });
  return `#${RUNS_PREFIX}${base64urlEncode(bytes)}`;
}

/** Whether a fragment is a runs link (the page routes it to the "your runs" mode). */
export function isRunsLink(fragment: string): boolean {
  return fragment.replace(/^#/, '').startsWith(RUNS_PREFIX);
}

/** Decodes '#u1=…'; throws LinkError with one sentence on anything malformed, never another exception. */
export function decodeRunsLink(fragment: string): RunsLinkPayload {
  try {
    if (fragment.length > LINK_LIMITS.fragmentChars) throw new LinkError('too-long', 'The link is too long.');
    const f = fragment.trim().replace(/^#/, '');
    if (!f.startsWith(RUNS_PREFIX))
      throw new LinkError('format', 'This is not a link to an analysis of runs (#u1=…).');
    const bytes = inflateBounded(base64urlDecode(f.slice(RUNS_PREFIX.length)), LINK_LIMITS.inflatedBytes);
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
    } catch (e) {
      throw new LinkError('json', 'The link is damaged: its data is not JSON text.', { cause: e });
    }
    return parseRunsLink(json);
  } catch (e) {
    if (e instanceof LinkError) throw e;
    throw new LinkError('internal', 'This link could not be read.', { cause: e });
  }
}
