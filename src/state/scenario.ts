// A classroom scenario as the page shows it: the spec and expectation of the scenario or one of its
// variants, and whether a report bears the expectation out. Pure.
import type { Report } from '../compare/analyze';
import type { RunSpec } from '../run/runspec';
import { type Scenario, type ScenarioExpectation, scenarioById } from '../run/scenarios';

export interface ScenarioRun {
  scenario: Scenario;
  /** 1-based variant, or null for the main run. */
  variant: number | null;
  label: string;
  spec: RunSpec;
  expect: ScenarioExpectation;
}

/** The scenario's main run or its n-th variant (1-based); null when there is no such scenario or variant. */
export function scenarioRun(id: string, variant: number | null): ScenarioRun | null {
  const scenario = scenarioById(id);
  if (!scenario) return null;
  if (variant === null)
    return { scenario, variant: null, label: 'The scenario', spec: scenario.spec, expect: scenario.expect };
  const v = scenario.variants?.[variant - 1];
  return v ? { scenario, variant, label: v.label, spec: v.spec, expect: v.expect } : null;
}

export interface ExpectationCheck {
  /** The headline verdict is the one expected (agree, diverged, generation diverged). */
  verdict: boolean;
  firstLayer: boolean;
  /** null: the scenario names no kernel. */
  kernel: boolean | null;
  /** null: the scenario says nothing about determinism. */
  deterministic: boolean | null;
  /** null: the scenario names no decode finding. */
  decode: boolean | null;
  ok: boolean;
}

type CheckedReport = Pick<Report, 'verdict' | 'firstDivergentLayer' | 'bisection' | 'determinism'> &
  Partial<Pick<Report, 'generation'>>;

export function checkExpectation(e: ScenarioExpectation, report: CheckedReport): ExpectationCheck {
  const verdict = report.verdict === e.verdict;
  const firstLayer = report.firstDivergentLayer === e.firstDivergentLayer;
  const kernel =
    e.kernel === undefined
      ? null
      : (report.bisection ?? []).some((r) => r.reproduces && r.kernel === e.kernel);
  const deterministic =
    e.deterministic === undefined || report.determinism.runs.length === 0
      ? null
      : report.determinism.identical === e.deterministic;
  const d = e.decode;
  const decode =
    d === undefined
      ? null
      : (report.generation?.decode ?? []).some(
          (c) => c.path === d.path && c.born?.step === d.step && c.born?.layer === d.layer,
        );
  return {
    verdict,
    firstLayer,
    kernel,
    deterministic,
    decode,
    ok: verdict && firstLayer && kernel !== false && deterministic !== false && decode !== false,
  };
}

/** What a scenario step talks about, so the page (and presenter mode) can show it. */
export type StepView =
  | { kind: 'ops'; layer: number }
  | { kind: 'bisection' }
  | { kind: 'determinism' }
  | { kind: 'heatmap' }
  | { kind: 'timing' }
  | { kind: 'curve' }
  /** Both paths' generated texts, where they part and why. */
  | { kind: 'text' }
  /** The decode check's finding (the op where the decode's error is born) and the generation's story. */
  | { kind: 'decode' };

const OPEN_LAYER = /\bOpen layer (\d+)\b/i;

/**
 * The view a step's words point at: "Open layer 1…" the layer's ops; bisection, determinism, timing by
 * name; a story about key tiles or a longer prompt the per-token heatmap; the decode check or a decode step its
 * finding; the generated texts the texts and their parting; otherwise the layer chart.
 */
export function stepView(text: string): StepView {
  const open = OPEN_LAYER.exec(text);
  if (open) return { kind: 'ops', layer: Number(open[1]) };
  if (/\bdecode (check|step)\b/i.test(text)) return { kind: 'decode' };
  if (/\bgenerated texts?\b|\bthe texts\b/i.test(text)) return { kind: 'text' };
  if (/\bbisection\b/i.test(text)) return { kind: 'bisection' };
  if (/\bdeterminism\b/i.test(text)) return { kind: 'determinism' };
  if (/\btiming\b/i.test(text)) return { kind: 'timing' };
  if (/\bheatmap\b|\bkey tile\b|\blonger[- ]prompt\b/i.test(text)) return { kind: 'heatmap' };
  return { kind: 'curve' };
}

/** The step that talks about this layer's ops, or null. */
export function stepForLayer(steps: readonly string[], layer: number): number | null {
  const i = steps.findIndex((t) => {
    const v = stepView(t);
    return v.kind === 'ops' && v.layer === layer;
  });
  return i < 0 ? null : i;
}

/** The step to highlight once a run of the scenario is done: past a "Run …" step, else where it is. */
export function stepAfterRun(steps: readonly string[], step: number): number {
  return /^Run\b/.test(steps[step] ?? '') && step + 1 < steps.length ? step + 1 : step;
}

/** The first step about a variant (when one is opened), or null. */
export function stepForVariant(steps: readonly string[]): number | null {
  const i = steps.findIndex((t) => /\bvariant\b/i.test(t));
  return i < 0 ? null : i;
}
