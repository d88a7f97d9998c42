// `--hub org/name[@revision]`: the revision resolved through the Hub's API to a commit (src/run/hub-api.ts),
// then every file the model needs at that commit put in the Hugging Face cache (src/cli/hf-cache.ts). Every read
// is bounded (src/run/hub-fetch.ts): the small files capped, each listed file refused past its listed size or
// short of it, a connect and an idle timeout. The cache is never poisoned: each file is downloaded to
// blobs/<etag>.incomplete, its size and hash checked (sha256 for LFS files, the git oid for small ones) and
// renamed to blobs/<etag>; only when every file of the model is there is snapshots/<commit>/ made, at once (built
// under another name and renamed), and refs/<branch> written after it. A failure removes what it began and
// leaves no snapshot. A commit already in the cache opens without the network; a branch whose refs/ names a
// snapshot there opens offline when the Hub cannot be reached (or HF_HUB_OFFLINE=1).
import { createHash } from 'node:crypto';
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { parseResolveUrl } from '../run/hub';
import { HubError, type HubOptions, type HubSnapshot, parseHubRef, resolveHubModel } from '../run/hub-api';
import { fetchListed } from '../run/hub-fetch';
import { CliInputError, fsReason, quoteUser } from './files';
import { hfCacheDir, linkSnapshot, repoFolder, writeRef } from './hf-cache';

const COMMIT = /^[0-9a-f]{40}$/;

export interface HubDownloadOptions extends HubOptions {
  /** The cache folder (default: hfCacheDir()). */
  cacheDir?: string;
  /** One line per file downloaded (and when a cached branch is used offline). */
  log?: (line: string) => void;
  /** Use the cache only (HF_HUB_OFFLINE=1). */
  offline?: boolean;
}

/** The git blob id of a file's bytes (what the Hub's tree listing calls its oid, and the cache its etag). */
function gitOid(body: Uint8Array): string {
  return createHash('sha1').update(`blob ${body.length}\0`).update(body).digest('hex');
}

/** True when the snapshot folder holds a whole model (config.json and every weights file). */
function completeSnapshot(snap: string): boolean {
  try {
    if (!existsSync(join(snap, 'config.json'))) return false;
    if (existsSync(join(snap, 'model.safetensors'))) return true;
    const index = join(snap, 'model.safetensors.index.json');
    if (!existsSync(index)) return false;
    const map = (JSON.parse(readFileSync(index, 'utf8')) as { weight_map?: Record<string, string> })
      .weight_map;
    return !!map && Object.values(map).every((f) => existsSync(join(snap, f)));
  } catch {
    return false;
  }
}

/** The cached snapshot a branch or tag names (refs/<revision>), when it is whole; else null. */
function cachedRef(dir: string, revision: string): string | null {
  const ref = join(dir, 'refs', ...revision.split('/'));
  try {
    const commit = readFileSync(ref, 'utf8').trim();
    const snap = join(dir, 'snapshots', commit);
    return COMMIT.test(commit) && completeSnapshot(snap) ? snap : null;
  } catch {
    return null;
  }
}

/** One file of the snapshot to fetch: its path, listed size, and the etag it is kept under (and checked by). */
interface Wanted {
  path: string;
  size: number;
  etag: string;
  hash: 'sha256' | 'git';
}

/** Streams a listed file to blobs/<etag>.incomplete, checks its size and hash, renames it to blobs/<etag>. */
async function fetchBlob(s: HubSnapshot, dir: string, f: Wanted, o: HubDownloadOptions): Promise<void> {
  const blob = join(dir, 'blobs', f.etag);
  if (existsSync(blob) && statSync(blob).size === f.size) return; // content-addressed: already checked
  const tmp = `${blob}.incomplete`;
  const h = f.hash === 'sha256' ? createHash('sha256') : createHash('sha1').update(`blob ${f.size}\0`);
  const out = createWriteStream(tmp);
  const closed = new Promise<void>((done, fail) => {
    out.on('close', done);
    out.on('error', fail);
  });
  try {
    if (f.size > 1 << 20)
      o.log?.(
        `downloading ${s.repo}/${f.path} (${(f.size / 2 ** 20).toFixed(1)} MiB) at ${s.commit.slice(0, 7)}`,
      );
    const asked = { repo: s.repo, revision: s.commit };
    for await (const chunk of fetchListed(`${s.url}${f.path}`, f.path, f.size, asked, o)) {
      h.update(chunk);
      if (!out.write(chunk)) await new Promise((r) => out.once('drain', r));
    }
    out.end();
    await closed;
  } catch (e) {
    out.destroy();
    await closed.catch(() => undefined);
    rmSync(tmp, { force: true });
    throw e;
  }
  const got = h.digest('hex');
  if (got !== f.etag) {
    rmSync(tmp, { force: true });
    throw new HubError(
      'model',
      `${f.path}: downloaded bytes hash to ${f.hash} ${got.slice(0, 16)}…, the Hub lists ${f.etag.slice(0, 16)}…; nothing was kept`,
    );
  }
  renameSync(tmp, blob);
}

