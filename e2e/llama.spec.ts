// A Llama-family model in the page: a committed HF fixture folder (src/model/testdata/llama/qwen2-bias: Qwen2,
// grouped-query attention, q/k/v biases, a sliding window, F16 weights, no tokenizer) picked from disk loads, the
// model panel names its family, Run compares both paths (agree, both paths generating the same tokens), and the family's
// teaching fault of the KV mapping planted from layer 1 diverges there, bisection naming the flash attention; the family's faults are the ones offered. Screenshots at
// 1280x800 and 1920x1080.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { HUB_OVERRIDE_KEY } from '../src/run/hub';
import { clippedTexts, runToEnd, setInputs, shoot, textOverlaps, waitForModel, watchErrors } from './helpers';
import { LLAMA_FIXTURE_OF } from './hub-repos';
import { type StandIn, startHubServer } from './hub-server';

let hub: StandIn;
test.beforeAll(async () => {
  hub = await startHubServer();
});
test.afterAll(async () => {
  await hub?.close();
});

const DIR = join('src', 'model', 'testdata', 'llama', 'qwen2-bias');
const hf = JSON.parse(readFileSync(join(DIR, 'hf_outputs.json'), 'utf8')) as {
  greedy: { prompt: number[]; new_ids: number[] };
};

test('a Llama-family folder loads, shows its family, compares both paths, and its fault diverges', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('./');
  await waitForModel(page);
  await expect(page.getByTestId('model-family')).toHaveAttribute('data-family', 'gpt_neox');
  await page.getByText('Load another model').click();
  await page
    .getByTestId('model-files')
    .setInputFiles([join(DIR, 'config.json'), join(DIR, 'model.safetensors')]);
  await expect(page.getByTestId('model-family')).toHaveAttribute('data-family', 'llama', { timeout: 60_000 });
  await expect(page.getByTestId('model-family')).toHaveText('Llama family (qwen2)');
  // Files from no folder, model.safetensors: named by the config (architecture, layers × width), not "model".
  await expect(page.getByTestId('model-name')).toHaveText('Qwen2ForCausalLM 2 × 72');
  await expect(page.getByTestId('model-layers')).toHaveText('2');
  await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'ready');

  await expect(page.getByTestId('llama-kernels')).toContainText('SwiGLU');
  // The fault picker offers the family's faults, not GPT-NeoX's.
  const fault = page.getByTestId('fault');
  await expect(fault.locator('option[value="kv_interleaved"]')).toHaveCount(1);
  await expect(fault.locator('option[value="gelu_relu"]')).toHaveCount(0);

  const n = 4;
  await setInputs(page, hf.greedy.prompt.join(','), n);
  await runToEnd(page);
  const verdict = page.locator('.results [data-testid="verdict"]');
  await expect(verdict).toHaveAttribute('data-verdict', 'agree');
  await expect(page.getByTestId('timing-unavailable')).toHaveText(
    'Per-op GPU times are not yet measured for the Llama family.',
  );
  await expect(page.getByTestId('generation')).toHaveAttribute('data-first-difference', '');
  await expect(page.getByTestId('generation-summary')).toHaveText(
    `Both paths generate the same ${n} tokens.`,
  );
  await shoot(page, testInfo, 'llama-agree-1280', false);
  await page.setViewportSize({ width: 1920, height: 1080 });
  await shoot(page, testInfo, 'llama-agree-1920', false);
  await page.setViewportSize({ width: 1280, height: 800 });

  await fault.selectOption('kv_interleaved');
  await expect(page.getByTestId('fault-info')).toBeVisible();
  await page.getByTestId('fault-layer-auto').uncheck();
  await page.getByTestId('fault-layer').fill('1');
  await setInputs(page, hf.greedy.prompt.join(','), 0);
  await runToEnd(page);
  await expect(verdict).toHaveAttribute('data-verdict', 'diverged');
  await expect(verdict).toHaveAttribute('data-layer', '1');
  // the bisection names the family's kernel by its title; the hit keeps the switch id in data-kernel
  await expect(page.getByTestId('bisection')).toContainText('Flash attention (grouped-query) reproduces');
  await expect(page.getByTestId('bisection-hit')).toHaveAttribute('data-kernel', 'flash_attention');
  // born in layer 1 (the local re-runs), at the attention core, the KV mapping named
  await expect(verdict).toContainText('The error is born in layer 1.');
  await expect(page.getByTestId('why')).toHaveAttribute('data-born', 'layers.1.ctx');
  await expect(page.getByTestId('why')).toContainText('KV heads mapped to the wrong query heads');
  await shoot(page, testInfo, 'llama-fault-1280', false);
  await shoot(page, testInfo, 'llama-fault-1280-full', true);

  // The layer's ops in Large type at 1280 wide: every label whole inside the chart (kernels, ops, values, the
  // fused-away words), the ticks thinned to what fits (none touching), the bars given the room that is left.
  await page.locator('[data-testid="layer-button"][data-layer="1"]').click();
  await page.getByTestId('large-type').click();
  const drill = page.getByTestId('drilldown');
  const svg = drill.locator('svg').first();
  await expect(drill.locator('[data-testid="tap-row"]').first()).toBeVisible();
  expect(await clippedTexts(svg)).toEqual([]);
  expect(await textOverlaps(svg)).toEqual([]);
  expect(await drill.locator('g.axis .tick').count()).toBeGreaterThanOrEqual(2);
  const plotWidth = await drill
    .locator('g.axis path.domain')
    .evaluate((p) => p.getBoundingClientRect().width);
  expect(plotWidth).toBeGreaterThan(120);
  // … and the born op's anatomy under it: its heatmap given the width (its words wrap under it), labels whole.
  const anatomy = page.getByTestId('anatomy-chart').locator('svg').first();
  expect(await clippedTexts(anatomy)).toEqual([]);
  expect(await textOverlaps(anatomy)).toEqual([]);
  await drill.scrollIntoViewIfNeeded();
  await shoot(page, testInfo, 'llama-ops-large-type-1280', false);
  await page.getByTestId('large-type').click();
  expect(errors).toEqual([]);
});

