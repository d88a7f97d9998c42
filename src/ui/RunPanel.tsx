// The run panel: prompt, generation length, precision, fused kernels (one switch each, with what it does),
// a teaching fault (its plain-words description and the field report it comes from), the first faulty
// layer, tolerance k and the metric; Run / Cancel with per-phase progress. All text is rendered as text.
import { type FormEvent, useEffect, useId, useState } from 'react';
import { useStore } from 'zustand';
import { type FaultId, faultInfo, faultsFor } from '../run/faults';
import { METRICS, type Metric } from '../run/runspec';
import type { Controller } from '../state/controller';
import { FUSED_KERNELS, PRECISION_MODES, type Precision } from '../state/kernel-catalog';
import { extraFaultBlocker, faultBlocker, K_RANGE, MAX_GENERATE } from '../state/settings';
import { phaseLabel, progressFraction } from '../state/spec';
import { type AppStore, canRun } from '../state/store';
import { ErrorAlert } from './ErrorAlert';
import { NumberField, Toggle } from './fields';
import { formatMs, METRIC_HELP, METRIC_LABELS } from './format';
import { Term } from './Glossary';
import { kernelWords } from './kernel-words';

/** The switches whose GPT-NeoX id names another kernel in the Llama family (their words: ops/fused.ts). */
const RENAMED_SWITCHES = ['layernorm', 'linear_gelu'] as const;

const PRECISION_WORDS: Record<Precision, string> = {
  fp32: 'fp32 — 32-bit floats throughout',
  fp16: 'fp16 storage, fp32 accumulation',
  fp16acc: 'fp16 storage and fp16 accumulation',
  bf16: 'bf16 storage, fp32 accumulation',
};

const EXPECT_WORDS: Record<string, string> = {
  diverges: 'expected: diverges',
  benign: 'expected: stays under the noise floor',
  race: 'expected: nondeterministic (a race)',
  'long-prompt': 'expected: wrong only on prompts longer than one key tile (8 tokens)',
  decode:
    'expected: the prompt agrees; the decode steps (the generated text) go wrong: the verdict says generation diverged',
};

/** Opens the classroom and puts the keyboard on the scenario list's first entry. */
function toScenarios(store: AppStore): void {
  store.getState().setMode('classroom');
  requestAnimationFrame(() => {
    const list = document.querySelector<HTMLElement>('[data-testid="scenario-picker"]');
    if (!list) return;
    list.scrollIntoView({ block: 'start', behavior: 'instant' as ScrollBehavior });
    list.querySelector<HTMLButtonElement>('button:not([disabled])')?.focus({ preventScroll: true });
  });
}

function Elapsed({ since }: { since: number | null }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 500);
    return () => clearInterval(t);
  }, []);
  return since === null ? null : <span className="muted small"> · {formatMs(now - since)}</span>;
}

