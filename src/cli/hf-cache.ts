// The Hugging Face cache layout (what huggingface_hub and transformers keep under ~/.cache/huggingface/hub):
//   models--<org>--<name>/refs/<branch or tag>      the commit it named when last downloaded
//   models--<org>--<name>/snapshots/<commit>/<file> a symlink to ../../blobs/<etag>
//   models--<org>--<name>/blobs/<etag>              the content (etag: sha256 for LFS files, else the git oid)
// Read: a repository folder picks the snapshot its refs/main names (or its only snapshot). Written by `--hub`
// (src/cli/hub-download.ts): each file downloaded to blobs/<etag>.incomplete, checked, renamed; then the snapshot
// made whole at once (linkSnapshot: its links built in a folder of another name, renamed to snapshots/<commit>),
// so a snapshot folder that exists holds every file of its model.
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { CliInputError, quoteUser } from './files';

const COMMIT = /^[0-9a-f]{40}$/;

/** Where the cache is: $HF_HUB_CACHE, $HF_HOME/hub, or ~/.cache/huggingface/hub (as huggingface_hub decides). */
export function hfCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.HF_HUB_CACHE) return env.HF_HUB_CACHE;
  if (env.HF_HOME) return join(env.HF_HOME, 'hub');
  return join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'huggingface', 'hub');
}

/** `models--org--name`: a repository's folder in the cache. */
export function repoFolder(cacheDir: string, repo: string): string {
  return join(cacheDir, `models--${repo.split('/').join('--')}`);
}

/** True for a cache repository folder (it has snapshots/). */
export function isCacheRepo(dir: string): boolean {
  return existsSync(join(dir, 'snapshots')) && /^models--/.test(basename(dir));
}

/**
 * The snapshot folder of a cache repository at `revision` (a branch or tag from refs/, or a commit), or, with
 * no revision, refs/main's (else its only snapshot). Bad input naming what is there when none fits.
 */
export function cacheSnapshot(dir: string, revision?: string): string {
  const snaps = readdirSync(join(dir, 'snapshots')).filter((s) => COMMIT.test(s));
  const ref = (r: string) => {
    const p = join(dir, 'refs', r);
    return existsSync(p) ? readFileSync(p, 'utf8').trim() : null;
  };
  let commit: string | null;
  if (revision !== undefined) commit = COMMIT.test(revision) ? revision : ref(revision);
  else commit = ref('main') ?? (snaps.length === 1 ? snaps[0] : null);
  if (commit === null || !snaps.includes(commit)) {
    const what = revision === undefined ? 'refs/main' : quoteUser(revision);
    throw new CliInputError(
      `${quoteUser(dir)}: no snapshot for ${what} in this Hugging Face cache folder (it has ${snaps.length} snapshot${snaps.length === 1 ? '' : 's'}${snaps.length ? `: ${snaps.map((s) => s.slice(0, 7)).join(', ')}` : ''})`,
    );
  }
  return join(dir, 'snapshots', commit);
}

/**
 * Makes snapshots/<commit>/ at once, every file a link to its blobs/<etag> (all already there and checked): the
 * links are made in snapshots/.<commit>.<pid>.incomplete and that folder renamed. A snapshot folder left by an
 * older, partial download is replaced.
 */
export function linkSnapshot(dir: string, commit: string, files: { path: string; etag: string }[]): string {
  const snaps = join(dir, 'snapshots');
  const snap = join(snaps, commit);
  const stage = join(snaps, `.${commit}.${process.pid}.incomplete`);
  mkdirSync(snaps, { recursive: true });
  rmSync(stage, { recursive: true, force: true });
  try {
    mkdirSync(stage);
    for (const f of files) {
      const blob = join(dir, 'blobs', f.etag);
      if (!existsSync(blob)) throw new CliInputError(`${quoteUser(blob)}: missing from the cache`);
      symlinkSync(relative(snap, blob), join(stage, f.path));
    }
    rmSync(snap, { recursive: true, force: true });
    renameSync(stage, snap);
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
  return snap;
}

/** Records that `revision` (a branch or tag) named `commit`, as huggingface_hub does. */
export function writeRef(dir: string, revision: string, commit: string): void {
  if (revision === commit) return;
  const p = join(dir, 'refs', ...revision.split('/'));
  mkdirSync(join(p, '..'), { recursive: true });
  writeFileSync(p, commit);
}
