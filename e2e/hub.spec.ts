// Models from the Hugging Face Hub against a local stand-in (e2e/hub-server.ts: the API's revision and tree
// endpoints, 302 redirects to a CDN on another origin, Range, CORS, branches and tags, a branch that moves,
// sharded and bin-only revisions, 401/404, a download cut off, and the hostile answers of e2e/hub-repos.ts
// HOSTILE). The page is pointed at it by the test-only override in localStorage (with shorter timeouts for the
// hostile answers). Timings are printed, not asserted.
import { readFileSync } from 'node:fs';
import { expect, type Page, test } from '@playwright/test';
import type { HubOverride } from '../src/run/hub';
import { HUB_OVERRIDE_KEY } from '../src/run/hub';
import { defaultRunSpec } from '../src/run/runspec';
import { fragmentOf, runToEnd, setInputs, shoot, waitForModel, watchErrors } from './helpers';
import {
  BIN_ONLY_BRANCH,
  type Hostile,
  NOT_NEOX_REPO,
  SHARDED_REPO,
  type StandIn,
  startHubServer,
} from './hub-server';

let hub: StandIn;
test.beforeAll(async () => {
  hub = await startHubServer();
});
test.afterAll(async () => {
  await hub?.close();
});

const P160 = 'EleutherAI/pythia-160m';

/** Requests that reached the stand-in since `from` (an index into hub.requests). */
/**
 * The most bytes the stand-in can hand to the kernel for a body the page stops reading at its cap. The server counts
 * what its socket accepted, not what the page read: past the page's cap (4 MiB at most before consent) sit the
 * server's send buffer and the browser's receive buffer (TCP autotuning, up to tcp_wmem's and tcp_rmem's maxima) and
 * the browser's own pipe to the worker (8 MiB allowed). A slow page under load lets all of them fill (16 MB was seen
 * against a bound of 12 MiB), so the bound is their sum, not a guess. It must stay far below the 256 MiB at which an
 * endless body stops by itself, or the test would no longer tell a bounded read from an endless one.
 */
function bytesBound(): number {
  const max = (file: string, fallback: number) => {
    try {
      return Number(readFileSync(file, 'utf8').trim().split(/\s+/)[2]) || fallback;
    } catch {
      return fallback;
    }
  };
  const sockets = max('/proc/sys/net/ipv4/tcp_wmem', 4 << 20) + max('/proc/sys/net/ipv4/tcp_rmem', 32 << 20);
  const bound = (4 << 20) + sockets + (8 << 20);
  expect(bound, 'the bytes bound must tell a bounded read from an endless one (256 MiB)').toBeLessThan(
    128 << 20,
  );
  return bound;
}

const since = (from: number) => hub.requests.slice(from).map((r) => `${r.method} ${r.path} ${r.status}`);

async function openLoader(page: Page): Promise<void> {
  const loader = page.locator('details.loader');
  if ((await loader.getAttribute('open')) === null) await loader.locator('summary').click();
}

async function start(page: Page, override: HubOverride = hub.override) {
  await page.addInitScript(([k, v]) => localStorage.setItem(k, v), [
    HUB_OVERRIDE_KEY,
    JSON.stringify(override),
  ] as const);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('./');
  await waitForModel(page);
}

/** Looks up a repository at a revision in the form; waits for the answer. */
async function lookUp(page: Page, repo: string, revision: string) {
  const presets = page.getByTestId('hub-presets');
  await presets.getByTestId('hub-repo').fill(repo);
  await presets.getByTestId('hub-revision').fill(revision);
  await presets.getByTestId('hub-lookup').click();
  const detail = presets.getByTestId('hub-detail');
  await expect(detail).toHaveAttribute('data-key', `${repo.trim()}@${revision.trim() || 'main'}`);
  await expect(detail).toHaveAttribute('data-state', /done|error/, { timeout: 30_000 });
  return detail;
}

