// The workspace's modes, picked at the top of the page: each has its settings in the side rail and its
// results in the main view. A mode is one entry of MODES; the page draws the tabs, the rail and the main view
// from it, switches to a mode when something of it opens (a scenario link, a custom-kernel link) and brings
// what opened into view. To add a mode: write its Rail and Main (ModeProps) and add an entry to MODES.
import type { ComponentType } from 'react';
import { useStore } from 'zustand';
import { scenariosWords } from '../run/scenarios';
import type { Controller } from '../state/controller';
import { useRunsImport } from '../state/runs-import';
import { modelRef } from '../state/spec';
import type { AppState, AppStore } from '../state/store';
import { HistoryPanel } from './HistoryPanel';
import { KernelConsent } from './kernel-editor/KernelConsent';
import { KernelEditor } from './kernel-editor/KernelEditor';
import { KernelVerdict } from './kernel-editor/KernelVerdict';
import { Results } from './Results';
import { RunPanel } from './RunPanel';
import { Dumper } from './runs/Dumper';
import { RunsPanel } from './runs/RunsPanel';
import { RunsResults } from './runs/RunsResults';
import { RunsStale } from './runs/RunsStale';
import { ScenarioPicker, ScenarioStage } from './Scenarios';
import { SharePanel } from './SharePanel';

/** What every mode's parts get: the store (state and actions) and the controller (effects: runs, models). */
export interface ModeProps {
  store: AppStore;
  controller: Controller;
}

export interface WorkspaceMode {
  /** Stable id (AppState.mode holds it; e2e selects the tab as data-testid="mode-<id>"). */
  id: string;
  /** The tab's words. */
  label: string;
  /** One line under the tabs saying what the mode is for. */
  blurb: string;
  /** The mode's settings, at the top of the side rail (the model, the GPU and the glossary follow). */
  Rail: ComponentType<ModeProps>;
  /**
   * The mode's results: the main view (under the page-wide messages and a permalink's banner). Its answer
   * should carry data-testid="results" / "results-empty" (the skip link and "a run finished" aim there).
   */
  Main: ComponentType<ModeProps>;
  /**
   * Whether a change of the state opened something that belongs to this mode (a link, a scenario, a file):
   * return a CSS selector of what opened — the page switches to the mode, scrolls it into view and focuses
   * it — or null.
   */
  opened?(next: AppState, prev: AppState): string | null;
}

const explore: WorkspaceMode = {
  id: 'explore',
  label: 'Explore',
  blurb: 'Run the reference and the fused path on a prompt and see where they part.',
  Rail: ({ store, controller }) => (
    <>
      <RunPanel store={store} controller={controller} />
      <SharePanel store={store} />
      <HistoryPanel store={store} controller={controller} />
    </>
  ),
  Main: ({ store }) => <Results store={store} />,
  opened(next, prev) {
    if (next.linked && next.linked !== prev.linked && next.linked.origin === 'link' && !next.customPending)
      return '[data-testid="link-banner"]';
    if (next.storedRun && next.storedRun !== prev.storedRun && next.run.report !== prev.run.report)
      return '[data-testid="results"]';
    return null;
  },
};

const classroom: WorkspaceMode = {
  id: 'classroom',
  label: 'Classroom',
  blurb: `${scenariosWords()}, step by step, with a presenter mode.`,
  Rail: ({ store, controller }) => (
    <>
      <ScenarioPicker store={store} controller={controller} />
      <RunPanel store={store} controller={controller} />
      <SharePanel store={store} />
    </>
  ),
  Main: ({ store, controller }) => (
    <>
      <ScenarioStage store={store} controller={controller} />
      <Results store={store} />
    </>
  ),
  opened(next, prev) {
    const a = next.scenario;
    const b = prev.scenario;
    if (
      a &&
      next.linked?.origin === 'scenario' &&
      (a.id !== b?.id || a.variant !== b?.variant || next.linked !== prev.linked)
    )
      return '[data-testid="scenario"]';
    return null;
  },
};

