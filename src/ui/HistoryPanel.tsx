// The run history (IndexedDB, this browser only): every finished run, newest first, with its verdict and
// first divergent layer; Open shows the stored report without re-running it (and restores its settings),
// Delete removes it. Prompts and model names are rendered as text.
import { useId } from 'react';
import { useStore } from 'zustand';
import type { RunSummary } from '../run/history';
import type { Controller } from '../state/controller';
import type { AppStore } from '../state/store';
import { formatWhen } from './spec-words';

function verdictWords(r: RunSummary): string {
  if (r.verdict === 'agree') return 'agree';
  if (r.verdict === 'diverged')
    return r.firstDivergentLayer === null
      ? 'diverged (logits)'
      : `diverged at layer ${r.firstDivergentLayer}`;
  if (r.verdict === 'generation-diverged') return 'generation diverged (the prompt agrees)';
  return 'unknown';
}

export function HistoryPanel({ store, controller }: { store: AppStore; controller: Controller }) {
  const history = useStore(store, (s) => s.history);
  const storedId = useStore(store, (s) => s.storedRun?.id ?? null);
  const running = useStore(store, (s) => s.run.status === 'running');
  const ids = useId();
  return (
    <section
      className="card"
      data-testid="history"
      data-status={history.status}
      aria-labelledby={`${ids}-title`}
    >
      <h2 id={`${ids}-title`}>History</h2>
      {history.status === 'unavailable' ? (
        <p className="muted" data-testid="history-unavailable">
          Runs cannot be kept in this browser{history.message ? ` (${history.message})` : ''}.
        </p>
      ) : history.runs.length === 0 ? (
        <p className="muted small">
          {history.status === 'loading'
            ? 'Reading the history…'
            : 'Every finished run is kept here, in this browser, newest first.'}
        </p>
      ) : (
        <ul className="history-list" aria-label="Stored runs, newest first">
          {history.runs.map((r) => {
            const when = formatWhen(r.createdAt);
            return (
              <li
                key={r.id}
                data-testid="history-item"
                data-id={r.id}
                data-verdict={r.verdict}
                data-layer={r.firstDivergentLayer ?? ''}
                className={r.id === storedId ? 'current' : undefined}
                aria-current={r.id === storedId ? 'true' : undefined}
              >
                <div className="history-head">
                  <time dateTime={r.createdAt}>{when}</time>
                  <span
                    className={`pill ${r.verdict === 'agree' ? 'good' : r.verdict === 'unknown' ? '' : 'bad'}`}
                    data-testid="history-verdict"
                  >
                    {verdictWords(r)}
                  </span>
                </div>
                <div className="history-what small">
                  <span className="muted">{r.model}</span> ·{' '}
                  <span className="prompt-text" data-testid="history-prompt">
                    {r.prompt}
                  </span>
                </div>
                {r.settings && (
                  <div className="history-settings small muted" data-testid="history-settings">
                    {r.settings}
                  </div>
                )}
                <div className="history-actions">
                  <button
                    type="button"
                    className="small-btn"
                    data-testid="history-open"
                    disabled={running}
                    title={r.hasReport ? undefined : 'Only the summary of this run was kept.'}
                    aria-label={`Open the run of ${when}`}
                    onClick={() => void controller.openStoredRun(r.id)}
                  >
                    Open
                  </button>
                  <button
                    type="button"
                    className="small-btn"
                    data-testid="history-delete"
                    aria-label={`Delete the run of ${when}`}
                    onClick={() => void controller.deleteStoredRun(r.id)}
                  >
                    Delete
                  </button>
                </div>
              </li>
            );
          })}
        </ul>
      )}
      {history.notice && (
        <p className="note warn" role="status" data-testid="history-notice">
          {history.notice}
        </p>
      )}
    </section>
  );
}
