// The "your runs" mode's controls: the model the runs were made with is the loaded one (changed in the model panel),
// a picker (or drop zone) for run A and for run B, Analyze and Cancel — each message beside the control it is
// about, Analyze disabled with the reason while it cannot run.
import { useEffect, useRef, useState } from 'react';
import type { ModelRef } from '../../run/runspec';
import { type RunSide, useRunsImport } from '../../state/runs-import';
import type { EngineClient } from '../../worker/client';

const mb = (n: number) => `${(n / 2 ** 20).toFixed(n < 2 ** 20 ? 2 : 1)} MiB`;

function Picker({ side, busy }: { side: RunSide; busy: boolean }) {
  const picked = useRunsImport((s) => s.picked[side]);
  const message = useRunsImport((s) => (s.message?.at === side ? s.message : null));
  const read = useRunsImport((s) => (picked ? s.read[picked.file.name] : undefined));
  const pick = useRunsImport((s) => s.pick);
  const pickMany = useRunsImport((s) => s.pickMany);
  const input = useRef<HTMLInputElement | null>(null);
  const [over, setOver] = useState(false);
  const id = `run-file-${side}`;
  return (
    // biome-ignore lint/a11y/noStaticElementInteractions: dropping a file is a mouse shortcut; the file input is the keyboard path
    <div
      className={`run-drop${over ? ' run-drop-over' : ''}`}
      data-testid={`run-drop-${side}`}
      onDragOver={(e) => {
        e.preventDefault();
        setOver(true);
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(e) => {
        e.preventDefault();
        setOver(false);
        const files = [...e.dataTransfer.files];
        if (files.length > 0 && !busy) pickMany(side, files);
      }}
    >
      <label htmlFor={id}>
        <strong>Run {side}</strong> {side === 'B' ? '(optional: compared with A)' : ''}
      </label>
      <input
        id={id}
        ref={input}
        type="file"
        accept=".safetensors"
        multiple={side === 'A'}
        disabled={busy}
        data-testid={`run-input-${side}`}
        onChange={(e) => pickMany(side, [...(e.target.files ?? [])])}
      />
      {picked && (
        <p className="small">
          {picked.file.name} · {mb(picked.file.size)}
          {read ? ` · read ${mb(read.loaded)}` : ''}
          {picked.expectedSha256 ? ` · the link expects sha256 ${picked.expectedSha256.slice(0, 12)}…` : ''}{' '}
          <button type="button" className="small-btn" disabled={busy} onClick={() => pick(side, null)}>
            Remove
          </button>
        </p>
      )}
      {message?.note && (
        <p className="small" role="status" data-testid={`run-note-${side}`}>
          {message.text}
        </p>
      )}
      {message && !message.note && (
        <p className="field-error" role="alert" data-testid={`run-error-${side}`}>
          {message.text}
        </p>
      )}
    </div>
  );
}

/** Whether the loaded model is the one a link names (embedded by id, others by the sha256 of their weights). */
function sameModel(ref: ModelRef, loaded: LoadedRef | null): boolean {
  if (!loaded) return false;
  return ref.kind === 'embedded' ? loaded.name === ref.id : loaded.sha256 === ref.sha256;
}

export interface LoadedRef {
  name: string;
  sha256: string | null;
}

function LinkNote({ loaded }: { loaded: LoadedRef | null }) {
  const link = useRunsImport((s) => s.link);
  if (!link) return null;
  const m = link.model;
  const model = m.kind === 'embedded' ? m.id : m.kind === 'url' ? m.url : (m.name ?? 'a model file');
  return (
    <div className="link-note" data-testid="runs-link-note">
      <p>
        <strong>A shared analysis.</strong> Pick the same files; each is checked by its sha256 as it is read:
      </p>
      <ul className="small">
        {link.runs.map((r, i) => (
          <li key={r.sha256}>
            Run {i === 0 ? 'A' : 'B'}: {r.name}
            {r.label ? ` (${r.label})` : ''} · sha256 {r.sha256.slice(0, 12)}…
          </li>
        ))}
      </ul>
      {!sameModel(m, loaded) && (
        <p className="field-error" data-testid="runs-link-model">
          The runs were made with {model}
          {m.kind !== 'embedded' ? ` (sha256 ${m.sha256.slice(0, 12)}…)` : ''}: load it in the model panel
          first.
        </p>
      )}
    </div>
  );
}

/** What the runs analysis's warm-up cost, named as bench/runs.ts names it (its tokens, time and phases). */
function WarmupLine() {
  const w = useRunsImport((s) => s.warmup);
  const warming = useRunsImport((s) => s.warming);
  if (!w && !warming) return null;
  const ms = (n: number) => Math.round(n).toLocaleString('en-US');
  // The analysis's phases (their parts, 'why.cause' and the like, in the title).
  const all = Object.entries(w?.warmup?.durations ?? {}).map(([k, v]) => `${k} ${ms(v)}`);
  const phases = all.filter((p) => !p.includes('.')).join(', ');
  const text = warming
    ? 'Warming up the analysis (once in this page: self-test, pipelines, a first analysis)…'
    : w?.state === 'done' && w.warmup
      ? `Warm-up, once in this page: ${ms(w.warmup.ms)} ms on ${w.warmup.tokens} tokens (${phases} ms).`
      : w?.state === 'paid'
        ? 'Warm-up: paid by the first analysis in this page.'
        : `Warm-up not run: ${w?.why ?? 'not asked'}.`;
  return (
    <p
      className="small"
      data-testid="runs-warmup"
      data-state={warming ? 'running' : w?.state}
      data-started={w?.started}
      data-finished={w?.finished}
      title={all.length ? `${all.join(', ')} ms` : undefined}
    >
      {text}
    </p>
  );
}

function Earlier() {
  const history = useRunsImport((s) => s.history);
  const load = useRunsImport((s) => s.loadHistory);
  const open = useRunsImport((s) => s.openStored);
  useEffect(() => {
    void load();
  }, [load]);
  if (history.length === 0) return null;
  return (
    <details className="runs-history" data-testid="runs-history">
      <summary>Earlier analyses in this browser ({history.length})</summary>
      <ul className="small">
        {history.slice(0, 20).map((a) => (
          <li key={a.id}>
            <button type="button" className="small-btn" onClick={() => open(a)}>
              {a.verdict} · {a.title} · {new Date(a.createdAt).toLocaleString()}
            </button>
          </li>
        ))}
      </ul>
    </details>
  );
}

export function RunsPanel({
  client,
  loaded,
  model,
}: {
  client: () => EngineClient | null;
  loaded: LoadedRef | null;
  /** The loaded model's reference (kept with each analysis, and put in its link). */
  model: ModelRef | null;
}) {
  const modelName = loaded?.name ?? null;
  const status = useRunsImport((s) => s.status);
  const phase = useRunsImport((s) => s.phase);
  const hasA = useRunsImport((s) => s.picked.A !== null);
  const message = useRunsImport((s) => (s.message?.at === 'analyze' ? s.message.text : null));
  const analyze = useRunsImport((s) => s.analyze);
  const cancel = useRunsImport((s) => s.cancel);
  const modelLoaded = useRunsImport((s) => s.modelLoaded);
  // A message about the model loaded before (the runs are of another) goes once another is loaded.
  const modelKey = loaded ? `${loaded.name}\n${loaded.sha256 ?? ''}` : null;
  useEffect(() => modelLoaded(modelKey), [modelLoaded, modelKey]);
  // The analysis's warm-up, asked when the panel opens on a loaded model (the worker runs it once: RunsWarmer).
  const warm = useRunsImport((s) => s.warm);
  const c = client();
  useEffect(() => {
    if (modelKey && c) void warm(c);
  }, [warm, modelKey, c]);
  const busy = status === 'reading' || status === 'analyzing';
  const why = busy
    ? null
    : !modelName
      ? 'Load the model the runs were made with first.'
      : !hasA
        ? 'Pick run A.'
        : null;
  return (
    <section className="card runs-panel" aria-labelledby="runs-panel-title" data-testid="runs-panel">
      <h2 id="runs-panel-title">Your runs</h2>
      <p className="small">
        Run files dumped from PyTorch (dump_run.py, below; docs/RUNS.md) of{' '}
        <strong>{modelName ?? 'no model yet'}</strong> — the model loaded now; change it in the model panel.
      </p>
      <LinkNote loaded={loaded} />
      <Picker side="A" busy={busy} />
      <Picker side="B" busy={busy} />
      <div className="run-actions">
        <button
          type="button"
          className="primary"
          data-testid="analyze-runs"
          disabled={busy || why !== null || !c}
          aria-describedby="analyze-runs-why"
          onClick={() => c && void analyze(c, model)}
        >
          Analyze
        </button>
        {busy && (
          <button type="button" onClick={() => c && cancel(c)} data-testid="cancel-runs">
            Cancel
          </button>
        )}
        <span id="analyze-runs-why" className="small" role="status">
          {busy
            ? status === 'reading'
              ? 'Reading the run files…'
              : `Analyzing: ${phase ?? '…'}`
            : (why ?? '')}
        </span>
      </div>
      {message && (
        <p className="field-error" role="alert" data-testid="run-error-analyze">
          {message}
        </p>
      )}
      <WarmupLine />
      <Earlier />
    </section>
  );
}
