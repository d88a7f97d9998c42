// The first page in a real browser: the adapter and the embedded model show up, a generation in the page
// equals the Node engine's (same ids, same text), Chromium without WebGPU gets the explanation page, and a
// prompt that looks like HTML stays text.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chromium, expect, type Page, test } from '@playwright/test';
import { CHROMIUM_PATH, QUIET_FLAGS } from '../playwright.config';

const MODEL_DIR = 'public/models/neox-kjv-bytes';
const MODEL_READY_MS = 180_000;
const RUN_DONE_MS = 240_000;

interface CliGenerate {
  promptIds: number[];
  newIds: number[];
  text: string;
}

/** The Node engine's greedy continuation (Dawn on SwiftShader), from the CLI. */
function nodeGenerate(prompt: string, n: number): CliGenerate {
  const out = execFileSync(
    'npx',
    [
      'tsx',
      'src/cli/main.ts',
      'generate',
      '--model',
      MODEL_DIR,
      '--prompt',
      prompt,
      '--n',
      String(n),
      '--json',
    ],
    {
      encoding: 'utf8',
      env: { ...process.env, VK_ICD_FILENAMES: '/usr/lib/chromium/vk_swiftshader_icd.json' },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 240_000,
    },
  );
  const line = out.trim().split('\n').at(-1) ?? '';
  return JSON.parse(line) as CliGenerate;
}

/** Collects uncaught page errors and console errors so a test can assert there were none. */
function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  return errors;
}

async function waitForModel(page: Page): Promise<void> {
  await expect(page.getByTestId('adapter-panel')).toHaveAttribute('data-status', 'ready', {
    timeout: 60_000,
  });
  await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', /ready|error/, {
    timeout: MODEL_READY_MS,
  });
  await expect(page.getByRole('alert')).toHaveCount(0);
  await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'ready');
}

async function generate(page: Page, prompt: string, n: number): Promise<void> {
  await page.getByLabel('Prompt').fill(prompt);
  await page.getByLabel('New tokens').fill(String(n));
  const button = page.getByRole('button', { name: 'Generate' });
  await expect(button).toBeEnabled();
  await button.click();
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', /done|error|cancelled/, {
    timeout: RUN_DONE_MS,
  });
  await expect(page.getByRole('alert')).toHaveCount(0);
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', 'done');
}

test.describe('first page', () => {
  test.beforeAll(() => {
    expect(
      existsSync(`${MODEL_DIR}/model.safetensors`),
      `the embedded model is missing: ${MODEL_DIR}/model.safetensors`,
    ).toBe(true);
  });

  test('shows the adapter and the model, and generates exactly what the Node engine generates', async ({
    page,
  }, testInfo) => {
    const prompt = 'In the beginning God created ';
    const n = 16;
    const t0 = Date.now();
    const want = nodeGenerate(prompt, n);
    const cliMs = Date.now() - t0;
    expect(want.newIds).toHaveLength(n);

    const errors = watchErrors(page);
    const t1 = Date.now();
    await page.goto('./');
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Divergence explorer');
    await waitForModel(page);
    const loadMs = Date.now() - t1;
    const adapter = page.getByTestId('adapter-panel');
    await expect(adapter).toContainText(/swiftshader/i);
    await expect(adapter.locator('[data-feature="shader-f16"]')).toHaveAttribute('data-on', 'no');
    await expect(adapter.locator('[data-feature="timestamp-query"]')).toHaveAttribute('data-on', 'yes');
    await expect(page.getByTestId('model-name')).toHaveText('neox-kjv-bytes');

    const t2 = Date.now();
    await generate(page, prompt, n);
    const genMs = Date.now() - t2;
    await expect(page.getByTestId('run-status')).toHaveText(`Done: ${n} / ${n} tokens`);

    const generated = page.getByTestId('generated');
    const text = await generated.textContent();
    const ids = ((await generated.getAttribute('data-ids')) ?? '').split(',').filter(Boolean).map(Number);
    const promptIds = ((await generated.getAttribute('data-prompt-ids')) ?? '')
      .split(',')
      .filter(Boolean)
      .map(Number);
    expect(text).not.toBe('');
    expect(ids).toEqual(want.newIds);
    expect(promptIds).toEqual(want.promptIds);
    expect(text).toBe(want.text);
    await expect(page.getByTestId('output-prompt')).toHaveText(prompt, { useInnerText: false });
    expect(errors).toEqual([]);

    testInfo.annotations.push({
      type: 'timing',
      description: `CLI ${cliMs} ms; page load to model ready ${loadMs} ms; ${n} tokens in the page ${genMs} ms`,
    });
    console.log(`timing: CLI ${cliMs} ms, page+model ${loadMs} ms, generate ${n} tokens ${genMs} ms`);
    const shot = testInfo.outputPath('first-page.png');
    await page.screenshot({ path: shot, fullPage: true });
    await testInfo.attach('first-page', { path: shot, contentType: 'image/png' });
  });

  test('a prompt that is HTML is shown as text', async ({ page }, testInfo) => {
    const prompt = '<img src=x onerror=alert(1)>';
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    const errors = watchErrors(page);
    await page.goto('./');
    await waitForModel(page);
    await generate(page, prompt, 2);
    const output = page.getByTestId('output');
    await expect(output.getByTestId('output-prompt')).toHaveText(prompt);
    await expect(output.locator('img')).toHaveCount(0);
    await expect(page.locator('img')).toHaveCount(0);
    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
    const shot = testInfo.outputPath('html-prompt.png');
    await page.screenshot({ path: shot, fullPage: true });
    await testInfo.attach('html-prompt', { path: shot, contentType: 'image/png' });
  });

  test('Stop cancels a running generation without an error', async ({ page }) => {
    await page.goto('./');
    await waitForModel(page);
    await page.getByLabel('New tokens').fill('200');
    await page.getByRole('button', { name: 'Generate' }).click();
    const status = page.getByTestId('run-status');
    await expect(status).toHaveText(/Generating… [1-9]\d* \/ 200 tokens/, { timeout: 60_000 });
    await page.getByRole('button', { name: 'Stop' }).click();
    await expect(status).toHaveAttribute('data-state', 'cancelled', { timeout: 60_000 });
    await expect(status).toHaveText(/Stopped after \d+ \/ 200 tokens/);
    await expect(page.getByRole('alert')).toHaveCount(0);
    await expect(page.getByRole('button', { name: 'Generate' })).toBeEnabled();
  });

  test('a model that cannot be fetched gives one clear error and no Generate', async ({ page }, testInfo) => {
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
    await expect(page.getByRole('button', { name: 'Generate' })).toBeDisabled();
    const shot = testInfo.outputPath('model-missing.png');
    await page.screenshot({ path: shot, fullPage: true });
    await testInfo.attach('model-missing', { path: shot, contentType: 'image/png' });
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
    await expect(page.getByRole('button', { name: 'Generate' })).toHaveCount(0);
    expect(crashes).toEqual([]);
    const shot = testInfo.outputPath('no-webgpu.png');
    await page.screenshot({ path: shot, fullPage: true });
    await testInfo.attach('no-webgpu', { path: shot, contentType: 'image/png' });
  } finally {
    await browser.close();
  }
});
