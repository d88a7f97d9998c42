// "Copy link": the current settings as a RunSpec in the page's URL fragment (permalink.ts), with the sharer's
// adapter line and per-layer summary once the report shown is a run of exactly these settings. The link is
// always in a read-only field too, since the clipboard may be unavailable (permissions, insecure context).
import { useId, useMemo, useState } from 'react';
import { useStore } from 'zustand';
import { runLink } from '../run/custom-kernel';
import { adapterLine, autorunAllowed, type LinkPayload, sharerSummary } from '../run/permalink';
import { buildSpec, sameRun } from '../state/spec';
import type { AppStore } from '../state/store';
import { shortCause } from './cause-words';
import { linkBase, showInAddressBar } from './nav';

type CopyState = 'idle' | 'copied' | 'failed';

export function SharePanel({ store }: { store: AppStore }) {
  const settings = useStore(store, (s) => s.settings);
  const model = useStore(store, (s) => s.model);
  const source = useStore(store, (s) => s.modelSource);
  const report = useStore(store, (s) => (s.run.status === 'done' ? s.run.report : null));
  const [autorun, setAutorun] = useState(false);
  const [copy, setCopy] = useState<{ state: CopyState; link: string }>({ state: 'idle', link: '' });
  const ids = useId();

  const share = useMemo(() => {
    if (!model || !source)
      return { link: null, error: 'Load a model first.', withResult: false, auto: false };
    const built = buildSpec(settings, source, model);
    if (!built.ok) return { link: null, error: built.message, withResult: false, auto: false };
    const payload: LinkPayload = { v: 1, spec: built.spec };
    if (autorun) payload.autorun = true;
    const withResult = !!report && sameRun(report.spec, built.spec);
    if (report && withResult)
      payload.sharer = {
        adapter: adapterLine(report.adapter),
        summary: sharerSummary(report, shortCause(report.why)),
      };
    try {
      // runLink: a custom kernel too large for a link gives no link and says so (it is never dropped).
      const made = runLink(payload);
      if (!made.ok) return { link: null, error: made.message, withResult, auto: false };
      const link = new URL(made.link, linkBase()).href;
      return { link, error: null, withResult, auto: autorunAllowed(payload) };
    } catch (e) {
      return { link: null, error: (e as Error).message, withResult, auto: false };
    }
  }, [settings, model, source, report, autorun]);

  const onCopy = async () => {
    if (!share.link) return;
    showInAddressBar(share.link);
    try {
      await navigator.clipboard.writeText(share.link);
      setCopy({ state: 'copied', link: share.link });
    } catch {
      setCopy({ state: 'failed', link: share.link });
    }
  };
  const copyState = copy.link === share.link ? copy.state : 'idle';

  return (
    <section className="card" data-testid="share-panel" aria-labelledby={`${ids}-title`}>
      <h2 id={`${ids}-title`}>Share</h2>
      <div className="actions">
        <button type="button" data-testid="copy-link" disabled={!share.link} onClick={() => void onCopy()}>
          Copy link
        </button>
        <span className="muted small" role="status" data-testid="copy-status" data-state={copyState}>
          {copyState === 'copied'
            ? 'Copied.'
            : copyState === 'failed'
              ? 'The clipboard is not available here: copy the link from the field below.'
              : ''}
        </span>
      </div>
      <label htmlFor={`${ids}-link`} className="sr-only">
        Link to this comparison
      </label>
      <input
        id={`${ids}-link`}
        className="link-field mono"
        type="text"
        readOnly
        data-testid="share-link"
        data-with-result={share.withResult ? 'yes' : 'no'}
        value={share.link ?? ''}
        placeholder={share.error ?? ''}
        onFocus={(e) => e.currentTarget.select()}
      />
      {share.error && share.link === null && (
        <p className="muted small" data-testid="share-error">
          {share.error}
        </p>
      )}
      <p className="muted small" data-testid="share-note">
        {share.withResult
          ? 'The link carries your result too (your GPU’s name and the per-layer ratios), shown beside the viewer’s own.'
          : report
            ? 'The settings changed since the report shown: the link carries the settings only.'
            : 'Run first to include your result; the link carries the settings either way.'}
      </p>
      <label className="check">
        <input
          type="checkbox"
          data-testid="share-autorun"
          checked={autorun}
          onChange={(e) => setAutorun(e.target.checked)}
        />
        Run at once when opened
      </label>
      {autorun && !share.auto && share.link && (
        <p className="muted small">
          Only runs on the embedded model (≤ 512 prompt characters, ≤ 64 generated tokens) start by
          themselves; this one will wait for a click.
        </p>
      )}
    </section>
  );
}
