// Any GPT-NeoX or Llama-family checkpoint on the Hugging Face Hub by repository and revision, the whole Pythia
// suite and a few Llama-family models one click away (src/run/hub.ts). Picking a preset or looking up a
// repository asks the Hub's API — nothing large is downloaded — for the commit the revision names, the weights'
// sizes and sha256 and config.json; the detail (HubDetail.tsx) shows them with the GPU memory needed, or the one
// line refusing a model this adapter cannot hold. Download streams it with progress and Cancel (in the model
// panel above), checks every file against its sha256 and pins the commit in the model's link.
import { useEffect, useId, useMemo, useState } from 'react';
import { useStore } from 'zustand';
import {
  checkRepoId,
  checkRevision,
  DEFAULT_REVISION,
  HUB_MIRROR_KEY,
  HUB_ORIGIN,
  HUB_PRESETS,
  hubOrigin,
  LLAMA_HUB_PRESETS,
  parseHubMirror,
  readHubMirror,
  readHubOverride,
} from '../run/hub';
import type { Controller } from '../state/controller';
import type { AppStore } from '../state/store';
import { formatCount } from './format';
import { HubDetail, type Lookup } from './HubDetail';

function storage(): Storage | null {
  try {
    return typeof localStorage === 'undefined' ? null : localStorage;
  } catch {
    return null;
  }
}

function errorText(e: unknown): string {
  if (typeof e === 'object' && e !== null && typeof (e as { message?: unknown }).message === 'string')
    return (e as { message: string }).message;
  return String(e);
}

export function HubPresets({ store, controller }: { store: AppStore; controller: Controller }) {
  const override = useMemo(() => readHubOverride(storage()), []);
  const [mirror, setMirror] = useState<string | null>(() => readHubMirror(storage()));
  const origin = hubOrigin(override, mirror);
  const loadedSha = useStore(store, (s) => s.model?.sha256 ?? null);
  const [cached, setCached] = useState<ReadonlySet<string>>(new Set());
  const [repo, setRepo] = useState('');
  const [revision, setRevision] = useState(DEFAULT_REVISION);
  const [lookup, setLookup] = useState<Lookup | null>(null);
  const ids = useId();

  // What this browser keeps, read again whenever the loaded model changes (a download is cached as it loads).
  // biome-ignore lint/correctness/useExhaustiveDependencies: loadedSha is the trigger, not an input
  useEffect(() => {
    let live = true;
    void controller.cachedModelSha256s().then((list) => {
      if (live) setCached(new Set(list));
    });
    return () => {
      live = false;
    };
  }, [controller, loadedSha]);

  const ask = (r: string, rev: string) => {
    const repoId = r.trim();
    const revId = rev.trim() || DEFAULT_REVISION;
    const key = `${repoId}@${revId}`;
    if (repoId === '') return;
    // A repository id or revision the Hub cannot hold is refused here, before any request.
    try {
      checkRepoId(repoId);
      checkRevision(revId);
    } catch (e) {
      setLookup({ key, state: 'error', message: errorText(e) });
      return;
    }
    setLookup({ key, state: 'pending' });
    controller.resolveHub(repoId, revId, origin).then(
      (probe) =>
        setLookup((cur) =>
          cur?.key !== key
            ? cur
            : probe
              ? { key, state: 'done', probe }
              : { key, state: 'error', message: 'this engine cannot ask the Hub' },
        ),
      (e: unknown) =>
        setLookup((cur) =>
          // A lookup stopped because another was asked says nothing (the newer one answers).
          cur?.key === key && (e as { kind?: unknown })?.kind !== 'cancelled'
            ? { key, state: 'error', message: errorText(e) }
            : cur,
        ),
    );
  };

  const pick = (r: string) => {
    setRepo(r);
    ask(r, revision);
  };

  const selectedRepo = lookup?.key.split('@')[0] ?? null;
  return (
    <section className="hub" data-testid="hub-presets" aria-labelledby={`${ids}-title`}>
      <h3 className="hub-title" id={`${ids}-title`}>
        From the Hugging Face Hub
      </h3>
      {override && (
        <p className="note warn small" data-testid="hub-override">
          Test setting: the Hub here is <span className="mono">{override.origin}</span>, not huggingface.co
          (set in this browser’s storage, key divergence-explorer.hub-test-server).
        </p>
      )}
      {[false, true].map((deduped) => (
        <div key={String(deduped)} className="hub-row">
          <span className="small muted hub-row-label">{deduped ? 'Pythia deduped' : 'Pythia'}</span>
          <div className="hub-list" role="radiogroup" aria-label={deduped ? 'Pythia deduped' : 'Pythia'}>
            {HUB_PRESETS.filter((p) => p.deduped === deduped).map((p) => (
              // biome-ignore lint/a11y/useSemanticElements: a row of buttons that act as radio choices
              <button
                key={p.id}
                type="button"
                role="radio"
                aria-checked={selectedRepo === p.repo}
                aria-label={`${p.repo}: ${formatCount(p.params)} parameters, ${p.layers} layers`}
                title={`${p.repo}: ${formatCount(p.params)} parameters, ${p.layers} layers, d ${p.d}`}
                className="hub-preset"
                data-testid={`preset-${p.id}`}
                onClick={() => pick(p.repo)}
              >
                <strong className="hub-name">{p.size}</strong>
              </button>
            ))}
          </div>
        </div>
      ))}
      <div className="hub-row">
        <span className="small muted hub-row-label">Llama family</span>
        <div className="hub-list hub-list-wide" role="radiogroup" aria-label="Llama family">
          {LLAMA_HUB_PRESETS.map((p) => (
            // biome-ignore lint/a11y/useSemanticElements: a row of buttons that act as radio choices
            <button
              key={p.id}
              type="button"
              role="radio"
              aria-checked={selectedRepo === p.repo}
              aria-label={`${p.repo} (${p.flavour})`}
              title={`${p.repo} (model_type ${p.flavour}): its sizes come from the Hub when you pick it`}
              className="hub-preset"
              data-testid={`preset-${p.id}`}
              onClick={() => pick(p.repo)}
            >
              <strong className="hub-name">{p.id}</strong>
            </button>
          ))}
        </div>
      </div>
      <form
        className="hub-form"
        onSubmit={(e) => {
          e.preventDefault();
          ask(repo, revision);
        }}
      >
        <label>
          <span className="small">Repository</span>
          <input
            type="text"
            value={repo}
            placeholder="EleutherAI/pythia-1b"
            spellCheck={false}
            data-testid="hub-repo"
            onChange={(e) => setRepo(e.target.value)}
          />
        </label>
        <label>
          <span className="small">Revision</span>
          <input
            type="text"
            value={revision}
            placeholder="main"
            spellCheck={false}
            data-testid="hub-revision"
            onChange={(e) => setRevision(e.target.value)}
          />
        </label>
        <button type="submit" data-testid="hub-lookup" disabled={repo.trim() === ''}>
          Look up
        </button>
      </form>
      <HubMirror
        origin={origin}
        mirror={mirror}
        locked={override !== null}
        onChange={(m) => {
          setMirror(m);
          setLookup(null);
        }}
      />
      <p className="muted small">
        Any GPT-NeoX or Llama-family (Llama, Qwen2, Qwen3, Mistral) repository; a revision is a branch (Pythia
        keeps each training step as one: step1000 … step143000), a tag or a commit. Nothing is downloaded
        until you press Download.
      </p>
      {lookup && <HubDetail store={store} controller={controller} lookup={lookup} cached={cached} />}
    </section>
  );
}

