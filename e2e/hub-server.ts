// A local stand-in for the Hugging Face Hub (the network is closed here), for e2e/hub.spec.ts and the Node
// tests of the Hub client and the CLI. It serves the repositories of e2e/hub-repos.ts and answers the way the
// Hub does where the app relies on it:
// - `GET /api/models/<org>/<name>/revision/<rev>` (modelInfo): `{ _id, id, sha, private, ... }` — the commit a
//   branch, tag or commit names; 404 `RevisionNotFound` / `RepoNotFound`, 401 for a private repository;
// - `GET /api/models/<org>/<name>/tree/<rev>[/<path>]` (listFiles): `[{ type, oid, size, path, lfs? }]`, with
//   `lfs: { oid: <sha256>, size, pointerSize }` for LFS files;
// - `/<org>/<name>/resolve/<rev>/<file>`: a small file directly (X-Repo-Commit), an LFS file as a 302 redirect
//   (X-Linked-Size, X-Linked-Etag) to a CDN-like path on another origin (a second port, as the Hub's CDN is
//   another host) that answers with the bytes; HEAD and Range (206, Content-Range) on both;
// - CORS on every answer, preflights included (the page is on a third origin, and a cross-origin redirect
//   leaves the request with an opaque origin: only `*` lets it read).
// It counts every request and every body byte it sends, can be made slow (to cancel half-way), can cut a CDN
// body off mid-file (a network failure), can move a branch to another commit (a link made before must still open
// its own commit), and acts out the hostile answers of the `hostile/<name>` repositories (e2e/hub-repos.ts
// HOSTILE): endless bodies, more or fewer bytes than listed, endless or foreign pagination, a stalled body, an
// API that never answers, gated, 429, 404 EntryNotFound, garbage JSON, a malformed oid, a listing that lies.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HubOverride } from '../src/run/hub';
import { buildRepos, commitOf, type Hostile, type HubFile, type Repo, TREE_LIES_LISTED } from './hub-repos';

export * from './hub-repos';

export interface HubRequest {
  method: string;
  /** host:port the request was sent to (the Hub's or the CDN's). */
  host: string;
  path: string;
  status: number;
  range?: string;
}

export interface StandIn {
  origin: string;
  /** Where the 302s point: the stand-in's CDN, another origin. */
  cdnOrigin: string;
  /** Every request so far, in order. */
  requests: HubRequest[];
  /** The override a page needs (localStorage) to talk to this stand-in. */
  override: HubOverride;
  /** The commit a branch or tag names now. */
  commit(repo: string, ref: string): string;
  /** A file as served at a revision (default main), to compare hashes and sizes with what the page shows. */
  file(repo: string, name: string, ref?: string): HubFile;
  /** The paths at a revision. */
  paths(repo: string, ref?: string): string[];
  /** Points `branch` at `commit` (another revision's commit: what a push to the branch does). */
  moveBranch(repo: string, branch: string, commit: string): void;
  /** Bytes sent of CDN bodies so far (counts a cancelled download's partial body). */
  cdnBytesSent(): number;
  /** Bytes sent of every body so far (the API's, the files', the CDN's, the endless ones'). */
  bytesSent(): number;
  /** Slow the CDN's bodies down to `chunk` bytes every `ms` milliseconds; null: full speed. */
  setSlow(s: { chunk: number; ms: number } | null): void;
  /** Cut bodies of the file with this name off at byte `afterBytes` of the file (the connection dies); null: never. */
  setCut(c: { file: string; afterBytes: number } | null): void;
  close(): Promise<void>;
}

const CORS = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers':
    'X-Repo-Commit,X-Request-Id,X-Error-Code,X-Error-Message,ETag,Link,Accept-Ranges,Content-Range,X-Linked-Size,X-Linked-Etag',
};

/** `bytes=a-b` / `bytes=a-` of a body of `size` bytes, or null (absent or unsatisfiable: the whole body). */
function parseRange(h: string | undefined, size: number): [number, number] | null {
  const m = /^bytes=(\d+)-(\d*)$/.exec(h ?? '');
  if (!m) return null;
  const a = Number(m[1]);
  const b = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  return a <= b ? [a, b] : null;
}

