// A Hub repository at a revision, resolved through the Hub's API (@huggingface/hub: modelInfo for the commit a
// branch, tag or commit names; listFiles for the files at that commit with their sizes and LFS sha256), then
// config.json read (small) to know the model before its weights, and the shard index when the weights are
// sharded. Everything that can go wrong is one HubError line of a kind the worker and the CLI map to theirs.
// Used by the engine worker and the CLI; `fetch` and the Hub's origin are parameters (the e2e stand-in, tests).
import { HubApiError, listFiles, modelInfo } from '@huggingface/hub';
import { parseConfigText } from '../model/config';
import { INDEX_FILE, parseShardIndex, type ShardIndex } from '../model/shard-index';
import type { NeoXConfig } from '../numeric/types';
import { HUB_ORIGIN, resolveUrl } from './hub';

/** What went wrong: the request ('input'), the repository or its files ('model'), the network ('network'). */
export type HubErrorKind = 'input' | 'model' | 'network';

export class HubError extends Error {
  override name = 'HubError';
  constructor(
    readonly kind: HubErrorKind,
    message: string,
  ) {
    super(message.replace(/\s+/g, ' '));
  }
}

/** One file of the snapshot, as the tree listing gives it. */
export interface HubFile {
  path: string;
  size: number;
  /** sha256 of the content: the LFS object id (null for a file kept in git, not LFS). */
  sha256: string | null;
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
  cfg: NeoXConfig;
  /** The weights files, each with its size and sha256: model.safetensors, or the shards of the index. */
  weights: { path: string; size: number; sha256: string }[];
  /** The shard index (text and parsed) when the weights are sharded. */
  index: { text: string; parsed: ShardIndex } | null;
  tokenizer: HubFile | null;
  /** config + tokenizer + index + weights, in bytes. */
  totalBytes: number;
}

const REPO = /^[A-Za-z0-9][A-Za-z0-9._-]{0,95}\/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$/;
const COMMIT = /^[0-9a-f]{40}$/;
const SHA256 = /^[0-9a-f]{64}$/;

/** `org/name` or `org/name@revision` (the revision may hold slashes: refs/pr/2). */
export function parseHubRef(text: string): { repo: string; revision: string } {
  const t = text.trim();
  const at = t.indexOf('@');
  const repo = at < 0 ? t : t.slice(0, at);
  const revision = at < 0 ? 'main' : t.slice(at + 1);
  if (!REPO.test(repo))
    throw new HubError(
      'input',
      `${JSON.stringify(repo.slice(0, 100))} is not a Hub repository id (org/name)`,
    );
  if (revision === '' || revision.length > 200 || /[\s\\]|\.\./.test(revision))
    throw new HubError('input', `${JSON.stringify(revision.slice(0, 100))} is not a revision`);
  return { repo, revision };
}

export interface HubOptions {
  /** The Hub's origin (default https://huggingface.co). */
  hubUrl?: string;
  fetch?: typeof fetch;
  signal?: AbortSignal;
}

