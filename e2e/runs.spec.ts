// Bring your own run, in the page: load the model two PyTorch runs were made with (src/model/testdata/runs/), drop
// a clean run and one whose layer 1 stores its residual add in bf16, see the verdict name run B's layer 1 add; a
// file that is no run is refused beside its picker with the loaded model kept; the link opens in a fresh context,
// names the files by sha256, asks for them, and shows the sharer's finding beside the viewer's own.
import { join } from 'node:path';
import { expect, type Page, test } from '@playwright/test';
import { axeViolations, shoot, waitForModel, watchErrors } from './helpers';

const DIR = 'src/model/testdata/runs/parallel-classic';
const MODEL = [join(DIR, 'config.json'), join(DIR, 'model.safetensors')];
const CLEAN = join(DIR, 'clean-cuda.run.safetensors');
const FAULT = join(DIR, 'residual-bf16.run.safetensors');

async function loadFixtureModel(page: Page) {
  await page.getByText('Load another model').click();
  await page.getByTestId('model-files').setInputFiles(MODEL);
  await expect(page.getByTestId('model-name')).not.toHaveText('neox-kjv-bytes', { timeout: 60_000 });
  await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'ready', { timeout: 60_000 });
}

async function analyze(page: Page) {
  await page.getByTestId('run-input-A').setInputFiles(CLEAN);
  await page.getByTestId('run-input-B').setInputFiles(FAULT);
  const t0 = Date.now();
  await page.getByTestId('analyze-runs').click();
  await expect(page.getByTestId('runs-verdict')).toHaveText('DIVERGED', { timeout: 120_000 });
  return Date.now() - t0;
}

for (const [width, height] of [
  [1280, 800],
  [1920, 1080],
] as const) {
  test(`your runs at ${width}×${height}: two runs dropped, the verdict at the right layer and op`, async ({
    page,
  }, testInfo) => {
    test.setTimeout(300_000);
    const errors = watchErrors(page);
    await page.setViewportSize({ width, height });
    await page.goto('./');
    await waitForModel(page);
    await loadFixtureModel(page);
    await page.getByTestId('mode-runs').click();
    await expect(page.getByTestId('runs-panel')).toBeInViewport();
    // Not a run: refused beside its picker, in one line; the model stays loaded.
    await page.getByTestId('run-input-A').setInputFiles({
      name: 'notes.safetensors',
      mimeType: 'application/octet-stream',
      buffer: Buffer.from('not a safetensors file at all'),
    });
    await page.getByTestId('analyze-runs').click();
    await expect(page.getByTestId('run-error-A')).toContainText('notes.safetensors:');
    await expect(page.getByTestId('run-error-A')).toBeInViewport();
    await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'ready');
    const ms = await analyze(page);
    testInfo.annotations.push({
      type: 'timing',
      description: `two runs read and analyzed in ${ms} ms (SwiftShader)`,
    });
    console.log(`[runs] ${width}x${height}: two runs read and analyzed in ${ms} ms`);
    await expect(page.getByTestId('run-error-A')).toHaveCount(0);
    await expect(page.getByTestId('finding-A')).toContainText('agrees with the exact forward');
    await expect(page.getByTestId('finding-B')).toContainText(
      'run B (parallel-classic residual-bf16), layer 1: the residual add',
    );
    await expect(page.getByTestId('runs-verdict')).toBeInViewport();
    // The grid: the born cell opens its drill-down, which takes focus; Escape closes it.
    const cell = page.getByTestId('check-B-layers.1.residual');
    await cell.focus();
    await page.keyboard.press('Enter');
    const detail = page.getByTestId('run-check-detail');
    await expect(detail).toBeFocused();
    await expect(detail).toContainText('gpt_neox.layers.1:out');
    await expect(detail).toBeInViewport();
    await shoot(page, testInfo, `runs-${width}`);
    await page.keyboard.press('Escape');
    await expect(detail).toHaveCount(0);
    expect(await axeViolations(page)).toEqual([]);
    const sideways = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
    expect(sideways).toBe(false);
    expect(errors).toEqual([]);
  });
}

test('a runs link opens in a fresh context: the files asked for by sha256, the sharer beside the viewer', async ({
  browser,
  page,
  baseURL,
}, testInfo) => {
  test.setTimeout(400_000);
  await page.goto('./');
  await waitForModel(page);
  await loadFixtureModel(page);
  await page.getByTestId('mode-runs').click();
  await analyze(page);
  await page
    .context()
    .grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(baseURL!).origin });
  await page.getByTestId('copy-runs-link').click();
  const link = await page.evaluate(() => navigator.clipboard.readText());
  expect(link).toMatch(/#u1=/);

  const fresh = await browser.newContext();
  const viewer = await fresh.newPage();
  const errors = watchErrors(viewer);
  await viewer.goto(link);
  await waitForModel(viewer);
  await expect(viewer.getByTestId('runs-link-note')).toBeVisible();
  await expect(viewer.getByTestId('runs-link-note')).toContainText('clean-cuda.run.safetensors');
  // Another model is loaded: the link says which it needs.
  await expect(viewer.getByTestId('runs-link-model')).toBeVisible();
  await loadFixtureModel(viewer);
  await viewer.getByTestId('mode-runs').click();
  await expect(viewer.getByTestId('runs-link-model')).toHaveCount(0);
  // The wrong file for A is refused by its hash, beside its picker.
  await viewer.getByTestId('run-input-A').setInputFiles(FAULT);
  await viewer.getByTestId('analyze-runs').click();
  await expect(viewer.getByTestId('run-error-A')).toContainText('the link names');
  await analyze(viewer);
  await expect(viewer.getByTestId('finding-B')).toContainText('layer 1: the residual add');
  await expect(viewer.getByTestId('sharer-B')).toContainText('layers.1.residual');
  await shoot(viewer, testInfo, 'runs-link-viewer');
  expect(errors).toEqual([]);
  await fresh.close();
});
