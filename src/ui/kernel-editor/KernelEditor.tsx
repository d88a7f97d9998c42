// Bring your own kernel: pick a fused-kernel slot, start from its shipped WGSL or an exercise, edit it with
// the compiler's messages inline, run the slot's isolated test in the worker, and use the kernel in Run.
import { useEffect, useId, useMemo } from 'react';
import { useStore } from 'zustand';
import { consentKey, kernelDiff } from '../../run/custom-kernel';
import type { Controller } from '../../state/controller';
import {
  type CustomSlotId,
  EXERCISE_LIST,
  type ExerciseId,
  exerciseOf,
  isSlotId,
  SLOTS,
  shippedWgsl,
  slotView,
} from '../../state/kernel-catalog';
import { sourceReady } from '../../state/kernel-editor';
import type { AppStore } from '../../state/store';
import { download } from '../export';
import { CodeEditor } from './CodeEditor';
import { IsolatedTable } from './IsolatedTable';
import { KernelDiffView } from './KernelDiffView';
import './kernel-editor.css';

const NO_DIAGNOSTICS: never[] = [];

export function KernelEditor({ store, controller }: { store: AppStore; controller: Controller }) {
  const desk = controller.kernels;
  const ed = useStore(desk.editor);
  const custom = useStore(store, (s) => s.settings.custom);
  const fused = useStore(store, (s) => s.settings.fused);
  const ready = useStore(store, (s) => s.initStatus === 'ready');
  const llama = useStore(store, (s) => s.model?.family === 'llama');
  const ids = useId();

  // (Re)check when the editor opens and whenever the GPU comes back (a restart keeps the edited source).
  useEffect(() => {
    if (ready) desk.recheck();
  }, [ready, desk]);

  const slot = slotView(ed.slot);
  const check = ed.check.source === ed.source ? ed.check : null;
  const diagnostics = check?.result?.diagnostics ?? NO_DIAGNOSTICS;
  const errors = diagnostics.filter((d) => d.severity === 'error');
  const ok = sourceReady(ed);
  const key = consentKey({ slot: ed.slot, source: ed.source });
  const result = ed.test.key === key && ed.test.result ? ed.test.result : (ed.tested[key] ?? null);
  const testing = ed.test.status === 'running';
  const inUse = custom !== null;
  const slotOff = !fused.includes(slot.fused);
  const diff = useMemo(
    () => kernelDiff(shippedWgsl(ed.slot), { slot: ed.slot, source: ed.source }),
    [ed.slot, ed.source],
  );
  const exercise = ed.exercise ? exerciseOf(ed.exercise) : undefined;
  const edited = diff.added > 0 || diff.removed > 0;

  return (
    <section className="card kernel-editor" aria-labelledby={`${ids}-title`} data-testid="kernel-editor">
      <h2 id={`${ids}-title`}>Bring your own kernel</h2>
      <p className="muted small">
        Replace one fused kernel’s WGSL with your own, test it alone against the fp64 oracle, then run the
        model with it and see where it parts from the reference path.
      </p>
      {llama && (
        <p className="note warn small" role="note" data-testid="kernel-family-note">
          The loaded model is of the Llama family: these slots are GPT-NeoX’s kernels. You can edit them and
          run their isolated tests here, but Run does not take a kernel written in the page on a Llama-family
          model yet; load a GPT-NeoX model (the embedded one) to run the model with it.
        </p>
      )}
      {
        <>
          <div className="ke-controls">
            <label className="inline-label">
              Kernel{' '}
              <select
                value={ed.slot}
                data-testid="kernel-slot"
                onChange={(e) => isSlotId(e.target.value) && desk.selectSlot(e.target.value as CustomSlotId)}
              >
                {SLOTS.map((s) => (
                  <option key={s.id} value={s.id}>
                    {s.title}
                  </option>
                ))}
              </select>
            </label>
            <label className="inline-label">
              Start from{' '}
              <select
                value={ed.exercise ?? ''}
                data-testid="kernel-start"
                onChange={(e) =>
                  e.target.value ? desk.loadExercise(e.target.value as ExerciseId) : desk.selectSlot(ed.slot)
                }
              >
                <option value="">the shipped kernel</option>
                {EXERCISE_LIST.map((x) => (
                  <option key={x.id} value={x.id}>
                    Exercise: {x.title}
                  </option>
                ))}
              </select>
            </label>
            <button
              type="button"
              className="small-btn"
              data-testid="kernel-reset"
              onClick={() => desk.selectSlot(ed.slot)}
            >
              Reset to shipped
            </button>
            <button
              type="button"
              className="small-btn"
              data-testid="kernel-download"
              data-edited={edited ? 'yes' : 'no'}
              onClick={() =>
                edited
                  ? download(
                      new Blob([customFileHeader(slot.title, slot.file) + ed.source], {
                        type: 'text/plain',
                      }),
                      `${ed.slot}.custom.wgsl`,
                    )
                  : download(new Blob([ed.source], { type: 'text/plain' }), baseName(slot.file))
              }
            >
              {edited ? 'Download your .wgsl' : 'Download the shipped .wgsl'}
            </button>
          </div>
          <p className="muted small">
            Replaces <span className="mono">shaders/{slot.file}</span> (its includes stay): {slot.note}
          </p>
          {exercise && (
            <div className="ke-exercise" data-testid="kernel-exercise" data-exercise={exercise.id}>
              <p>
                <strong>Exercise: {exercise.title}.</strong> {exercise.story}
              </p>
              <p>
                <strong>Goal:</strong> {exercise.goal}
              </p>
              <details>
                <summary>Hint</summary>
                <p>{exercise.hint}</p>
              </details>
            </div>
          )}
          <div className="ke-main">
            <div className="ke-code">
              <CodeEditor
                value={ed.source}
                onChange={desk.edit}
                diagnostics={diagnostics}
                label={`WGSL of ${slot.file}`}
              />
              <CheckStatus
                status={check ? check.status : 'checking'}
                message={check?.message ?? null}
                errors={errors}
                warnings={diagnostics.length - errors.length}
                problems={check?.result?.problems ?? []}
                ms={check?.result?.ms ?? null}
              />
            </div>
            <div className="ke-side">
              <label className="check ke-use">
                <input
                  type="checkbox"
                  data-testid="kernel-use"
                  checked={inUse}
                  disabled={!inUse && (!ok || llama)}
                  onChange={(e) => desk.setUse(e.target.checked)}
                />
                Use this kernel in Run (the fused path)
              </label>
              {inUse && slotOff && (
                <p className="note warn small" role="note" data-testid="kernel-slot-off">
                  The fused kernel “{slot.fused}” is switched off: switch it on under Fused kernels, or Run
                  refuses the custom kernel.
                </p>
              )}
              <button
                type="button"
                className="primary"
                data-testid="kernel-test"
                disabled={!ok || testing}
                onClick={() => void desk.test()}
              >
                {testing ? 'Testing…' : 'Run the isolated test'}
              </button>
              {ed.test.status === 'error' && ed.test.key === key && (
                <p className="bad-line small" role="alert">
                  {ed.test.message}
                </p>
              )}
              {result ? (
                <IsolatedTable result={result} />
              ) : (
                <p className="muted small">
                  Fresh seeded random inputs at shapes that are multiples of no tile, outputs poisoned with
                  NaN, checked against the unfused fp64 oracle — the kernel tests’ own harness.
                </p>
              )}
            </div>
          </div>
          <details className="ke-diff" open={diff.lines.length > 0 && diff.lines.length < 40}>
            <summary>
              Changes from the shipped kernel (
              {diff.added === 0 && diff.removed === 0 ? 'none' : `+${diff.added} −${diff.removed}`})
            </summary>
            <KernelDiffView diff={diff} />
          </details>
        </>
      }
    </section>
  );
}

