// The repositories the stand-in Hub (e2e/hub-server.ts) serves: small generated GPT-NeoX checkpoints under the
// Pythia suite's repo ids, as the Hub keeps them — commits holding files (small ones in git, large ones in
// LFS with a sha256 oid), branches and tags naming commits, training-step branches, a sharded repository
// (index + shards), a revision with only pytorch_model.bin, a repository that is not GPT-NeoX, one too large for
// the budget (real Pythia-12b config, refused from it), a private one, and the Llama-family presets (each a
// committed HF fixture).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type RandomModelSpec,
  randomConfigJson,
  randomModelFiles,
  randomTensors,
} from '../src/model/random-model';
import { writeSharded } from '../src/model/shard-write';
import { HUB_PRESETS, LLAMA_HUB_PRESETS } from '../src/run/hub';

export interface HubFile {
  body: Buffer;
  sha256: string;
  /** The git blob id (sha1 of "blob <size>\0" + content), what the tree listing gives as `oid`. */
  gitOid: string;
  /** Stored with LFS on the Hub: served by a redirect to the CDN, listed with lfs {oid, size}. */
  lfs: boolean;
  type: string;
}

export interface Repo {
  /** commit sha -> path -> file. */
  commits: Map<string, Map<string, HubFile>>;
  /** Branches and tags -> commit sha. */
  refs: Map<string, string>;
  /** Answers 401 to anyone (the Hub's answer to a private or gated repository without a token). */
  private?: boolean;
  /** How this repository's answers go wrong (e2e/hub-server.ts acts it out); absent: a good repository. */
  hostile?: Hostile;
}

/**
 * The hostile answers, one repository each (`hostile/<name>`), for the Node tests, the CLI's and the page's:
 * - endless-config / endless-index / endless-tokenizer: that file's body never ends (no Content-Length);
 * - longer-body / shorter-body: the CDN sends more / fewer bytes of model.safetensors than listed;
 * - endless-pages: the tree listing's `Link: rel="next"` chain never ends (same origin);
 * - foreign-next: the tree listing's next page is on another origin;
 * - stalled-body: model.safetensors stops half-way and the connection stays open;
 * - silent-api: the API never answers (the connection stays open, no status);
 * - gated-401 / gated-403: the Hub's answers for a gated repository (X-Error-Code GatedRepo, X-Error-Message);
 * - rate-limited: 429 with Retry-After;
 * - entry-missing: the tree lists config.json but the file answers 404 EntryNotFound;
 * - garbage-json / garbage-tree: the revision / tree endpoint answers 200 with bytes that are not JSON;
 * - bad-oid: model.safetensors listed with an LFS oid that is not a sha256;
 * - tree-lies: the tree lists model.safetensors at 2 KiB (its true sha256), the CDN serves its 1 MiB;
 * - no-tokenizer: a good model without tokenizer.json (it opens with token ids).
 */
export const HOSTILE = [
  'endless-config',
  'endless-index',
  'endless-tokenizer',
  'longer-body',
  'shorter-body',
  'endless-pages',
  'foreign-next',
  'stalled-body',
  'silent-api',
  'gated-401',
  'gated-403',
  'rate-limited',
  'entry-missing',
  'garbage-json',
  'garbage-tree',
  'bad-oid',
  'tree-lies',
  'no-tokenizer',
] as const;
export type Hostile = (typeof HOSTILE)[number];

/** The size the tree-lies repository lists for its model.safetensors (the CDN serves about 1 MiB). */
export const TREE_LIES_LISTED = 2048;

export const makeFile = (body: Buffer, lfs: boolean, type = 'application/octet-stream'): HubFile => ({
  body,
  sha256: createHash('sha256').update(body).digest('hex'),
  gitOid: createHash('sha1')
    .update(Buffer.concat([Buffer.from(`blob ${body.length}\0`), body]))
    .digest('hex'),
  lfs,
  type,
});

/** A commit sha for a label (deterministic, 40 hex digits). */
export const commitOf = (label: string) => createHash('sha1').update(label).digest('hex');

/** The byte-level tokenizer of the embedded model (256 ids), so prompts are plain text. */
const TOKENIZER = makeFile(Buffer.from('{"type": "bytes"}\n'), false, 'application/json');

const json = (v: unknown) => makeFile(Buffer.from(JSON.stringify(v, null, 2)), false, 'application/json');

/** A small model of the family (vocab 256 for the byte tokenizer), fp16 like Pythia's. */
function small(d: number, layers: number, heads: number): RandomModelSpec {
  return { vocab: 256, d, layers, heads, ff: 4 * d, rotaryPct: 0.25, parallel: true, dtype: 'F16' };
}

/** The files of one small checkpoint, in one model.safetensors or (shardBytes) in shards with an index. */
function checkpoint(spec: RandomModelSpec, seed: number, shardBytes?: number): Map<string, HubFile> {
  const files = new Map<string, HubFile>([
    ['config.json', json(randomConfigJson(spec))],
    ['tokenizer.json', TOKENIZER],
    ['README.md', makeFile(Buffer.from('# stand-in\n'), false, 'text/markdown')],
  ]);
  if (shardBytes === undefined) {
    files.set('model.safetensors', makeFile(Buffer.from(randomModelFiles(spec, seed).weights), true));
    return files;
  }
  const sharded = writeSharded(randomTensors(spec, seed), shardBytes);
  files.set('model.safetensors.index.json', makeFile(Buffer.from(sharded.index), false, 'application/json'));
  for (const [name, bytes] of sharded.shards) files.set(name, makeFile(Buffer.from(bytes), true));
  return files;
}

