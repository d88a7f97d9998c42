// A local stand-in for the Hugging Face Hub, for e2e/hub.spec.ts (the network is closed here). It serves small
// generated GPT-NeoX checkpoints in the Hub's layout and answers the way the Hub does where the app relies on
// it: `/<org>/<name>/resolve/<revision>/<file>` gives a small file (config.json, tokenizer.json) directly and
// an LFS file (model.safetensors) as a 302 redirect, with X-Linked-Size / X-Linked-Etag / X-Repo-Commit, to a
// CDN-like path on another origin (a second port, as the Hub's CDN is another host) that answers with the
// bytes and their Content-Length; HEAD works on both; every answer carries CORS headers (the page is on a
// third origin, and a cross-origin redirect leaves the request with an opaque origin: only `*` lets it read). It counts every request, and can be made slow (so a download
// can be cancelled half-way). Started by the spec itself on a free port.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type RandomModelSpec, randomConfigJson, randomModelFiles } from '../src/model/random-model';
import { HUB_PRESETS, type HubOverride, type HubPresetId } from '../src/run/hub';

interface HubFile {
  body: Buffer;
  sha256: string;
  /** Stored with LFS on the Hub: served by a redirect to the CDN path. */
  lfs: boolean;
  type: string;
}

interface Repo {
  revision: string;
  files: Map<string, HubFile>;
}

export interface HubRequest {
  method: string;
  /** host:port the request was sent to (the Hub's or the CDN's). */
  host: string;
  path: string;
  status: number;
}

export interface StandIn {
  origin: string;
  /** Where the 302s point: the stand-in's CDN, another origin. */
  cdnOrigin: string;
  /** Every request so far, in order. */
  requests: HubRequest[];
  /** The override a page needs (localStorage) to point its presets here. */
  override: HubOverride;
  /** A file as served (to compare hashes and sizes with what the page shows). */
  file(repo: string, name: string): HubFile;
  /** Bytes sent of CDN bodies so far (counts a cancelled download's partial body). */
  cdnBytesSent(): number;
  /** Slow the CDN's bodies down to `chunk` bytes every `ms` milliseconds; null: full speed. */
  setSlow(s: { chunk: number; ms: number } | null): void;
  close(): Promise<void>;
}

const file = (body: Buffer, lfs: boolean, type: string): HubFile => ({
  body,
  sha256: createHash('sha256').update(body).digest('hex'),
  lfs,
  type,
});

/** The byte-level tokenizer of the embedded model (256 ids), so prompts are plain text. */
const TOKENIZER = Buffer.from('{"type": "bytes"}\n');

/** Per preset: a small checkpoint of the same family (vocab 256 for the byte tokenizer), fp16 like Pythia's. */
const STAND_INS: Record<HubPresetId, RandomModelSpec> = {
  'pythia-70m': {
    vocab: 256,
    d: 64,
    layers: 2,
    heads: 4,
    ff: 256,
    rotaryPct: 0.25,
    parallel: true,
    dtype: 'F16',
  },
  'pythia-160m': {
    vocab: 256,
    d: 128,
    layers: 4,
    heads: 8,
    ff: 512,
    rotaryPct: 0.25,
    parallel: true,
    dtype: 'F16',
  },
  'pythia-410m': {
    vocab: 256,
    d: 96,
    layers: 3,
    heads: 4,
    ff: 384,
    rotaryPct: 0.25,
    parallel: true,
    dtype: 'F16',
  },
};

/** A repo whose config.json asks for more GPU memory than any budget here (its weights must never be fetched). */
export const TOO_BIG_REPO = 'test/too-big';
const TOO_BIG: RandomModelSpec = {
  vocab: 50304,
  d: 16384,
  layers: 64,
  heads: 128,
  ff: 65536,
  rotaryPct: 0.25,
  parallel: true,
};

function buildRepos(): Map<string, Repo> {
  const repos = new Map<string, Repo>();
  HUB_PRESETS.forEach((p, i) => {
    const m = randomModelFiles(STAND_INS[p.id], 1000 + i);
    repos.set(p.repo, {
      revision: p.revision,
      files: new Map([
        ['config.json', file(Buffer.from(m.config), false, 'application/json')],
        ['tokenizer.json', file(TOKENIZER, false, 'application/json')],
        ['model.safetensors', file(Buffer.from(m.weights), true, 'binary/octet-stream')],
      ]),
    });
  });
  repos.set(TOO_BIG_REPO, {
    revision: 'main',
    files: new Map([
      [
        'config.json',
        file(Buffer.from(JSON.stringify(randomConfigJson(TOO_BIG))), false, 'application/json'),
      ],
      ['tokenizer.json', file(TOKENIZER, false, 'application/json')],
      ['model.safetensors', file(Buffer.alloc(1 << 20), true, 'binary/octet-stream')],
    ]),
  });
  return repos;
}

