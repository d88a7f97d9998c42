// Your runs of a Llama-family model in the page: a committed HF fixture folder (src/model/testdata/llama/
// llama-gqa-llama3: grouped-query attention, llama3 rope scaling) picked from disk, a clean run A and a run B in bf16
// whose layer 1 maps KV heads to the wrong query heads (made by src/compare/family-runs-synth.testdata.ts as a PyTorch run
// records them) dropped in the "your runs" mode: run A agrees, run B's error is born at layer 1's attention core,
// named by the dump's module path, its cause the KV mapping; the grid's columns are the family's ops and the born
// cell opens on the run's own tensor names; a run of another model of the family is refused in one line first.
// Screenshots at 1280x800 and 1920x1080.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { synthFamilyRun } from '../src/compare/family-runs-synth.testdata';
import { loadLlamaWeights } from '../src/model/llama-weights';
import { parseModelConfigText } from '../src/model/model-config';
import { clippedTexts, loadLlamaFolder, openPage, shoot, textOverlaps } from './helpers';

const DIR = join('src', 'model', 'testdata', 'llama', 'llama-gqa-llama3');
const cfg = parseModelConfigText(readFileSync(join(DIR, 'config.json'), 'utf8'));
if (cfg.family !== 'llama') throw new Error('not a Llama-family fixture');
const w = loadLlamaWeights(cfg, new Uint8Array(readFileSync(join(DIR, 'model.safetensors'))));
const tokens = (JSON.parse(readFileSync(join(DIR, 'hf_outputs.json'), 'utf8')) as { tokens: number[] })
  .tokens;
const file = (name: string, bytes: Uint8Array) => ({
  name,
  mimeType: 'application/octet-stream',
  buffer: Buffer.from(bytes),
});
const CLEAN = file('clean.safetensors', synthFamilyRun(cfg, w, tokens, { label: 'clean' }));
const FAULT = file(
  'kv-mapping.safetensors',
  synthFamilyRun(cfg, w, tokens, {
    label: 'my kernel',
    dtype: 'BF16',
    plant: { layer: 1, slot: 'ctx', id: 'kv-interleaved' },
  }),
);

test("your runs of a Llama-family model: run B's KV mapping found at layer 1's attention core, its cause named", async ({
  page,
}, testInfo) => {
  const errors = await openPage(page);
  await loadLlamaFolder(page, DIR);

  await page.getByTestId('mode-runs').click();
  await expect(page.getByTestId('runs-panel')).toBeInViewport();
  // A run of another model of the family (Hugging Face's run of the Qwen3 fixture): one line, before any analysis.
  await page
    .getByTestId('run-input-A')
    .setInputFiles(join('src', 'model', 'testdata', 'llama', 'qwen3-qknorm', 'run.safetensors'));
  await page.getByTestId('analyze-runs').click();
  await expect(page.getByTestId('run-error-analyze')).toHaveText(
    'run A (run.safetensors) comes from another model (vocabulary 261, this one has 131): load theirs',
  );
  await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'ready');
  await page.getByTestId('run-input-A').setInputFiles(CLEAN);
  await page.getByTestId('run-input-B').setInputFiles(FAULT);
  await page.getByTestId('analyze-runs').click();
  await expect(page.getByTestId('runs-verdict')).toHaveText('DIVERGED', { timeout: 120_000 });
  await expect(page.getByTestId('run-error-A')).toHaveCount(0);
  await expect(page.getByTestId('finding-A')).toContainText('run A (clean) agrees with the exact forward');
  await expect(page.getByTestId('finding-B')).toContainText(
    'run B (my kernel), layer 1: the rotary embedding and the attention core (model.layers.1.self_attn)',
  );
  await expect(page.getByTestId('cause-B')).toContainText('KV heads mapped to the wrong query heads');
  // The grid's columns are the family's ops; the born cell opens on the run's own tensor names.
  const grid = page.getByRole('table', { name: /Local checks of run B/ });
  await expect(grid.getByRole('columnheader', { name: 'rotary + attention' })).toBeVisible();
  await expect(grid.getByRole('columnheader', { name: 'SwiGLU' })).toBeVisible();
  const cell = page.getByTestId('check-B-layers.1.q_rot+k_rot+ctx');
  await cell.click();
  const detail = page.getByTestId('run-check-detail');
  await expect(detail).toContainText('model.layers.1.self_attn.o_proj:in');
  await expect(detail).toContainText(
    "the floor is the explorer's Llama reference path at the run's storage precision",
  );
  await shoot(page, testInfo, 'llama-runs-1280');
  await page.setViewportSize({ width: 1920, height: 1080 });
  await shoot(page, testInfo, 'llama-runs-1920');
  // In Large type at 1280 wide: the curves' layer names and their axis label apart, the anatomy's labels whole.
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.getByTestId('large-type').click();
  for (const chart of ['run-curves', 'anatomy-B-chart']) {
    const svg = page.getByTestId(chart).locator('svg').first();
    expect(await clippedTexts(svg), chart).toEqual([]);
    expect(await textOverlaps(svg), chart).toEqual([]);
  }
  await page.getByTestId('large-type').click();
  // Another run B picked: the report says it answers the runs analysed before, until Analyze answers the new pair.
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.getByTestId('run-input-B').setInputFiles({ ...CLEAN, name: 'clean-again.safetensors' });
  await page.evaluate(() => window.scrollTo(0, 0));
  const stale = page.getByTestId('runs-stale');
  await expect(stale).toContainText('run B (clean-again.safetensors in place of kv-mapping.safetensors)');
  await expect(stale).toBeInViewport();
  await page.getByTestId('analyze-runs').click();
  await expect(page.getByTestId('runs-verdict')).toHaveText('AGREE', { timeout: 120_000 });
  await expect(stale).toHaveCount(0);
  expect(errors).toEqual([]);
});
