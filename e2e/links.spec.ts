// Permalinks, models named by links, run history and hostile links, in a real browser on the built site:
// a link copied in one browser context reproduces the run in another and shows the sharer's result beside the
// viewer's; URL and disk models are checked against the link's sha256 (and cached, so a reload does not ask
// again); the history survives a reload; malformed links each give one clear message and leave the page as
// it was; HTML in a link stays text; a link to a model not loaded yet (a fresh profile) does not say the settings
// differ until the viewer changes one.
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { expect, type Page, test } from '@playwright/test';
import { defaultRunSpec, type RunSpec } from '../src/run/runspec';
import {
  fragmentOf,
  fragmentOfBytes,
  MODEL_DIR,
  runToEnd,
  setInputs,
  shoot,
  waitForModel,
  watchErrors,
} from './helpers';

function spec(over: Partial<RunSpec> = {}): RunSpec {
  return { ...defaultRunSpec(), generate: 0, ...over };
}

async function chooseFault(page: Page, id: string, fromLayer: number): Promise<void> {
  await page.getByTestId('fault').selectOption(id);
  await page.getByTestId('fault-layer-auto').uncheck();
  await page.getByTestId('fault-layer').fill(String(fromLayer));
}

test('a link copied in one browser reproduces the run in another, beside the sharer’s result', async ({
  browser,
  baseURL,
}, testInfo) => {
  // The sharer.
  const ctxA = await browser.newContext({ permissions: ['clipboard-read', 'clipboard-write'] });
  const a = await ctxA.newPage();
  const errorsA = watchErrors(a);
  await a.goto('./');
  await waitForModel(a);
  const prompt = 'And God';
  await setInputs(a, prompt, 1);
  await chooseFault(a, 'tile_offset', 2);
  await a.getByTestId('k').fill('20');
  const field = a.getByTestId('share-link');
  await expect(field).toHaveAttribute('data-with-result', 'no');
  await expect(a.getByTestId('share-note')).toContainText('Run first');
  const msA = await runToEnd(a);
  const layerA = await a.getByTestId('verdict').getAttribute('data-layer');
  expect(layerA).toBe('2');
  // Once the run is done, the link carries the result; "Run at once" asks the viewer's page to run it.
  await expect(field).toHaveAttribute('data-with-result', 'yes');
  await a.getByTestId('share-autorun').check();
  await a.getByTestId('copy-link').click();
  await expect(a.getByTestId('copy-status')).toHaveAttribute('data-state', 'copied');
  const link = await field.inputValue();
  expect(link.startsWith(`${baseURL}#r1=`)).toBe(true);
  expect(await a.evaluate(() => navigator.clipboard.readText())).toBe(link);
  // Changing a setting makes it a link to other settings, without the result.
  await a.getByTestId('k').fill('21');
  await expect(field).toHaveAttribute('data-with-result', 'no');
  expect(await field.inputValue()).not.toBe(link);
  await shoot(a, testInfo, 'sharer', false);
  expect(errorsA).toEqual([]);
  await ctxA.close();

  // The viewer: another browser context (no shared storage), opening the copied link.
  const ctxB = await browser.newContext();
  const b = await ctxB.newPage();
  const errorsB = watchErrors(b);
  await b.goto(link);
  const banner = b.getByTestId('link-banner');
  await expect(banner).toBeVisible();
  await expect(b.getByTestId('spec-prompt')).toHaveText(prompt);
  await expect(b.getByTestId('spec-faults')).toContainText('from layer 2');
  await expect(b.getByTestId('sharer-line')).toContainText(/swiftshader/i);
  await expect(b.getByTestId('sharer-line')).toContainText('first divergent layer 2');
  // Every setting restored.
  await expect(b.getByLabel('Prompt', { exact: true })).toHaveValue(prompt);
  await expect(b.getByTestId('generate')).toHaveValue('1');
  await expect(b.getByTestId('fault')).toHaveValue('tile_offset');
  await expect(b.getByTestId('fault-layer')).toHaveValue('2');
  await expect(b.getByTestId('k')).toHaveValue('20');
  // It asked to run at once, on the embedded model: it starts by itself once the model is ready.
  const status = b.getByTestId('run-status');
  await expect(status).toHaveAttribute('data-state', 'running', { timeout: 60_000 });
  const t0 = Date.now();
  await expect(status).toHaveAttribute('data-state', 'done', { timeout: 180_000 });
  const msB = Date.now() - t0;
  await expect(b.getByTestId('verdict')).toHaveAttribute('data-layer', layerA ?? 'missing');
  const cmp = b.getByTestId('sharer-comparison');
  await expect(cmp).toHaveAttribute('data-same-first', 'yes');
  await expect(cmp).toHaveAttribute('data-agree', 'yes');
  await expect(b.getByTestId('sharer-verdict')).toContainText('agrees with the sharer');
  // The sharer's cause travelled in the link and stands beside the viewer's own: the same on both machines.
  const cause = b.getByTestId('sharer-cause');
  await expect(cause).toHaveAttribute('data-same', 'yes');
  expect(await b.getByTestId('sharer-cause-theirs').innerText()).toBe(
    await b.getByTestId('sharer-cause-yours').innerText(),
  );
  await expect(b.getByTestId('sharer-row')).toHaveCount(4);
  await expect(b.locator('[data-testid="sharer-row"][data-agree="yes"]')).toHaveCount(4);
  // The sharer's curve beside the viewer's, one point per layer.
  await expect(b.getByTestId('error-curve').getByTestId('sharer-point')).toHaveCount(4);
  await expect(b.getByTestId('error-curve').getByTestId('curve-point')).toHaveCount(4);
  await shoot(b, testInfo, 'viewer', false);
  await shoot(b.getByTestId('error-curve'), testInfo, 'viewer-curve-with-sharer');
  await shoot(cmp, testInfo, 'viewer-comparison');
  // The viewer's run went into their history.
  await expect(b.getByTestId('history-item')).toHaveCount(1);
  expect(errorsB).toEqual([]);
  await ctxB.close();
  console.log(`timing: sharer's run ${msA} ms; the viewer's autorun ${msB} ms`);
});

