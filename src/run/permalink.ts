// The permalink codec: a run (its RunSpec, optionally the sharer's adapter and per-layer summary) in the URL
// fragment, so a link replays the same comparison on the viewer's machine. Format (docs/PERMALINKS.md):
//
//   #r1=<base64url(deflate(UTF-8 JSON of the payload)), no padding>     a run
//   #s=<scenario id>[/<variant>]                                       a classroom scenario (scenarios.ts)
//
// Decoding treats the fragment as hostile: bounded before any work, bounded while inflating, validated field
// by field, unknown keys rejected. Every failure is a LinkError with one readable sentence; nothing else is
// ever thrown. Nothing decoded is executed or injected as HTML: the UI renders prompt and adapter strings as
// React text. The bytes (base64url, the bounded inflate, LinkError) are link-bytes.ts.
import { deflateSync } from 'fflate';
import {
  base64urlDecode,
  base64urlEncode,
  inflateBounded,
  LinkError,
  type LinkErrorReason,
} from './link-bytes';
import { METRICS, type Metric, parseRunSpec, type RunSpec, RunSpecError } from './runspec';
import { SCENARIOS, type Scenario } from './scenarios';

/** The payload format this build writes and reads (the `1` of `#r1=` and the payload's `v`). */
export const LINK_VERSION = 1;

export const LINK_LIMITS = {
  /** The whole fragment, '#' included: longer ones are refused before any decoding. */
  fragmentChars: 16 * 1024,
  /** Inflating stops past this many bytes (a decompression bomb is refused, not expanded). */
  inflatedBytes: 256 * 1024,
  /** Nesting depth of the JSON (a valid payload needs 4). */
  depth: 12,
  adapterChars: 200,
  /** The sharer's cause: its id and its words. */
  causeIdChars: 64,
  causeWordsChars: 200,
  ratios: 1024,
  layer: 1023,
} as const;

export interface SharerSummary {
  /** The metric the ratios are in (the sharer's spec.metric). */
  metric: Metric;
  /** Per layer: error / noise floor on the sharer's machine, or null where it was not finite. */
  ratios: (number | null)[];
  firstDivergentLayer: number | null;
  /** The cause the sharer's run found where the error is born (id and words, short); absent in older links. */
  cause?: { id: string; words: string } | null;
  /**
   * The sharer's headline, the generated text included ('generation-diverged': the prompt agrees, the text does
   * not); absent in older links.
   */
  verdict?: SharerVerdict;
}

export type SharerVerdict = 'agree' | 'diverged' | 'generation-diverged';
const VERDICTS: readonly SharerVerdict[] = ['agree', 'diverged', 'generation-diverged'];

export interface Sharer {
  /** A one-line description of the sharer's GPU adapter (plain text, ≤ 200 characters). */
  adapter: string;
  summary: SharerSummary;
}

export interface LinkPayload {
  v: 1;
  spec: RunSpec;
  /** Run at once on open. A hint only: see autorunAllowed(). */
  autorun?: boolean;
  /** What the sharer saw, shown beside the viewer's own result. */
  sharer?: Sharer;
}

const RUN_PREFIX = `r${LINK_VERSION}=`;
const SCENARIO_PREFIX = 's=';

// ----------------------------------------------------------------------------------------------- validate

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Rejects JSON nested deeper than `max` (iteratively: a hostile depth must not overflow the stack). */
function checkDepth(root: unknown, max: number): void {
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (d > max) throw new LinkError('payload', 'The link is malformed: its data is nested too deeply.');
    for (const child of Object.values(v as Obj)) stack.push([child, d + 1]);
  }
}

function onlyKeys(o: Obj, allowed: readonly string[], where: string, reason: LinkErrorReason): void {
  for (const k of Object.keys(o)) {
    if (!allowed.includes(k)) {
      throw new LinkError(
        reason,
        `The link is malformed: ${where} has an unknown key ${JSON.stringify(k.slice(0, 40))}.`,
      );
    }
  }
}