/**
 * The Hub this page asks (like the CLI's HF_ENDPOINT): huggingface.co, or a mirror the viewer names, kept in this
 * browser. Validated as an http(s) origin before it is kept; a link never sets it.
 */
function HubMirror({
  origin,
  mirror,
  locked,
  onChange,
}: {
  origin: string;
  mirror: string | null;
  locked: boolean;
  onChange: (m: string | null) => void;
}) {
  const [text, setText] = useState(mirror ?? '');
  const [problem, setProblem] = useState<string | null>(null);
  const save = (value: string | null) => {
    const s = storage();
    try {
      if (value === null) s?.removeItem(HUB_MIRROR_KEY);
      else s?.setItem(HUB_MIRROR_KEY, value);
    } catch {
      // storage switched off: the mirror holds for this page only
    }
    setProblem(null);
    onChange(value);
  };
  return (
    <details className="hub-mirror" data-testid="hub-mirror">
      <summary className="small">
        Hub:{' '}
        <span className="mono" data-testid="hub-mirror-now">
          {origin}
        </span>
      </summary>
      <form
        className="hub-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (text.trim() === '') return save(null);
          try {
            const origin = parseHubMirror(text);
            setText(origin);
            save(origin === HUB_ORIGIN ? null : origin);
          } catch (err) {
            setProblem(errorText(err));
          }
        }}
      >
        <label>
          <span className="small">A mirror of the Hub (its API, files and CORS)</span>
          <input
            type="url"
            value={text}
            placeholder={HUB_ORIGIN}
            spellCheck={false}
            disabled={locked}
            data-testid="hub-mirror-input"
            onChange={(e) => setText(e.target.value)}
          />
        </label>
        <button type="submit" data-testid="hub-mirror-save" disabled={locked}>
          Use
        </button>
        {mirror && (
          <button
            type="button"
            disabled={locked}
            onClick={() => {
              setText('');
              save(null);
            }}
          >
            Back to huggingface.co
          </button>
        )}
      </form>
      {problem && (
        <p className="note warn small" role="alert" data-testid="hub-mirror-problem">
          {problem}
        </p>
      )}
      {locked && <p className="muted small">The test setting above decides the Hub here.</p>}
    </details>
  );
}