export async function startHubServer(): Promise<StandIn> {
  const repos = buildRepos();
  const byCdn = new Map<string, HubFile>();
  const cdnHostile = new Map<string, Hostile>();
  for (const r of repos.values())
    for (const c of r.commits.values())
      for (const f of c.values())
        if (f.lfs) {
          byCdn.set(f.sha256, f);
          if (r.hostile) cdnHostile.set(f.sha256, r.hostile);
        }
  const requests: HubRequest[] = [];
  let slow: { chunk: number; ms: number } | null = null;
  let cut: { file: string; afterBytes: number } | null = null;
  let cdnSent = 0;
  let sent = 0;

  const send = (
    res: ServerResponse,
    status: number,
    headers: Record<string, string | number>,
    body?: Buffer,
  ) => {
    res.writeHead(status, { ...CORS, ...headers });
    sent += body?.length ?? 0;
    res.end(body);
  };
  /** A body that never ends (no Content-Length), until the client goes away (or 256 MiB: the test failed). */
  const endless = (req: IncomingMessage, res: ServerResponse, type: string) => {
    res.writeHead(200, { ...CORS, 'Content-Type': type });
    if (req.method === 'HEAD') return res.end();
    const head = Buffer.from('{"vocab_size": 256, "padding": "');
    const chunk = Buffer.alloc(64 << 10, 0x78);
    let stopped = false;
    let total = 0;
    res.on('close', () => {
      stopped = true;
    });
    const pump = () => {
      while (!stopped && total < 256 << 20) {
        const c = total === 0 ? Buffer.concat([head, chunk]) : chunk;
        total += c.length;
        sent += c.length;
        if (!res.write(c)) {
          res.once('drain', pump);
          return;
        }
      }
      if (!stopped) res.end();
    };
    pump();
  };
  const error = (res: ServerResponse, status: number, code: string, message: string) =>
    send(
      res,
      status,
      { 'Content-Type': 'application/json', 'X-Error-Code': code, 'X-Error-Message': message },
      Buffer.from(JSON.stringify({ error: message })),
    );
  const sendJson = (res: ServerResponse, v: unknown) =>
    send(res, 200, { 'Content-Type': 'application/json; charset=utf-8' }, Buffer.from(JSON.stringify(v)));

  const serveBody = (
    req: IncomingMessage,
    res: ServerResponse,
    f: HubFile,
    name: string,
    commit?: string,
  ) => {
    const range = parseRange(req.headers.range, f.body.length);
    const [a, b] = range ?? [0, f.body.length - 1];
    let body = f.body.subarray(a, b + 1);
    // The CDN's lies about a whole file: more bytes than listed, fewer, or half and then nothing.
    const lie = f.lfs && !range ? cdnHostile.get(f.sha256) : undefined;
    if (lie === 'longer-body') body = Buffer.concat([f.body, Buffer.alloc(1 << 20, 0x41)]);
    if (lie === 'shorter-body') body = f.body.subarray(0, f.body.length >> 1);
    // More or fewer bytes than listed, sent without a Content-Length (chunked): only counting the bytes tells.
    if ((lie === 'longer-body' || lie === 'shorter-body') && req.method !== 'HEAD') {
      res.writeHead(200, { ...CORS, 'Content-Type': f.type });
      sent += body.length;
      cdnSent += body.length;
      return res.end(body);
    }
    if (lie === 'stalled-body' && req.method !== 'HEAD') {
      res.writeHead(200, { ...CORS, 'Content-Type': f.type, 'Content-Length': body.length });
      const half = body.subarray(0, body.length >> 1);
      sent += half.length;
      cdnSent += half.length;
      res.write(half); // and nothing more: the connection stays open
      return;
    }
    res.writeHead(range ? 206 : 200, {
      ...CORS,
      'Content-Type': f.type,
      'Content-Length': body.length,
      ETag: `"${f.lfs ? f.sha256 : f.gitOid}"`,
      'Accept-Ranges': 'bytes',
      ...(range ? { 'Content-Range': `bytes ${a}-${b}/${f.body.length}` } : {}),
      ...(commit ? { 'X-Repo-Commit': commit } : {}),
    });
    if (req.method === 'HEAD') return res.end();
    // A cut is at an offset of the file: any answer that would carry bytes past it dies there (a browser may
    // fetch the rest of a file with a Range request after its cache holds the start).
    const cutAt = cut && cut.file === name && b >= cut.afterBytes ? Math.max(0, cut.afterBytes - a) : null;
    if (!slow && cutAt === null) {
      if (f.lfs) cdnSent += body.length;
      sent += body.length;
      return res.end(body);
    }
    const { chunk, ms } = slow ?? { chunk: 1 << 16, ms: 0 };
    let at = 0;
    let stopped = false;
    res.on('close', () => {
      stopped = true;
    });
    const tick = () => {
      if (stopped) return;
      if (cutAt !== null && at >= cutAt) {
        res.destroy(); // the connection dies mid-file
        return;
      }
      const part = body.subarray(at, Math.min(at + chunk, cutAt ?? body.length));
      at += part.length;
      cdnSent += part.length;
      sent += part.length;
      if (at >= body.length) return res.end(part);
      res.write(part);
      setTimeout(tick, ms);
    };
    tick();
  };

  /** The commit a revision names in a repo (a branch, a tag, or a commit sha), or null. */
  const commitOfRef = (repo: Repo, rev: string) => repo.refs.get(rev) ?? (repo.commits.has(rev) ? rev : null);

  let cdnOrigin = '';
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const path = url.pathname;
    const entry: HubRequest = {
      method: req.method ?? '?',
      host: req.headers.host ?? '',
      path: decodeURIComponent(path),
      status: 0,
      ...(req.headers.range ? { range: req.headers.range } : {}),
    };
    requests.push(entry);
    res.on('finish', () => {
      entry.status = res.statusCode;
    });
    if (req.method === 'OPTIONS') {
      return send(res, 204, {
        'Access-Control-Allow-Methods': 'GET, HEAD, POST, OPTIONS',
        'Access-Control-Allow-Headers': 'range, accept, content-type',
      });
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, {});
    const cdn = /^\/cdn\/([0-9a-f]{64})\/([^/]+)$/.exec(path);
    if (cdn) {
      const f = byCdn.get(cdn[1]);
      return f
        ? serveBody(req, res, f, decodeURIComponent(cdn[2]))
        : error(res, 404, 'EntryNotFound', 'no such object');
    }
    // The API: revision info and tree listing.
    const api = /^\/api\/models\/([^/]+\/[^/]+)\/(revision|tree)\/([^/]+)(?:\/(.*))?$/.exec(path);
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/([^/]+)$/.exec(path);
    const m = api ?? resolve;
    if (!m) return error(res, 404, 'RepoNotFound', 'Repository not found');
    const repoId = m[1];
    const repo = repos.get(repoId);
    // The Hub answers 401 for a repository it will not show (missing or private) without a token.
    if (!repo || repo.private) return error(res, 401, 'RepoNotFound', 'Repository not found');
    const h = repo.hostile;
    if (h === 'silent-api' && api) return; // no status, no headers, the connection held open
    if (h === 'gated-401')
      return error(
        res,
        401,
        'GatedRepo',
        `Access to model ${repoId} is restricted. You must have access to it and be authenticated to access it. Please log in.`,
      );
    if (h === 'gated-403')
      return error(
        res,
        403,
        'GatedRepo',
        `Access to model ${repoId} is restricted and you are not in the authorized list. Visit https://huggingface.co/${repoId} to ask for access.`,
      );
    if (h === 'rate-limited')
      return send(
        res,
        429,
        { 'Content-Type': 'text/plain', 'Retry-After': '30' },
        Buffer.from('Too Many Requests'),
      );
    const rev = decodeURIComponent(api ? m[3] : m[2]);
    const commit = commitOfRef(repo, rev);
    if (!commit) return error(res, 404, 'RevisionNotFound', `Invalid rev id: ${rev}`);
    const files = repo.commits.get(commit)!;
    const garbage = () =>
      send(
        res,
        200,
        { 'Content-Type': 'application/json' },
        Buffer.from('<!DOCTYPE html><html>{"sha": oops'),
      );
    if (api && api[2] === 'revision') {
      if (h === 'garbage-json') return garbage();
      return sendJson(res, {
        _id: commitOf(`id ${repoId}`).slice(0, 24),
        id: repoId,
        sha: commit,
        private: false,
        gated: false,
        downloads: 0,
        likes: 0,
        lastModified: '2026-11-26T00:00:00.000Z',
        pipeline_tag: 'text-generation',
      });
    }
    if (api) {
      if (h === 'garbage-tree') return garbage();
      const list = [...files].map(([p, f]) => {
        const size = h === 'tree-lies' && p === 'model.safetensors' ? TREE_LIES_LISTED : f.body.length;
        const oid = h === 'bad-oid' && p === 'model.safetensors' ? 'ZZZ-not-a-sha256' : f.sha256;
        return {
          type: 'file',
          oid: f.gitOid,
          size,
          path: p,
          ...(f.lfs ? { lfs: { oid, size, pointerSize: 134 } } : {}),
        };
      });
      // Pagination as the Hub does it (Link: rel="next"), only where it goes wrong: forever, or elsewhere.
      const page = Number(url.searchParams.get('cursor') ?? '0');
      const here = `http://${req.headers.host ?? ''}`;
      const next =
        h === 'endless-pages'
          ? `${here}${path}?cursor=${page + 1}`
          : h === 'foreign-next'
            ? `${cdnOrigin}${path}?cursor=1`
            : null;
      const body = Buffer.from(JSON.stringify(list));
      if (slow && next)
        return void setTimeout(
          () =>
            send(
              res,
              200,
              { 'Content-Type': 'application/json; charset=utf-8', Link: `<${next}>; rel="next"` },
              body,
            ),
          slow.ms,
        );
      return send(
        res,
        200,
        {
          'Content-Type': 'application/json; charset=utf-8',
          ...(next ? { Link: `<${next}>; rel="next"` } : {}),
        },
        body,
      );
    }
    const name = decodeURIComponent(m[3]);
    const f = files.get(name);
    if (!f || (h === 'entry-missing' && name === 'config.json'))
      return error(res, 404, 'EntryNotFound', 'Entry not found');
    if (
      (h === 'endless-config' && name === 'config.json') ||
      (h === 'endless-index' && name === 'model.safetensors.index.json') ||
      (h === 'endless-tokenizer' && name === 'tokenizer.json')
    )
      return endless(req, res, 'application/json');
    if (!f.lfs) return serveBody(req, res, f, name, commit);
    // The Hub's answer for an LFS file: a redirect to the CDN, with the LFS object's size and sha256.
    return send(res, 302, {
      Location: `${cdnOrigin}/cdn/${f.sha256}/${encodeURIComponent(name)}`,
      'X-Linked-Size': f.body.length,
      'X-Linked-Etag': `"${f.sha256}"`,
      ETag: `"${f.sha256}"`,
      'X-Repo-Commit': commit,
      'Content-Length': 0,
    });
  };
  const server = createServer(handler);
  const cdnServer = createServer(handler);
  const listen = async (s: typeof server) => {
    await new Promise<void>((done) => s.listen(0, '127.0.0.1', done));
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  };
  const origin = await listen(server);
  cdnOrigin = await listen(cdnServer);
  const closeOne = (s: typeof server) =>
    new Promise<void>((done) => {
      s.closeAllConnections();
      s.close(() => done());
    });
  const repoOf = (id: string) => {
    const r = repos.get(id);
    if (!r) throw new Error(`the stand-in has no ${id}`);
    return r;
  };
  const at = (id: string, ref = 'main') => {
    const r = repoOf(id);
    const c = commitOfRef(r, ref);
    if (!c) throw new Error(`the stand-in's ${id} has no revision ${ref}`);
    return r.commits.get(c)!;
  };
  return {
    origin,
    cdnOrigin,
    requests,
    override: { origin },
    commit: (id, ref) => {
      const c = commitOfRef(repoOf(id), ref);
      if (!c) throw new Error(`the stand-in's ${id} has no revision ${ref}`);
      return c;
    },
    file: (id, name, ref) => {
      const f = at(id, ref).get(name);
      if (!f) throw new Error(`the stand-in has no ${id}/${name}`);
      return f;
    },
    paths: (id, ref) => [...at(id, ref).keys()],
    moveBranch: (id, branch, commit) => {
      const r = repoOf(id);
      if (!r.commits.has(commit)) throw new Error(`the stand-in's ${id} has no commit ${commit}`);
      r.refs.set(branch, commit);
    },
    cdnBytesSent: () => cdnSent,
    bytesSent: () => sent,
    setSlow: (s) => {
      slow = s;
    },
    setCut: (c) => {
      cut = c;
    },
    close: async () => {
      await Promise.all([closeOne(server), closeOne(cdnServer)]);
    },
  };
}
