// A Hub repository at a revision, resolved through the Hub's API: the revision endpoint for the commit a branch,
// tag or commit names, the tree endpoint at that commit for every file's size, git oid and LFS sha256 (pages
// followed on the same origin only, within a page and an entry cap), then config.json read (capped) to know the
// model before its weights, and the shard index (capped) when the weights are sharded. Every read is bounded
// (src/run/hub-fetch.ts) and a lookup stops its requests when its signal aborts. Everything that can go wrong is
// one HubError line of a kind the worker and the CLI map to theirs. Used by the engine worker and the CLI;
// `fetch`, the Hub's origin and the limits are parameters (the e2e stand-in, tests).
import { parseModelConfigText } from '../model/model-config';
import { INDEX_FILE, parseShardIndex, type ShardIndex } from '../model/shard-index';
import type { ModelConfig } from '../numeric/types';
import { checkRepoId, checkRevision, HUB_ORIGIN, resolveUrl } from './hub';
import {
  apiJson,
  fetchWithin,
  HubError,
  hubAnswerError,
  linkNext,
  type NetOptions,
  netLimits,
  readWithin,
  serverText,
  utf8,
} from './hub-fetch';

export { checkRepoId, checkRevision } from './hub';
export { HubError, type HubErrorKind } from './hub-fetch';

/** One file of the snapshot, as the tree listing gives it. */
export interface HubFile {
  path: string;
  size: number;
  /** sha256 of the content: the LFS object id (null for a file kept in git, not LFS). */
  sha256: string | null;
  /** The git blob id (sha1 of "blob <size>\0" + content) of a file kept in git; null when not listed. */
  oid: string | null;
  /** An LFS oid the Hub listed that is not a sha256 (64 hex digits), kept to say so if the file is needed. */
  badOid?: string;
}

export interface HubSnapshot {
  repo: string;
  /** The revision as asked (a branch, a tag or a commit). */
  revision: string;
  /** The commit it names now (40 hex digits): what links pin. */
  commit: string;
  /** `<origin>/<repo>/resolve/<commit>/`: the folder the files download from. */
  url: string;
  config: string;
  /** config.json read, of either family. */
  cfg: ModelConfig;
  /** config.json as listed (its git oid checks what was read). */
  configFile: HubFile;
  /** The weights files, each with its size and sha256: model.safetensors, or the shards of the index. */
  weights: { path: string; size: number; sha256: string }[];
  /** The shard index (text and parsed, as listed) when the weights are sharded. */
  index: { text: string; parsed: ShardIndex; file: HubFile } | null;
  tokenizer: HubFile | null;
  /** config + tokenizer + index + weights, in bytes. */
  totalBytes: number;
}

const COMMIT = /^[0-9a-f]{40}$/;
const SHA256 = /^[0-9a-f]{64}$/;
const GIT_OID = /^[0-9a-f]{40}$/;

/** `org/name` or `org/name@revision` (the revision may hold slashes: refs/pr/2). */
export function parseHubRef(text: string): { repo: string; revision: string } {
  const t = text.trim();
  const at = t.indexOf('@');
  const repo = at < 0 ? t : t.slice(0, at);
  const revision = at < 0 ? 'main' : t.slice(at + 1);
  return { repo: checkRepoId(repo), revision: checkRevision(revision) };
}

export interface HubOptions extends NetOptions {
  /** The Hub's origin (default https://huggingface.co). */
  hubUrl?: string;
}

/** The commit a revision names now (the revision endpoint's `sha`). */
async function commitOf(hub: string, repo: string, revision: string, o: NetOptions): Promise<string> {
  const url = `${hub}/api/models/${repo}/revision/${encodeURIComponent(revision)}`;
  const { json } = await apiJson(url, { repo, revision }, o);
  const sha = (json as { sha?: unknown } | null)?.sha;
  if (typeof sha !== 'string' || !COMMIT.test(sha))
    throw new HubError(
      'network',
      `${repo}@${revision}: the Hub's answer names no commit (sha ${JSON.stringify(serverText(String(sha).slice(0, 60)))}, not 40 hex digits)`,
    );
  return sha;
}

/** One entry of a tree page, checked: a file with its path, size and oids, or null for a folder. */
function treeEntry(e: unknown, at: string): HubFile | null {
  const bad = () =>
    new HubError('network', `${at}: the Hub's file listing holds an entry that is not a file or folder`);
  if (typeof e !== 'object' || e === null) throw bad();
  const x = e as Record<string, unknown>;
  if (x.type === 'directory') return null;
  if (x.type !== 'file' || typeof x.path !== 'string' || x.path === '' || x.path.length > 1000) throw bad();
  const lfs = x.lfs as Record<string, unknown> | undefined | null;
  const size = lfs ? lfs.size : x.size;
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0)
    throw new HubError(
      'network',
      `${at}: the Hub lists ${JSON.stringify(serverText(x.path))} with no valid size`,
    );
  const f: HubFile = { path: x.path, size, sha256: null, oid: null };
  if (typeof x.oid === 'string' && GIT_OID.test(x.oid)) f.oid = x.oid;
  if (lfs) {
    if (typeof lfs.oid === 'string' && SHA256.test(lfs.oid)) f.sha256 = lfs.oid;
    else f.badOid = serverText(String(lfs.oid).slice(0, 80));
  }
  return f;
}