/** The files of a snapshot with the etag each is kept under. */
function wanted(s: HubSnapshot): Wanted[] {
  const git = (path: string, size: number, text: string | null, oid: string | null): Wanted => {
    const etag = text !== null ? gitOid(Buffer.from(text, 'utf8')) : oid;
    if (etag === null || (oid !== null && etag !== oid))
      throw new HubError(
        'network',
        `${path}: ${etag === null ? 'the Hub lists no git oid for it' : `what the Hub served hashes to git oid ${etag.slice(0, 12)}…, its listing says ${(oid ?? '').slice(0, 12)}…`}: refused`,
      );
    return { path, size, etag, hash: 'git' };
  };
  const out: Wanted[] = [git('config.json', s.configFile.size, s.config, s.configFile.oid)];
  if (s.index)
    out.push(git('model.safetensors.index.json', s.index.file.size, s.index.text, s.index.file.oid));
  if (s.tokenizer) {
    const t = s.tokenizer;
    if (t.badOid !== undefined)
      throw new HubError(
        'network',
        `tokenizer.json: the Hub lists LFS oid ${JSON.stringify(t.badOid)}, not a sha256: refused`,
      );
    out.push(
      t.sha256
        ? { path: t.path, size: t.size, etag: t.sha256, hash: 'sha256' }
        : git(t.path, t.size, null, t.oid),
    );
  }
  for (const w of s.weights) out.push({ path: w.path, size: w.size, etag: w.sha256, hash: 'sha256' });
  return out;
}

/** Writes a small file already read (config, index) as blobs/<etag>, through .incomplete and a rename. */
function placeRead(dir: string, f: Wanted, text: string): void {
  const blob = join(dir, 'blobs', f.etag);
  if (existsSync(blob)) return;
  const tmp = `${blob}.incomplete`;
  try {
    writeFileSync(tmp, text);
    renameSync(tmp, blob);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** Resolves `ref` and fills the cache; returns the snapshot folder to read the model from. */
export async function hubSnapshot(ref: string, o: HubDownloadOptions = {}): Promise<string> {
  const { repo, revision } = parseHubRef(ref);
  const dir = repoFolder(o.cacheDir ?? hfCacheDir(), repo);
  // A commit already in the cache (whole) needs no network.
  if (COMMIT.test(revision) && completeSnapshot(join(dir, 'snapshots', revision)))
    return join(dir, 'snapshots', revision);
  if (o.offline) {
    const snap = cachedRef(dir, revision);
    if (snap) return snap;
    throw new CliInputError(
      `${repo}@${revision} is not in the Hugging Face cache ${quoteUser(dir)}, and HF_HUB_OFFLINE is set`,
    );
  }
  let s: HubSnapshot;
  try {
    s = await resolveHubModel(repo, revision, o);
  } catch (e) {
    const snap = e instanceof HubError && e.kind === 'network' ? cachedRef(dir, revision) : null;
    if (!snap) throw e;
    o.log?.(
      `the Hub did not answer (${(e as Error).message}): using ${revision} as cached, commit ${snap.slice(-40, -33)}`,
    );
    return snap;
  }
  const snap = join(dir, 'snapshots', s.commit);
  if (completeSnapshot(snap)) {
    writeRef(dir, revision, s.commit);
    return snap;
  }
  const files = wanted(s);
  try {
    mkdirSync(join(dir, 'blobs'), { recursive: true });
    placeRead(dir, files[0], s.config);
    if (s.index) placeRead(dir, files[1], s.index.text);
    for (const f of files.slice(s.index ? 2 : 1)) await fetchBlob(s, dir, f, o);
    // Every file is in blobs/, checked: the snapshot appears whole, then the branch names it.
    linkSnapshot(
      dir,
      s.commit,
      files.map((f) => ({ path: f.path, etag: f.etag })),
    );
    writeRef(dir, revision, s.commit);
  } catch (e) {
    if (e instanceof HubError || (e as { name?: string })?.name === 'AbortError') throw e;
    throw new CliInputError(`the Hugging Face cache ${dir}: ${fsReason(e)}`);
  }
  return snap;
}

/** The default Hub of this CLI: $HF_ENDPOINT or huggingface.co. */
export function cliHubUrl(env: NodeJS.ProcessEnv = process.env): string {
  return (env.HF_ENDPOINT || 'https://huggingface.co').replace(/\/+$/, '');
}

/**
 * The Hub reference of a spec's URL model, only on the Hub this CLI uses: a shared spec file never chooses the
 * host. A Hub-layout URL on another host is refused in one line saying how to fetch it deliberately
 * (HF_ENDPOINT), or null when the URL is not in the Hub's layout.
 */
export function specHubRef(url: string, hubUrl: string): string | null {
  const hub = parseResolveUrl(url);
  if (!hub) return null;
  const origin = new URL(url).origin;
  if (origin !== new URL(hubUrl).origin)
    throw new CliInputError(
      `the spec's model is on ${quoteUser(origin)}, not on the Hub this CLI uses (${new URL(hubUrl).origin}): ` +
        `to fetch it from there, set HF_ENDPOINT=${origin}; or download it and pass --model DIR`,
    );
  return `${hub.repo}@${hub.revision}`;
}

/** Seconds from an environment variable as ms (a positive number), else undefined; anything else is bad input. */
function envSeconds(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const v = env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0)
    throw new CliInputError(`${name}=${quoteUser(v)}: expected a positive number of seconds`);
  return n * 1000;
}

/**
 * The CLI's Hub settings from the environment, as huggingface_hub reads them: HF_ENDPOINT (the Hub),
 * HF_HUB_OFFLINE=1 (the cache only), HF_HUB_ETAG_TIMEOUT (seconds to wait for an answer to start) and
 * HF_HUB_DOWNLOAD_TIMEOUT (seconds a body may stall).
 */
export function hubEnvOptions(env: NodeJS.ProcessEnv, log?: (line: string) => void): HubDownloadOptions {
  const connectMs = envSeconds(env, 'HF_HUB_ETAG_TIMEOUT');
  const idleMs = envSeconds(env, 'HF_HUB_DOWNLOAD_TIMEOUT');
  return {
    hubUrl: cliHubUrl(env),
    log,
    offline: /^(1|true|yes|on)$/i.test(env.HF_HUB_OFFLINE ?? ''),
    limits: { ...(connectMs ? { connectMs } : {}), ...(idleMs ? { idleMs } : {}) },
  };
}
