// Settings -> RunSpec (validated by the same parser a permalink goes through), the model reference a spec
// names, and the words and fraction shown for analyze()'s progress phases. Pure functions.
import { parseTokenIds } from '../model/tokenizer';
import { type ModelRef, parseRunSpec, type RunSpec } from '../run/runspec';
import type { CompareProgress, LoadedModel } from '../worker/api';
import type { RunSettings } from './settings';
import type { ModelSource } from './store';

/** The RunSpec's model field for what is loaded. */
export function modelRef(source: ModelSource, model: LoadedModel): ModelRef {
  // A Llama-family model's flavour travels with it (links and reports name the family); GPT-NeoX's refs are as before.
  const flavour = model.family === 'llama' && model.flavour ? { flavour: model.flavour } : {};
  switch (source.kind) {
    case 'embedded':
      return { kind: 'embedded', id: source.id };
    case 'url':
      return {
        kind: 'url',
        url: source.url,
        sha256: model.sha256,
        ...(model.files ? { files: model.files } : {}),
        ...flavour,
      };
    case 'files':
      return {
        kind: 'file',
        sha256: model.sha256,
        name: source.name.slice(0, 200),
        ...(model.files ? { files: model.files } : {}),
        ...flavour,
      };
  }
}

export type BuiltSpec = { ok: true; spec: RunSpec } | { ok: false; message: string };

/** Builds and validates the RunSpec of the current settings; a message names what is wrong. */
export function buildSpec(settings: RunSettings, source: ModelSource, model: LoadedModel): BuiltSpec {
  let prompt: RunSpec['prompt'];
  if (settings.promptMode === 'ids') {
    try {
      prompt = { tokens: parseTokenIds(settings.prompt, model.config.vocabSize) };
    } catch (e) {
      return { ok: false, message: `Prompt: ${(e as Error).message}` };
    }
  } else {
    prompt = { text: settings.prompt };
  }
  const faults: RunSpec['faults'] = [
    ...(settings.fault
      ? [
          settings.faultLayer === null
            ? { id: settings.fault }
            : { id: settings.fault, fromLayer: settings.faultLayer },
        ]
      : []),
    ...settings.extraFaults.map((f) => ({ ...f })),
  ];
  const candidate: RunSpec = {
    version: 1,
    model: modelRef(source, model),
    prompt,
    generate: settings.generate,
    precision: settings.precision,
    fused: [...settings.fused],
    faults,
    seed: settings.seed,
    k: settings.k,
    metric: settings.metric,
    ...(settings.custom ? { custom: { ...settings.custom } } : {}),
    ...(settings.checkDecode && settings.generate > 0 ? { checkDecode: true as const } : {}),
  };
  try {
    return { ok: true, spec: parseRunSpec(candidate) };
  } catch (e) {
    return { ok: false, message: (e as Error).message };
  }
}

/** Whether the model loaded now is the one a RunSpec names (and ready to run). */
export function modelMatches(
  ref: ModelRef,
  state: { modelStatus: string; model: LoadedModel | null; modelSource: ModelSource | null },
): boolean {
  const { model, modelSource } = state;
  if (state.modelStatus !== 'ready' || !model || !modelSource) return false;
  if (ref.kind === 'embedded') return modelSource.kind === 'embedded' && modelSource.id === ref.id;
  // Not the embedded model even when its weights hash the same: a run on it names the embedded id, so it
  // would not be the run the spec describes.
  return modelSource.kind !== 'embedded' && model.sha256 === ref.sha256;
}

/** The model a RunSpec names, as an identity: the embedded id, or the weights' sha256 (URL or file alike). */
export function modelKey(ref: ModelRef): string {
  return ref.kind === 'embedded' ? `embedded:${ref.id}` : `sha256:${ref.sha256}`;
}

/**
 * A RunSpec as a string that is equal exactly when two specs describe the same comparison: the model by its
 * identity (modelKey), the fused kernels as a set; every other field as it is.
 */
export function specKey(spec: RunSpec): string {
  return JSON.stringify([
    spec.version,
    modelKey(spec.model),
    spec.prompt,
    spec.generate,
    spec.precision,
    [...spec.fused].sort(),
    spec.faults.map((f) => [f.id, f.fromLayer ?? null]),
    spec.seed,
    spec.k,
    spec.metric,
    // Only present with a custom kernel, so the keys of runs without one are unchanged.
    ...(spec.custom ? [[spec.custom.slot, spec.custom.source]] : []),
    // Likewise only present when the decode steps are checked.
    ...(spec.checkDecode ? ['checkDecode'] : []),
  ]);
}

export function sameRun(a: RunSpec, b: RunSpec): boolean {
  return specKey(a) === specKey(b);
}

