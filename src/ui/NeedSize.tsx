// The size of a link's URL model, asked of its server before anything large is downloaded (HEAD of each file;
// config.json and a shard index read, as they are small), and its Hub repository and commit when the URL is a
// Hub folder (and its host, when it is not the Hub this page uses: a link carries its host) — so the viewer knows
// what the download button will fetch, and from where, before agreeing to it. The download is then held to the
// sizes shown (state/controller/models.ts).
import { useEffect, useState } from 'react';
import { HUB_ORIGIN, parseResolveUrl, readHubMirror, readHubOverride } from '../run/hub';
import type { Controller } from '../state/controller';
import type { UrlProbe } from '../worker/api';
import { formatBytes } from './format';

type State =
  | { state: 'pending' }
  | { state: 'done'; probe: UrlProbe | null }
  | { state: 'error'; message: string };

function storage(): Storage | null {
  try {
    return typeof localStorage === 'undefined' ? null : localStorage;
  } catch {
    return null;
  }
}

function hostOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

export function NeedSize({ url, controller }: { url: string; controller: Controller }) {
  const [st, setSt] = useState<State>({ state: 'pending' });
  useEffect(() => {
    let live = true;
    setSt({ state: 'pending' });
    controller.probeModelUrl(url).then(
      (probe) => live && setSt({ state: 'done', probe }),
      (e: unknown) =>
        live && setSt({ state: 'error', message: (e as { message?: string })?.message ?? String(e) }),
    );
    return () => {
      live = false;
    };
  }, [controller, url]);
  const hub = parseResolveUrl(url);
  // A link carries its host in the model's URL; a host other than the Hub this page uses is said before consent.
  const host = hostOf(url);
  const usual = [HUB_ORIGIN, readHubMirror(storage()), readHubOverride(storage())?.origin];
  const pr = st.state === 'done' ? st.probe : null;
  const shards = pr ? pr.files.filter((f) => /\.safetensors$/.test(f.file)).length : 0;
  return (
    <p data-testid="need-size" data-state={st.state} data-bytes={pr?.totalBytes ?? undefined}>
      {hub && (
        <>
          On the Hugging Face Hub: <span className="mono">{hub.repo}</span> at{' '}
          <span className="mono">{hub.revision.slice(0, 12)}</span>
          {!usual.includes(host) && (
            <>
              {' '}
              <strong data-testid="need-host">
                from <span className="mono">{host}</span>, not from the Hub this page uses
              </strong>
            </>
          )}
          .{' '}
        </>
      )}
      {st.state === 'pending'
        ? 'Asking the server for its size…'
        : st.state === 'error'
          ? `The server could not be asked for its size: ${st.message}`
          : pr?.totalBytes
            ? `${formatBytes(pr.totalBytes)} to download${shards > 1 ? ` (${shards} shards)` : ''}${pr.refusal ? `; too large for this adapter: ${pr.refusal}` : ''}.`
            : 'The server did not say its size.'}
    </p>
  );
}
