// Results as they exist, measured in the page (Chromium, WebGPU on SwiftShader): the verdict and the layer
// chart appear while the run still generates, both paths' tokens stream in with a counter, progress never
// goes back, and Cancel takes effect quickly; a diverging scenario shows its analysis before bisection and
// generation end, with the outcome it expects. The times are printed (first chart at, analysis shown at, run
// done at, cancel latency) for the default run — the page's own settings, as a room would press Run — and for
// the scenario, with how the two paths' token counts grew; they are not asserted (timing is never a test).
// The scenario's generation is cut to a few tokens (SwiftShader runs a full forward per token): CI time.
const TOKENS = 4;

import { expect, type Page, test } from '@playwright/test';
import { SCENARIOS } from '../src/run/scenarios';
import { expectScenarioOutcome, RUN_DONE_MS, shoot, waitForModel, watchErrors } from './helpers';

/** Presses Run (or the scenario's Run button) and times the analysis, the first token and the end. */
async function timeRun(page: Page, start: () => Promise<void>) {
  const status = page.getByTestId('run-status');
  const progress: number[] = [];
  const t0 = Date.now();
  await start();
  await expect(status).toHaveAttribute('data-state', 'running');
  // Progress is sampled while the run goes on: it must never go back.
  const sampler = setInterval(() => {
    void page
      .getByTestId('run-progress')
      .evaluate((el) => (el as HTMLProgressElement).value)
      .then((v) => progress.push(v))
      .catch(() => undefined);
  }, 250);
  try {
    await expect(page.getByTestId('verdict')).toBeVisible({ timeout: RUN_DONE_MS });
    const analysisMs = Date.now() - t0;
    const stillRunning = (await status.getAttribute('data-state')) === 'running';
    await expect(status).toHaveAttribute('data-state', /done|error|cancelled/, { timeout: RUN_DONE_MS });
    const doneMs = Date.now() - t0;
    await expect(status).toHaveAttribute('data-state', 'done');
    return { analysisMs, doneMs, stillRunning, progress };
  } finally {
    clearInterval(sampler);
  }
}

test('the default run: analysis first, tokens streamed on both paths, progress only forward; Cancel quick', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('./');
  await waitForModel(page);
  const tokens = Number(await page.getByTestId('generate').inputValue());
  const counts: string[] = [];
  page.on('console', () => undefined);
  const watch = setInterval(() => {
    void page
      .getByTestId('stream-count')
      .textContent({ timeout: 100 })
      .then((t) => t && counts.push(t))
      .catch(() => undefined);
  }, 200);
  const tRun = Date.now();
  let firstChartMs = -1;
  void page
    .getByTestId('error-curve')
    .waitFor({ timeout: RUN_DONE_MS })
    .then(() => {
      firstChartMs = Date.now() - tRun;
    })
    .catch(() => undefined);
  const r = await timeRun(page, () => page.getByTestId('run').click());
  clearInterval(watch);
  // The verdict was on screen while both paths were still generating.
  expect(r.stillRunning).toBe(true);
  expect(counts.some((c) => /reference [1-9]\d* \/ \d+/.test(c))).toBe(true);
  expect(counts.some((c) => /fused [1-9]\d* \/ \d+/.test(c))).toBe(true);
  for (let i = 1; i < r.progress.length; i++) expect(r.progress[i]).toBeGreaterThanOrEqual(r.progress[i - 1]);
  await expect(page.getByTestId('generation')).toBeVisible();
  expect(errors).toEqual([]);
  await shoot(page, testInfo, 'default-run-done-1280', false);
  // How the two paths' counts grew (reference / fused), sample by sample, without repeats.
  const growth = counts
    .map((c) => /reference (\d+) \/ \d+, fused (\d+)/.exec(c))
    .filter((m) => m !== null)
    .map((m) => `${m[1]}/${m[2]}`)
    .filter((x, i, a) => i === 0 || a[i - 1] !== x);
  const line = `default run (${tokens} tokens): first chart at ${firstChartMs} ms, analysis shown at ${r.analysisMs} ms, run done at ${r.doneMs} ms; tokens reference/fused as they streamed: ${growth.join(' ')}`;
  console.log(`timing: ${line}`);
  testInfo.annotations.push({ type: 'timing (SwiftShader, not asserted)', description: line });

  // Again, cancelled once the first tokens stream in (an agreeing run: no bisection before generation).
  await page.getByTestId('run').click();
  await expect(page.getByTestId('stream-reference')).not.toHaveAttribute('data-count', '0', {
    timeout: RUN_DONE_MS,
  });
  await shoot(page, testInfo, 'streaming-1280', false);
  const t0 = Date.now();
  await page.getByTestId('cancel').click();
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', 'cancelled', {
    timeout: 30_000,
  });
  const cancelMs = Date.now() - t0;
  await expect(page.getByTestId('incomplete')).toBeVisible();
  console.log(`timing: cancel during generation took effect after ${cancelMs} ms`);
  expect(errors).toEqual([]);
});

test('a scenario: analysis shown early, then bisection and generation; its outcome as expected', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.goto('./#s=fast-but-wrong');
  await waitForModel(page);
  await page.getByTestId('generate').fill(String(TOKENS));
  const r = await timeRun(page, () => page.getByTestId('run-linked').first().click());
  await shoot(page, testInfo, 'scenario-run-done-1920', false);
  console.log(
    `timing: scenario fast-but-wrong: analysis shown at ${r.analysisMs} ms, run done at ${r.doneMs} ms`,
  );

  // The scenario's own outcome (scenarios.spec.ts leaves this scenario to this spec).
  const sc = SCENARIOS.find((x) => x.id === 'fast-but-wrong');
  if (!sc) throw new Error('no fast-but-wrong scenario');
  await expectScenarioOutcome(page, sc);
  expect(errors).toEqual([]);
});
