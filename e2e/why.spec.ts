// Why, not only where, in the page: with a fault planted (Explore at 1280×800, the classroom scenario that plants
// the same fault at 1920×1080) the cause stands beside the verdict, in view after Run, as the exported report says
// it; "What was ruled out" lists every cause tested with the named ones marked; the born layer's drill-down shows
// each op against its floor (the born op marked) and the anatomy heatmap with its sentence; the scenario says the
// cause its run found; the CSV carries the cause line. In the runs mode a faulted run's finding shows its cause
// beside its sentence and its anatomy heatmap. Screenshots at both sizes; axe-core; nothing sideways.
import { join } from 'node:path';
import { expect, type Page, type TestInfo, test } from '@playwright/test';
import {
  axeViolations,
  downloadOf,
  insideViewport,
  PROMPT,
  runToEnd,
  shoot,
  waitForModel,
  watchErrors,
} from './helpers';

interface Tested {
  id: string;
  words: string;
  residual: number;
}
interface ExportedWhy {
  layer: number;
  born: string | null;
  checks: { id: string }[];
  cause: { named: Tested[]; tested: Tested[] } | null;
  anatomy: { sentence: string; heatmap: { rowLabels: string[]; colLabels: string[] } } | null;
  race: unknown;
  sentence: string;
}

async function exportedWhy(page: Page): Promise<ExportedWhy> {
  const { bytes } = await downloadOf(page, page.getByTestId('export-json'));
  const report = JSON.parse(bytes.toString('utf8')) as { why?: ExportedWhy | null };
  expect(report.why, 'the report has a why').toBeTruthy();
  return report.why as ExportedWhy;
}

async function noSideways(page: Page): Promise<void> {
  const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(over, 'no sideways scrolling').toBeLessThanOrEqual(0);
}

/** The page says what the exported report says: the cause, what was ruled out, the born layer's ops, the anatomy. */
async function checkWhy(page: Page, testInfo: TestInfo, tag: string): Promise<ExportedWhy> {
  const cause = page.getByTestId('cause');
  await expect(cause).not.toHaveAttribute('data-state', 'pending');
  // The answer is in view where Run left the keyboard (the verdict), the cause with it.
  expect(await insideViewport(page.getByTestId('verdict')), 'the verdict on screen').toBe(true);
  expect(await insideViewport(cause), 'the cause on screen beside the verdict').toBe(true);
  await shoot(page, testInfo, `why-answer-${tag}`, false);
  const why = await exportedWhy(page);
  await expect(page.getByTestId('why-sentence')).toHaveText(
    why.sentence.replace(/; probable cause: .*$/, '.'),
  );
  const named = why.cause?.named ?? [];
  if (why.race) await expect(cause).toHaveAttribute('data-state', 'race');
  else if (named.length) {
    await expect(cause).toHaveAttribute('data-state', 'named');
    await expect(cause).toHaveAttribute('data-cause', named.map((n) => n.id).join(' '));
    await expect(cause).toContainText(named[0].words);
  } else {
    await expect(cause).toHaveAttribute('data-state', 'unexplained');
    await expect(cause).toContainText('no known cause explains it');
  }
  // What was ruled out: every cause tested, best first, the named ones marked.
  const tested = why.cause?.tested ?? [];
  expect(tested.length).toBeGreaterThan(1);
  await page.getByTestId('ruled-out').locator('summary').click();
  const rows = page.getByTestId('ruled-out').getByTestId('tested-cause');
  await expect(rows).toHaveCount(tested.length);
  expect(await rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-cause')))).toEqual(
    tested.map((t) => t.id),
  );
  await expect(page.locator('[data-testid="tested-cause"][data-named="yes"]')).toHaveCount(named.length);
  // The born layer's drill-down: each op against its floor, the born one marked, and the anatomy.
  await page.getByTestId('why-open').click();
  await expect(page.getByTestId('drilldown').getByRole('heading')).toHaveText(
    `Layer ${why.layer}: error per op`,
  );
  const checks = page.getByTestId('born-check');
  await expect(checks).toHaveCount(why.checks.length);
  const born = page.locator('[data-testid="born-check"][data-born="yes"]');
  await expect(born).toHaveCount(why.born ? 1 : 0);
  if (why.born) await expect(born).toHaveAttribute('data-op', why.born);
  if (why.anatomy) {
    const h = why.anatomy.heatmap;
    await expect(page.getByTestId('anatomy-cell')).toHaveCount(h.rowLabels.length * h.colLabels.length);
    await expect(page.getByTestId('anatomy-sentence')).toHaveText(why.anatomy.sentence);
    await expect(page.getByTestId('anatomy-legend')).toHaveCount(1);
    await page.getByTestId('anatomy').scrollIntoViewIfNeeded();
    await shoot(page, testInfo, `why-drill-${tag}`, false);
  }
  // The CSV says the cause too.
  const csv = (await downloadOf(page, page.getByTestId('export-csv'))).bytes.toString('utf8');
  expect(csv).toContain(`# Why: ${why.sentence}`);
  if (why.cause) expect(csv).toMatch(/^# Cause: /m);
  expect(await axeViolations(page)).toEqual([]);
  await noSideways(page);
  return why;
}

test('Explore at 1280×800: a planted fault, its cause beside the verdict, the anatomy in the drill-down', async ({
  page,
}, testInfo) => {
  test.setTimeout(300_000);
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('./');
  await waitForModel(page);
  await page.getByLabel('Prompt', { exact: true }).fill(PROMPT);
  await page.getByTestId('generate').fill('0');
  await page.getByTestId('fault').selectOption('gelu_relu');
  await page.getByTestId('fault-layer-auto').uncheck();
  await page.getByTestId('fault-layer').fill('1');
  await runToEnd(page);
  const why = await checkWhy(page, testInfo, '1280');
  expect(why.layer).toBe(1);
  await shoot(page, testInfo, 'why-page-1280');
  expect(errors).toEqual([]);
});

test('Classroom at 1920×1080: the scenario says the cause its run found', async ({ page }, testInfo) => {
  test.setTimeout(300_000);
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1920, height: 1080 });
  await page.goto('./#s=fast-but-wrong');
  await waitForModel(page);
  await page.getByTestId('generate').fill('0');
  await runToEnd(page);
  const said = page.getByTestId('scenario-cause');
  await expect(said).toBeVisible();
  const why = await checkWhy(page, testInfo, '1920');
  const named = why.cause?.named ?? [];
  if (named.length) {
    await expect(said).toHaveAttribute('data-cause', named[0].id);
    await expect(said).toContainText(named[0].words);
  } else await expect(said).toContainText('none explains it');
  expect(errors).toEqual([]);
});