export function RunPanel({ store, controller }: { store: AppStore; controller: Controller }) {
  const settings = useStore(store, (s) => s.settings);
  const run = useStore(store, (s) => s.run);
  const model = useStore(store, (s) => s.model);
  const stored = useStore(store, (s) => s.storedRun !== null);
  const enabled = useStore(store, canRun);
  const waitingFor = useStore(store, (s) => s.waitingFor);
  const inClassroom = useStore(store, (s) => s.mode === 'classroom');
  const setSettings = useStore(store, (s) => s.setSettings);
  const toggleFused = useStore(store, (s) => s.toggleFused);
  const removeExtraFault = useStore(store, (s) => s.removeExtraFault);
  const ids = useId();
  const running = run.status === 'running';
  const blocker = faultBlocker(settings);
  const extraBlocker = extraFaultBlocker(settings);
  const fault = settings.fault ? faultInfo(settings.fault) : null;
  const numLayers = model?.config.numLayers ?? null;
  const noTokenizer = model?.tokenizer === 'token ids only';

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    void controller.run();
  };

  let status = '';
  if (running) {
    status = run.progress ? phaseLabel(run.progress) : 'Starting…';
    if (run.stream)
      status += ` — reference ${run.stream.reference.ids.length} / ${run.stream.total}, fused ${run.stream.fused.ids.length} / ${run.stream.total} tokens`;
  } else if (waitingFor) status = `Run waits for ${waitingFor}…`;
  else if (run.status === 'done')
    status = stored
      ? 'Showing a stored run (not re-run).'
      : `Done in ${run.elapsedMs === null ? '—' : formatMs(run.elapsedMs)}.`;
  else if (run.status === 'cancelled')
    status = 'Cancelled. GPU work stopped and its buffers were returned to the pool.';

  return (
    <section className="card run-panel" aria-labelledby={`${ids}-title`} data-testid="run-panel">
      <h2 id={`${ids}-title`}>Run</h2>
      <form onSubmit={onSubmit}>
        <fieldset className="group" disabled={running}>
          <legend className="sr-only">Input</legend>
          <div className="label-row">
            <label htmlFor={`${ids}-prompt`}>Prompt</label>
            <span className="seg" role="radiogroup" aria-label="Prompt given as">
              {(['text', 'ids'] as const).map((m) => (
                <label key={m} className={settings.promptMode === m ? 'on' : ''}>
                  <input
                    type="radio"
                    name={`${ids}-mode`}
                    value={m}
                    checked={settings.promptMode === m}
                    disabled={m === 'text' && noTokenizer}
                    onChange={() => setSettings({ promptMode: m })}
                  />
                  {m === 'text' ? 'text' : 'token ids'}
                </label>
              ))}
            </span>
          </div>
          <textarea
            id={`${ids}-prompt`}
            data-testid="prompt"
            value={settings.prompt}
            rows={3}
            spellCheck={false}
            placeholder={settings.promptMode === 'ids' ? '3, 14, 15, 92' : 'Text to run through both paths'}
            onChange={(e) => setSettings({ prompt: e.target.value })}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) onSubmit(e);
            }}
          />
          <div className="row-fields">
            <NumberField
              label="Tokens to generate"
              testId="generate"
              value={settings.generate}
              min={0}
              max={MAX_GENERATE}
              onCommit={(v) => setSettings({ generate: v })}
              hint={`0–${MAX_GENERATE}, greedy, on both paths`}
            >
              <label className="check small">
                <input
                  type="checkbox"
                  data-testid="check-decode"
                  checked={settings.checkDecode}
                  disabled={settings.generate === 0}
                  onChange={(e) => setSettings({ checkDecode: e.target.checked })}
                />
                check every decode step op by op, even where the text agrees
              </label>
            </NumberField>
            <div className="field">
              <label htmlFor={`${ids}-precision`}>Precision</label>
              <select
                id={`${ids}-precision`}
                data-testid="precision"
                value={settings.precision}
                onChange={(e) => setSettings({ precision: e.target.value as Precision })}
              >
                {PRECISION_MODES.map((p) => (
                  <option key={p} value={p}>
                    {PRECISION_WORDS[p]}
                  </option>
                ))}
              </select>
              <span className="muted small">
                <Term id="fp16acc">what fp16acc loses</Term>
              </span>
            </div>
          </div>
        </fieldset>

        {/* Run sits right under the prompt: at 1280×800 it is on screen without scrolling. */}
        <div className="actions">
          <button type="submit" className="primary" disabled={!enabled} data-testid="run">
            Run
          </button>
          {running && (
            <button type="button" onClick={() => controller.cancel()} data-testid="cancel">
              Cancel
            </button>
          )}
          {!inClassroom && (
            <button
              type="button"
              className="link-btn"
              data-testid="to-scenarios"
              onClick={() => toScenarios(store)}
            >
              or open a classroom scenario
            </button>
          )}
        </div>
        <ErrorAlert store={store} controller={controller} place="run" />
        <div
          className="run-status"
          role="status"
          aria-live="polite"
          data-testid="run-status"
          data-state={run.status}
        >
          <span data-testid="run-phase" data-phase={run.progress?.phase ?? ''}>
            {status}
          </span>
          {running && <Elapsed since={run.startedAt} />}
        </div>
        {running && (
          <progress
            className="run-progress"
            data-testid="run-progress"
            max={1}
            value={run.progress ? progressFraction(run.progress, run.stream) : 0}
            aria-label="Run progress"
          />
        )}

        <fieldset className="group" disabled={running}>
          <legend>Fused kernels</legend>
          <p className="muted small">
            The fused path uses the kernels switched on; the rest run as in the reference.
          </p>
          {model?.family === 'llama' && (
            <p className="note small" data-testid="llama-kernels">
              This Llama-family model runs its own fused kernels under the switches below (links and reports
              keep GPT-NeoX's ids:{' '}
              {RENAMED_SWITCHES.map((id) => `${id} runs “${kernelWords(id, 'llama').title}”`).join(', ')}).
            </p>
          )}
          <div className="toggles" data-testid="fused-kernels">
            {FUSED_KERNELS.map((k) => (
              <Toggle
                key={k.id}
                name={k.id}
                testId={`fused-${k.id}`}
                checked={settings.fused.includes(k.id)}
                onChange={(on) => toggleFused(k.id, on)}
                label={kernelWords(k.id, model?.family).title}
                description={kernelWords(k.id, model?.family).description}
              />
            ))}
          </div>
        </fieldset>

        <fieldset className="group" disabled={running}>
          <legend>Plant a fault (teaching)</legend>
          <div className="field">
            <label htmlFor={`${ids}-fault`}>Fault</label>
            <select
              id={`${ids}-fault`}
              data-testid="fault"
              value={settings.fault ?? ''}
              onChange={(e) =>
                setSettings({ fault: e.target.value === '' ? null : (e.target.value as FaultId) })
              }
            >
              <option value="">None — compare the kernels as they are</option>
              {faultsFor(model?.family).map((f) => {
                const off = !settings.fused.includes(f.kernel);
                return (
                  <option key={f.id} value={f.id} disabled={off && settings.fault !== f.id}>
                    {f.title}
                    {off ? ` (needs “${kernelWords(f.kernel, model?.family).title}” on)` : ''}
                  </option>
                );
              })}
            </select>
          </div>
          {settings.extraFaults.length > 0 && (
            <div className="extra-faults" data-testid="extra-faults">
              <p className="muted small">Also planted (the link names more than one fault):</p>
              <ul className="plain">
                {settings.extraFaults.map((f) => (
                  <li key={f.id} data-testid="extra-fault" data-fault={f.id}>
                    {faultInfo(f.id).title}{' '}
                    {f.fromLayer === undefined ? '(layer drawn from the seed)' : `from layer ${f.fromLayer}`}{' '}
                    <button type="button" className="small-btn" onClick={() => removeExtraFault(f.id)}>
                      Remove
                    </button>
                  </li>
                ))}
              </ul>
              {extraBlocker && (
                <p className="note warn" role="note">
                  {extraBlocker} Switch it on, or remove the fault.
                </p>
              )}
            </div>
          )}
          {fault && (
            <div className="fault-card" data-testid="fault-info">
              <p>{fault.description}</p>
              <p className="muted small">
                <strong>Field report:</strong> {fault.story}
              </p>
              <p className="muted small">
                Lives in <em>{kernelWords(fault.kernel, model?.family).title}</em>;{' '}
                {EXPECT_WORDS[fault.expect] ?? fault.expect}.
              </p>
              {blocker && (
                <p className="note warn" role="note" data-testid="fault-blocked">
                  {blocker} Switch it on to plant this fault.
                </p>
              )}
              <div className="row-fields">
                <fieldset className="field bare">
                  <legend className="field-label">First faulty layer</legend>
                  <label className="check">
                    <input
                      type="checkbox"
                      data-testid="fault-layer-auto"
                      checked={settings.faultLayer === null}
                      onChange={(e) => setSettings({ faultLayer: e.target.checked ? null : 0 })}
                    />
                    auto (seeded)
                  </label>
                </fieldset>
                {/* Keyed: the two fields must not share one input (and its draft), or a value typed while
                    one replaces the other can be lost. */}
                {settings.faultLayer === null ? (
                  <NumberField
                    key="seed"
                    label="Seed"
                    testId="seed"
                    value={settings.seed}
                    min={0}
                    onCommit={(v) => setSettings({ seed: v })}
                    hint="picks the first faulty layer"
                  />
                ) : (
                  <NumberField
                    key="layer"
                    label="Layer"
                    testId="fault-layer"
                    value={settings.faultLayer}
                    min={0}
                    max={numLayers === null ? undefined : numLayers - 1}
                    onCommit={(v) => setSettings({ faultLayer: v })}
                    hint={
                      numLayers === null ? 'from this layer on' : `0–${numLayers - 1}, from this layer on`
                    }
                  />
                )}
              </div>
            </div>
          )}
        </fieldset>

        <fieldset className="group" disabled={running}>
          <legend>Verdict</legend>
          <p className="muted small">
            Diverged = error above the <Term id="threshold">threshold</Term>, k × the <Term id="floor" />.
          </p>
          <div className="row-fields">
            <NumberField
              label="Tolerance k"
              testId="k"
              value={settings.k}
              min={K_RANGE[0]}
              max={K_RANGE[1]}
              step="any"
              onCommit={(v) => setSettings({ k: v })}
              hint="diverged = error > k × noise floor"
            />
            <div className="field">
              <label htmlFor={`${ids}-metric`}>Metric</label>
              <select
                id={`${ids}-metric`}
                data-testid="metric"
                value={settings.metric}
                onChange={(e) => setSettings({ metric: e.target.value as Metric })}
                aria-describedby={`${ids}-metric-hint`}
              >
                {METRICS.map((m) => (
                  <option key={m} value={m}>
                    {METRIC_LABELS[m]}
                  </option>
                ))}
              </select>
              <span id={`${ids}-metric-hint`} className="muted small">
                {METRIC_HELP[settings.metric]}
              </span>
            </div>
          </div>
        </fieldset>
      </form>
    </section>
  );
}
