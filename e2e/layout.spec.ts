// The page as a new user meets it, at a laptop's 1280×800 and a projector's 1920×1080: the prompt, Run and
// the way into the scenarios are on screen without scrolling, nothing scrolls sideways, a run brings its
// verdict into view, and a report is never shown under settings it does not answer (changed settings mark
// it as the previous run; opening a scenario, by the picker or by its '#s=' link, clears it).
import { expect, type Page, test } from '@playwright/test';
import { PROMPT, runToEnd, setInputs, shoot, waitForModel, watchErrors } from './helpers';

const SIZES = [
  { width: 1280, height: 800 },
  { width: 1920, height: 1080 },
] as const;

/** How far the page scrolls sideways (0 when it does not). */
async function sidewaysScroll(page: Page): Promise<number> {
  return page.evaluate(() => {
    const el = document.scrollingElement ?? document.documentElement;
    return el.scrollWidth - window.innerWidth;
  });
}

/** Whether the element lies wholly inside the viewport as it is scrolled now. */
async function onScreen(page: Page, testId: string): Promise<boolean> {
  return page.getByTestId(testId).evaluate((el) => {
    const r = el.getBoundingClientRect();
    return r.top >= 0 && r.left >= 0 && r.bottom <= window.innerHeight && r.right <= window.innerWidth;
  });
}

for (const size of SIZES) {
  test(`at ${size.width}×${size.height}: prompt, Run and scenarios without scrolling, no sideways scroll`, async ({
    page,
  }, testInfo) => {
    const errors = watchErrors(page);
    await page.setViewportSize(size);
    await page.goto('./');
    await waitForModel(page);
    for (const id of ['prompt', 'run', 'to-scenarios'])
      expect(await onScreen(page, id), `${id} is on screen at ${size.width}×${size.height}`).toBe(true);
    expect(await sidewaysScroll(page)).toBeLessThanOrEqual(0);
    await shoot(page, testInfo, `first-screen-${size.width}`, false);
    // Large type must not push the page sideways either.
    await page.getByTestId('large-type').click();
    expect(await sidewaysScroll(page)).toBeLessThanOrEqual(0);
    await page.getByTestId('large-type').click();
    // The way into the scenarios leads to them.
    await page.getByTestId('to-scenarios').click();
    await expect(page.getByTestId('scenario-picker')).toBeInViewport();
    await expect(page.locator('[data-testid="scenario-open"]').first()).toBeFocused();
    expect(errors).toEqual([]);
  });
}

