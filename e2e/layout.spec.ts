// The page as a workspace, at a laptop's 1280×800 and a projector's 1920×1080: the modes at the top, the
// prompt and Run on the first screen, nothing sideways; picking a scenario or opening a link switches mode and
// puts what opened in view with the keyboard on it; a skip link; axe-core finds no serious or critical
// violation in any mode. A run brings its verdict into view and focus; the charts answer the keyboard (arrows
// between points and op rows, Enter opens, Escape closes); chart text is at least 12 px and grows with Large
// type, and no two chart labels overlap; a report is never shown under settings it does not answer (changed
// settings mark it as the previous run; opening a scenario, by the picker or by its '#s=' link, clears it); with the
// drill-down open no heading level is skipped; a mode tab clicked never scrolls the tab bar off screen.
import { expect, type Page, test } from '@playwright/test';
import {
  axeViolations,
  downloadOf,
  insideViewport,
  PROMPT,
  runToEnd,
  setInputs,
  shoot,
  textOverlaps,
  textSizes,
  waitForModel,
  watchErrors,
} from './helpers';

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

/** The headings axe's heading-order rule flags (a level skipped after the one before), as their outline. */
async function headingOrder(page: Page): Promise<string[]> {
  await axeViolations(page); // loads axe into the page
  return page.evaluate(async () => {
    type Result = { violations: { nodes: { html: string }[] }[] };
    const axe = (window as unknown as { axe: { run(c: Document, o: unknown): Promise<Result> } }).axe;
    const r = await axe.run(document, { runOnly: ['heading-order'] });
    return r.violations.flatMap((v) => v.nodes.map((n) => n.html.slice(0, 120)));
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
  test(`at ${size.width}×${size.height}: the workspace — modes, the rail, answers in view, keyboard, axe on each mode`, async ({
    page,
  }, testInfo) => {
    const errors = watchErrors(page);
    await page.setViewportSize(size);
    await page.goto('./');
    await waitForModel(page);
    const w = size.width;
    // Explore: the tabs, the prompt and Run on the first screen; nothing sideways.
    await expect(page.getByTestId('mode-explore')).toHaveAttribute('aria-pressed', 'true');
    for (const id of ['mode-explore', 'mode-classroom', 'mode-kernel', 'prompt', 'run', 'to-scenarios'])
      expect(await onScreen(page, id), `${id} is on screen at ${w}×${size.height}`).toBe(true);
    expect(await sidewaysScroll(page)).toBeLessThanOrEqual(0);
    await shoot(page, testInfo, `first-screen-${w}`, false);
    expect(await axeViolations(page), 'axe: explore').toEqual([]);
    // The skip link is the first Tab stop and lands in the main view.
    await page.keyboard.press('Tab');
    await expect(page.getByTestId('skip-link')).toBeFocused();
    await expect(page.getByTestId('skip-link')).toBeInViewport();
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.closest('#main-view') !== null))
      .toBe(true);
    // A refused run: the message beside Run, in view, and gone once the prompt is fixed.
    await page.getByText('token ids', { exact: true }).click();
    await page.getByLabel('Prompt', { exact: true }).fill('3, 14, 99999');
    await page.getByTestId('run').click();
    const refused = page.getByTestId('run-panel').getByRole('alert');
    await expect(refused).toHaveAttribute('data-kind', 'input');
    await expect(refused).toContainText('99999');
    await expect(page.getByRole('alert')).toHaveCount(1);
    expect(await insideViewport(refused), 'the refusal is on screen beside Run').toBe(true);
    await page.getByLabel('Prompt', { exact: true }).fill('3, 14, 15');
    await expect(page.getByRole('alert')).toHaveCount(0);
    await page.getByText('text', { exact: true }).click();
    // Large type must not push the page sideways either.
    await page.getByTestId('large-type').click();
    expect(await sidewaysScroll(page)).toBeLessThanOrEqual(0);
    await page.getByTestId('large-type').click();

    // The way into the classroom: its mode, the list in view with the keyboard on it.
    await page.getByTestId('to-scenarios').click();
    await expect(page.getByTestId('mode-classroom')).toHaveAttribute('aria-pressed', 'true');
    await expect(page.getByTestId('scenario-picker')).toBeInViewport();
    await expect(page.locator('[data-testid="scenario-open"]').first()).toBeFocused();
    // Picking a scenario puts its story in view, with the keyboard on it and its Run button on screen.
    await page.locator('[data-testid="scenario-open"][data-id="no-rescale"]').click();
    const stage = page.getByTestId('scenario');
    await expect(stage).toHaveAttribute('data-id', 'no-rescale');
    await expect(stage).toBeFocused();
    expect(await insideViewport(page.getByTestId('run-linked')), 'Run this scenario on screen').toBe(true);
    await expect(page.getByTestId('scenario-picker')).toContainText('field report 000, part 2');
    await shoot(page, testInfo, `scenario-opened-${w}`, false);
    expect(await axeViolations(page), 'axe: classroom').toEqual([]);
    // A scenario link opened from a page scrolled elsewhere: the story comes into view.
    await page.getByTestId('mode-explore').click();
    await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
    await page.evaluate(() => {
      location.hash = '#s=fused-add';
    });
    await expect(page.getByTestId('mode-classroom')).toHaveAttribute('aria-pressed', 'true');
    await expect(stage).toHaveAttribute('data-id', 'fused-add');
    await expect(stage).toBeFocused();
    expect(await insideViewport(stage.locator('h2'))).toBe(true);
    expect(await insideViewport(page.getByTestId('run-linked'))).toBe(true);

    // Your kernel: the editor in the main view; an untouched slot downloads as the shipped file.
    await page.getByTestId('mode-kernel').click();
    await expect(page.getByTestId('kernel-editor')).toBeInViewport();
    await expect(page.getByTestId('kernel-status')).toHaveAttribute('data-state', 'ok', { timeout: 60_000 });
    expect(await sidewaysScroll(page)).toBeLessThanOrEqual(0);
    await shoot(page, testInfo, `kernel-mode-${w}`, false);
    expect(await axeViolations(page), 'axe: your kernel').toEqual([]);
    const dl = page.getByTestId('kernel-download');
    await expect(dl).toHaveAttribute('data-edited', 'no');
    const { name, bytes } = await downloadOf(page, dl);
    expect(name).toMatch(/^[a-z0-9_]+\.wgsl$/);
    expect(name).not.toContain('.custom.');
    expect(bytes.toString('utf8')).not.toContain('Custom ');
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
  await expect(page.getByTestId('verdict')).toBeFocused();
  await expect(page.getByTestId('verdict')).toHaveAttribute('data-layer', '2');
  expect(await axeViolations(page), 'axe: explore with a report').toEqual([]);

  // Readable charts: ticks, legends and labels at 12 px or more; Large type makes them larger; no label
  // over another ("born here" beside "first divergent layer: 2").
  const results = page.getByTestId('results');
  const normal = await textSizes(results);
  expect(normal.tick).toBeGreaterThanOrEqual(12);
  expect(normal.svg).toBeGreaterThanOrEqual(12);
  expect(await textOverlaps(page.getByTestId('error-curve'))).toEqual([]);
  await page.getByTestId('large-type').click();
  const large = await textSizes(results);
  expect(large.tick).toBeGreaterThan(normal.tick);
  expect(large.svg).toBeGreaterThan(normal.svg);
  expect(await textOverlaps(page.getByTestId('error-curve'))).toEqual([]);
  await page.getByTestId('error-curve').scrollIntoViewIfNeeded();
  await shoot(page, testInfo, 'curve-large-type-1280', false);
  await page.getByTestId('large-type').click();
  testInfo.annotations.push({
    type: 'chart text (px)',
    description: `page: ticks ${normal.tick}, other chart text ${normal.svg}, HTML ${normal.html}; Large type: ticks ${large.tick}, other ${large.svg}, HTML ${large.html}`,
  });
  console.log(
    `chart text: ticks ${normal.tick} px, other ${normal.svg} px, HTML ${normal.html} px; Large type ${large.tick} / ${large.svg} / ${large.html} px`,
  );
  // The timing axis speaks one unit (never "0 ns" beside "100 ms").
  const units = await page
    .getByTestId('timing')
    .locator('g.axis')
    .evaluateAll((axes) =>
      axes.map((a) => [
        ...new Set(
          [...a.querySelectorAll('.tick text')]
            .map((t) => /^-?[\d.]+ (ns|µs|ms|s)$/.exec(t.textContent ?? '')?.[1])
            .filter((u) => u !== undefined),
        ),
      ]),
    );
  const timeAxes = units.filter((u) => u.length > 0);
  expect(timeAxes.length).toBeGreaterThan(0);
  for (const u of timeAxes) expect(u, `one unit per timing axis: ${u.join(', ')}`).toHaveLength(1);

  // The keyboard: arrows move between the points, Enter opens the layer's ops (in view, the keyboard on its
  // first op row), arrows move between op rows, Escape closes and gives the point the keyboard back.
  const point = (l: number) => page.locator(`circle[data-testid="curve-point"][data-layer="${l}"]`);
  await point(0).focus();
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await expect(point(2)).toBeFocused();
  await page.keyboard.press('Enter');
  const opened = page.getByTestId('drilldown');
  await expect(opened).toBeInViewport();
  const rows = opened.locator('g.tap-row.compared');
  await expect(rows.first()).toBeFocused();
  await page.keyboard.press('ArrowDown');
  await expect(rows.nth(1)).toBeFocused();
  await page.keyboard.press('Escape');
  await expect(opened).toHaveCount(0);
  await expect(point(2)).toBeFocused();

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
  // The drill-down's headings (its chart, the born layer's op table, the anatomy) keep the page's outline: axe's
  // heading-order (a moderate rule, not in axeViolations' serious and critical) finds no level skipped.
  expect(await headingOrder(page), 'heading levels with the drill-down open').toEqual([]);
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
  await page.getByTestId('mode-classroom').click();
  await page.locator('[data-testid="scenario-open"][data-id="fast-but-wrong"]').click();
  await expect(page.getByTestId('scenario')).toHaveAttribute('data-id', 'fast-but-wrong');
  await expect(page.getByTestId('results-empty')).toBeVisible();
  await expect(page.getByTestId('verdict')).toHaveCount(0);
  await shoot(page, testInfo, 'scenario-cleared-1280', false);
  expect(errors).toEqual([]);
});

test('the mode is kept in the address: a reload or a bookmark opens the same workspace', async ({ page }) => {
  const errors = watchErrors(page);
  await page.goto('./?mode=kernel');
  await expect(page.getByTestId('mode-kernel')).toHaveAttribute('aria-pressed', 'true');
  await page.getByTestId('mode-runs').click();
  await expect(page).toHaveURL(/[?&]mode=runs/);
  await page.reload();
  await expect(page.getByTestId('mode-runs')).toHaveAttribute('aria-pressed', 'true');
  // The first mode is the plain address; an unknown mode opens it.
  await page.getByTestId('mode-explore').click();
  await expect(page).not.toHaveURL(/mode=/);
  await page.goto('./?mode=no-such-mode');
  await expect(page.getByTestId('mode-explore')).toHaveAttribute('aria-pressed', 'true');
  expect(errors).toEqual([]);
});

for (const size of SIZES) {
  test(`at ${size.width}×${size.height}: a mode tab clicked keeps the tab bar on screen`, async ({
    page,
  }, testInfo) => {
    const errors = watchErrors(page);
    await page.setViewportSize(size);
    await page.goto('./');
    await waitForModel(page);
    // Every tab from every other, and again after the page was scrolled a little (the tabs still on screen).
    const order = [
      'classroom',
      'kernel',
      'runs',
      'explore',
      'runs',
      'classroom',
      'explore',
      'kernel',
      'explore',
    ];
    for (const start of [0, 40]) {
      await page.evaluate((y) => window.scrollTo(0, y), start);
      for (const id of order) {
        await page.getByTestId(`mode-${id}`).click();
        await expect(page.getByTestId(`mode-${id}`)).toHaveAttribute('aria-pressed', 'true');
        // Two frames: the tab's scroll of the rail runs in the next one.
        await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
        for (const tab of ['mode-explore', 'mode-classroom', 'mode-kernel', 'mode-runs'])
          expect(await onScreen(page, tab), `${tab} on screen after clicking ${id}`).toBe(true);
      }
    }
    await shoot(page, testInfo, `tabs-after-clicks-${size.width}`, false);
    expect(errors).toEqual([]);
  });
}

/** The elements that scroll sideways inside the page (overflow-x auto or scroll, wider content), by class. */
async function sidewaysInside(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>('body *')]
      .filter((el) => {
        const o = getComputedStyle(el).overflowX;
        return (o === 'auto' || o === 'scroll') && el.scrollWidth > el.clientWidth + 1;
      })
      .map((el) => `${el.tagName.toLowerCase()}.${el.className}`),
  );
}

