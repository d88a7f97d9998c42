// A scenario shown to a room at 1920×1080: each presenter step shows what it talks about (the layer's ops
// for "Open layer 1", the bisection for "Bisection blames…"), the chart fills the screen; on every step all
// text is at least 24 px (chart ticks 20 px), the step's key element is on screen without scrolling and no
// two texts overlap; nothing overlaps with Large type on either; and outside presenter mode the highlighted
// step follows what the viewer opens. Generation is set to 0 (no step depends on it; SwiftShader is slow).
// The decode-only scenario ("fine on the prompt, wrong in the generated text"): the page's verdict says the generation
// diverged and the decode check, started by itself, names the op in view of Run; its presenter steps show the texts,
// where they part and the decode finding, with the cause line (ending with the decode's cause), readable at
// 1920×1080; the dialog has one banner.
import { expect, type Locator, type Page, test } from '@playwright/test';
import { SCENARIOS } from '../src/run/scenarios';
import {
  axeViolations,
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
  text: '[data-testid="first-diff"]',
  decode: '[data-testid="decode-check"][data-path="fused"]',
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
  // The cause line (issue 38): the cause the explorer found where the error is born.
  await expect(page.getByTestId('presenter-cause')).toContainText('Cause at layers.1.');
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

/** axe's landmark rules (moderate, so not in axeViolations' serious and critical) as they stand in the page now. */
async function landmarkViolations(page: Page): Promise<string[]> {
  await axeViolations(page); // loads axe into the page
  return page.evaluate(async () => {
    type Result = { violations: { id: string; nodes: { target: unknown[] }[] }[] };
    const axe = (window as unknown as { axe: { run(ctx: Document, o: object): Promise<Result> } }).axe;
    const r = await axe.run(document, { runOnly: { type: 'tag', values: ['best-practice'] } });
    return r.violations
      .filter((v) => v.id.startsWith('landmark'))
      .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
}

test('fine on the prompt, wrong in the generated text: the verdict, the decode finding in view, the presenter steps', async ({
  page,
}, testInfo) => {
  const dec = SCENARIOS.find((s) => s.id === 'decode-only');
  if (!dec) throw new Error('no decode-only scenario');
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('./#s=decode-only');
  await waitForModel(page);
  // No checkbox: the decode check starts by itself because the text diverges.
  await expect(page.getByTestId('check-decode')).not.toBeChecked();
  await runToEnd(page);
  const verdict = page.getByTestId('verdict');
  await expect(verdict).toHaveAttribute('data-verdict', 'generation-diverged');
  await expect(verdict).toContainText('generation diverged');
  await expect(verdict).toContainText('The prompt agrees');
  await expect(page.getByTestId('verdict-generation')).toContainText(
    'born at decode step 1 (position 39), layer 1, the QKV projection and the attention core (fused), on the fused path',
  );
  await expect(page.getByTestId('verdict-generation')).toContainText(
    'the texts part at generated token 2 (decode step 1)',
  );
  // The decode finding sits under the verdict, in view with it, started by itself.
  const found = page.getByTestId('generation-verdict');
  await expect(found).toHaveAttribute('data-started', 'auto');
  await expect(found).toBeInViewport();
  await expect(found.locator('[data-testid="decode-check"][data-path="fused"]')).toHaveAttribute(
    'data-verdict',
    'diverged',
  );
  await expectScenarioOutcome(page, dec); // scenarios.spec.ts leaves this scenario to this spec
  await shoot(page, testInfo, 'decode-only-verdict-1280', false);

  await page.setViewportSize({ width: 1920, height: 1080 });
  await shoot(page, testInfo, 'decode-only-verdict-1920', false);
  await page.getByTestId('present').click();
  const presenter = page.getByTestId('presenter');
  const stepEl = page.getByTestId('presenter-step');
  const result = page.getByTestId('presenter-result');
  while ((await stepEl.getAttribute('data-step')) !== '0') await page.keyboard.press('ArrowLeft');
  await expect(page.getByTestId('presenter-verdict')).toHaveAttribute('data-verdict', 'generation-diverged');
  // The cause line: here the decode's finding.
  await expect(page.getByTestId('presenter-cause')).toContainText('born at decode step 1');
  await expect(page.getByTestId('presenter-cause')).toContainText('rotated as position 0 [rotary-offset]');
  expect(await landmarkViolations(page), 'axe landmarks with the presenter open').toEqual([]);
  const views: string[] = [];
  for (let i = 0; i < dec.steps.length; i++) {
    if (i > 0) await page.keyboard.press('ArrowRight');
    await expect(stepEl).toHaveAttribute('data-step', String(i));
    const view = (await result.getAttribute('data-view')) ?? '';
    views.push(view);
    const key = result.locator(KEY_OF_VIEW[view] ?? '[data-testid="error-curve"] svg').first();
    await expect(key, `step ${i + 1} (${view}) has its key element`).toBeVisible();
    expect(await insideViewport(key), `step ${i + 1} (${view}): key element inside the viewport`).toBe(true);
    const t = await textSizes(presenter);
    expect(t.html, `step ${i + 1}: HTML text (smallest: ${t.smallest})`).toBeGreaterThanOrEqual(24);
    expect(await textOverlaps(presenter), `step ${i + 1}: overlapping text`).toEqual([]);
    await shoot(page, testInfo, `decode-only-presenter-step-${i + 1}-1920`, false);
  }
  // The steps drive the views: the layer chart, the texts and their parting, the decode finding.
  expect(views).toEqual(['curve', 'text', 'text', 'decode', 'decode']);
  await expect(page.getByTestId('presenter-cause')).toContainText('generation diverges at decode step 1');
  await page.keyboard.press('Escape');
  expect(errors).toEqual([]);
});