test('models in links: a URL model waits for consent and is hash-checked; a disk model is asked for, checked and cached', async ({
  page,
  baseURL,
}, testInfo) => {
  const errors = watchErrors(page);
  // Two other models: the embedded one with one weight byte changed (so other sha256s), one served from a
  // URL (routed here), one on disk.
  const other = (n: number) => {
    const dir = testInfo.outputPath(`other-model-${n}`);
    mkdirSync(dir, { recursive: true });
    for (const f of ['config.json', 'tokenizer.json']) copyFileSync(`${MODEL_DIR}/${f}`, `${dir}/${f}`);
    const weights = readFileSync(`${MODEL_DIR}/model.safetensors`);
    weights[weights.length - 1] ^= n;
    writeFileSync(`${dir}/model.safetensors`, weights);
    return {
      dir,
      sha: createHash('sha256').update(weights).digest('hex'),
      files: ['config.json', 'model.safetensors', 'tokenizer.json'].map((f) => `${dir}/${f}`),
    };
  };
  const web = other(1);
  const disk = other(2);
  await page.route('**/other-model/*', (route) => {
    const name = new URL(route.request().url()).pathname.split('/').pop() ?? '';
    return route.fulfill({
      path: `${web.dir}/${name}`,
      contentType: name.endsWith('.json') ? 'application/json' : 'application/octet-stream',
    });
  });
  const modelUrl = `${baseURL}other-model/`;
  const weightRequests: string[] = [];
  page.on('request', (r) => {
    // Downloads only: a HEAD is the size shown before consent, not a download.
    if (r.url().endsWith('model.safetensors') && r.method() === 'GET') weightRequests.push(r.url());
  });
  await page.goto('./');
  await waitForModel(page);
  await expect(page.getByTestId('model-source')).toHaveAttribute('data-kind', 'embedded');
  const before = weightRequests.length;
  expect(before).toBeGreaterThan(0); // the watcher sees the worker's requests

  // A URL model with the wrong hash: nothing runs by itself, the download waits for a click, then is refused.
  const wrong = '0'.repeat(64);
  await page.evaluate(
    (f) => {
      location.hash = f;
    },
    fragmentOf({ v: 1, spec: spec({ model: { kind: 'url', url: modelUrl, sha256: wrong } }), autorun: true }),
  );
  const need = page.getByTestId('model-need');
  await expect(need).toHaveAttribute('data-kind', 'url');
  await expect(page.getByTestId('need-url')).toHaveText(modelUrl);
  await shoot(page, testInfo, 'url-model-needed', false);
  await expect(page.getByTestId('run-linked')).toBeDisabled();
  await page.waitForTimeout(500);
  expect(weightRequests.length).toBe(before); // nothing fetched without consent
  await page.getByTestId('fetch-model').click();
  const alert = page.getByRole('alert');
  await expect(alert).toHaveAttribute('data-kind', 'model-mismatch', { timeout: 60_000 });
  await expect(alert).toContainText('The model does not match the run');
  await expect(alert).toContainText(`the run names ${wrong.slice(0, 16)}`);
  // The model from before is still loaded, and the page usable; the link's run stays not runnable.
  await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'ready');
  await expect(page.getByTestId('model-source')).toHaveAttribute('data-kind', 'embedded');
  await expect(page.getByTestId('run')).toBeEnabled();
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', 'idle'); // no autorun for URL models
  await shoot(page, testInfo, 'url-model-mismatch', false);

  // The right hash: loaded after consent, and ready to run.
  await page.evaluate(
    (f) => {
      location.hash = f;
    },
    fragmentOf({ v: 1, spec: spec({ model: { kind: 'url', url: modelUrl, sha256: web.sha } }) }),
  );
  await expect(page.getByRole('alert')).toHaveCount(0);
  await page.getByTestId('fetch-model').click();
  await expect(page.getByTestId('model-source')).toHaveAttribute('data-kind', 'url', { timeout: 60_000 });
  await waitForModel(page);
  await expect(need).toHaveCount(0);
  await expect(page.getByTestId('model-panel').locator('dd.mono')).toHaveAttribute('title', web.sha);
  await expect(page.getByTestId('run-linked')).toBeEnabled();
  // Kept in this browser: a reload of the link loads it from the cache, without asking or downloading.
  const fromWeb = () => weightRequests.filter((u) => u.includes('/other-model/')).length;
  const downloads = fromWeb();
  expect(downloads).toBe(2); // the refused one and this one
  await page.reload();
  await expect(page.getByTestId('model-panel').locator('dd.mono')).toHaveAttribute('title', web.sha, {
    timeout: 60_000,
  });
  await waitForModel(page);
  await expect(page.getByTestId('model-source')).toHaveAttribute('data-kind', 'url');
  await expect(need).toHaveCount(0);
  expect(fromWeb()).toBe(downloads);

  // Files that are not the ones the link names are refused, by their hash.
  await page.evaluate(
    (f) => {
      location.hash = f;
    },
    fragmentOf({ v: 1, spec: spec({ model: { kind: 'file', sha256: wrong, name: 'not-these' } }) }),
  );
  await expect(need).toHaveAttribute('data-kind', 'file');
  await expect(page.getByTestId('need-name')).toHaveText('not-these');
  await page.getByTestId('need-files').setInputFiles(disk.files);
  await expect(page.getByRole('alert')).toHaveAttribute('data-kind', 'model-mismatch', { timeout: 60_000 });
  await expect(page.getByTestId('model-source')).toHaveAttribute('data-kind', 'url'); // still the one before
  await page.getByRole('button', { name: 'Dismiss the error' }).click();

  // The right files: asked for, checked, loaded — and kept, so a reload does not ask again.
  await page.evaluate(
    (f) => {
      location.hash = f;
    },
    fragmentOf({ v: 1, spec: spec({ model: { kind: 'file', sha256: disk.sha, name: 'kjv' } }) }),
  );
  await expect(need).toHaveAttribute('data-kind', 'file');
  await expect(page.getByTestId('run-linked')).toBeDisabled();
  await shoot(page, testInfo, 'file-model-needed', false);
  await page.getByTestId('need-files').setInputFiles(disk.files);
  await expect(page.getByTestId('model-source')).toHaveAttribute('data-kind', 'files', { timeout: 60_000 });
  await waitForModel(page);
  await expect(need).toHaveCount(0);
  await expect(page.getByTestId('model-panel').locator('dd.mono')).toHaveAttribute('title', disk.sha);
  await expect(page.getByTestId('run-linked')).toBeEnabled();
  await page.reload();
  await expect(page.getByTestId('model-name')).toHaveText('kjv', { timeout: 60_000 });
  await waitForModel(page);
  await expect(page.getByTestId('model-source')).toHaveAttribute('data-kind', 'files');
  await expect(page.getByTestId('model-panel').locator('dd.mono')).toHaveAttribute('title', disk.sha);
  await expect(need).toHaveCount(0);
  await expect(page.getByTestId('run-linked')).toBeEnabled();
  expect(errors).toEqual([]);
});

