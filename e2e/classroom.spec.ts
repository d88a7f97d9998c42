// A scenario shown to a room at 1920×1080: each presenter step shows what it talks about (the layer's ops
// for "Open layer 1", the bisection for "Bisection blames…"), the chart fills the screen; on every step all
// text is at least 24 px (chart ticks 20 px), the step's key element is on screen without scrolling and no
// two texts overlap; nothing overlaps with Large type on either; and outside presenter mode the highlighted
// step follows what the viewer opens. Generation is set to 0 (no step depends on it; SwiftShader is slow).
import { expect, type Locator, type Page, test } from '@playwright/test';
import { SCENARIOS } from '../src/run/scenarios';
import {
  expectScenarioOutcome,
  insideViewport,
  runToEnd,
  shoot,
  textOverlaps,
  textSizes,
  waitForModel,
  watchErrors,
} from './helpers';

const sc = SCENARIOS.find((s) => s.id === 'fused-add');

/** The element a presenter step is about, by the view it shows: what must be on the screen. */
const KEY_OF_VIEW: Record<string, string> = {
  curve: '[data-testid="error-curve"] svg',
  ops: '[data-testid="tap-row"][data-band="far"]',
  bisection: '[data-testid="bisection-hit"]',
  determinism: '[data-testid="determinism"]',
  heatmap: '[data-testid="heatmap"] svg',
  timing: '[data-testid="timing-summary"]',
};

/** Smallest font size (px) of the SVG text inside a locator. */
function smallestText(target: Locator): Promise<number> {
  return target.evaluate((el) =>
    Math.min(
      ...[...el.querySelectorAll('svg text')].map((t) => Number.parseFloat(getComputedStyle(t).fontSize)),
    ),
  );
}

/** Whether any two of the presenter's blocks overlap vertically. */
async function overlaps(page: Page): Promise<string[]> {
  return page.getByTestId('presenter').evaluate((root) => {
    const kids = [...root.children].filter((c) => (c as HTMLElement).offsetParent !== null);
    const out: string[] = [];
    for (let i = 1; i < kids.length; i++) {
      const a = kids[i - 1].getBoundingClientRect();
      const b = kids[i].getBoundingClientRect();
      if (b.top < a.bottom - 1) out.push(`${kids[i - 1].className} / ${kids[i].className}`);
    }
    return out;
  });
}