const DIR = 'src/model/testdata/causes/parallel-classic';
const MODEL = [join(DIR, 'config.json'), join(DIR, 'model.safetensors')];

for (const [width, height] of [
  [1280, 800],
  [1920, 1080],
] as const) {
  test(`your runs at ${width}×${height}: a faulted run's cause beside its finding, its anatomy as a heatmap`, async ({
    page,
  }, testInfo) => {
    test.setTimeout(300_000);
    const errors = watchErrors(page);
    await page.setViewportSize({ width, height });
    await page.goto('./');
    await waitForModel(page);
    await page.getByText('Load another model').click();
    await page.getByTestId('model-files').setInputFiles(MODEL);
    await expect(page.getByTestId('model-name')).not.toHaveText('neox-kjv-bytes', { timeout: 60_000 });
    await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'ready', {
      timeout: 60_000,
    });
    await page.getByTestId('mode-runs').click();
    await page.getByTestId('run-input-A').setInputFiles(join(DIR, 'clean-cuda.run.safetensors'));
    await page.getByTestId('run-input-B').setInputFiles(join(DIR, 'rows-shifted.L2.fc1.run.safetensors'));
    await page.getByTestId('analyze-runs').click();
    await expect(page.getByTestId('runs-verdict')).toHaveText('DIVERGED', { timeout: 120_000 });
    await expect(page.getByTestId('runs-verdict')).toBeInViewport();
    // The clean run names no cause; the faulted one names the rows shifted, beside its sentence.
    await expect(page.getByTestId('cause-A')).toHaveCount(0);
    const finding = page.getByTestId('finding-B');
    await expect(finding).toContainText('layer 2');
    const cause = page.getByTestId('cause-B');
    await expect(cause).toHaveAttribute('data-state', 'named');
    await expect(cause).toHaveAttribute('data-cause', /\brows-shifted\b/);
    await expect(cause).toContainText('shifted by 1');
    // The clause the sentence ended with is shown once, as the cause.
    expect((await finding.innerText()).match(/probable cause:/g) ?? []).toHaveLength(0);
    // Its anatomy: every cell of the heatmap, its sentence beside it.
    const cells = page.getByTestId('anatomy-B').getByTestId('anatomy-cell');
    expect(await cells.count()).toBeGreaterThan(8);
    await expect(page.getByTestId('anatomy-B-sentence')).toContainText('from row');
    await page.getByTestId('ruled-out-B').locator('summary').click();
    await expect(page.getByTestId('ruled-out-B').locator('[data-named="yes"]')).toHaveCount(1);
    await page.getByTestId('anatomy-B').scrollIntoViewIfNeeded();
    await shoot(page, testInfo, `why-runs-${width}`, false);
    await shoot(page, testInfo, `why-runs-page-${width}`);
    expect(await axeViolations(page)).toEqual([]);
    await noSideways(page);
    expect(errors).toEqual([]);
  });
}
