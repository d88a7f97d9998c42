// The verdict covers the text (docs/REPORT.md, "Generation"): a compare whose generated texts part (other than on a
// near tie flipped by rounding), or whose cached decode leaves its own uncached forward by more than the floor, or
// whose decode check finds an op born in the decode steps, does not say AGREE. Pure: the analysis (analysis-after.ts)
// measures, this decides and words it; the page, the CLI and the permalink's summary read the same words.
import type { CauseVerdict } from './causes/types';
import type { CachedCheck, GenerationResult, GenerationVerdict, Report } from './report';

/**
 * One path's cached decode against its uncached forward over the same tokens: `cached` and `full` are the logits
 * rows of decode steps 1..n−1 ([n − 1, V] each), `floor` the logits' floor as a relative L2 (never 0: at least one
 * rounding of the storage precision). A row past k × floor, or a non-finite value where the other is finite, is out.
 */
export function cachedVsFull(
  path: CachedCheck['path'],
  cached: ArrayLike<number>,
  full: ArrayLike<number>,
  V: number,
  floor: number,
  k: number,
): CachedCheck {
  if (cached.length !== full.length)
    throw new Error(`cached decode: ${cached.length} logits against ${full.length} uncached`);
  let num = 0;
  let den = 0;
  let firstStep: number | null = null;
  for (let r = 0; r * V < full.length; r++) {
    let rn = 0;
    let rd = 0;
    for (let i = r * V; i < (r + 1) * V; i++) {
      const e = cached[i] - full[i];
      // Both the same non-finite value: no difference; one non-finite: NaN, which is never within.
      rn += cached[i] === full[i] ? 0 : e * e;
      rd += full[i] * full[i];
    }
    num += rn;
    den += rd;
    const rowRatio = rn === 0 ? 0 : Math.sqrt(rn / rd) / floor;
    if (firstStep === null && !(rowRatio <= k)) firstStep = r + 1;
  }
  const relL2 = num === 0 ? 0 : den === 0 ? Number.POSITIVE_INFINITY : Math.sqrt(num / den);
  const ratio = relL2 === 0 ? 0 : relL2 / floor;
  return { path, relL2, ratio, within: ratio <= k && firstStep === null, firstStep };
}

/** The path whose decode is wrong first: its decode check's finding, else its cached decode's first bad step. */
function badDecode(g: GenerationResult) {
  const checks = (g.decode ?? []).filter((d) => d.verdict === 'diverged');
  const check = checks.find((d) => d.path === 'fused') ?? checks[0] ?? null;
  const cached = (g.cached ?? []).filter((c) => !c.within);
  const cache = cached.find((c) => c.path === 'fused') ?? cached[0] ?? null;
  return { check, cache };
}

/** What the generated text says: agree, a benign near tie, or diverged. */
export function generationVerdictOf(g: GenerationResult): GenerationVerdict {
  const { check, cache } = badDecode(g);
  if (check || cache) return 'diverged';
  if (g.parting && g.parting.kind !== 'near-tie') return 'diverged';
  if (g.parting) return 'near-tie';
  return 'agree';
}

const pathName = (p: string) => (p === 'reference' ? 'the reference path' : 'the fused path');

/** "generated token 3 (decode step 2)" / "generated token 1 (chosen by the prompt's forward)". */
function tokenWords(step: number): string {
  return `generated token ${step + 1} (${step === 0 ? "chosen by the prompt's forward" : `decode step ${step}`})`;
}

/**
 * The generation's finding as one story: where the error is born in the decode (step, position, layer, op, path),
 * where the texts part, and whether the cached decode leaves its uncached forward; then the cause the decode check
 * names at that op ("probable cause: …", or that no known cause explains it). `prefill` is the prompt's length.
 */