test('the history survives a reload: listed, re-opened without re-running, deleted', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  await page.goto('./');
  await waitForModel(page);
  await expect(page.getByTestId('history')).toHaveAttribute('data-status', 'ready');
  await expect(page.getByTestId('history-item')).toHaveCount(0);
  await setInputs(page, 'In the', 0);
  await chooseFault(page, 'gelu_relu', 1);
  await runToEnd(page);
  const item = page.getByTestId('history-item');
  await expect(item).toHaveCount(1);
  await expect(item).toHaveAttribute('data-verdict', 'diverged');
  await expect(item).toHaveAttribute('data-layer', '1');
  await expect(item.getByTestId('history-verdict')).toHaveText('diverged at layer 1');
  await expect(item.getByTestId('history-prompt')).toHaveText('In the');

  await page.reload();
  await waitForModel(page);
  await expect(page.getByTestId('results-empty')).toBeVisible();
  await expect(page.getByLabel('Prompt', { exact: true })).not.toHaveValue('In the'); // defaults again
  await expect(item).toHaveCount(1);
  await expect(item).toHaveAttribute('data-layer', '1');
  await item.getByTestId('history-open').click();
  // The stored report, not a new run: no running state, no new history entry, settings restored.
  await expect(page.getByTestId('stored-banner')).toBeVisible();
  await expect(page.getByTestId('verdict')).toHaveAttribute('data-layer', '1');
  await expect(page.getByTestId('divergence-marker')).toHaveAttribute('data-layer', '1');
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', 'done');
  await expect(page.getByTestId('run-phase')).toHaveText('Showing a stored run (not re-run).');
  await expect(page.getByLabel('Prompt', { exact: true })).toHaveValue('In the');
  await expect(page.getByTestId('fault')).toHaveValue('gelu_relu');
  await expect(page.getByTestId('fault-layer')).toHaveValue('1');
  await expect(page.getByTestId('generate')).toHaveValue('0');
  await expect(item).toHaveAttribute('aria-current', 'true');
  await expect(item).toHaveCount(1);
  await page.evaluate(() => window.scrollTo(0, 0));
  await shoot(page, testInfo, 'history-reopened', false);
  await shoot(page.getByTestId('history'), testInfo, 'history-list');

  await item.getByTestId('history-delete').click();
  await expect(item).toHaveCount(0);
  await expect(page.getByTestId('stored-banner')).toHaveCount(0);
  await page.reload();
  await waitForModel(page);
  await expect(page.getByTestId('history')).toHaveAttribute('data-status', 'ready');
  await expect(item).toHaveCount(0);
  expect(errors).toEqual([]);
});

