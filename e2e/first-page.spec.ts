// The page in a real browser before any run: the adapter and the embedded model show up, a model that
// cannot be fetched gives one clear error, and Chromium without WebGPU gets the explanation page.
import { existsSync } from 'node:fs';
import { chromium, expect, test } from '@playwright/test';
import { CHROMIUM_PATH, QUIET_FLAGS } from '../playwright.config';
import { fragmentOf, MODEL_DIR, shoot, waitForModel, watchErrors } from './helpers';

test.describe('first page', () => {
  test.beforeAll(() => {
    expect(existsSync(`${MODEL_DIR}/model.safetensors`), `the embedded model is missing: ${MODEL_DIR}`).toBe(
      true,
    );
  });

  test('shows the adapter and the embedded model, ready to run', async ({ page }, testInfo) => {
    const errors = watchErrors(page);
    const t0 = Date.now();
    await page.goto('./');
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Divergence explorer');
    await waitForModel(page);
    const adapter = page.getByTestId('adapter-panel');
    await expect(adapter).toContainText(/swiftshader/i);
    await expect(adapter.locator('[data-feature="shader-f16"]')).toHaveAttribute('data-on', 'no');
    await expect(adapter.locator('[data-feature="timestamp-query"]')).toHaveAttribute('data-on', 'yes');
    await expect(page.getByTestId('model-name')).toHaveText('neox-kjv-bytes');
    await expect(page.getByTestId('model-source')).toHaveAttribute('data-kind', 'embedded');
    await expect(page.getByTestId('model-layers')).toHaveText('4');
    await expect(page.getByTestId('gpu-memory')).toHaveAttribute('data-bytes-in-use', '0');
    await expect(page.getByTestId('run')).toBeEnabled();
    await expect(page.getByTestId('results-empty')).toBeVisible();
    // Every fused kernel has a switch with its description; all are on by default.
    const switches = page.getByTestId('fused-kernels').getByRole('switch');
    await expect(switches).toHaveCount(6);
    for (const s of await switches.all()) await expect(s).toBeChecked();
    expect(errors).toEqual([]);
    console.log(`timing: page load to model ready ${Date.now() - t0} ms`);
    await shoot(page, testInfo, 'first-page');
  });

  test('a model that cannot be fetched gives one clear error and no Run', async ({ page }, testInfo) => {
    await page.route('**/models/neox-kjv-bytes/model.safetensors', (route) =>
      route.fulfill({ status: 404, body: 'not here' }),
    );
    await page.goto('./');
    await expect(page.getByTestId('adapter-panel')).toHaveAttribute('data-status', 'ready', {
      timeout: 60_000,
    });
    await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'error', {
      timeout: 60_000,
    });
    const alert = page.getByRole('alert');
    await expect(alert).toHaveCount(1);
    await expect(alert).toContainText('The model could not be loaded');
    await expect(alert).toContainText('model.safetensors: HTTP 404');
    await expect(page.getByTestId('run')).toBeDisabled();
    await shoot(page, testInfo, 'model-missing');
  });
});

test('Chromium without the WebGPU flags shows the no-WebGPU page', async ({ baseURL }, testInfo) => {
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: QUIET_FLAGS });
  try {
    const page = await browser.newPage();
    const crashes: string[] = [];
    page.on('pageerror', (e) => crashes.push(e.message));
    page.on('crash', () => crashes.push('page crashed'));
    await page.goto(baseURL ?? 'http://localhost:4173/');
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Divergence explorer');
    const panel = page.getByTestId('no-webgpu');
    await expect(panel).toBeVisible({ timeout: 60_000 });
    await expect(panel).toContainText('WebGPU is not available');
    await expect(panel).toContainText('chrome://flags/#enable-unsafe-webgpu');
    await expect(panel).toContainText('chrome://gpu');
    await expect(panel).toContainText('113');
    await expect(page.getByTestId('adapter-panel')).toHaveCount(0);
    await expect(page.getByTestId('run')).toHaveCount(0);
    expect(crashes).toEqual([]);
    await shoot(page, testInfo, 'no-webgpu');
  } finally {
    await browser.close();
  }
});

test('without WebGPU a link still shows its scenario story, or the sharer’s per-layer result, read-only', async ({
  baseURL,
}, testInfo) => {
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: QUIET_FLAGS });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const crashes: string[] = [];
    page.on('pageerror', (e) => crashes.push(e.message));
    const base = baseURL ?? 'http://localhost:4173/';
    await page.goto(`${base}#s=fast-but-wrong`);
    await expect(page.getByTestId('no-webgpu')).toBeVisible({ timeout: 60_000 });
    const ro = page.getByTestId('link-readonly');
    await expect(ro.getByTestId('readonly-scenario')).toHaveAttribute('data-id', 'fast-but-wrong');
    await expect(ro.getByTestId('readonly-story')).not.toBeEmpty();
    await expect(ro).toContainText('Expected:');
    await shoot(page, testInfo, 'no-webgpu-scenario-1280');

    const spec = {
      version: 1,
      model: { kind: 'embedded', id: 'neox-kjv-bytes' },
      prompt: { text: 'In the beginning' },
      generate: 8,
      precision: 'fp32',
      fused: ['layernorm', 'qkv_rotary', 'flash_attention', 'gemm', 'linear_gelu', 'residual_epilogue'],
      faults: [{ id: 'gptj_rotary', fromLayer: 2 }],
      seed: 1,
      k: 10,
      metric: 'relL2',
    };
    const sharer = {
      adapter: 'NVIDIA H100 (sharer test adapter)',
      summary: { metric: 'relL2', ratios: [0.5, 0.75, 1.5e6, null], firstDivergentLayer: 2 },
    };
    await page.goto(`${base}${fragmentOf({ v: 1, spec, sharer })}`);
    await page.reload();
    await expect(page.getByTestId('no-webgpu')).toBeVisible({ timeout: 60_000 });
    await expect(page.getByTestId('readonly-scenario')).toHaveCount(0);
    const rows = page.getByTestId('readonly-sharer-row');
    await expect(rows).toHaveCount(4);
    await expect(rows.nth(2)).toContainText('×1.50e+6');
    await expect(rows.nth(2)).toContainText('yes');
    await expect(rows.nth(0)).toContainText('no');
    await expect(rows.nth(3)).toContainText('not finite');
    await expect(page.getByTestId('readonly-sharer')).toContainText('NVIDIA H100 (sharer test adapter)');
    await expect(page.getByTestId('link-readonly')).toContainText('In the beginning');
    await expect(page.getByTestId('run')).toHaveCount(0);
    expect(crashes).toEqual([]);
    await shoot(page, testInfo, 'no-webgpu-sharer-1280');
  } finally {
    await browser.close();
  }
});
