// The prompt, the number of new tokens, Generate / Stop, progress and the output (prompt and continuation
// styled apart). All text is rendered by React as text, never as HTML.
import { type FormEvent, useEffect, useId, useState } from 'react';
import { useStore } from 'zustand';
import type { Controller } from '../state/controller';
import { type AppStore, canGenerate, MAX_N, MIN_N } from '../state/store';

export function GeneratePanel({ store, controller }: { store: AppStore; controller: Controller }) {
  const prompt = useStore(store, (s) => s.prompt);
  const n = useStore(store, (s) => s.n);
  const run = useStore(store, (s) => s.run);
  const modelStatus = useStore(store, (s) => s.modelStatus);
  const enabled = useStore(store, canGenerate);
  const setPrompt = useStore(store, (s) => s.setPrompt);
  const setN = useStore(store, (s) => s.setN);
  const ids = useId();
  // The number field keeps what is typed until it loses focus; the store holds the clamped value.
  const [nDraft, setNDraft] = useState(String(n));
  useEffect(() => setNDraft(String(n)), [n]);

  const running = run.status === 'running';
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    setNDraft(String(store.getState().n));
    void controller.generate();
  };

  let statusText = '';
  if (running) statusText = `Generating… ${run.newIds.length} / ${run.n} tokens`;
  else if (run.status === 'done') statusText = `Done: ${run.newIds.length} / ${run.n} tokens`;
  else if (run.status === 'cancelled') statusText = `Stopped after ${run.newIds.length} / ${run.n} tokens`;
  else if (run.status === 'error') statusText = `Failed after ${run.newIds.length} / ${run.n} tokens`;
  else if (modelStatus === 'loading') statusText = 'Loading the model…';

  return (
    <section className="card generate" aria-labelledby={`${ids}-title`}>
      <h2 id={`${ids}-title`}>Generate</h2>
      <form onSubmit={onSubmit}>
        <label htmlFor={`${ids}-prompt`}>Prompt</label>
        <textarea
          id={`${ids}-prompt`}
          data-testid="prompt"
          value={prompt}
          rows={3}
          spellCheck={false}
          onChange={(e) => setPrompt(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) onSubmit(e);
          }}
        />
        <div className="row">
          <div className="field">
            <label htmlFor={`${ids}-n`}>New tokens</label>
            <input
              id={`${ids}-n`}
              data-testid="n"
              type="number"
              inputMode="numeric"
              min={MIN_N}
              max={MAX_N}
              step={1}
              value={nDraft}
              aria-describedby={`${ids}-n-hint`}
              onChange={(e) => {
                setNDraft(e.target.value);
                if (e.target.value.trim() !== '') setN(Number(e.target.value));
              }}
              onBlur={() => setNDraft(String(store.getState().n))}
            />
            <span id={`${ids}-n-hint`} className="muted small">
              {MIN_N}–{MAX_N}
            </span>
          </div>
          <div className="actions">
            <button type="submit" className="primary" disabled={!enabled} data-testid="generate">
              Generate
            </button>
            {running && (
              <button type="button" onClick={() => controller.cancel()} data-testid="stop">
                Stop
              </button>
            )}
          </div>
        </div>
      </form>
      <p className="run-status" role="status" data-testid="run-status" data-state={run.status}>
        {statusText}
      </p>
      {running && run.n > 0 && (
        <progress
          className="run-progress"
          max={run.n}
          value={run.newIds.length}
          aria-label="Tokens generated"
        />
      )}
      <section aria-labelledby={`${ids}-out`}>
        <h3 className="sub" id={`${ids}-out`}>
          Output
        </h3>
        <div className="output" data-testid="output" aria-busy={running}>
          {run.status === 'idle' ? (
            <span className="muted">The prompt and its continuation appear here.</span>
          ) : (
            <>
              <span className="prompt-text" data-testid="output-prompt">
                {run.prompt}
              </span>
              <span
                className="generated"
                data-testid="generated"
                data-ids={run.newIds.join(',')}
                data-prompt-ids={run.promptIds.join(',')}
              >
                {run.text}
              </span>
            </>
          )}
        </div>
        {(run.status === 'done' || run.status === 'cancelled') && (
          <p className="legend muted small">
            <span className="swatch prompt-text">prompt</span>{' '}
            <span className="swatch generated">generated</span>
          </p>
        )}
      </section>
    </section>
  );
}
