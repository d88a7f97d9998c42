// How to make a run file: dump_run.py from this site (the same file as tools/dump_run.py) and the four lines to
// paste into Python for the model and prompt loaded in the page, with a copy button (the lines stay selectable
// where the clipboard is not available).
import { useState } from 'react';
import { useStore } from 'zustand';
import type { AppStore } from '../../state/store';
import { DUMPER_PATH, dumperLines } from './dumper';

/**
 * The prompt as the page holds it: text, or ids typed as "3, 14, 15" (empty when they do not parse). A byte-level
 * tokenizer (the embedded model's) has no Hugging Face tokenizer to load: its ids are the text's UTF-8 bytes.
 */
function promptOf(
  prompt: string,
  mode: 'text' | 'ids',
  tokenizer: string | null,
): { text: string } | { tokens: number[] } {
  if (mode === 'text' && tokenizer === 'bytes')
    return { tokens: Array.from(new TextEncoder().encode(prompt)) };
  if (mode === 'text') return { text: prompt };
  const ids = prompt
    .split(/[\s,]+/)
    .filter((x) => x !== '')
    .map(Number);
  return { tokens: ids.every((n) => Number.isSafeInteger(n) && n >= 0) ? ids : [] };
}

export function Dumper({ store }: { store: AppStore }) {
  const model = useStore(store, (s) => s.model);
  const source = useStore(store, (s) => s.modelSource);
  const prompt = useStore(store, (s) => s.settings.prompt);
  const mode = useStore(store, (s) => s.settings.promptMode);
  const [copied, setCopied] = useState<'yes' | 'no' | null>(null);
  const lines = dumperLines(
    model ? { name: model.name, url: source?.kind === 'url' ? source.url : undefined } : null,
    promptOf(prompt, mode, model?.tokenizer ?? null),
  );
  const text = `${lines.join('\n')}\n`;
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied('yes');
    } catch {
      setCopied('no');
    }
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
      <div className="run-actions">
        <button type="button" data-testid="dumper-copy" onClick={() => void copy()}>
          Copy the four lines
        </button>
        <span className="small" role="status" data-testid="dumper-copied">
          {copied === 'yes'
            ? 'Copied.'
            : copied === 'no'
              ? 'The clipboard is not available here: select the lines above.'
              : ''}
        </span>
      </div>
    </section>
  );
}