function sharerError(field: string, detail: string): LinkError {
  return new LinkError('sharer', `The link's sharer summary is invalid: ${field} ${detail}.`);
}

function parseSharer(v: unknown): Sharer {
  if (!isObj(v)) throw sharerError('sharer', 'is not an object');
  onlyKeys(v, ['adapter', 'summary'], 'sharer', 'sharer');
  const adapter = v.adapter;
  if (typeof adapter !== 'string') throw sharerError('adapter', 'is not a string');
  if (adapter.length > LINK_LIMITS.adapterChars)
    throw sharerError('adapter', `is longer than ${LINK_LIMITS.adapterChars} characters`);
  const s = v.summary;
  if (!isObj(s)) throw sharerError('summary', 'is not an object');
  onlyKeys(s, ['metric', 'ratios', 'firstDivergentLayer', 'cause', 'verdict'], 'sharer.summary', 'sharer');
  const metric = s.metric;
  if (typeof metric !== 'string' || !(METRICS as readonly string[]).includes(metric))
    throw sharerError('summary.metric', `is not one of ${METRICS.join(', ')}`);
  const ratios = s.ratios;
  if (!Array.isArray(ratios) || ratios.length > LINK_LIMITS.ratios)
    throw sharerError('summary.ratios', `is not a list of at most ${LINK_LIMITS.ratios} numbers`);
  const outRatios = ratios.map((r, i) => {
    if (r === null) return null;
    if (typeof r !== 'number' || !Number.isFinite(r) || r < 0)
      throw sharerError(`summary.ratios[${i}]`, 'is not a finite non-negative number or null');
    return r;
  });
  const first = s.firstDivergentLayer;
  if (first !== null) {
    if (typeof first !== 'number' || !Number.isInteger(first) || first < 0 || first > LINK_LIMITS.layer)
      throw sharerError(
        'summary.firstDivergentLayer',
        `is not null or an integer in [0, ${LINK_LIMITS.layer}]`,
      );
    if (first >= outRatios.length) throw sharerError('summary.firstDivergentLayer', 'is past the last layer');
  }
  const summary: SharerSummary = { metric: metric as Metric, ratios: outRatios, firstDivergentLayer: first };
  if (s.cause !== undefined) summary.cause = parseSharerCause(s.cause);
  if (s.verdict !== undefined) {
    if (typeof s.verdict !== 'string' || !(VERDICTS as readonly string[]).includes(s.verdict))
      throw sharerError('summary.verdict', `is not one of ${VERDICTS.join(', ')}`);
    summary.verdict = s.verdict as SharerVerdict;
  }
  return { adapter, summary };
}

/** The sharer's cause: null, or an id (letters, digits, '-') and a line of words, both bounded. */
function parseSharerCause(c: unknown): SharerSummary['cause'] {
  if (c === null) return null;
  if (!isObj(c)) throw sharerError('summary.cause', 'is not null or an object');
  onlyKeys(c, ['id', 'words'], 'sharer.summary.cause', 'sharer');
  const { id, words } = c;
  if (typeof id !== 'string' || !/^[a-z0-9-]{1,64}$/.test(id) || id.length > LINK_LIMITS.causeIdChars)
    throw sharerError('summary.cause.id', `is not 1 to ${LINK_LIMITS.causeIdChars} of a-z, 0-9 and '-'`);
  const oneLine = typeof words === 'string' && ![...words].some((ch) => ch < ' ' || ch === '\u007f');
  if (typeof words !== 'string' || words.length > LINK_LIMITS.causeWordsChars || !oneLine)
    throw sharerError(
      'summary.cause.words',
      `is not one line of at most ${LINK_LIMITS.causeWordsChars} characters`,
    );
  return { id, words };
}

