// `--hub org/name[@revision]`: the revision resolved through the Hub's API to a commit (src/run/hub-api.ts),
// then every file the model needs at that commit put in the Hugging Face cache (src/cli/hf-cache.ts) — a file
// already there is not downloaded again — each LFS file streamed to disk and checked against its sha256 (the
// LFS oid) before it is kept. The model is then read from the snapshot folder like any model folder. A commit
// already in the cache opens without the network.
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { INDEX_FILE } from '../model/shard-index';
import { HubError, type HubOptions, parseHubRef, resolveHubModel } from '../run/hub-api';
import { CliInputError, fsReason } from './files';
import { hfCacheDir, placeBlob, placeText, repoFolder, writeRef } from './hf-cache';

const COMMIT = /^[0-9a-f]{40}$/;

export interface HubDownloadOptions extends HubOptions {
  /** The cache folder (default: hfCacheDir()). */
  cacheDir?: string;
  /** One line per file downloaded. */
  log?: (line: string) => void;
}

/** The git blob id of a small file (what the Hub's tree listing calls its oid, and the cache its etag). */
function gitOid(text: string): string {
  const body = Buffer.from(text, 'utf8');
  return createHash('sha1')
    .update(Buffer.concat([Buffer.from(`blob ${body.length}\0`), body]))
    .digest('hex');
}

/** Streams `url` to `tmp`, hashing it; the sha256 must be `sha256` or the file is deleted and refused. */
async function download(url: string, tmp: string, path: string, sha256: string, o: HubDownloadOptions) {
  let res: Response;
  try {
    res = await (o.fetch ?? fetch)(url, { redirect: 'follow', signal: o.signal });
  } catch (e) {
    throw new HubError('network', `${path}: could not fetch ${url} (${e instanceof Error ? e.message : e})`);
  }
  if (!res.ok || !res.body) throw new HubError('model', `${path}: HTTP ${res.status} from the Hub`);
  const h = createHash('sha256');
  const out = createWriteStream(tmp);
  let bytes = 0;
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      h.update(chunk);
      bytes += chunk.length;
      if (!out.write(chunk)) await new Promise((r) => out.once('drain', r));
    }
  } catch (e) {
    out.destroy();
    rmSync(tmp, { force: true });
    throw new HubError(
      'network',
      `${path}: the download broke off after ${bytes} bytes (${e instanceof Error ? e.message : e}); nothing was kept`,
    );
  }
  await new Promise<void>((done, fail) => out.end((e?: Error | null) => (e ? fail(e) : done())));
  const got = h.digest('hex');
  if (got !== sha256) {
    rmSync(tmp, { force: true });
    throw new HubError(
      'model',
      `${path}: downloaded bytes hash to sha256 ${got.slice(0, 16)}…, the Hub lists ${sha256.slice(0, 16)}…`,
    );
  }
}

/** Resolves `ref` and fills the cache; returns the snapshot folder to read the model from. */
export async function hubSnapshot(ref: string, o: HubDownloadOptions = {}): Promise<string> {
  const { repo, revision } = parseHubRef(ref);
  const dir = repoFolder(o.cacheDir ?? hfCacheDir(), repo);
  // A commit already in the cache (with its config) needs no network.
  if (COMMIT.test(revision) && existsSync(join(dir, 'snapshots', revision, 'config.json')))
    return join(dir, 'snapshots', revision);
  const s = await resolveHubModel(repo, revision, o);
  const snap = join(dir, 'snapshots', s.commit);
  try {
    mkdirSync(join(dir, 'blobs'), { recursive: true });
    placeText(dir, s.commit, 'config.json', gitOid(s.config), s.config);
    if (s.index) placeText(dir, s.commit, INDEX_FILE, gitOid(s.index.text), s.index.text);
    const files = [...s.weights];
    if (s.tokenizer)
      files.unshift({ path: 'tokenizer.json', size: s.tokenizer.size, sha256: s.tokenizer.sha256 ?? '' });
    for (const f of files) {
      const link = join(snap, f.path);
      if (existsSync(link) && statSync(link).size === f.size) continue;
      const tmpName = f.sha256 || `tok-${s.commit}`;
      const tmp = join(dir, 'blobs', `${tmpName}.incomplete`);
      if (f.sha256) {
        o.log?.(
          `downloading ${repo}/${f.path} (${(f.size / 2 ** 20).toFixed(1)} MiB) at ${s.commit.slice(0, 7)}`,
        );
        await download(`${s.url}${f.path}`, tmp, f.path, f.sha256, o);
        placeBlob(dir, s.commit, f.path, f.sha256, tmp);
      } else {
        // A small file kept in git (tokenizer.json): its etag is its git oid, checked by hashing it here.
        const res = await (o.fetch ?? fetch)(`${s.url}${f.path}`, { redirect: 'follow', signal: o.signal });
        if (!res.ok) throw new HubError('model', `${f.path}: HTTP ${res.status} from the Hub`);
        const text = await res.text();
        placeText(dir, s.commit, f.path, gitOid(text), text);
      }
    }
    writeRef(dir, revision, s.commit);
  } catch (e) {
    if (e instanceof HubError) throw e;
    throw new CliInputError(`the Hugging Face cache ${dir}: ${fsReason(e)}`);
  }
  return snap;
}
