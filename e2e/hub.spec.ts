// The Pythia presets against a local stand-in for the Hugging Face Hub (e2e/hub-server.ts: the Hub's layout,
// 302 redirects to a CDN path, HEAD, CORS from another origin, request counting, a slow mode). The page is
// pointed at it by the test-only override in localStorage. Pick a preset and see its size before any
// download; download it slowly and cancel half-way (the model before stays and runs); download it again and
// see its sha256; reload and load it from IndexedDB with no request to the server, also through a permalink;
// a permalink naming the preset's URL with another sha256 gives one line; a model over the memory budget is
// refused from its config.json before its weights are asked for. Timings are printed, not asserted.
import { expect, type Page, test } from '@playwright/test';
import { HUB_OVERRIDE_KEY, HUB_PRESETS, resolvePresets } from '../src/run/hub';
import { defaultRunSpec } from '../src/run/runspec';
import { fragmentOf, runToEnd, setInputs, shoot, waitForModel, watchErrors } from './helpers';
import { type StandIn, startHubServer, TOO_BIG_REPO } from './hub-server';

let hub: StandIn;
test.beforeAll(async () => {
  hub = await startHubServer();
});
test.afterAll(async () => {
  await hub?.close();
});

const P160 = HUB_PRESETS.find((p) => p.id === 'pythia-160m')!;

/** Requests that reached the stand-in since `from` (an index into hub.requests). */
const since = (from: number) => hub.requests.slice(from).map((r) => `${r.method} ${r.path} ${r.status}`);

/** Opens "Load another model" (a <details>) unless it is open already. */
async function openLoader(page: Page): Promise<void> {
  const loader = page.locator('details.loader');
  if ((await loader.getAttribute('open')) === null) await loader.locator('summary').click();
}

async function noSidewaysScroll(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
}