/** Validates an untrusted value as a LinkPayload and returns a fresh, normalized copy. Throws LinkError. */
export function parseLinkPayload(v: unknown): LinkPayload {
  checkDepth(v, LINK_LIMITS.depth);
  if (!isObj(v)) throw new LinkError('payload', 'The link is malformed: it does not hold a run.');
  if (v.v !== LINK_VERSION) {
    throw new LinkError(
      'version',
      `The link's payload is version ${JSON.stringify(v.v)?.slice(0, 20)}; this build reads version ${LINK_VERSION}.`,
    );
  }
  onlyKeys(v, ['v', 'spec', 'autorun', 'sharer'], 'the payload', 'payload');
  let spec: RunSpec;
  try {
    spec = parseRunSpec(v.spec);
  } catch (e) {
    if (e instanceof RunSpecError)
      throw new LinkError('spec', `The link's run is invalid: ${e.message}.`, { cause: e });
    throw e;
  }
  const out: LinkPayload = { v: 1, spec };
  if (v.autorun !== undefined) {
    if (typeof v.autorun !== 'boolean')
      throw new LinkError('payload', 'The link is malformed: autorun is not true or false.');
    out.autorun = v.autorun;
  }
  if (v.sharer !== undefined) out.sharer = parseSharer(v.sharer);
  return out;
}

// -------------------------------------------------------------------------------------------------- codec

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Encodes a run as a fragment '#r1=…'. Validates first (so every link it makes decodes); throws LinkError. */
export function encodeLink(payload: LinkPayload): string {
  try {
    const clean = parseLinkPayload(payload);
    const bytes = deflateSync(new TextEncoder().encode(JSON.stringify(clean)), { level: 9 });
    const link = `#${RUN_PREFIX}${base64urlEncode(bytes)}`;
    if (link.length > LINK_LIMITS.fragmentChars) {
      throw new LinkError(
        'too-long',
        `This run does not fit in a link (${link.length} characters; at most ${LINK_LIMITS.fragmentChars}): ` +
          'shorten the prompt or share the report file instead.',
      );
    }
    return link;
  } catch (e) {
    if (e instanceof LinkError) throw e;
    throw new LinkError('internal', 'This run could not be turned into a link.', { cause: e });
  }
}

/**
 * Decodes a fragment ('#r1=…' or '#s=…', the '#' optional) into a validated payload. Throws LinkError with one
 * clear sentence on anything malformed, and never any other exception.
 */
export function decodeLink(fragment: string): LinkPayload {
  try {
    return decodeUnchecked(fragment);
  } catch (e) {
    if (e instanceof LinkError) throw e;
    throw new LinkError('internal', 'This link could not be read.', { cause: e });
  }
}

