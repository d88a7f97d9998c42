// Real checkpoints from the Hugging Face Hub: the Pythia suite by repo id (every size, standard and deduped), a few
// Llama-family models (LLAMA_HUB_PRESETS), the
// Hub's URL layout, and a test-only override that points the page at a local stand-in server. Pure: nothing
// here fetches (src/run/hub-api.ts asks the Hub's API for a revision's commit, files, sizes and sha256).
//
// The Hub serves a file of a repository at `https://huggingface.co/<org>/<repo>/resolve/<revision>/<file>`.
// A large (LFS / Xet) file answers with a 302 redirect to a CDN URL, which answers with the bytes and their
// Content-Length; HEAD and Range work the same way. A browser follows the redirect, so it sees the CDN's
// headers; the sizes and sha256 (LFS oids) come from the API's tree listing at the commit, and the sha256 is
// checked on the downloaded bytes. Both hosts send CORS headers; without them a browser could not read the
// files at all.
//
// The folder `…/resolve/<commit>/` is a URL model as the rest of the app knows it (RunSpec model kind 'url':
// config.json, the weights and tokenizer.json under one base URL), so a Hub model's permalink is an ordinary
// URL model pinned to a commit, with the sha256 of each weights file.

import { HubError } from './hub-fetch';

/** One Pythia checkpoint (EleutherAI, Apache-2.0; trained on the Pile, or the deduplicated Pile). */
export interface HubPreset {
  /** `pythia-1b`, `pythia-1b-deduped`. */
  id: string;
  /** `<org>/<name>` on the Hub. */
  repo: string;
  /** `1b`: shown on the button. */
  size: string;
  deduped: boolean;
  /** From the Pythia model card: total parameters, layers, model width, heads. */
  params: number;
  layers: number;
  d: number;
  heads: number;
}

export const HUB_ORIGIN = 'https://huggingface.co';

/** The default revision: the repository's main branch (the final checkpoint, step 143000). */
export const DEFAULT_REVISION = 'main';

/** The Pythia suite's shapes (model card): size, parameters, layers, width, heads. */
const PYTHIA: [string, number, number, number, number][] = [
  ['70m', 70_426_624, 6, 512, 8],
  ['160m', 162_322_944, 12, 768, 12],
  ['410m', 405_334_016, 24, 1024, 16],
  ['1b', 1_011_781_632, 16, 2048, 8],
  ['1.4b', 1_414_647_808, 24, 2048, 16],
  ['2.8b', 2_775_208_960, 32, 2560, 32],
  ['6.9b', 6_857_302_016, 32, 4096, 32],
  ['12b', 11_846_072_320, 36, 5120, 40],
];

/**
 * Every Pythia model, standard then deduped, by repo id. Each repository keeps its 154 training checkpoints as
 * branches `step0`, `step1`, … `step143000` (main is step 143000); any of them, a tag or a commit is a revision.
 */
export const HUB_PRESETS: readonly HubPreset[] = [false, true].flatMap((deduped) =>
  PYTHIA.map(([size, params, layers, d, heads]) => {
    const id = `pythia-${size}${deduped ? '-deduped' : ''}`;
    return { id, repo: `EleutherAI/${id}`, size, deduped, params, layers, d, heads };
  }),
);

/** A Llama-family repository offered by id (its sizes come from the Hub's API when it is looked up). */
export interface LlamaHubPreset {
  /** `SmolLM2-135M`: shown on the button. */
  id: string;
  /** `<org>/<name>` on the Hub. */
  repo: string;
  /** The config's model_type (docs/FAMILIES.md): llama, qwen2, qwen3. */
  flavour: 'llama' | 'qwen2' | 'qwen3' | 'mistral';
}

/** A few Llama-family checkpoints with model.safetensors on main, smallest first. */
export const LLAMA_HUB_PRESETS: readonly LlamaHubPreset[] = [
  { id: 'SmolLM2-135M', repo: 'HuggingFaceTB/SmolLM2-135M', flavour: 'llama' },
  { id: 'Qwen2.5-0.5B', repo: 'Qwen/Qwen2.5-0.5B', flavour: 'qwen2' },
  { id: 'Qwen3-0.6B', repo: 'Qwen/Qwen3-0.6B', flavour: 'qwen3' },
  { id: 'TinyLlama-1.1B-Chat', repo: 'TinyLlama/TinyLlama-1.1B-Chat-v1.0', flavour: 'llama' },
];

const REPO = /^[A-Za-z0-9][A-Za-z0-9._-]{0,95}\/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$/;