test('Pythia presets: size before download, progress and cancel, sha256, the IndexedDB cache, permalinks', async ({
  page,
}, testInfo) => {
  const t: Record<string, number> = {};
  const errors = watchErrors(page);
  const override = JSON.stringify(hub.override);
  await page.addInitScript(([k, v]) => localStorage.setItem(k, v), [HUB_OVERRIDE_KEY, override] as const);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('./');
  await waitForModel(page);
  await expect(page.getByTestId('model-name')).toHaveText('neox-kjv-bytes');
  const presets = page.getByTestId('hub-presets');
  await expect(presets.getByTestId('hub-override')).toContainText(hub.origin);
  expect(hub.requests).toEqual([]); // nothing asked of the Hub until a preset is picked
  const url160 = resolvePresets(hub.override).find((p) => p.id === 'pythia-160m')!.url;
  const weights = hub.file(P160.repo, 'model.safetensors');
  const total =
    weights.body.length +
    hub.file(P160.repo, 'config.json').body.length +
    hub.file(P160.repo, 'tokenizer.json').body.length;

  // Pick: the size from the table at once, then confirmed by HEAD (redirect followed), no weights fetched.
  let t0 = Date.now();
  await presets.getByTestId('preset-pythia-160m').click();
  const size = presets.getByTestId('preset-size');
  await expect(size).toHaveAttribute('data-state', 'confirmed');
  t.probeMs = Date.now() - t0;
  await expect(size).toHaveAttribute('data-bytes', String(total));
  await expect(presets.getByTestId('preset-gpu')).toContainText('of the 4 GiB budget');
  await expect(presets.getByTestId('preset-sha256')).toHaveText(weights.sha256);
  const probed = since(0);
  expect(probed).toContain(`HEAD /${P160.repo}/resolve/${P160.revision}/model.safetensors 302`);
  expect(probed).toContain(`HEAD /cdn/${weights.sha256}/model.safetensors 200`);
  expect(probed.filter((r) => r.startsWith('GET /cdn/'))).toEqual([]);
  await shoot(presets, testInfo, 'presets-picked');

  // Download slowly, see it move, cancel half-way: the embedded model is still loaded and runs.
  hub.setSlow({ chunk: 16 << 10, ms: 100 });
  let mark = hub.requests.length;
  await presets.getByTestId('preset-load').click();
  const panel = page.getByTestId('model-panel');
  await expect(panel).toHaveAttribute('data-status', 'loading');
  await expect
    .poll(async () => Number((await panel.locator('progress').getAttribute('value')) ?? 0), {
      timeout: 30_000,
    })
    .toBeGreaterThan(100_000);
  await expect(panel.locator('progress')).toHaveAttribute('max', String(total));
  await shoot(panel, testInfo, 'downloading');
  const sentAtCancel = hub.cdnBytesSent();
  expect(sentAtCancel).toBeLessThan(weights.body.length);
  t0 = Date.now();
  await panel.getByTestId('cancel-load').click();
  await expect(panel).toHaveAttribute('data-status', 'ready');
  t.cancelMs = Date.now() - t0;
  await expect(page.getByTestId('model-name')).toHaveText('neox-kjv-bytes');
  await expect(presets.getByTestId('hub-notice')).toHaveText(
    'Download cancelled: neox-kjv-bytes is still loaded.',
  );
  await expect(page.getByRole('alert')).toHaveCount(0);
  expect(since(mark)).toContain(`GET /${P160.repo}/resolve/${P160.revision}/model.safetensors 302`);
  hub.setSlow(null);
  await setInputs(page, 'And God', 0);
  t.runAfterCancelMs = await runToEnd(page);

  // Download again at full speed: loaded, its sha256 shown, kept in this browser.
  mark = hub.requests.length;
  t0 = Date.now();
  await presets.getByTestId('preset-load').click();
  await expect(page.getByTestId('model-name')).toHaveText('pythia-160m', { timeout: 120_000 });
  t.downloadMs = Date.now() - t0;
  await expect(panel).toHaveAttribute('data-status', 'ready');
  await expect(page.getByTestId('model-sha256')).toHaveText(weights.sha256);
  await expect(page.getByTestId('model-source')).toHaveText(url160);
  await expect(presets.getByTestId('preset-pythia-160m')).toHaveAttribute('data-cached', 'yes');
  expect(since(mark).filter((r) => r.startsWith('GET /cdn/'))).toEqual([
    `GET /cdn/${weights.sha256}/model.safetensors 200`,
  ]);
  // That GET followed a redirect to another origin (the CDN's), as on the Hub.
  const cdnGet = hub.requests.slice(mark).find((r) => r.method === 'GET' && r.path.startsWith('/cdn/'));
  expect(`http://${cdnGet?.host}`).toBe(hub.cdnOrigin);
  expect(hub.cdnOrigin).not.toBe(hub.origin);
  // The share link names the model by URL and sha256.
  const link = await page.getByTestId('share-link').inputValue();
  expect(link).toContain('#r1=');

  // Screenshots of the panel with the presets at both sizes; nothing scrolls sideways.
  await shoot(panel, testInfo, 'model-panel-1280x800');
  expect(await noSidewaysScroll(page)).toBeLessThanOrEqual(0);
  await page.setViewportSize({ width: 1920, height: 1080 });
  await shoot(panel, testInfo, 'model-panel-1920x1080');
  await shoot(page, testInfo, 'page-1920x1080', false);
  expect(await noSidewaysScroll(page)).toBeLessThanOrEqual(0);
  await page.setViewportSize({ width: 1280, height: 800 });

  // Reload: the preset loads from IndexedDB, and the stand-in sees no request at all.
  await page.reload();
  await waitForModel(page);
  mark = hub.requests.length;
  await presets.getByTestId('preset-pythia-160m').click();
  await expect(size).toHaveAttribute('data-state', 'cached');
  t0 = Date.now();
  await presets.getByTestId('preset-load').click();
  await expect(page.getByTestId('model-name')).toHaveText('pythia-160m', { timeout: 60_000 });
  t.fromCacheMs = Date.now() - t0;
  await expect(page.getByTestId('model-sha256')).toHaveText(weights.sha256);

  // The permalink, with the embedded model loaded first: its model comes from the cache, again with no request.
  await openLoader(page);
  await page.getByTestId('load-embedded').click();
  await expect(page.getByTestId('model-name')).toHaveText('neox-kjv-bytes', { timeout: 60_000 });
  await page.goto(link);
  await expect(page.getByTestId('link-banner')).toBeVisible();
  await expect(page.getByTestId('model-name')).toHaveText('pythia-160m', { timeout: 60_000 });
  expect(since(mark)).toEqual([]);

  // A permalink naming the preset's URL with another sha256: downloaded on consent, refused in one line.
  const wrong = 'f'.repeat(64);
  await page.goto(
    `./${fragmentOf({ v: 1, spec: { ...defaultRunSpec(), generate: 0, model: { kind: 'url', url: url160, sha256: wrong } } })}`,
  );
  await expect(page.getByTestId('model-need')).toHaveAttribute('data-kind', 'url');
  await page.getByTestId('fetch-model').click();
  const alert = page.getByTestId('error');
  await expect(alert).toHaveAttribute('data-kind', 'model-mismatch', { timeout: 60_000 });
  const line = await alert.locator('p').first().innerText();
  expect(line).not.toContain('\n');
  expect(line).toContain(`hashes to sha256 ${weights.sha256.slice(0, 16)}`);
  expect(line).toContain(`names ${wrong.slice(0, 16)}`);
  await expect(page.getByTestId('model-name')).toHaveText('pythia-160m'); // the model before stays
  await shoot(page, testInfo, 'wrong-sha256', false);
  await page.getByRole('button', { name: 'Dismiss the error' }).click();

  // Over the memory budget: refused from config.json, its weights never asked for.
  mark = hub.requests.length;
  await openLoader(page);
  await page.getByTestId('model-url').fill(`${hub.origin}/${TOO_BIG_REPO}/resolve/main/`);
  await page.getByTestId('load-url').click();
  await expect(alert).toContainText('more than the 4.00 GiB budget', { timeout: 30_000 });
  await expect(alert).toContainText('nothing was downloaded');
  expect(since(mark).filter((r) => r.includes('model.safetensors'))).toEqual([]);
  await expect(page.getByTestId('model-name')).toHaveText('pythia-160m');

  console.log(`hub e2e (SwiftShader) times, ms: ${JSON.stringify(t)}`);
  expect(errors.filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
});