/** analyze()'s phases in the order they run. */
export const PHASES = [
  'sources',
  'oracle',
  'local',
  'comparisons',
  'verdict',
  'bisection',
  'determinism',
  'generation',
] as const;

const PHASE_WORDS: Record<(typeof PHASES)[number], string> = {
  sources: 'Both paths (every tap, timed)',
  oracle: 'fp64-class oracle (the noise floor)',
  local: 'Local error, layer by layer',
  comparisons: 'Both paths, the oracle and every comparison on the GPU',
  verdict: 'The verdict, layer by layer',
  bisection: 'Bisection: one fused kernel at a time',
  determinism: 'Determinism: the fused path twice more',
  generation: 'Generating on both paths',
};

const LOCAL_LAYER = /^local layer (\d+)$/;

/** The decode check that starts by itself within the generation phase (analysis-after.ts). */
const DECODE_CHECK = 'decode check';

/** Words for a progress event, e.g. "Local error: layer 3 of 4". */
export function phaseLabel(p: CompareProgress): string {
  if (p.phase === DECODE_CHECK) return 'The text diverges: checking every decode step op by op';
  const m = LOCAL_LAYER.exec(p.phase);
  if (m) return `Local error: layer ${Number(m[1]) + 1} of ${p.total}`;
  return (PHASE_WORDS as Record<string, string>)[p.phase] ?? p.phase;
}

/**
 * Overall fraction done in [0, 1] (phases weigh the same; the local phase advances per layer, generation
 * per token generated on both paths when the tokens are streamed).
 */
export function progressFraction(
  p: CompareProgress,
  stream?: { reference: { ids: unknown[] }; fused: { ids: unknown[] }; total: number } | null,
): number {
  const m = LOCAL_LAYER.exec(p.phase);
  const n = PHASES.length;
  // The tokens fill most of the generation phase; a decode check that starts by itself takes the rest.
  if (p.phase === 'generation' && stream && stream.total > 0) {
    const done = (stream.reference.ids.length + stream.fused.ids.length) / (2 * stream.total);
    return (PHASES.indexOf('generation') + 0.8 * Math.min(1, done)) / n;
  }
  if (p.phase === DECODE_CHECK) return (PHASES.indexOf('generation') + 0.9) / n;
  if (m) {
    const i = PHASES.indexOf('local');
    const sub = p.total > 0 ? Math.min(1, Math.max(0, Number(m[1]) / p.total)) : 0;
    return (i + sub) / n;
  }
  const i = (PHASES as readonly string[]).indexOf(p.phase);
  if (i < 0) return p.total > 0 ? Math.min(1, Math.max(0, p.done / p.total)) : 0;
  return i / n;
}

/**
 * What differs between the run a report answers and the settings shown now, in words ('the prompt',
 * 'the fused kernels', …); empty when they describe the same comparison.
 */
/**
 * What changed since a report of `shown` (its model named `shownName`) was run, for the settings built now and the
 * model loaded now: a model loaded in place of the report's is named first, by both names (with their families:
 * a model picked from disk may be called just 'model'), also where the settings
 * are no valid run on it (a fault its family does not offer); else what specChanges names.
 */
export function changesSince(
  shown: RunSpec,
  shownName: string,
  built: BuiltSpec,
  now: { ref: ModelRef; name: string },
): string[] {
  const model =
    modelKey(shown.model) !== modelKey(now.ref) ? [`the model to ${now.name} from ${shownName}`] : [];
  if (!built.ok) return model.length > 0 ? model : ['the settings (not a valid run now)'];
  return [...model, ...specChanges(shown, built.spec).filter((w) => w !== 'the model')];
}

export function specChanges(shown: RunSpec, now: RunSpec): string[] {
  const out: string[] = [];
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  if (modelKey(shown.model) !== modelKey(now.model)) out.push('the model');
  if (!same(shown.prompt, now.prompt)) out.push('the prompt');
  if (shown.generate !== now.generate) out.push('tokens to generate');
  if (shown.precision !== now.precision) out.push('the precision');
  if (!same([...shown.fused].sort(), [...now.fused].sort())) out.push('the fused kernels');
  const faults = (s: RunSpec) => s.faults.map((f) => [f.id, f.fromLayer ?? null]);
  if (!same(faults(shown), faults(now))) out.push('the fault');
  // The seed only picks the first faulty layer when one is drawn.
  else if (shown.seed !== now.seed && now.faults.some((f) => f.fromLayer === undefined)) out.push('the seed');
  if (shown.k !== now.k) out.push('k');
  if (shown.metric !== now.metric) out.push('the metric');
  if (!same(shown.custom ?? null, now.custom ?? null)) out.push('the custom kernel');
  if ((shown.checkDecode ?? false) !== (now.checkDecode ?? false)) out.push('the decode check');
  return out;
}