test('a Llama-family Hub preset: sizes from the API, downloaded, its family shown, Run agrees', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  await page.addInitScript(([k, v]) => localStorage.setItem(k, v), [
    HUB_OVERRIDE_KEY,
    JSON.stringify(hub.override),
  ] as const);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('./');
  await waitForModel(page);
  const repo = 'HuggingFaceTB/SmolLM2-135M';
  const presets = page.getByTestId('hub-presets');
  await presets.getByTestId('preset-SmolLM2-135M').click();
  const detail = presets.getByTestId('hub-detail');
  await expect(detail).toHaveAttribute('data-state', 'done');
  const weights = hub.file(repo, 'model.safetensors');
  const total = weights.body.length + hub.file(repo, 'config.json').body.length;
  await expect(detail.getByTestId('preset-size')).toHaveAttribute('data-bytes', String(total));
  await expect(detail.getByTestId('preset-sha256')).toHaveText(weights.sha256);
  // The answer in view of its control: the preset sits near the rail's fold at 1280×800; its detail (sizes,
  // family, Download) is scrolled to, not left below it.
  await expect(detail.getByTestId('preset-load')).toBeInViewport({ ratio: 1 });
  await shoot(page, testInfo, 'llama-hub-looked-up-1280', false);
  await detail.getByTestId('preset-load').click();
  await expect(page.getByTestId('model-family')).toHaveAttribute('data-family', 'llama', { timeout: 60_000 });
  await expect(page.getByTestId('model-family')).toHaveText('Llama family (llama)');
  await expect(page.getByTestId('model-sha256')).toHaveText(weights.sha256);
  const fixture = join('src', 'model', 'testdata', 'llama', LLAMA_FIXTURE_OF['SmolLM2-135M']);
  const tokens = (JSON.parse(readFileSync(join(fixture, 'hf_outputs.json'), 'utf8')) as { tokens: number[] })
    .tokens;
  await setInputs(page, tokens.join(','), 2);
  await runToEnd(page);
  await expect(page.locator('.results [data-testid="verdict"]')).toHaveAttribute('data-verdict', 'agree');
  await shoot(page, testInfo, 'llama-hub-agree-1280', false);
  expect(errors).toEqual([]);
});