function baseName(file: string): string {
  return file.slice(file.lastIndexOf('/') + 1);
}

/** The comment a downloaded custom kernel starts with: what it replaces, and when it was saved. */
function customFileHeader(title: string, file: string): string {
  return `// Custom ${title} kernel for the divergence explorer: replaces shaders/${file}.\n// Saved ${new Date().toISOString()}.\n`;
}

function CheckStatus(props: {
  status: 'idle' | 'checking' | 'done' | 'error';
  message: string | null;
  errors: { line: number; column: number; message: string }[];
  warnings: number;
  problems: string[];
  ms: number | null;
}) {
  const { status, errors, problems } = props;
  if (status === 'error')
    return (
      <p className="bad-line small" data-testid="kernel-status" data-state="unavailable">
        Not checked: {props.message}
      </p>
    );
  if (status !== 'done')
    return (
      <p className="muted small" data-testid="kernel-status" data-state="checking">
        Checking…
      </p>
    );
  const state = errors.length ? 'errors' : problems.length ? 'interface' : 'ok';
  return (
    <div data-testid="kernel-status" data-state={state}>
      {errors.length > 0 && (
        <ul className="ke-messages" aria-label="Compile errors">
          {errors.map((d) => (
            <li
              key={`${d.line}:${d.column}:${d.message}`}
              className="bad-line"
              data-testid="kernel-diagnostic"
              data-line={d.line}
            >
              Line {d.line}, column {d.column}: {d.message}
            </li>
          ))}
        </ul>
      )}
      {errors.length === 0 && problems.length > 0 && (
        <ul className="ke-messages" aria-label="Binding interface">
          {problems.map((p) => (
            <li key={p} className="bad-line" data-testid="kernel-interface">
              Refused: {p}
            </li>
          ))}
        </ul>
      )}
      {state === 'ok' && (
        <p className="ok-line small">
          Compiles; its bindings and constants match the slot
          {props.warnings ? ` (${props.warnings} warnings)` : ''}
          {props.ms !== null ? ` — checked in ${Math.round(props.ms)} ms` : ''}.
        </p>
      )}
    </div>
  );
}