/** A repository id as the Hub allows it (org/name), or a HubError of kind 'input' before any request. */
export function checkRepoId(repo: string): string {
  if (!REPO.test(repo) || /\.\.|--|[.-]$|[.-]\//.test(repo))
    throw new HubError(
      'input',
      `${JSON.stringify(repo.slice(0, 100))} is not a Hub repository id (org/name: letters, digits, - _ .)`,
    );
  return repo;
}

/** A revision: a branch, tag or commit (refs/pr/2 holds slashes), or a HubError of kind 'input'. */
export function checkRevision(revision: string): string {
  if (revision === '' || revision.length > 200 || !/^[\w./+=~^:@-]+$/.test(revision) || /\.\./.test(revision))
    throw new HubError('input', `${JSON.stringify(revision.slice(0, 100))} is not a revision`);
  return revision;
}

/** `<origin>/<repo>/resolve/<revision>/` (+ file): the Hub's download URL of a file at a revision. */
export function resolveUrl(origin: string, repo: string, revision: string, file = ''): string {
  if (!REPO.test(repo)) throw new Error(`not a Hub repository id: ${JSON.stringify(repo.slice(0, 200))}`);
  if (revision === '' || revision.length > 200)
    throw new Error(`not a revision: ${JSON.stringify(revision.slice(0, 200))}`);
  // A branch such as refs/pr/2 is one path segment on the Hub: its slashes are escaped.
  return `${origin.replace(/\/+$/, '')}/${repo}/resolve/${encodeURIComponent(revision)}/${file}`;
}

/** The repo and revision of a Hub-layout URL (`…/<org>/<name>/resolve/<revision>/…`), or null. */
export function parseResolveUrl(url: string): { repo: string; revision: string } | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  const parts = u.pathname.split('/').filter((p) => p !== '');
  const at = parts.indexOf('resolve');
  if (at < 2 || at + 1 >= parts.length) return null;
  const repo = `${parts[at - 2]}/${parts[at - 1]}`;
  let revision: string;
  try {
    revision = decodeURIComponent(parts[at + 1]);
  } catch {
    return null;
  }
  return REPO.test(repo) ? { repo, revision } : null;
}

/** A model's display name from its folder URL: the repo name for a Hub-layout URL, else the last segment. */
export function modelNameOfUrl(url: string): string {
  const hub = parseResolveUrl(url);
  if (hub) return hub.repo.split('/')[1];
  try {
    const u = new URL(url);
    const parts = u.pathname.split('/').filter((p) => p !== '');
    return decodeURIComponent(parts[parts.length - 1] ?? u.host) || u.host;
  } catch {
    return 'model';
  }
}

// --------------------------------------------------------------------------------- test-only override

/**
 * localStorage key of the test-only override. Only this browser's own storage can set it (a link cannot), and
 * the presets panel says so visibly whenever it is in effect.
 */
export const HUB_OVERRIDE_KEY = 'divergence-explorer.hub-test-server';

export interface HubOverride {
  /** An http(s) origin (no path) that answers as the Hub does (API and files). */
  origin: string;
  /** Shorter network timeouts, ms (tests of a stalled or silent stand-in); only positive numbers are taken. */
  limits?: { connectMs?: number; idleMs?: number };
}

/** Parses the override's JSON; anything malformed is ignored (null), never half-applied. */
export function parseHubOverride(raw: string | null): HubOverride | null {
  if (raw === null) return null;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null) return null;
  const r = v as Record<string, unknown>;
  if (typeof r.origin !== 'string') return null;
  let origin: URL;
  try {
    origin = new URL(r.origin);
  } catch {
    return null;
  }
  if (origin.protocol !== 'http:' && origin.protocol !== 'https:') return null;
  if (origin.origin !== r.origin.replace(/\/+$/, '')) return null; // an origin, not a path
  const out: HubOverride = { origin: origin.origin };
  const l = r.limits as Record<string, unknown> | undefined;
  if (typeof l === 'object' && l !== null) {
    const ms = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined);
    const limits = { connectMs: ms(l.connectMs), idleMs: ms(l.idleMs) };
    if (limits.connectMs !== undefined || limits.idleMs !== undefined)
      out.limits = Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined));
  }
  return out;
}

/** The Hub this page talks to: the test override's stand-in, else the viewer's mirror, else huggingface.co. */
export function hubOrigin(override: HubOverride | null = null, mirror: string | null = null): string {
  return override?.origin ?? mirror ?? HUB_ORIGIN;
}

/** Reads the override from a Storage (null when storage is unavailable or holds nothing valid). */
export function readHubOverride(storage: Pick<Storage, 'getItem'> | null | undefined): HubOverride | null {
  try {
    return parseHubOverride(storage?.getItem(HUB_OVERRIDE_KEY) ?? null);
  } catch {
    return null; // storage switched off (private mode, sandboxed frame)
  }
}

// --------------------------------------------------------------------------------- the viewer's Hub mirror

/**
 * localStorage key of the Hub mirror the viewer chose (like the CLI's HF_ENDPOINT): an origin that serves the
 * Hub's API and files (and CORS). Only the viewer sets it, in the page; a link never does: a link's Hub model
 * carries its host in its URL, which the page shows before the viewer agrees to download (docs/PERMALINKS.md).
 */
export const HUB_MIRROR_KEY = 'divergence-explorer.hub-mirror';

/**
 * A mirror's address as typed: an http(s) origin (a trailing slash allowed; no path, query, user name or
 * password). Returns the origin, or throws one line saying what is wrong.
 */
export function parseHubMirror(text: string): string {
  const t = text.trim();
  let u: URL;
  try {
    u = new URL(t);
  } catch {
    throw new Error(`${JSON.stringify(t.slice(0, 100))} is not a URL (e.g. https://hf-mirror.example.org)`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    throw new Error(`a Hub mirror is an http(s) address, not ${u.protocol}`);
  if (u.username || u.password) throw new Error('a Hub mirror address may not hold a user name or password');
  if (u.pathname !== '/' || u.search || u.hash)
    throw new Error(
      `a Hub mirror is an origin (scheme, host and port), not ${JSON.stringify(t.slice(0, 100))}`,
    );
  return u.origin;
}

/** The mirror kept in this browser, or null (none, unreadable, or not valid: never half-applied). */
export function readHubMirror(storage: Pick<Storage, 'getItem'> | null | undefined): string | null {
  try {
    const v = storage?.getItem(HUB_MIRROR_KEY) ?? null;
    return v === null ? null : parseHubMirror(v);
  } catch {
    return null;
  }
}