// A Llama-family run has up to 16 op columns (Qwen3's q/k norms, the gate and up apart): the check grid splits into
// the attention half and the MLP half (the attention half again where it has more than eight columns), and nothing
// scrolls sideways, with Large type too. Hugging Face's own run of
// the Qwen3 fixture (src/model/testdata/llama/qwen3-qknorm: every op recorded).
test('a Llama-family run’s check grid fits at 1280×800 and 1920×1080: nothing scrolls sideways', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  const dir = 'src/model/testdata/llama/qwen3-qknorm';
  await page.setViewportSize(SIZES[0]);
  await page.goto('./?mode=runs');
  await waitForModel(page);
  await page.getByText('Load another model').click();
  await page.getByTestId('model-files').setInputFiles([`${dir}/config.json`, `${dir}/model.safetensors`]);
  await expect(page.getByTestId('model-family')).toHaveText('Llama family (qwen3)', { timeout: 60_000 });
  await page.getByTestId('run-input-A').setInputFiles(`${dir}/run.safetensors`);
  await page.getByTestId('analyze-runs').click();
  await expect(page.getByTestId('runs-verdict')).toHaveText('AGREE', { timeout: 120_000 });
  // Qwen3's attention half (whole layer, ln1, q, k, v, q norm, k norm, rotary + attention, o_proj, add) is split
  // again before its attention core: three tables.
  const halves = page.getByRole('table', { name: /^Local checks of run A/ });
  await expect(halves).toHaveCount(3);
  await expect(halves.nth(0)).toHaveAttribute('data-block', /^attention half/);
  await expect(halves.nth(0).getByRole('columnheader', { name: 'q norm' })).toBeVisible();
  await expect(halves.nth(1).getByRole('columnheader', { name: 'rotary + attention' })).toBeVisible();
  await expect(halves.nth(2)).toHaveAttribute('data-block', 'MLP half');
  await expect(halves.nth(2).getByRole('columnheader', { name: 'SwiGLU' })).toBeVisible();
  // The arrows cross from one block into the next along a layer's row, and back.
  await page.getByTestId('check-A-layers.1.k_norm').focus();
  await page.keyboard.press('ArrowRight');
  await expect(page.getByTestId('check-A-layers.1.q_rot+k_rot+ctx')).toBeFocused();
  await page.keyboard.press('ArrowLeft');
  await expect(page.getByTestId('check-A-layers.1.k_norm')).toBeFocused();
  for (const size of SIZES) {
    await page.setViewportSize(size);
    await halves.nth(2).scrollIntoViewIfNeeded();
    expect(await sidewaysScroll(page), `the page at ${size.width}`).toBeLessThanOrEqual(0);
    expect(await sidewaysInside(page), `inside the page at ${size.width}`).toEqual([]);
    await shoot(page, testInfo, `llama-run-grid-${size.width}`, false);
  }
  // Large type too, at the laptop's width.
  await page.setViewportSize(SIZES[0]);
  await page.getByTestId('large-type').click();
  await halves.nth(0).scrollIntoViewIfNeeded();
  expect(await sidewaysScroll(page), 'the page with Large type').toBeLessThanOrEqual(0);
  expect(await sidewaysInside(page), 'inside the page with Large type').toEqual([]);
  await shoot(page, testInfo, 'llama-run-grid-1280-large', false);
  await page.getByTestId('large-type').click();
  expect(errors).toEqual([]);
});