const CORS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers':
    'X-Repo-Commit,X-Request-Id,X-Error-Code,X-Error-Message,ETag,Link,Accept-Ranges,Content-Range,X-Linked-Size,X-Linked-Etag',
};

export async function startHubServer(): Promise<StandIn> {
  const repos = buildRepos();
  const byCdn = new Map<string, HubFile>();
  for (const r of repos.values()) for (const f of r.files.values()) if (f.lfs) byCdn.set(f.sha256, f);
  const requests: HubRequest[] = [];
  let slow: { chunk: number; ms: number } | null = null;
  let cdnSent = 0;

  const send = (
    res: ServerResponse,
    status: number,
    headers: Record<string, string | number>,
    body?: Buffer,
  ) => {
    res.writeHead(status, { ...CORS, ...headers });
    res.end(body);
  };
  const notFound = (res: ServerResponse, code: string, message: string) =>
    send(
      res,
      404,
      { 'Content-Type': 'application/json', 'X-Error-Code': code, 'X-Error-Message': message },
      Buffer.from(JSON.stringify({ error: message })),
    );

  const serveBody = (req: IncomingMessage, res: ServerResponse, f: HubFile) => {
    res.writeHead(200, {
      ...CORS,
      'Content-Type': f.type,
      'Content-Length': f.body.length,
      ETag: `"${f.sha256}"`,
      'Accept-Ranges': 'bytes',
    });
    if (req.method === 'HEAD') return res.end();
    if (!slow) {
      cdnSent += f.body.length;
      return res.end(f.body);
    }
    const { chunk, ms } = slow;
    let at = 0;
    let stopped = false;
    res.on('close', () => {
      stopped = true;
    });
    const tick = () => {
      if (stopped) return;
      const part = f.body.subarray(at, at + chunk);
      at += part.length;
      cdnSent += part.length;
      if (at >= f.body.length) return res.end(part);
      res.write(part);
      setTimeout(tick, ms);
    };
    tick();
  };

  let cdnOrigin = '';
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const path = decodeURIComponent(url.pathname);
    const entry: HubRequest = { method: req.method ?? '?', host: req.headers.host ?? '', path, status: 0 };
    requests.push(entry);
    res.on('finish', () => {
      entry.status = res.statusCode;
    });
    if (req.method === 'OPTIONS') {
      return send(res, 204, {
        'Access-Control-Allow-Methods': 'GET, HEAD, OPTIONS',
        'Access-Control-Allow-Headers': '*',
      });
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, {});
    const cdn = /^\/cdn\/([0-9a-f]{64})\/[^/]+$/.exec(path);
    if (cdn) {
      const f = byCdn.get(cdn[1]);
      return f ? serveBody(req, res, f) : notFound(res, 'EntryNotFound', 'no such object');
    }
    const m = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/([^/]+)$/.exec(path);
    if (!m) return notFound(res, 'RepoNotFound', 'Repository not found');
    const repo = repos.get(m[1]);
    if (!repo) return notFound(res, 'RepoNotFound', 'Repository not found');
    if (m[2] !== repo.revision) return notFound(res, 'RevisionNotFound', 'Invalid rev id');
    const f = repo.files.get(m[3]);
    if (!f) return notFound(res, 'EntryNotFound', 'Entry not found');
    if (!f.lfs) return serveBody(req, res, f);
    // The Hub's answer for an LFS file: a redirect to the CDN, with the LFS object's size and sha256.
    return send(res, 302, {
      Location: `${cdnOrigin}/cdn/${f.sha256}/${encodeURIComponent(m[3])}`,
      'X-Linked-Size': f.body.length,
      'X-Linked-Etag': `"${f.sha256}"`,
      ETag: `"${f.sha256}"`,
      'X-Repo-Commit': repo.revision,
      'Content-Length': 0,
    });
  };
  const server = createServer(handler);
  const cdn = createServer(handler);
  const listen = async (s: typeof server) => {
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  };
  const origin = await listen(server);
  cdnOrigin = await listen(cdn);
  const override: HubOverride = { origin, presets: {} };
  for (const p of HUB_PRESETS) {
    const w = repos.get(p.repo)!.files.get('model.safetensors')!;
    override.presets[p.id] = { sha256: w.sha256, bytes: w.body.length };
  }
  const closeOne = (s: typeof server) =>
    new Promise<void>((resolve) => {
      s.closeAllConnections();
      s.close(() => resolve());
    });
  return {
    origin,
    cdnOrigin,
    requests,
    override,
    file: (repo, name) => {
      const f = repos.get(repo)?.files.get(name);
      if (!f) throw new Error(`the stand-in has no ${repo}/${name}`);
      return f;
    },
    cdnBytesSent: () => cdnSent,
    setSlow: (s) => {
      slow = s;
    },
    close: async () => {
      await Promise.all([closeOne(server), closeOne(cdn)]);
    },
  };
}
