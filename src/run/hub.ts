// Real checkpoints from the Hugging Face Hub: the Pythia presets (pinned revisions, known weights sha256 and
// sizes), the Hub's URL layout, and a test-only override that points the presets at a local stand-in server.
// Pure: nothing here fetches.
//
// The Hub serves a file of a repository at `https://huggingface.co/<org>/<repo>/resolve/<revision>/<file>`.
// A large (LFS / Xet) file answers with a 302 redirect to a CDN URL, which answers with the bytes and their
// Content-Length; HEAD works the same way. A browser follows the redirect, so it sees the CDN's headers, never
// the Hub's X-Linked-Size / X-Linked-Etag (on the 302): the size comes from the CDN's Content-Length, the
// sha256 from this table, checked on the downloaded bytes. Both hosts send CORS headers; without them a
// browser could not read the files at all.
//
// The folder `…/resolve/<revision>/` is a URL model as the rest of the app knows it (RunSpec model kind 'url':
// config.json, model.safetensors and tokenizer.json under one base URL), so a preset's permalink is an
// ordinary URL model with its sha256.

export type HubPresetId = 'pythia-70m' | 'pythia-160m' | 'pythia-410m';

export interface HubPreset {
  id: HubPresetId;
  /** Shown on the button. */
  label: string;
  /** `<org>/<name>` on the Hub. */
  repo: string;
  /** A commit (40 hex digits): pinned, so the files and their sha256 never change under a link. */
  revision: string;
  /** sha256 of model.safetensors at that revision (the LFS object id). */
  sha256: string;
  /** Size of model.safetensors in bytes; `exact` false: rounded as the Hub's file listing shows it. */
  weightsBytes: number;
  exact: boolean;
  /** From the Pythia model card: total parameters, layers, model width, heads. */
  params: number;
  layers: number;
  d: number;
  heads: number;
}

export const HUB_ORIGIN = 'https://huggingface.co';

/**
 * EleutherAI's Pythia models (Apache-2.0) trained on the Pile, final checkpoint (step 143000).
 * On each repo's `main`, model.safetensors (fp16, with the causal-mask buffers as U8) was added by the
 * "Adding `safetensors` variant of this model (#2)" merge; the revisions below are commits on `main` that hold
 * it (the LFS pointers give the sha256; 70m's gives the exact size).
 */
export const HUB_PRESETS: readonly HubPreset[] = [
  {
    id: 'pythia-70m',
    label: 'Pythia-70m',
    repo: 'EleutherAI/pythia-70m',
    revision: '2ab25ed47af79376eed2baaf8bbb7a192a0c73ff',
    sha256: 'ebfa4e2f18696ebd83716a0d39fe2c025f2ff8483f72a83ca59c475692fc9d15',
    weightsBytes: 166_029_852,
    exact: true,
    params: 70_426_624,
    layers: 6,
    d: 512,
    heads: 8,
  },
  {
    id: 'pythia-160m',
    label: 'Pythia-160m',
    repo: 'EleutherAI/pythia-160m',
    revision: 'e60ba7e6af1840769fb97613b4d2dc06c9da572d',
    sha256: '29d2e457a664e41c12c735f20a36dc0956a665f614a54ce5db21a32e75965270',
    weightsBytes: 375_000_000,
    exact: false,
    params: 162_322_944,
    layers: 12,
    d: 768,
    heads: 12,
  },
  {
    id: 'pythia-410m',
    label: 'Pythia-410m',
    repo: 'EleutherAI/pythia-410m',
    revision: '9879c9b5f8bea9051dcb0e68dff21493d67e9d4f',
    sha256: '3e09001631bb18ec8a6f4522f8e6ab26a53099e69228f9822adc91bfbe27511b',
    weightsBytes: 911_000_000,
    exact: false,
    params: 405_334_016,
    layers: 24,
    d: 1024,
    heads: 16,
  },
];

const REPO = /^[A-Za-z0-9][A-Za-z0-9._-]{0,95}\/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$/;
const SHA256 = /^[0-9a-f]{64}$/;

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
  /** An http(s) origin (no path) that serves files in the Hub's layout. */
  origin: string;
  /** Per preset: the sha256 and size of the stand-in's model.safetensors (its own test checkpoint). */
  presets: Partial<Record<HubPresetId, { sha256: string; bytes: number }>>;
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
  const presets: HubOverride['presets'] = {};
  const p = r.presets;
  if (typeof p !== 'object' || p === null) return null;
  for (const [id, e] of Object.entries(p as Record<string, unknown>)) {
    if (!HUB_PRESETS.some((h) => h.id === id)) return null;
    const x = e as Record<string, unknown> | null;
    if (typeof x !== 'object' || x === null) return null;
    if (typeof x.sha256 !== 'string' || !SHA256.test(x.sha256)) return null;
    if (typeof x.bytes !== 'number' || !Number.isSafeInteger(x.bytes) || x.bytes < 0) return null;
    presets[id as HubPresetId] = { sha256: x.sha256, bytes: x.bytes };
  }
  return { origin: origin.origin, presets };
}

/** A preset ready to load: its folder URL and the sha256 its weights must hash to. */
export interface ResolvedPreset extends HubPreset {
  /** `…/resolve/<revision>/`: the URL model's folder. */
  url: string;
}

/** The presets as this page uses them: on the Hub, or (override) on a stand-in with its own checkpoints. */
export function resolvePresets(override: HubOverride | null = null): ResolvedPreset[] {
  return HUB_PRESETS.map((p) => {
    const o = override?.presets[p.id];
    const q: HubPreset = o ? { ...p, sha256: o.sha256, weightsBytes: o.bytes, exact: true } : p;
    return { ...q, url: resolveUrl(override?.origin ?? HUB_ORIGIN, p.repo, p.revision) };
  });
}

/** Reads the override from a Storage (null when storage is unavailable or holds nothing valid). */
export function readHubOverride(storage: Pick<Storage, 'getItem'> | null | undefined): HubOverride | null {
  try {
    return parseHubOverride(storage?.getItem(HUB_OVERRIDE_KEY) ?? null);
  } catch {
    return null; // storage switched off (private mode, sandboxed frame)
  }
}