test('hostile links: each gives one clear message and leaves the page as it was; HTML stays text', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  const dialogs: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  await page.goto('./');
  await waitForModel(page);
  // The user's own settings, which no bad link may touch.
  await setInputs(page, 'my own prompt', 3);
  await page.getByTestId('k').fill('25');
  const bomb = Buffer.alloc(2_000_000, 0x20);
  const hostile: [string, string, RegExp][] = [
    ['oversize', `#r1=${'A'.repeat(20_000)}`, /The link is too long \(20004 characters; at most 16384\)/],
    ['bad base64', '#r1=@@not*base64', /not valid base64url/],
    ['not DEFLATE', fragmentOfBytes(Uint8Array.from([0xff, 0xff, 0xff, 0xff]), false), /does not decompress/],
    ['bomb', fragmentOfBytes(bomb), /expands to more than 256 KiB/],
    ['invalid UTF-8', fragmentOfBytes(Uint8Array.from([0x7b, 0xc3, 0x28, 0x7d])), /not UTF-8 text/],
    ['bad JSON', fragmentOfBytes(Buffer.from('{"v":1,"spec":', 'utf8')), /its data is not JSON/],
    ['unknown format', '#r9=AAAA', /format r9, which this build cannot read/],
    ['unknown payload version', fragmentOf({ v: 2, spec: spec() }), /payload is version 2/],
    [
      'out-of-range value',
      fragmentOf({ v: 1, spec: spec({ generate: 100_000 }) }),
      /RunSpec generate: expected an integer in \[0, 256\], got 100000/,
    ],
    [
      'unknown key',
      fragmentOf({ v: 1, spec: { ...spec(), shader: 'fn main() {}' } }),
      /unknown key 'shader'/,
    ],
    ['unknown scenario', '#s=no-such-scenario', /names a scenario this build does not have/],
    [
      'unknown embedded model',
      fragmentOf({ v: 1, spec: spec({ model: { kind: 'embedded', id: 'gpt-9' } }) }),
      /names the embedded model “gpt-9”, which this site does not have/,
    ],
    ['not a link', '#hello', /not a divergence-explorer link/],
  ];
  for (const [name, fragment, message] of hostile) {
    await page.evaluate((f) => {
      location.hash = f;
    }, fragment);
    const alert = page.getByRole('alert');
    await expect(alert, name).toHaveCount(1);
    await expect(alert, name).toHaveAttribute('data-testid', 'link-error');
    await expect(page.getByTestId('link-error-message'), name).toHaveText(message);
    await expect(page.getByLabel('Prompt', { exact: true }), name).toHaveValue('my own prompt');
    await expect(page.getByTestId('generate'), name).toHaveValue('3');
    await expect(page.getByTestId('k'), name).toHaveValue('25');
    await expect(page.getByTestId('run'), name).toBeEnabled();
    await expect(page.getByTestId('link-banner'), name).toHaveCount(0);
    if (name === 'out-of-range value') await shoot(page, testInfo, 'hostile-link', false);
    await alert.getByRole('button', { name: 'Dismiss the link error' }).click();
    await expect(alert, name).toHaveCount(0);
  }
  // HTML and script in a link's prompt and adapter line: shown as text, never run.
  const html = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>';
  const adapter = '<b>GPU</b><img src=y onerror="window.__xss=3">';
  await page.evaluate(
    (f) => {
      location.hash = f;
    },
    fragmentOf({
      v: 1,
      spec: spec({ prompt: { text: html } }),
      sharer: { adapter, summary: { metric: 'relL2', ratios: [0.5, 1, 2, 3], firstDivergentLayer: null } },
    }),
  );
  await expect(page.getByTestId('link-banner')).toBeVisible();
  await expect(page.getByTestId('spec-prompt')).toHaveText(html);
  await expect(page.getByLabel('Prompt', { exact: true })).toHaveValue(html);
  await expect(page.getByTestId('sharer-line')).toContainText(adapter);
  await expect(page.locator('#root img, #root script, #root b')).toHaveCount(0);
  await page.waitForTimeout(300);
  expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
  expect(dialogs).toEqual([]);
  await shoot(page, testInfo, 'html-in-link', false);
  // The page is still usable: a good link after all of that opens normally.
  await page.evaluate(() => {
    location.hash = '#s=fast-but-wrong';
  });
  await expect(page.getByTestId('scenario')).toHaveAttribute('data-id', 'fast-but-wrong');
  await expect(page.getByTestId('fault')).toHaveValue('gelu_relu');
  await expect(page.getByRole('alert')).toHaveCount(0);
  expect(errors).toEqual([]);
});