function decodeUnchecked(fragment: unknown): LinkPayload {
  if (typeof fragment !== 'string') throw new LinkError('format', 'There is no link to read.');
  if (fragment.length > LINK_LIMITS.fragmentChars) {
    throw new LinkError(
      'too-long',
      `The link is too long (${fragment.length} characters; at most ${LINK_LIMITS.fragmentChars}).`,
    );
  }
  const f = fragment.trim().replace(/^#/, '');
  if (f.startsWith(SCENARIO_PREFIX)) return scenarioPayload(f.slice(SCENARIO_PREFIX.length));
  const m = /^r(\d{1,6})=/.exec(f);
  if (!m) {
    throw new LinkError('format', 'This is not a divergence-explorer link (expected #r1=… or #s=…).');
  }
  if (m[1] !== String(LINK_VERSION)) {
    throw new LinkError(
      'version',
      `This link is in format r${m[1].slice(0, 6)}, which this build cannot read (it reads r${LINK_VERSION}).`,
    );
  }
  const data = f.slice(m[0].length);
  if (data.length === 0) throw new LinkError('base64', 'The link is damaged: it carries no data.');
  const bytes = inflateBounded(base64urlDecode(data), LINK_LIMITS.inflatedBytes);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch (e) {
    throw new LinkError('encoding', 'The link is damaged: its data is not UTF-8 text.', { cause: e });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new LinkError('json', 'The link is damaged: its data is not JSON.', { cause: e });
  }
  return parseLinkPayload(json);
}

// ---------------------------------------------------------------------------------------------- scenarios

const SCENARIO_REF = /^([a-z0-9][a-z0-9-]{0,39})(?:\/([1-9]\d?))?$/;

function findScenario(id: string): Scenario | undefined {
  return SCENARIOS.find((s) => s.id === id);
}

/** The short link of a classroom scenario: '#s=<id>', or '#s=<id>/<n>' for its n-th variant (1-based). */
export function scenarioLink(id: string, variant?: number): string {
  const s = findScenario(id);
  if (!s) throw new LinkError('scenario', `There is no scenario ${JSON.stringify(id.slice(0, 40))}.`);
  if (variant === undefined) return `#${SCENARIO_PREFIX}${id}`;
  if (!Number.isInteger(variant) || variant < 1 || variant > (s.variants?.length ?? 0))
    throw new LinkError('scenario', `Scenario ${id} has no variant ${variant}.`);
  return `#${SCENARIO_PREFIX}${id}/${variant}`;
}

function scenarioPayload(ref: string): LinkPayload {
  const m = SCENARIO_REF.exec(ref);
  const s = m ? findScenario(m[1]) : undefined;
  if (!m || !s) {
    throw new LinkError(
      'scenario',
      `This link names a scenario this build does not have (${JSON.stringify(ref.slice(0, 40))}).`,
    );
  }
  let spec = s.spec;
  if (m[2] !== undefined) {
    const v = s.variants?.[Number(m[2]) - 1];
    if (!v) throw new LinkError('scenario', `Scenario ${s.id} has no variant ${m[2]}.`);
    spec = v.spec;
  }
  // A fresh copy: the catalog's spec is never handed out to be mutated.
  return { v: 1, spec: parseRunSpec(spec), autorun: false };
}

// ---------------------------------------------------------------------------------------------- helpers

/** Rounds to 4 significant digits (keeps links short; a ratio is read as an order of magnitude). */
function round4(x: number): number {
  return Number(x.toPrecision(4));
}

/**
 * The sharer's summary of a report: per-layer ratios (rounded; non-finite → null), first divergent layer, and the
 * headline verdict (the generated text included) where the report has one.
 */
export function sharerSummary(
  report: {
    metric: Metric;
    layers: readonly { ratio: number }[];
    firstDivergentLayer: number | null;
    verdict?: SharerVerdict;
  },
  /** The cause found where the error is born (the page's shortCause), carried when given. */
  cause?: { id: string; words: string } | null,
): SharerSummary {
  return {
    ...(cause !== undefined ? { cause } : {}),
    metric: report.metric,
    ratios: report.layers
      .slice(0, LINK_LIMITS.ratios)
      .map((l) => (Number.isFinite(l.ratio) && l.ratio >= 0 ? round4(l.ratio) : null)),
    firstDivergentLayer:
      report.firstDivergentLayer !== null && report.firstDivergentLayer < LINK_LIMITS.ratios
        ? report.firstDivergentLayer
        : null,
    ...(report.verdict !== undefined ? { verdict: report.verdict } : {}),
  };
}

/** A one-line adapter description for a link (plain text, within the length limit). */
export function adapterLine(a: {
  vendor?: string;
  architecture?: string;
  device?: string;
  description?: string;
}): string {
  const raw = a.description || [a.vendor, a.architecture, a.device].filter(Boolean).join(' ');
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  const line = raw.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim() || 'unknown adapter';
  return line.slice(0, LINK_LIMITS.adapterChars);
}

/**
 * Whether to honour a link's autorun: only for an embedded model (a link must not make the viewer's browser
 * fetch from a host the link chose, nor ask for a file), a modest run (≤ 512 tokens of prompt, ≤ 64
 * generated), and no custom kernel (WGSL from a link waits for the viewer's consent).
 */
export function autorunAllowed(p: LinkPayload): boolean {
  if (!p.autorun || p.spec.model.kind !== 'embedded') return false;
  // GPU code from a link never runs before the viewer has seen it and agreed (src/run/custom-kernel.ts).
  if (p.spec.custom) return false;
  const promptLen = 'text' in p.spec.prompt ? p.spec.prompt.text.length : p.spec.prompt.tokens.length;
  return promptLen <= 512 && p.spec.generate <= 64;
}