function why(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** A failed API call as one line: a repository or revision that is not there, or the network. */
function apiError(e: unknown, repo: string, revision: string): HubError {
  if (e instanceof HubError) return e;
  if (e instanceof HubApiError) {
    const code = String((e.data as { error?: unknown } | undefined)?.error ?? e.message);
    if (e.statusCode === 401 || e.statusCode === 403 || (e.statusCode === 404 && /repo/i.test(code)))
      return new HubError('model', `${repo}: no such repository on the Hub, or it is private or gated`);
    if (e.statusCode === 404)
      return new HubError(
        'model',
        `${repo} has no revision ${JSON.stringify(revision)} (no such branch, tag or commit)`,
      );
    return new HubError(
      'network',
      `${repo}: the Hub answered HTTP ${e.statusCode} (${code.split('. URL')[0]})`,
    );
  }
  if ((e as { name?: string })?.name === 'AbortError') return new HubError('network', 'cancelled');
  return new HubError('network', `${repo}: could not reach the Hub (${why(e)})`);
}

/** GET of a small file at the commit, as text. */
async function smallFile(o: HubOptions, url: string, path: string): Promise<string> {
  let res: Response;
  try {
    res = await (o.fetch ?? fetch)(`${url}${path}`, { signal: o.signal, redirect: 'follow' });
  } catch (e) {
    throw new HubError('network', `${path}: could not fetch it (${why(e)})`);
  }
  if (!res.ok) throw new HubError('model', `${path}: HTTP ${res.status} from the Hub`);
  return await res.text();
}

/**
 * Resolves `repo` at `revision` to a commit and the files a GPT-NeoX model needs there, with their sizes and
 * sha256, and reads config.json (and the shard index). Nothing large is downloaded.
 */
export async function resolveHubModel(
  repo: string,
  revision: string,
  o: HubOptions = {},
): Promise<HubSnapshot> {
  const hubUrl = (o.hubUrl ?? HUB_ORIGIN).replace(/\/+$/, '');
  const f = o.fetch ?? ((...a: Parameters<typeof fetch>) => fetch(...a));
  const fetchOpt: typeof fetch = (input, init) => f(input, { ...init, signal: o.signal });
  let commit: string;
  const files = new Map<string, HubFile>();
  try {
    const info = await modelInfo({
      name: repo,
      revision,
      hubUrl,
      fetch: fetchOpt,
      additionalFields: ['sha'],
    });
    commit = String((info as { sha?: unknown }).sha ?? '');
    if (!COMMIT.test(commit))
      throw new HubError('network', `${repo}@${revision}: the Hub gave no commit for this revision`);
    for await (const e of listFiles({ repo, revision: commit, hubUrl, fetch: fetchOpt })) {
      if (e.type !== 'file') continue;
      const sha = e.lfs?.oid ?? null;
      files.set(e.path, {
        path: e.path,
        size: e.lfs?.size ?? e.size,
        sha256: sha && SHA256.test(sha) ? sha : null,
      });
    }
  } catch (e) {
    throw apiError(e, repo, revision);
  }
  const at = `${repo} at ${revision}${revision === commit ? '' : ` (${commit.slice(0, 7)})`}`;
  const url = resolveUrl(hubUrl, repo, commit);
  if (!files.has('config.json')) throw new HubError('model', `${at} has no config.json`);
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
  const config = await smallFile(o, url, 'config.json');
  let cfg: NeoXConfig;
  try {
    cfg = parseConfigText(config);
  } catch (e) {
    throw new HubError('model', `${at}: ${why(e)}`);
  }
  let index: HubSnapshot['index'] = null;
  let weights: HubSnapshot['weights'];
  const lfs = (p: string): { path: string; size: number; sha256: string } => {
    const x = files.get(p);
    if (!x) throw new HubError('model', `${at}: shard ${p} named by ${INDEX_FILE} is missing`);
    if (!x.sha256)
      throw new HubError('model', `${at}: ${p} is not stored with LFS, so the Hub gives no sha256`);
    return { path: p, size: x.size, sha256: x.sha256 };
  };
  if (single) weights = [lfs('model.safetensors')];
  else {
    const text = await smallFile(o, url, INDEX_FILE);
    let parsed: ShardIndex;
    try {
      parsed = parseShardIndex(text);
    } catch (e) {
      throw new HubError('model', `${at}: ${why(e)}`);
    }
    index = { text, parsed };
    weights = parsed.shards.map(lfs);
  }
  const tokenizer = files.get('tokenizer.json') ?? null;
  const totalBytes =
    files.get('config.json')!.size +
    (tokenizer?.size ?? 0) +
    (indexFile?.size ?? 0) * (single ? 0 : 1) +
    weights.reduce((a, w) => a + w.size, 0);
  return { repo, revision, commit, url, config, cfg, weights, index, tokenizer, totalBytes };
}