/** Every file at `commit` (top level): pages followed on the Hub's own origin, within the caps. */
async function listTree(
  hub: string,
  repo: string,
  commit: string,
  at: string,
  o: NetOptions,
): Promise<Map<string, HubFile>> {
  const limits = netLimits(o.limits);
  const origin = new URL(hub).origin;
  const files = new Map<string, HubFile>();
  let url = `${hub}/api/models/${repo}/tree/${commit}`;
  let entries = 0;
  for (let page = 1; ; page++) {
    const { json, res } = await apiJson(url, { repo, revision: commit }, o);
    if (!Array.isArray(json))
      throw new HubError('network', `${at}: the Hub's file listing is not a list of files`);
    entries += json.length;
    if (entries > limits.maxEntries)
      throw new HubError(
        'network',
        `${at}: the Hub's file listing goes past ${limits.maxEntries} entries: stopped there (not a model repository this app reads)`,
      );
    for (const e of json) {
      const f = treeEntry(e, at);
      if (f) files.set(f.path, f);
    }
    const next = linkNext(res.headers.get('link'));
    if (next === null) return files;
    let u: URL;
    try {
      u = new URL(next, url);
    } catch {
      throw new HubError('network', `${at}: the Hub's file listing links a next page that is not a URL`);
    }
    if (u.origin !== origin)
      throw new HubError(
        'network',
        `${at}: the Hub's file listing sends its next page to another host (${u.origin}): not followed`,
      );
    if (page >= limits.maxPages)
      throw new HubError(
        'network',
        `${at}: the Hub's file listing goes on past ${limits.maxPages} pages: stopped there`,
      );
    url = u.href;
  }
}

/** GET of a small file at the commit, as text, at most `max` bytes. */
export async function smallHubFile(
  url: string,
  path: string,
  max: number,
  asked: { repo: string; revision: string },
  o: NetOptions,
): Promise<string> {
  const r = await fetchWithin(`${url}${path}`, path, o);
  if (!r.res.ok) throw hubAnswerError(r, { ...asked, file: path });
  return utf8(path, await readWithin(r, path, max, o.signal));
}

/**
 * Resolves `repo` at `revision` to a commit and the files a model needs there, with their sizes and sha256,
 * and reads config.json (and the shard index), both capped. Nothing large is downloaded; nothing unbounded is
 * read. `o.signal` stops every request of the lookup.
 */
export async function resolveHubModel(
  repo: string,
  revision: string,
  o: HubOptions = {},
): Promise<HubSnapshot> {
  checkRepoId(repo);
  checkRevision(revision);
  const hubUrl = (o.hubUrl ?? HUB_ORIGIN).replace(/\/+$/, '');
  const limits = netLimits(o.limits);
  const commit = await commitOf(hubUrl, repo, revision, o);
  const at = `${repo} at ${revision}${revision === commit ? '' : ` (${commit.slice(0, 7)})`}`;
  const files = await listTree(hubUrl, repo, commit, at, o);
  const url = resolveUrl(hubUrl, repo, commit);
  const configFile = files.get('config.json');
  if (!configFile) throw new HubError('model', `${at} has no config.json`);
  const single = files.get('model.safetensors');
  const indexFile = files.get(INDEX_FILE);
  if (!single && !indexFile) {
    const bin = [...files.keys()].find((p) => /^pytorch_model.*\.bin(\.index\.json)?$/.test(p));
    throw new HubError(
      'model',
      bin
        ? `${at} has only ${bin.replace(/-\d+-of-\d+/, '-*')} (PyTorch pickles): the explorer reads safetensors; pick a revision with model.safetensors`
        : `${at} has no model.safetensors nor ${INDEX_FILE}`,
    );
  }
  const asked = { repo, revision: commit };
  const config = await smallHubFile(url, 'config.json', limits.configBytes, asked, o);
  let cfg: ModelConfig;
  try {
    cfg = parseModelConfigText(config);
  } catch (e) {
    throw new HubError('model', `${at}: ${e instanceof Error ? e.message : String(e)}`);
  }
  let index: HubSnapshot['index'] = null;
  let weights: HubSnapshot['weights'];
  const lfs = (p: string): { path: string; size: number; sha256: string } => {
    const x = files.get(p);
    if (!x) throw new HubError('model', `${at}: shard ${p} named by ${INDEX_FILE} is missing`);
    if (x.badOid !== undefined)
      throw new HubError(
        'network',
        `${at}: the Hub lists ${p} with LFS oid ${JSON.stringify(x.badOid)}, not a sha256 (64 hex digits): refused`,
      );
    if (!x.sha256)
      throw new HubError('model', `${at}: ${p} is not stored with LFS, so the Hub gives no sha256`);
    return { path: p, size: x.size, sha256: x.sha256 };
  };
  if (single) weights = [lfs('model.safetensors')];
  else {
    const text = await smallHubFile(url, INDEX_FILE, limits.indexBytes, asked, o);
    let parsed: ShardIndex;
    try {
      parsed = parseShardIndex(text);
    } catch (e) {
      throw new HubError('model', `${at}: ${e instanceof Error ? e.message : String(e)}`);
    }
    index = { text, parsed, file: indexFile! };
    weights = parsed.shards.map(lfs);
  }
  const tokenizer = files.get('tokenizer.json') ?? null;
  if (tokenizer && tokenizer.size > limits.tokenizerBytes)
    throw new HubError(
      'model',
      `${at}: tokenizer.json is listed at ${tokenizer.size} bytes, more than the ${limits.tokenizerBytes} this app reads`,
    );
  const totalBytes =
    configFile.size +
    (tokenizer?.size ?? 0) +
    (index ? index.file.size : 0) +
    weights.reduce((a, w) => a + w.size, 0);
  return { repo, revision, commit, url, config, cfg, configFile, weights, index, tokenizer, totalBytes };
}