test('the Pythia suite from the Hub: API sizes before download, cancel, pinned commit, revisions, one line per failure', async ({
  page,
}, testInfo) => {
  const t: Record<string, number> = {};
  const errors = watchErrors(page);
  await start(page);
  const presets = page.getByTestId('hub-presets');
  await expect(presets.getByTestId('hub-override')).toContainText(hub.origin);
  await expect(presets.locator('.hub-preset')).toHaveCount(20); // 16 Pythia, 4 Llama-family
  expect(hub.requests).toEqual([]); // nothing asked of the Hub until a preset is picked

  // Pick 160m: the API names main's commit and lists the files; no weights are fetched.
  const commit = hub.commit(P160, 'main');
  const weights = hub.file(P160, 'model.safetensors');
  const total =
    weights.body.length +
    hub.file(P160, 'config.json').body.length +
    hub.file(P160, 'tokenizer.json').body.length;
  let t0 = Date.now();
  await presets.getByTestId('preset-pythia-160m').click();
  const detail = presets.getByTestId('hub-detail');
  await expect(detail).toHaveAttribute('data-state', 'done');
  t.lookupMs = Date.now() - t0;
  await expect(detail.getByTestId('preset-size')).toHaveAttribute('data-bytes', String(total));
  await expect(detail.getByTestId('hub-commit')).toHaveAttribute('data-commit', commit);
  await expect(detail.getByTestId('preset-sha256')).toHaveText(weights.sha256);
  await expect(detail.getByTestId('preset-gpu')).toContainText('of the 4 GiB budget');
  const asked = since(0);
  expect(asked).toContain(`GET /api/models/${P160}/revision/main 200`);
  expect(asked).toContain(`GET /api/models/${P160}/tree/${commit} 200`);
  expect(asked.filter((r) => r.includes('/cdn/'))).toEqual([]);
  await detail.scrollIntoViewIfNeeded();
  await shoot(page, testInfo, 'hub-looked-up-1280x800', false);

  // Download slowly, cancel half-way: the embedded model is still loaded and runs.
  hub.setSlow({ chunk: 16 << 10, ms: 100 });
  let mark = hub.requests.length;
  await detail.getByTestId('preset-load').click();
  const panel = page.getByTestId('model-panel');
  await expect(panel).toHaveAttribute('data-status', 'loading');
  await expect
    .poll(async () => Number((await panel.locator('progress').getAttribute('value')) ?? 0), {
      timeout: 30_000,
    })
    .toBeGreaterThan(50_000);
  expect(hub.cdnBytesSent()).toBeLessThan(weights.body.length);
  await panel.getByTestId('cancel-load').click();
  await expect(panel).toHaveAttribute('data-status', 'ready');
  await expect(page.getByTestId('model-name')).toHaveText('neox-kjv-bytes');
  await expect(detail.getByTestId('hub-notice')).toHaveText(
    'Download cancelled: neox-kjv-bytes is still loaded.',
  );
  expect(since(mark)).toContain(`GET /${P160}/resolve/${commit}/model.safetensors 302`);
  hub.setSlow(null);
  await setInputs(page, 'And God', 0);
  await runToEnd(page);

  // Download at full speed: loaded from the pinned commit, through the CDN on another origin.
  mark = hub.requests.length;
  t0 = Date.now();
  await detail.getByTestId('preset-load').click();
  await expect(page.getByTestId('model-name')).toHaveText('pythia-160m', { timeout: 120_000 });
  t.downloadMs = Date.now() - t0;
  await expect(page.getByTestId('model-sha256')).toHaveText(weights.sha256);
  await expect(page.getByTestId('model-source')).toHaveText(`${hub.origin}/${P160}/resolve/${commit}/`);
  const cdnGet = hub.requests.slice(mark).find((r) => r.method === 'GET' && r.path.startsWith('/cdn/'));
  expect(`http://${cdnGet?.host}`).toBe(hub.cdnOrigin);

  // A training-step branch and a tag by name: each resolves to its own commit.
  const step = await lookUp(page, P160, 'step1000');
  await expect(step.getByTestId('hub-commit')).toHaveAttribute('data-commit', hub.commit(P160, 'step1000'));
  await expect(step.getByTestId('preset-sha256')).toHaveText(
    hub.file(P160, 'model.safetensors', 'step1000').sha256,
  );
  const tag = await lookUp(page, P160, 'v0');
  await expect(tag.getByTestId('hub-commit')).toHaveAttribute('data-commit', hub.commit(P160, 'step1000'));

  // One line each, and the loaded model stays: bin only, not GPT-NeoX, missing, private, no such revision.
  for (const [repo, rev, words] of [
    ['EleutherAI/pythia-410m', BIN_ONLY_BRANCH, /has only pytorch_model\.bin .*reads safetensors/],
    [NOT_NEOX_REPO, 'main', /model_type 'gpt2' is not supported/],
    ['nobody/nothing', 'main', /nobody\/nothing: no such repository on the Hub, or it is private$/],
    ['test/private', 'main', /no such repository on the Hub, or it is private/],
    [P160, 'step999999', /has no revision "step999999"/],
  ] as const) {
    const d = await lookUp(page, repo, rev);
    await expect(d).toHaveAttribute('data-state', 'error');
    const text = await d.innerText();
    expect(text).toMatch(words);
    expect(text).not.toContain('\n');
  }
  await expect(page.getByTestId('model-name')).toHaveText('pythia-160m');

  // Pythia-12b: refused up front from its config (the budget), its weights never asked for.
  mark = hub.requests.length;
  await presets.getByTestId('hub-revision').fill('main');
  await presets.getByTestId('preset-pythia-12b').click();
  await expect(detail).toHaveAttribute('data-state', 'done');
  await expect(detail.getByTestId('preset-refusal')).toContainText('Too large for this adapter');
  await expect(detail.getByTestId('preset-load')).toBeDisabled();
  expect(since(mark).filter((r) => r.includes('.safetensors') && !r.includes('index.json'))).toEqual([]);
  await detail.getByTestId('preset-refusal').scrollIntoViewIfNeeded();
  await shoot(page, testInfo, 'hub-12b-refused-1280x800', false);

  // A URL folder over the budget: refused from config.json before its weights are asked for.
  mark = hub.requests.length;
  await openLoader(page);
  await page.getByTestId('model-url').fill(`${hub.origin}/EleutherAI/pythia-12b/resolve/main/`);
  await page.getByTestId('load-url').click();
  const alert = page.getByTestId('error');
  await expect(alert).toContainText('more than the 4.00 GiB budget', { timeout: 30_000 });
  expect(since(mark).filter((r) => r.includes('.safetensors'))).toEqual([]);
  await page.getByRole('button', { name: 'Dismiss the error' }).click();
  await expect(page.getByTestId('model-name')).toHaveText('pythia-160m');

  console.log(`hub e2e (SwiftShader) times, ms: ${JSON.stringify(t)}`);
  expect(errors.filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
});

test('sharded weights from the Hub: shard by shard, pinned in the link after the branch moves; a cut download is one line', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  await start(page);
  const presets = page.getByTestId('hub-presets');
  const start0 = hub.requests.length;
  const commit = hub.commit(SHARDED_REPO, 'main');
  const shards = hub
    .paths(SHARDED_REPO)
    .filter((p) => /^model-\d+-of-\d+\.safetensors$/.test(p))
    .sort();
  expect(shards.length).toBeGreaterThan(1);

  // A shard cut off mid-file: one line, the model before stays.
  await presets.getByTestId('preset-pythia-6.9b').click();
  const detail = presets.getByTestId('hub-detail');
  await expect(detail).toHaveAttribute('data-state', 'done');
  await expect(detail.getByTestId('hub-weights')).toContainText(`${shards.length} shards`);
  hub.setCut({ file: shards[1], afterBytes: hub.file(SHARDED_REPO, shards[1]).body.length >> 1 });
  await detail.getByTestId('preset-load').click();
  const alert = page.getByTestId('error');
  await expect(alert).toBeVisible({ timeout: 60_000 });
  const line = await alert.locator('p').first().innerText();
  expect(line).not.toContain('\n');
  await expect(page.getByTestId('model-name')).toHaveText('neox-kjv-bytes');
  hub.setCut(null);
  await page.getByRole('button', { name: 'Dismiss the error' }).click();

  // Whole. Every shard's header was read by a ranged read of 64 KiB (in this attempt or the cut one: the
  // browser's cache may answer a repeated read, so requests are counted over the whole test).
  let mark = hub.requests.length;
  await detail.getByTestId('preset-load').click();
  await expect(page.getByTestId('model-name')).toHaveText('pythia-6.9b', { timeout: 120_000 });
  await expect(page.getByTestId('model-shards')).toContainText(String(shards.length));
  const cdn = hub.requests.slice(start0).filter((r) => r.path.startsWith('/cdn/') && r.method === 'GET');
  for (const s of shards) {
    const sha = hub.file(SHARDED_REPO, s).sha256;
    expect(
      cdn.some((r) => r.path === `/cdn/${sha}/${s}` && r.range === `bytes=0-${(64 << 10) - 1}`),
      s,
    ).toBe(true);
  }
  await setInputs(page, 'And God', 0);
  await runToEnd(page);
  const link = await page.getByTestId('share-link').inputValue();
  await page.getByTestId('model-panel').scrollIntoViewIfNeeded();
  await shoot(page, testInfo, 'sharded-loaded-1280x800', false);

  // The branch moves on; the link still names the old commit and its shards: size first, then on consent.
  hub.moveBranch(SHARDED_REPO, 'main', hub.commit(SHARDED_REPO, 'step1000'));
  try {
    await openLoader(page);
    await page.getByTestId('load-embedded').click();
    await expect(page.getByTestId('model-name')).toHaveText('neox-kjv-bytes', { timeout: 60_000 });
    mark = hub.requests.length;
    await page.goto(link);
    const need = page.getByTestId('model-need');
    await expect(need).toHaveAttribute('data-kind', 'url');
    await expect(need.getByTestId('need-size')).toHaveAttribute('data-state', 'done', { timeout: 30_000 });
    await expect(need.getByTestId('need-size')).toContainText(`${shards.length} shards`);
    await shoot(page, testInfo, 'sharded-link-needs-consent-1280x800', false);
    expect(since(mark).filter((r) => r.startsWith('GET /cdn/') && !r.includes('bytes='))).toEqual([]);
    expect(hub.requests.slice(mark).filter((r) => r.method === 'GET' && r.path.startsWith('/cdn/'))).toEqual(
      [],
    );
    await need.getByTestId('fetch-model').click();
    await expect(page.getByTestId('model-name')).toHaveText('pythia-6.9b', { timeout: 120_000 });
    await expect(page.getByTestId('model-source')).toHaveText(
      `${hub.origin}/${SHARDED_REPO}/resolve/${commit}/`,
    );
  } finally {
    hub.moveBranch(SHARDED_REPO, 'main', commit);
  }

  // A link naming a shard with the wrong sha256 is refused when that shard ends, and changes nothing.
  const spec = { ...defaultRunSpec(), generate: 0 };
  const sha = page.getByTestId('model-sha256');
  const good = await sha.innerText();
  await page.goto(
    `./${fragmentOf({ v: 1, spec: { ...spec, model: { kind: 'url', url: `${hub.origin}/${SHARDED_REPO}/resolve/${commit}/`, sha256: 'f'.repeat(64) } } })}`,
  );
  await page.getByTestId('fetch-model').click();
  await expect(page.getByTestId('error')).toHaveAttribute('data-kind', 'model-mismatch', { timeout: 60_000 });
  await expect(page.getByTestId('error').locator('p').first()).toContainText('the shards make sha256');
  await expect(sha).toHaveText(good);
  expect(errors.filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
});

test('hostile answers from the Hub: one line each, in bounded bytes and time, the page usable after', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  await start(page, { ...hub.override, limits: { connectMs: 1500, idleMs: 1500 } });
  const presets = page.getByTestId('hub-presets');
  const lines: Record<string, string> = {};

  // Ids the Hub cannot hold: refused in the page, no request made.
  let mark = hub.requests.length;
  for (const bad of ['a/b?x=1', '../etc/passwd', 'a/b#frag']) {
    const d = await lookUp(page, bad, 'main');
    await expect(d).toHaveAttribute('data-state', 'error');
    await expect(d).toContainText('is not a Hub repository id');
  }
  expect(hub.requests.length).toBe(mark);

  // Before consent: each lookup refused in one line, at most the caps read, within the timeouts.
  const before: [Hostile, RegExp][] = [
    ['endless-config', /^config\.json: the server sent more than 1\.0 MiB, the most read of it: cut there/],
    ['endless-index', /^model\.safetensors\.index\.json: the server sent more than 4\.0 MiB/],
    ['endless-pages', /file listing goes on past 50 pages: stopped there$/],
    ['foreign-next', /sends its next page to another host \(http:\/\/127\.0\.0\.1:\d+\): not followed$/],
    ['silent-api', /^the Hub's API: http:\/\/127\.0\.0\.1:\d+ did not answer in 1\.5 s$/],
    [
      'gated-401',
      /^hostile\/gated-401 is a gated repository \(HTTP 401\): the Hub says "Access to model hostile\/gated-401 is restricted\./,
    ],
    ['gated-403', /^hostile\/gated-403 is a gated repository \(HTTP 403\): .*not in the authorized list/],
    ['rate-limited', /^the Hub is limiting requests \(HTTP 429(, retry after 30 s)?\): try again later$/],
    ['entry-missing', /config\.json is not there \(HTTP 404 EntryNotFound\)$/],
    ['garbage-json', /^the Hub's API answered hostile\/garbage-json with something that is not JSON/],
    ['garbage-tree', /with something that is not JSON/],
    ['bad-oid', /LFS oid "ZZZ-not-a-sha256", not a sha256 \(64 hex digits\): refused$/],
  ];
  for (const [name, words] of before) {
    const sent0 = hub.bytesSent();
    const t0 = Date.now();
    const d = await lookUp(page, `hostile/${name}`, 'main');
    await expect(d, name).toHaveAttribute('data-state', 'error');
    const text = await d.innerText();
    expect(text, name).toMatch(words);
    expect(text).not.toContain('\n');
    expect(hub.bytesSent() - sent0, name).toBeLessThan(bytesBound());
    expect(Date.now() - t0, name).toBeLessThan(20_000);
    lines[name] = text;
  }
  const none = await lookUp(page, 'nobody/nothing', 'main');
  await expect(none).toHaveText('nobody/nothing: no such repository on the Hub, or it is private');

  // A lookup left for another stops paginating (the stand-in answers each page 100 ms late here).
  hub.setSlow({ chunk: 1 << 16, ms: 100 });
  try {
    mark = hub.requests.length;
    const pages = () =>
      hub.requests.slice(mark).filter((r) => r.path.startsWith('/api/models/hostile/endless-pages/tree/'))
        .length;
    await presets.getByTestId('hub-repo').fill('hostile/endless-pages');
    await presets.getByTestId('hub-lookup').click();
    await expect.poll(pages, { timeout: 10_000 }).toBeGreaterThan(3);
    const other = await lookUp(page, 'hostile/no-tokenizer', 'main');
    await expect(other).toHaveAttribute('data-state', 'done');
    const n = pages();
    await page.waitForTimeout(1000);
    expect(pages()).toBeLessThanOrEqual(n + 1); // at most the page already asked for
    expect(pages()).toBeLessThan(50);
  } finally {
    hub.setSlow(null);
  }

  // After consent: the download is held to the sizes the button showed; each refusal leaves the model before.
  const after: [Hostile, RegExp][] = [
    [
      'tree-lies',
      /^model\.safetensors: the server announces [\d.]+ (KiB|MiB), not the 2\.0 KiB listed: refused before the download$/,
    ],
    ['longer-body', /^model\.safetensors: the server sent more than the [\d.]+ KiB listed/],
    ['shorter-body', /^model\.safetensors: cut short: the server sent [\d.]+ KiB of the [\d.]+ KiB listed/],
    ['stalled-body', /^model\.safetensors: the download stalled \(no byte for 1\.5 s after [\d.]+ KiB\)/],
    ['endless-tokenizer', /^tokenizer\.json: the server sent more than the \d+ bytes listed/],
  ];
  const alert = page.getByTestId('error');
  for (const [name, words] of after) {
    const d = await lookUp(page, `hostile/${name}`, 'main');
    await expect(d, name).toHaveAttribute('data-state', 'done');
    if (name === 'tree-lies') {
      // The button says what the listing says: 2 KiB of weights (with config and tokenizer, under 8 KiB).
      expect(Number(await d.getByTestId('preset-size').getAttribute('data-bytes'))).toBeLessThan(8 << 10);
      await d.scrollIntoViewIfNeeded();
      await shoot(page, testInfo, 'hub-tree-lies-listed-1280x800', false);
    }
    const sent0 = hub.bytesSent();
    await d.getByTestId('preset-load').click();
    await expect(alert, name).toBeVisible({ timeout: 30_000 });
    const text = await alert.locator('p').first().innerText();
    expect(text, name).toMatch(words);
    expect(text).not.toContain('\n');
    expect(hub.bytesSent() - sent0, name).toBeLessThan(bytesBound());
    lines[name] = text;
    await expect(page.getByTestId('model-name')).toHaveText('neox-kjv-bytes');
    await page.getByRole('button', { name: 'Dismiss the error' }).click();
  }

  // A link to an endless config.json: its size probe is refused in one line, with no click and bounded bytes.
  const commit = hub.commit('hostile/endless-config', 'main');
  const sent0 = hub.bytesSent();
  await page.goto(
    `./${fragmentOf({ v: 1, spec: { ...defaultRunSpec(), generate: 0, model: { kind: 'url', url: `${hub.origin}/hostile/endless-config/resolve/${commit}/`, sha256: 'a'.repeat(64) } } })}`,
  );
  const need = page.getByTestId('need-size');
  await expect(need).toHaveAttribute('data-state', 'error', { timeout: 30_000 });
  await expect(need).toContainText('config.json: the server sent more than 1.0 MiB');
  expect(hub.bytesSent() - sent0).toBeLessThan(bytesBound());
  lines['link: endless-config'] = await need.innerText();

  // The page is usable after all of it: a Hub model without tokenizer.json loads and runs on token ids.
  const nt = await lookUp(page, 'hostile/no-tokenizer', 'main');
  await expect(nt.getByTestId('hub-tokenizer')).toContainText('none (no tokenizer.json)');
  await nt.getByTestId('preset-load').click();
  await expect(page.getByTestId('model-name')).toHaveText('no-tokenizer', { timeout: 60_000 });
  await setInputs(page, '1, 2, 3', 0);
  await runToEnd(page);
  console.log(`hostile lines: ${JSON.stringify(lines, null, 1)}`);
  expect(errors.filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
});

test('a Hub mirror set in the page: validated, used for lookups; a link from another host says so before consent', async ({
  page,
}) => {
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('./'); // no test override: the page's Hub is huggingface.co until a mirror is set
  await waitForModel(page);
  const presets = page.getByTestId('hub-presets');
  const mirror = presets.getByTestId('hub-mirror');
  await expect(mirror.getByTestId('hub-mirror-now')).toHaveText('https://huggingface.co');

  // A link whose Hub model is on another host (the stand-in): said beside its size, before any download.
  const commit = hub.commit(P160, 'main');
  const link = `./${fragmentOf({ v: 1, spec: { ...defaultRunSpec(), generate: 0, model: { kind: 'url', url: `${hub.origin}/${P160}/resolve/${commit}/`, sha256: hub.file(P160, 'model.safetensors').sha256 } } })}`;
  await page.goto(link);
  const need = page.getByTestId('need-size');
  await expect(need).toHaveAttribute('data-state', 'done', { timeout: 30_000 });
  await expect(need.getByTestId('need-host')).toHaveText(
    `from ${hub.origin}, not from the Hub this page uses`,
  );

  // A mirror that is not an origin is refused in one line; the stand-in's origin is kept and asked.
  await mirror.locator('summary').click();
  await mirror.getByTestId('hub-mirror-input').fill(`${hub.origin}/some/path`);
  await mirror.getByTestId('hub-mirror-save').click();
  await expect(mirror.getByTestId('hub-mirror-problem')).toContainText('a Hub mirror is an origin');
  await expect(mirror.getByTestId('hub-mirror-now')).toHaveText('https://huggingface.co');
  await mirror.getByTestId('hub-mirror-input').fill(`${hub.origin}/`);
  await mirror.getByTestId('hub-mirror-save').click();
  await expect(mirror.getByTestId('hub-mirror-now')).toHaveText(hub.origin);
  const mark = hub.requests.length;
  const d = await lookUp(page, P160, 'main');
  await expect(d).toHaveAttribute('data-state', 'done');
  await expect(d.getByTestId('hub-commit')).toHaveAttribute('data-commit', commit);
  expect(hub.requests.slice(mark).some((r) => r.path === `/api/models/${P160}/revision/main`)).toBe(true);

  // Kept in this browser: after a reload the same link names no other host.
  await page.goto(link);
  await page.reload();
  await expect(page.getByTestId('need-size')).toHaveAttribute('data-state', 'done', { timeout: 30_000 });
  await expect(page.getByTestId('need-host')).toHaveCount(0);
  expect(errors.filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
});