/** Pythia-12b's real shape: its weights cannot fit a 4 GiB budget, so it is refused from config.json. */
const PYTHIA_12B: RandomModelSpec = {
  vocab: 50688,
  d: 5120,
  layers: 36,
  heads: 40,
  ff: 20480,
  rotaryPct: 0.25,
  parallel: true,
};

export const SHARDED_REPO = 'EleutherAI/pythia-6.9b';
export const NOT_NEOX_REPO = 'test/gpt2-like';
export const PRIVATE_REPO = 'test/private';
export const BIN_ONLY_BRANCH = 'step0-bin';
/** The committed HF fixture (src/model/testdata/llama) each Llama-family preset's stand-in serves. */
export const LLAMA_FIXTURE_OF: Record<string, string> = {
  'SmolLM2-135M': 'llama-gqa-llama3',
  'Qwen2.5-0.5B': 'qwen2-bias',
  'Qwen3-0.6B': 'qwen3-qknorm',
  'TinyLlama-1.1B-Chat': 'llama-mqa-linear-tied',
};
/** The training-step branches each small repo has (besides main = step143000). */
export const STEP_BRANCHES = ['step1000', 'step143000'];

export function buildRepos(): Map<string, Repo> {
  const repos = new Map<string, Repo>();
  HUB_PRESETS.forEach((p, i) => {
    const repo: Repo = { commits: new Map(), refs: new Map() };
    const shape = p.size === '12b' ? PYTHIA_12B : small(32 * (1 + (i % 3)), 2, 4);
    const sharded = p.repo === SHARDED_REPO || p.size === '12b';
    const add = (label: string, seed: number) => {
      const c = commitOf(`${p.repo}@${label}`);
      if (p.size === '12b') {
        // Its config is the real one; its "weights" are never fetched (the budget refuses it first).
        const files = new Map<string, HubFile>([
          ['config.json', json(randomConfigJson(shape))],
          ['tokenizer.json', TOKENIZER],
          [
            'model.safetensors.index.json',
            json({ metadata: { total_size: 8 }, weight_map: { x: 'model-00001-of-00001.safetensors' } }),
          ],
          ['model-00001-of-00001.safetensors', makeFile(Buffer.alloc(1 << 16), true)],
        ]);
        repo.commits.set(c, files);
      } else repo.commits.set(c, checkpoint(shape, seed, sharded ? 6 << 10 : undefined));
      return c;
    };
    const step1000 = add('step1000', 1000 + i);
    const final = add('step143000', 2000 + i);
    repo.refs.set('step1000', step1000);
    repo.refs.set('step143000', final);
    repo.refs.set('main', final);
    repo.refs.set('v0', step1000); // a tag
    // A revision with only PyTorch pickles (as Pythia's older commits are).
    const bin = commitOf(`${p.repo}@${BIN_ONLY_BRANCH}`);
    repo.commits.set(
      bin,
      new Map([
        ['config.json', json(randomConfigJson(shape))],
        ['tokenizer.json', TOKENIZER],
        ['pytorch_model.bin', makeFile(Buffer.alloc(4096, 7), true)],
      ]),
    );
    repo.refs.set(BIN_ONLY_BRANCH, bin);
    repos.set(p.repo, repo);
  });
  const neo = { ...small(32, 2, 4) };
  const notNeox = checkpoint(neo, 5);
  notNeox.set(
    'config.json',
    json({ ...randomConfigJson(neo), model_type: 'gpt2', architectures: ['GPT2LMHeadModel'] }),
  );
  repos.set(NOT_NEOX_REPO, {
    commits: new Map([[commitOf(NOT_NEOX_REPO), notNeox]]),
    refs: new Map([['main', commitOf(NOT_NEOX_REPO)]]),
  });
  for (const h of HOSTILE) {
    const c = commitOf(`hostile/${h}`);
    const spec = h === 'tree-lies' ? small(128, 2, 4) : small(32, 2, 4);
    const files = checkpoint(spec, 40 + HOSTILE.indexOf(h), h === 'endless-index' ? 6 << 10 : undefined);
    if (h === 'no-tokenizer') files.delete('tokenizer.json');
    repos.set(`hostile/${h}`, { commits: new Map([[c, files]]), refs: new Map([['main', c]]), hostile: h });
  }
  // The Llama-family presets: each a committed HF fixture (src/model/testdata/llama; no tokenizer: token ids).
  LLAMA_HUB_PRESETS.forEach((p) => {
    const dir = join('src', 'model', 'testdata', 'llama', LLAMA_FIXTURE_OF[p.id]);
    const c = commitOf(`${p.repo}@main`);
    const files = new Map<string, HubFile>([
      ['config.json', makeFile(readFileSync(join(dir, 'config.json')), false, 'application/json')],
      ['model.safetensors', makeFile(readFileSync(join(dir, 'model.safetensors')), true)],
    ]);
    repos.set(p.repo, { commits: new Map([[c, files]]), refs: new Map([['main', c]]) });
  });
  repos.set(PRIVATE_REPO, {
    commits: new Map([[commitOf(PRIVATE_REPO), checkpoint(small(32, 2, 4), 6)]]),
    refs: new Map([['main', commitOf(PRIVATE_REPO)]]),
    private: true,
  });
  return repos;
}