test('presenter mode for a room: each step shows its view, big chart text, no overlap with Large type', async ({
  page,
}, testInfo) => {
  if (!sc) throw new Error('no fused-add scenario');
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.goto('./#s=fused-add');
  await waitForModel(page);
  await page.getByTestId('generate').fill('0');
  await runToEnd(page);
  // The finished run's answer is in view at 1920×1080, with the keyboard on it.
  await expect(page.getByTestId('verdict')).toBeFocused();
  await expect(page.getByTestId('verdict')).toBeInViewport();
  await expectScenarioOutcome(page, sc); // scenarios.spec.ts leaves this scenario to this spec
  // The run moved the highlighted step past "Run …"? This scenario starts with "Look at": it stays.
  const current = page.locator('[data-testid="scenario-step"][aria-current="step"]');
  await expect(current).toHaveText(sc.steps[0]);
  // Outside presenter mode the step follows: opening layer 1 highlights the step about it.
  const openLayer = sc.steps.findIndex((t) => /Open layer 1/.test(t));
  expect(openLayer).toBeGreaterThan(0);
  await page.locator('[data-testid="layer-button"][data-layer="1"]').click();
  await expect(current).toHaveText(sc.steps[openLayer]);
  // And a step clicked shows its view: the bisection step brings the bisection into view.
  const bisect = sc.steps.findIndex((t) => /Bisection/.test(t));
  await page.getByTestId('scenario-step').nth(bisect).getByRole('button').click();
  await expect(page.getByTestId('bisection')).toBeInViewport();

  await page.getByTestId('present').click();
  const result = page.getByTestId('presenter-result');
  // Presenter mode opens at the step highlighted (the bisection's); back to the first.
  const stepEl = page.getByTestId('presenter-step');
  await expect(stepEl).toHaveAttribute('data-step', String(bisect));
  for (let i = 0; i < bisect; i++) await page.keyboard.press('ArrowLeft');
  await expect(stepEl).toHaveAttribute('data-step', '0');
  await expect(result).toHaveAttribute('data-view', 'curve');
  const curve = result.getByTestId('error-curve');
  const box = await curve.locator('svg').boundingBox();
  // As tall as the screen leaves under the step's words (the whole chart stays on screen).
  expect(box?.height ?? 0).toBeGreaterThanOrEqual(400);
  expect(box?.width ?? 0).toBeGreaterThanOrEqual(1500);
  expect(await smallestText(curve)).toBeGreaterThanOrEqual(18);
  await shoot(page, testInfo, 'presenter-curve-1920', false);
  // "Open layer 1": the layer's ops.
  for (let i = 0; i < openLayer; i++) await page.keyboard.press('ArrowRight');
  await expect(result).toHaveAttribute('data-view', 'ops');
  await expect(result.getByTestId('drilldown')).toContainText('Layer 1: error per op');
  expect(await smallestText(result.getByTestId('drilldown'))).toBeGreaterThanOrEqual(18);
  await shoot(page, testInfo, 'presenter-ops-1920', false);
  // "Bisection blames …": the bisection.
  for (let i = openLayer; i < bisect; i++) await page.keyboard.press('ArrowRight');
  await expect(result).toHaveAttribute('data-view', 'bisection');
  await expect(result.getByTestId('bisection-hit')).toHaveAttribute('data-kernel', 'residual_epilogue');
  await shoot(page, testInfo, 'presenter-bisection-1920', false);

  // From the back row, every step: text at 24 px or more (chart ticks 20 px), the step's key element on
  // screen without scrolling, and no two texts over each other.
  const presenter = page.getByTestId('presenter');
  for (let i = bisect; i > 0; i--) await page.keyboard.press('ArrowLeft');
  const sizes: string[] = [];
  for (let i = 0; i < sc.steps.length; i++) {
    if (i > 0) await page.keyboard.press('ArrowRight');
    await expect(stepEl).toHaveAttribute('data-step', String(i));
    const view = (await result.getAttribute('data-view')) ?? '';
    const key = result.locator(KEY_OF_VIEW[view] ?? '[data-testid="error-curve"] svg').first();
    await expect(key, `step ${i + 1} (${view}) has its key element`).toBeVisible();
    expect(await insideViewport(key), `step ${i + 1} (${view}): key element inside the viewport`).toBe(true);
    expect(await insideViewport(stepEl), `step ${i + 1}: its words inside the viewport`).toBe(true);
    const t = await textSizes(presenter);
    sizes.push(`step ${i + 1} (${view}): text ${t.html} px, chart text ${t.svg} px, ticks ${t.tick} px`);
    expect(t.html, `step ${i + 1}: HTML text (smallest: ${t.smallest})`).toBeGreaterThanOrEqual(24);
    expect(t.svg, `step ${i + 1}: chart text`).toBeGreaterThanOrEqual(24);
    expect(t.tick, `step ${i + 1}: chart ticks`).toBeGreaterThanOrEqual(20);
    expect(await textOverlaps(presenter), `step ${i + 1}: overlapping text`).toEqual([]);
    await shoot(page, testInfo, `presenter-step-${i + 1}-1920`, false);
  }
  console.log(`presenter at 1920×1080:\n  ${sizes.join('\n  ')}`);
  testInfo.annotations.push({ type: 'presenter text (px)', description: sizes.join('; ') });
  for (let i = sc.steps.length - 1; i > bisect; i--) await page.keyboard.press('ArrowLeft');
  await expect(stepEl).toHaveAttribute('data-step', String(bisect));
  // Large type: nothing overlaps, nothing scrolls sideways.
  await page.keyboard.press('Escape');
  await page.getByTestId('large-type').click();
  await page.getByTestId('present').click();
  for (let i = 0; i < openLayer; i++) await page.keyboard.press('ArrowRight');
  expect(await overlaps(page)).toEqual([]);
  const sideways = await page.getByTestId('presenter').evaluate((el) => el.scrollWidth - el.clientWidth);
  expect(sideways).toBeLessThanOrEqual(0);
  await shoot(page, testInfo, 'presenter-large-type-1920', false);
  await page.setViewportSize({ width: 1280, height: 800 });
  expect(await overlaps(page)).toEqual([]);
  await shoot(page, testInfo, 'presenter-large-type-1280', false);
  expect(errors).toEqual([]);
});