const kernel: WorkspaceMode = {
  id: 'kernel',
  label: 'Your kernel',
  blurb: 'Write a fused kernel in WGSL, test it alone against the fp64 oracle, then run the model with it.',
  Rail: ({ store, controller }) => (
    <>
      <RunPanel store={store} controller={controller} />
      <SharePanel store={store} />
    </>
  ),
  Main: ({ store, controller }) => (
    <>
      <KernelConsent store={store} controller={controller} />
      <KernelEditor store={store} controller={controller} />
      <KernelVerdict store={store} controller={controller} />
      <Results store={store} />
    </>
  ),
  opened(next, prev) {
    if (next.customPending && next.customPending !== prev.customPending)
      return '[data-testid="kernel-consent"]';
    return null;
  },
};

/** The modes, in the order of their tabs; the first is the page's default. */
/** Your runs: the loaded model's reference for the runs panel (kept with each analysis, put in its link). */
function RunsRail({ store, controller }: ModeProps) {
  const model = useStore(store, (s) => s.model);
  const source = useStore(store, (s) => s.modelSource);
  return (
    <>
      <RunsPanel
        client={() => controller.client()}
        loaded={model ? { name: model.name, sha256: model.sha256 ?? null } : null}
        model={model && source ? modelRef(source, model) : null}
      />
      <Dumper store={store} />
    </>
  );
}

function RunsMain({ store }: ModeProps) {
  const report = useRunsImport((s) => s.report);
  const model = useStore(store, (s) => s.model);
  const source = useStore(store, (s) => s.modelSource);
  if (!report)
    return (
      <section className="card results-empty" data-testid="results-empty">
        <p>
          Drop one or two run files dumped from PyTorch in the side rail (
          <a href="dump_run.py" download="dump_run.py" data-testid="results-empty-dumper-link">
            dump_run.py
          </a>{' '}
          makes them; the four lines to paste are there too): each op of each run is re-run exactly from the
          run's own inputs, and the first op whose error is more than rounding is named by its module path.
        </p>
      </section>
    );
  return (
    <div data-testid="results">
      <RunsStale report={report} modelName={model?.name ?? null} />
      <RunsResults report={report} model={model && source ? modelRef(source, model) : null} />
    </div>
  );
}

const runs: WorkspaceMode = {
  id: 'runs',
  label: 'Your runs',
  blurb: 'Open runs dumped from PyTorch/CUDA and find the op where each one goes wrong.',
  Rail: RunsRail,
  Main: RunsMain,
};

export const MODES: readonly WorkspaceMode[] = [explore, classroom, kernel, runs];

export function modeById(id: string): WorkspaceMode {
  return MODES.find((m) => m.id === id) ?? MODES[0];
}

/** The mode that claims a state change (the last opener wins: a kernel link is also a link), or null. */
export function modeOpened(next: AppState, prev: AppState): { mode: WorkspaceMode; target: string } | null {
  let hit: { mode: WorkspaceMode; target: string } | null = null;
  for (const mode of MODES) {
    const target = mode.opened?.(next, prev) ?? null;
    if (target) hit = { mode, target };
  }
  return hit;
}

/**
 * Brings an element into view and gives it the keyboard (made focusable for it, without a tab stop), after
 * React has drawn it.
 */
export function reveal(selector: string, block: ScrollLogicalPosition = 'start'): void {
  requestAnimationFrame(() =>
    requestAnimationFrame(() => {
      const el = document.querySelector<HTMLElement>(selector);
      if (!el) return;
      if (!el.hasAttribute('tabindex') && !/^(BUTTON|A|INPUT|SELECT|TEXTAREA)$/.test(el.tagName))
        el.setAttribute('tabindex', '-1');
      el.scrollIntoView({ block, behavior: 'instant' as ScrollBehavior });
      el.focus({ preventScroll: true });
    }),
  );
}
