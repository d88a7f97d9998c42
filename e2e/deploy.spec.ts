// The built site is static and works under any base path: dist/ served by a plain file server under a deep
// sub-folder, with its Content-Security-Policy (index.html's <meta>) in force. A scenario link opened there
// loads the worker, the model and the shaders from the sub-folder and runs; no request leaves it; no policy
// violation happens; and the policy really forbids inline script and eval.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, resolve } from 'node:path';
import { expect, test } from '@playwright/test';
import { scenarioRun } from '../src/state/scenario';
import { cspViolations, runLinked, shoot, waitForModel, watchCsp, watchErrors } from './helpers';

const DIST = resolve('dist');
const SUB = '/deep/sub/folder/';
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.safetensors': 'application/octet-stream',
  '.md': 'text/markdown; charset=utf-8',
};

const PROBE = `try { eval('1'); window.__eval = 'ran'; } catch (e) { window.__eval = e.name; }`;

let server: Server;
let origin = '';
const served: { path: string; status: number }[] = [];

test.beforeAll(async () => {
  // playwright.config.ts's webServer has just built dist/.
  expect(existsSync(join(DIST, 'index.html'))).toBe(true);
  server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const send = (status: number, body: Buffer | string, type = 'text/plain; charset=utf-8') => {
      served.push({ path, status });
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    if (!path.startsWith(SUB)) return send(404, 'not under the sub-folder');
    // A test-only script (not part of the site) that tries eval from the page's own context.
    if (path === `${SUB}__csp-probe.js`) return send(200, PROBE, TYPES['.js']);
    const rel = path.slice(SUB.length) || 'index.html';
    const file = normalize(join(DIST, rel));
    if (!file.startsWith(DIST) || !existsSync(file) || !statSync(file).isFile())
      return send(404, 'no such file');
    send(200, readFileSync(file), TYPES[extname(file)] ?? 'application/octet-stream');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

test.afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
});

test('the built site under a sub-folder runs a scenario link, under its Content-Security-Policy', async ({
  page,
}, testInfo) => {
  // The cheapest scenario (8 tokens, nothing generated): what is tested here is the site, not the analysis.
  const sr = scenarioRun('no-rescale', null);
  if (!sr) throw new Error('no scenario no-rescale');
  await watchCsp(page);
  const errors = watchErrors(page);
  await page.goto(`${origin}${SUB}#s=no-rescale`);
  await waitForModel(page);
  await expect(page.getByTestId('scenario')).toHaveAttribute('data-id', 'no-rescale');
  await expect(page.getByTestId('scenario-link')).toHaveText(`${origin}${SUB}#s=no-rescale`);
  await runLinked(page);
  await expect(page.getByTestId('verdict')).toHaveAttribute(
    'data-layer',
    String(sr.expect.firstDivergentLayer ?? ''),
  );
  await expect(page.getByTestId('scenario-check')).toHaveAttribute('data-match', 'yes');
  // A permalink made here points here.
  expect(await page.getByTestId('share-link').inputValue()).toMatch(
    new RegExp(`^${origin.replace(/\./g, '\\.')}${SUB}#r1=[A-Za-z0-9_-]+$`),
  );
  await shoot(page, testInfo, 'sub-folder', false);
  // Everything came from the sub-folder: the page, its script and style, the worker, the model.
  expect(served.filter((s) => s.status !== 200)).toEqual([]);
  const paths = served.map((s) => s.path);
  expect(paths.some((p) => /\/assets\/engine\.worker-[\w-]+\.js$/.test(p))).toBe(true);
  expect(paths).toContain(`${SUB}models/neox-kjv-bytes/model.safetensors`);
  expect(paths.every((p) => p.startsWith(SUB))).toBe(true);
  // The policy is in force and nothing the app does violates it.
  const csp = await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute('content');
  expect(csp).toContain("script-src 'self'");
  expect(csp).not.toContain('unsafe-inline');
  expect(csp).not.toContain('unsafe-eval');
  expect(await cspViolations(page)).toEqual([]);
  expect(errors).toEqual([]);
  // And it forbids what it should (each of these logs a violation, on purpose): eval in a script of the
  // site's own origin, an inline script, an inline event handler.
  await page.evaluate(() => {
    const probe = document.createElement('script');
    probe.src = '__csp-probe.js';
    document.body.append(probe);
    const s = document.createElement('script');
    s.textContent = 'window.__inline = 1;';
    document.body.append(s);
    const holder = document.createElement('div');
    holder.innerHTML = '<img src="data:," onerror="window.__handler = 1">';
    document.body.append(holder);
  });
  await expect
    .poll(() => page.evaluate(() => (window as unknown as { __eval?: string }).__eval))
    .toBe('EvalError');
  await expect.poll(() => cspViolations(page)).toHaveLength(3);
  const blocked = await page.evaluate(() => {
    const w = window as unknown as { __inline?: number; __handler?: number };
    return [w.__inline, w.__handler];
  });
  expect(blocked).toEqual([undefined, undefined]);
});