export function generationWords(g: GenerationResult, prefill: number): string {
  const verdict = g.verdict ?? generationVerdictOf(g);
  const n = g.reference.ids.length;
  const p = g.parting ?? null;
  if (verdict === 'agree')
    return `both paths generate the same ${n} token${n === 1 ? '' : 's'}${
      g.cached?.length ? ', each cached decode equal to its uncached forward within the floor' : ''
    }`;
  if (verdict === 'near-tie' && p)
    return `the texts part at ${tokenWords(p.step)} on a near tie flipped by rounding (benign: the two candidates are within ${p.k} × the logits' floor)`;
  const { check, cache } = badDecode(g);
  const born = check?.born ?? null;
  const parts: string[] = [];
  let at: string;
  if (born && born.step !== null && born.step > 0) {
    at = `decode step ${born.step}`;
    const op = born.what ?? born.module;
    parts.push(
      `born at decode step ${born.step} (position ${born.row}), ${born.layer === null ? op : `layer ${born.layer}, ${op}`}, on ${pathName(check!.path)}`,
    );
  } else if (check) {
    // Born in the prompt's rows (a decode check from row 0: the Llama family's): the text parts from the prompt on.
    at = born && born.row !== null && born.row < prefill ? 'the prompt' : 'its decode';
    // The check's sentence, its own cause left to the story's last part (said once, with its id).
    const said = check.cause ? check.sentence.replace(/; probable cause: .*$/, '') : check.sentence;
    parts.push(`${pathName(check.path)}'s decode check: ${said.replace(/\.$/, '')}`);
  } else if (cache?.firstStep != null) {
    at = `decode step ${cache.firstStep}`;
    parts.push(
      `${pathName(cache.path)}'s cached decode leaves its uncached forward at decode step ${cache.firstStep} (position ${prefill + cache.firstStep - 1}; ${fmtRatio(cache.ratio)} the logits' floor)`,
    );
  } else if (p)
    at =
      p.step === 0 ? "the first generated token (chosen by the prompt's forward)" : `decode step ${p.step}`;
  else at = 'its decode';
  if (p) {
    const how =
      p.kind === 'decode'
        ? 'where a cached decode chose otherwise than its own uncached forward'
        : p.kind === 'near-tie'
          ? 'on a near tie'
          : `with the fused logits ${fmtRatio(p.fused.ratio)} the floor from exact`;
    parts.push(`the texts part at ${tokenWords(p.step)}, ${how}`);
  } else parts.push(`the texts stay the same for all ${n} tokens`);
  // The cause at the op where the decode's error is born (its decode check's), last: the story, then the why — the
  // named causes in their words (the decode check's sentence has what each leaves), or that none explains it.
  if (check?.cause) parts.push(`probable cause: ${causeShort(check.cause)}`);
  return `generation diverges at ${at}: ${parts.join('; ')}`;
}

/** A cause verdict in the story's words: each named cause and its id ("…; or … (equally)"), else its own words. */
function causeShort(c: CauseVerdict): string {
  if (c.named.length === 0) return c.words;
  const each = c.named.map((n) => `${n.words} [${n.id}]`);
  return each.length === 1 ? each[0] : `${each.join('; or ')} (equally)`;
}

function fmtRatio(x: number): string {
  if (!Number.isFinite(x)) return `${x}×`;
  return x < 100 ? `${x.toPrecision(2)}×` : `${x.toExponential(1)}×`;
}

/**
 * The whole compare's verdict: the prompt's (layers and logits), and where the prompt agrees, the generation's
 * (a near tie stays 'agree').
 */
export function overallVerdict(prompt: 'agree' | 'diverged', g: GenerationResult | null): Report['verdict'] {
  if (prompt === 'diverged') return 'diverged';
  return g?.verdict === 'diverged' ? 'generation-diverged' : 'agree';
}

/**
 * The headline in one line (the CLI's verdict line, the permalink's summary): "agree: …", "diverged: …" or
 * "generation diverged: the prompt agrees; generation diverges at decode step 1: …".
 */
export function headlineWords(r: Report): string {
  const g = r.generation;
  if (r.verdict === 'generation-diverged' && g)
    return `generation diverged: the prompt agrees (no layer exceeds ${r.k} × the noise floor); ${g.words ?? generationWords(g, r.tokens.length)}`;
  if (r.verdict === 'diverged')
    return `diverged: first divergent layer ${r.firstDivergentLayer ?? '(logits)'}`;
  const note = g?.verdict === 'near-tie' && g.words ? `; ${g.words}` : '';
  return `agree: no layer exceeds ${r.k} × the noise floor${note}`;
}
