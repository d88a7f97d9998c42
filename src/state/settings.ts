// The run settings: everything the user sets before pressing Run (turned into a RunSpec by buildSpec, spec.ts),
// their defaults, the clamping that keeps only valid values, the settings that reproduce a RunSpec, and why a
// chosen fault cannot run (its fused kernel is off).
import { FUSED_KERNELS, type FusedKernelId } from '../engine/fused-kernels';
import type { Precision } from '../numeric/precision';
import { type FaultId, faultInfo } from '../run/faults';
import { type CustomKernelSpec, defaultRunSpec, LIMITS, type Metric, type RunSpec } from '../run/runspec';

export const MAX_GENERATE = LIMITS.generate;
export const K_RANGE = LIMITS.k;

/** A fault of a RunSpec (the faults after the first, which the fault picker holds). */
export interface SpecFault {
  id: FaultId;
  fromLayer?: number;
}

/** Everything the user sets before pressing Run; turned into a RunSpec by buildSpec (spec.ts). */
export interface RunSettings {
  prompt: string;
  /** 'text' is encoded by the model's tokenizer; 'ids' is a list of token ids such as "3, 14, 15". */
  promptMode: 'text' | 'ids';
  generate: number;
  precision: Precision;
  fused: FusedKernelId[];
  fault: FaultId | null;
  /** First faulty layer; null = drawn from the seed. */
  faultLayer: number | null;
  /** More faults, planted by a link that names several (the picker holds one); in the RunSpec after it. */
  extraFaults: SpecFault[];
  seed: number;
  k: number;
  metric: Metric;
  /** A kernel written in the page, used in the fused path (null: the shipped kernels). */
  custom: CustomKernelSpec | null;
  /** Check every decode step op by op (RunSpec.checkDecode). */
  checkDecode: boolean;
}

export function clampInt(v: number, lo: number, hi: number, fallback: number): number {
  if (!Number.isFinite(v)) return fallback;
  return Math.min(hi, Math.max(lo, Math.round(v)));
}

export function clampK(v: number, fallback: number): number {
  if (!Number.isFinite(v)) return fallback;
  return Math.min(K_RANGE[1], Math.max(K_RANGE[0], v));
}

export function defaultSettings(): RunSettings {
  const d = defaultRunSpec();
  return {
    prompt: 'text' in d.prompt ? d.prompt.text : '',
    promptMode: 'text',
    generate: d.generate,
    precision: d.precision,
    fused: [...d.fused],
    fault: null,
    faultLayer: null,
    extraFaults: [],
    seed: d.seed,
    k: d.k,
    metric: d.metric,
    custom: null,
    checkDecode: false,
  };
}

function blockerOf(id: FaultId, fused: readonly FusedKernelId[]): string | null {
  const f = faultInfo(id);
  if (fused.includes(f.kernel)) return null;
  const k = FUSED_KERNELS.find((x) => x.id === f.kernel);
  return `“${f.title}” lives in the fused kernel “${k?.title ?? f.kernel}”, which is switched off.`;
}

/** Why the chosen fault cannot run now (its kernel is off), or null. */
export function faultBlocker(s: RunSettings): string | null {
  return s.fault ? blockerOf(s.fault, s.fused) : null;
}

/** Why one of the extra (link-planted) faults cannot run now, or null. */
export function extraFaultBlocker(s: RunSettings): string | null {
  for (const f of s.extraFaults) {
    const b = blockerOf(f.id, s.fused);
    if (b) return b;
  }
  return null;
}

/** Keeps only valid settings values; unknown or out-of-range ones leave the old value. */
export function sanitize(old: RunSettings, patch: Partial<RunSettings>): RunSettings {
  const next = { ...old, ...patch };
  next.generate = clampInt(next.generate, 0, MAX_GENERATE, old.generate);
  next.seed = clampInt(next.seed, 0, 2 ** 31 - 1, old.seed);
  next.k = clampK(next.k, old.k);
  if (next.faultLayer !== null) next.faultLayer = clampInt(next.faultLayer, 0, 1023, 0);
  // Token ids as text ("3, 14, 15") may be longer than a text prompt: up to 10 characters per id.
  const maxPrompt = next.promptMode === 'ids' ? LIMITS.tokens * 10 : LIMITS.promptChars;
  if (next.prompt.length > maxPrompt) next.prompt = next.prompt.slice(0, maxPrompt);
  // Keep the catalog order (and no duplicates) whatever order kernels were switched on in.
  next.fused = FUSED_KERNELS.map((k) => k.id).filter((id) => next.fused.includes(id));
  // An extra fault picked again in the picker is no longer extra (a RunSpec lists each fault once).
  if (next.fault !== null) next.extraFaults = next.extraFaults.filter((f) => f.id !== next.fault);
  return next;
}

/** The settings that reproduce a RunSpec (its model is not a setting: the controller loads it). */
export function settingsOf(spec: RunSpec): RunSettings {
  const [first, ...rest] = spec.faults;
  return {
    prompt: 'text' in spec.prompt ? spec.prompt.text : spec.prompt.tokens.join(', '),
    promptMode: 'text' in spec.prompt ? 'text' : 'ids',
    generate: spec.generate,
    precision: spec.precision,
    fused: [...spec.fused],
    fault: first ? first.id : null,
    faultLayer: first?.fromLayer ?? null,
    extraFaults: rest.map((f) =>
      f.fromLayer === undefined ? { id: f.id } : { id: f.id, fromLayer: f.fromLayer },
    ),
    seed: spec.seed,
    k: spec.k,
    metric: spec.metric,
    // Never restored directly: a spec's custom kernel becomes customPending and runs only after consent.
    custom: null,
    checkDecode: spec.checkDecode === true,
  };
}
