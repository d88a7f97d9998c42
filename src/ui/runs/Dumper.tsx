// How to make a run file: dump_run.py from this site (the same file as tools/dump_run.py) and the four lines to
// paste into Python for the model and prompt loaded in the page, with a copy button (the lines stay selectable
// where the clipboard is not available).
import { useEffect, useState } from 'react';
import { useStore } from 'zustand';
import type { AppStore } from '../../state/store';
import { DUMPER_PATH, dumperLines, NO_IDS, promptOf } from './dumper';

type Copied = 'yes' | 'no' | null;

export function Dumper({ store }: { store: AppStore }) {
  const model = useStore(store, (s) => s.model);
  const source = useStore(store, (s) => s.modelSource);
  const prompt = useStore(store, (s) => s.settings.prompt);
  const mode = useStore(store, (s) => s.settings.promptMode);
  const report = useStore(store, (s) => s.run.report);
  const [copied, setCopied] = useState<{ state: Copied; n: number }>({ state: null, n: 0 });
  const lastIds = report && model && report.model.name === model.name ? report.tokens : null;
  const ids = promptOf(prompt, mode, model?.tokenizer ?? null, lastIds);
  const blank = 'tokens' in ids && ids.tokens.length === 0;
  const lines = dumperLines(
    model ? { name: model.name, url: source?.kind === 'url' ? source.url : undefined } : null,
    ids,
  );
  const text = `${lines.join('\n')}\n`;
  // "Copied" holds a few seconds on the button and is said again (the count changes the words) at each click.
  useEffect(() => {
    if (copied.state === null) return;
    const t = setTimeout(() => setCopied((c) => ({ ...c, state: null })), 4000);
    return () => clearTimeout(t);
  }, [copied]);
  const copy = async () => {
    let state: Copied = 'yes';
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      state = 'no';
    }
    setCopied((c) => ({ state, n: c.n + 1 }));
  };
  return (
    <section className="card dumper" data-testid="dumper" aria-labelledby="dumper-title">
      <h2 id="dumper-title">Dump a run from PyTorch</h2>
      <p className="small">
        Save{' '}
        <a href={DUMPER_PATH} download="dump_run.py" data-testid="dumper-link">
          dump_run.py
        </a>{' '}
        (torch and safetensors only) beside your script, then run these four lines for{' '}
        <strong>{model?.name ?? 'the model'}</strong> and this page’s prompt:
      </p>
      <pre className="dumper-lines mono small" data-testid="dumper-lines">
        {lines.map((l, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: the four lines are fixed in number and order
          <span key={i} className="dumper-line">
            {l}
          </span>
        ))}
      </pre>
      {blank && (
        <p className="small field-error" data-testid="dumper-no-ids">
          This model has no tokenizer and the prompt is not token ids yet: type them in the Run panel (token
          ids, e.g. 3, 14, 15), or replace {NO_IDS} in the last line with yours.
        </p>
      )}
      <div className="run-actions">
        <button
          type="button"
          data-testid="dumper-copy"
          data-copied={copied.state === 'yes' ? 'yes' : undefined}
          className={copied.state === 'yes' ? 'copied' : undefined}
          onClick={() => void copy()}
        >
          {copied.state === 'yes' ? 'Copied ✓' : 'Copy the four lines'}
        </button>
        <span className="small" role="status" aria-live="polite" data-testid="dumper-copied">
          {copied.state === 'yes'
            ? `Copied the four lines to the clipboard${copied.n > 1 ? ` (${copied.n} times)` : ''}.`
            : copied.state === 'no'
              ? 'The clipboard is not available here: select the lines above.'
              : ''}
        </span>
      </div>
    </section>
  );
}