test('a run brings its verdict into view, points at the culprit; changed settings mark it; a scenario clears it', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  await page.setViewportSize(SIZES[0]);
  await page.goto('./');
  await waitForModel(page);
  await setInputs(page, PROMPT, 0);
  // A fault in Linear + bias + GELU (ReLU for GELU), whose fc1 output is never written out.
  await page.getByTestId('fault').selectOption('gelu_relu');
  await page.getByTestId('fault-layer-auto').uncheck();
  await page.getByTestId('fault-layer').fill('2');
  await runToEnd(page);
  await expect(page.getByTestId('verdict')).toBeInViewport();
  await expect(page.getByTestId('verdict')).toHaveAttribute('data-layer', '2');

  // The culprit: the born-here marker is drawn (above the propagated circle), the drill-down colours the
  // op far above its floor, brackets the ops each kernel replaced, and says where fused-away errors show.
  await expect(page.locator('[data-testid="born-marker"][data-layer="2"]')).toHaveCount(1);
  await page.locator('[data-testid="layer-button"][data-layer="2"]').click();
  const drill = page.getByTestId('drilldown');
  await expect(drill.locator('[data-testid="tap-row"][data-tap="layers.2.gelu"]')).toHaveAttribute(
    'data-band',
    'far',
  );
  await expect(drill.locator('[data-testid="tap-row"][data-tap="layers.2.ln1"]')).toHaveAttribute(
    'data-band',
    'floor',
  );
  await expect(drill.locator('[data-testid="kernel-group"][data-kernel="linear_gelu"]')).toHaveAttribute(
    'data-ops',
    'fc1 gelu',
  );
  await expect(
    drill.locator('[data-testid="tap-row"][data-tap="layers.2.fc1"] [data-testid="fused-away-why"]'),
  ).toHaveText('inside Linear + bias + GELU: its error shows in gelu');
  const timing = page.getByTestId('timing-ops');
  await expect(timing.locator('[data-testid="timing-group"][data-kernel="linear_gelu"]')).toContainText(
    'for the 2 reference ops it replaced',
  );
  await expect(timing.locator('[data-testid="timing-row"][data-kernel="linear_gelu"]')).toHaveCount(3);
  await drill.scrollIntoViewIfNeeded();
  await shoot(page, testInfo, 'culprit-drilldown-1280', false);
  await timing.scrollIntoViewIfNeeded();
  await shoot(page, testInfo, 'timing-groups-1280', false);
  expect(await sidewaysScroll(page)).toBeLessThanOrEqual(0);
  await expect(page.getByTestId('results')).toHaveAttribute('data-stale', 'no');
  await expect(page.getByTestId('stale')).toHaveCount(0);
  await shoot(page, testInfo, 'verdict-in-view-1280', false);
  // The small things: jargon opens the glossary; the history tells runs on one prompt apart; Copy link
  // shows the link in the address bar.
  await page.getByTestId('verdict').locator('[data-term="floor"]').click();
  await expect(page.getByTestId('glossary')).toHaveAttribute('open', '');
  await expect(page.locator('.glossary-entry.current')).toHaveAttribute('data-term', 'floor');
  await expect(page.locator('.glossary-entry.current')).toBeInViewport();
  for (const id of ['tap', 'fusedAway', 'threshold', 'fp16acc', 'propagated', 'local'])
    await expect(page.locator(`[data-testid="term"][data-term="${id}"]`).first()).toBeAttached();
  await expect(page.getByTestId('history-settings').first()).toHaveText(
    'fp32 · all 6 fused kernels · fault gelu_relu from layer 2',
  );
  await page.getByTestId('copy-link').click();
  await expect.poll(() => page.evaluate(() => location.hash)).toMatch(/^#r1=/);
  await page.setViewportSize(SIZES[1]);
  expect(await sidewaysScroll(page)).toBeLessThanOrEqual(0);
  await shoot(page, testInfo, 'report-1920');
  await page.setViewportSize(SIZES[0]);

  // A changed setting: the report says it is the previous run's, and what changed.
  await page.getByTestId('fused-gemm').uncheck();
  const stale = page.getByTestId('stale');
  await expect(stale).toBeVisible();
  await expect(stale).toHaveAttribute('data-changed', 'the fused kernels');
  await expect(page.getByTestId('results')).toHaveAttribute('data-stale', 'yes');
  await page.getByLabel('Prompt', { exact: true }).fill(`${PROMPT} unto`);
  await expect(stale).toHaveAttribute('data-changed', 'the prompt, the fused kernels');
  await stale.scrollIntoViewIfNeeded();
  await shoot(page, testInfo, 'previous-run-1280', false);
  // Changed back: the report answers the settings again.
  await page.getByTestId('fused-gemm').check();
  await page.getByLabel('Prompt', { exact: true }).fill(PROMPT);
  await expect(stale).toHaveCount(0);

  // A scenario opened from the picker: no report from other settings under its story.
  await page.locator('[data-testid="scenario-open"][data-id="fast-but-wrong"]').click();
  await expect(page.getByTestId('scenario')).toHaveAttribute('data-id', 'fast-but-wrong');
  await expect(page.getByTestId('results-empty')).toBeVisible();
  await expect(page.getByTestId('verdict')).toHaveCount(0);
  await shoot(page, testInfo, 'scenario-cleared-1280', false);
  expect(errors).toEqual([]);
});
