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
  firstLayer: boolean;
  /** null: the scenario names no kernel. */
  kernel: boolean | null;
  /** null: the scenario says nothing about determinism. */
  deterministic: boolean | null;
  ok: boolean;
}

type CheckedReport = Pick<Report, 'firstDivergentLayer' | 'bisection' | 'determinism'>;

export function checkExpectation(e: ScenarioExpectation, report: CheckedReport): ExpectationCheck {
  const firstLayer = report.firstDivergentLayer === e.firstDivergentLayer;
  const kernel =
    e.kernel === undefined
      ? null
      : (report.bisection ?? []).some((r) => r.reproduces && r.kernel === e.kernel);
  const deterministic =
    e.deterministic === undefined || report.determinism.runs.length === 0
      ? null
      : report.determinism.identical === e.deterministic;
  return {
    firstLayer,
    kernel,
    deterministic,
    ok: firstLayer && kernel !== false && deterministic !== false,
  };
}