test('a link to another model opened in a fresh profile: no "your settings differ" until the viewer changes one', async ({
  browser,
  baseURL,
}, testInfo) => {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  const errors = watchErrors(page);
  const sha = createHash('sha256')
    .update(readFileSync(`${MODEL_DIR}/model.safetensors`))
    .digest('hex');
  // A link to a URL model (the embedded model's files under another address): the page loads the embedded model
  // first and asks before downloading the link's.
  const link = `${baseURL}${fragmentOf({
    v: 1,
    spec: spec({ model: { kind: 'url', url: `${baseURL}no-such-model/`, sha256: sha }, k: 17, generate: 2 }),
  })}`;
  await page.goto(link);
  await waitForModel(page);
  const banner = page.getByTestId('link-banner');
  await expect(banner).toBeVisible();
  await expect(page.getByTestId('model-need')).toBeVisible();
  await expect(page.getByTestId('k')).toHaveValue('17');
  await page.waitForTimeout(500);
  await expect(page.getByTestId('link-settings-changed')).toHaveCount(0);
  await shoot(page, testInfo, 'fresh-profile-link', false);
  // The viewer changes a setting: now it says so, and Restore puts the link's back.
  await page.getByTestId('k').fill('18');
  await expect(page.getByTestId('link-settings-changed')).toBeVisible();
  await page.getByTestId('link-settings-changed').getByRole('button').click();
  await expect(page.getByTestId('k')).toHaveValue('17');
  await expect(page.getByTestId('link-settings-changed')).toHaveCount(0);
  expect(errors).toEqual([]);
  await ctx.close();
});
