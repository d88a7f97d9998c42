// Classroom scenarios in a real browser: each scenario's short link, opened in a fresh browser context,
// restores the scenario's settings and — run as it stands — reproduces the scenario's own expectation (its
// first divergent layer, and the fused kernel bisection blames). Generation is the slow part on SwiftShader:
// it is set to 0 before running (the prompts stay as they are), except where the expectation is about the
// decode steps (the decode check's finding, shown under the texts).
import { expect, type Page, test } from '@playwright/test';
import { SCENARIOS, type Scenario } from '../src/run/scenarios';
import { downloadOf, expectScenarioOutcome, runLinked, shoot, waitForModel, watchErrors } from './helpers';

/**
 * Scenarios another spec already opens by link and runs to the end, checking the same outcome there
 * (expectScenarioOutcome): run once in CI, not twice.
 */
const RUN_ELSEWHERE: Record<string, string> = {
  'fused-add': 'classroom.spec.ts (presenter mode)',
  'decode-only': 'classroom.spec.ts (the verdict and the presenter on the generated text)',
  'fast-but-wrong': 'layout-progress.spec.ts (results as they come)',
};

/** The scenario's settings, as the run panel shows them after its link was opened. */
async function expectSettingsOf(page: Page, spec: Scenario['spec']): Promise<void> {
  const prompt = 'text' in spec.prompt ? spec.prompt.text : spec.prompt.tokens.join(', ');
  await expect(page.getByLabel('Prompt', { exact: true })).toHaveValue(prompt);
  await expect(page.getByTestId('generate')).toHaveValue(String(spec.generate));
  await expect(page.getByTestId('precision')).toHaveValue(spec.precision);
  await expect(page.getByTestId('k')).toHaveValue(String(spec.k));
  await expect(page.getByTestId('metric')).toHaveValue(spec.metric);
  await expect(page.getByTestId('check-decode')).toBeChecked({ checked: spec.checkDecode === true });
  const fault = spec.faults[0];
  await expect(page.getByTestId('fault')).toHaveValue(fault?.id ?? '');
  if (fault?.fromLayer !== undefined)
    await expect(page.getByTestId('fault-layer')).toHaveValue(String(fault.fromLayer));
  for (const s of await page.getByTestId('fused-kernels').getByRole('switch').all()) {
    const name = await s.getAttribute('data-name');
    if (spec.fused.includes(name as (typeof spec.fused)[number])) await expect(s).toBeChecked();
    else await expect(s).not.toBeChecked();
  }
}

for (const sc of SCENARIOS.filter((s) => !(s.id in RUN_ELSEWHERE))) {
  test(`scenario link #s=${sc.id} reproduces its expected first divergent layer`, async ({
    page,
  }, testInfo) => {
    const errors = watchErrors(page);
    await page.goto(`./#s=${sc.id}`);
    await waitForModel(page);
    const stage = page.getByTestId('scenario');
    await expect(stage).toHaveAttribute('data-id', sc.id);
    await expect(stage.getByRole('heading', { level: 2 })).toHaveText(sc.title);
    await expect(page.getByTestId('scenario-story')).toHaveText(sc.story);
    await expect(page.getByTestId('scenario-step')).toHaveCount(sc.steps.length);
    await expectSettingsOf(page, sc.spec);
    // Scenario links never run by themselves.
    await expect(page.getByTestId('run-status')).toHaveAttribute('data-state', 'idle');
    if (sc.spec.generate > 0 && !sc.expect.decode) await page.getByTestId('generate').fill('0');
    const ms = await runLinked(page);
    await expectScenarioOutcome(page, sc);
    expect(errors).toEqual([]);
    await shoot(page, testInfo, `scenario-${sc.id}`, false);
    if (sc.expect.decode) {
      await page.getByTestId('decode-checks').scrollIntoViewIfNeeded();
      await shoot(page, testInfo, `scenario-${sc.id}-decode`, false);
    }
    if (sc.id === 'no-rescale') {
      // Presenter mode with a result: the verdict and the step's own view under the step.
      await page.getByTestId('present').click();
      const presenter = page.getByTestId('presenter');
      await expect(page.getByTestId('presenter-verdict')).toHaveAttribute('data-layer', '');
      // This story's steps talk about key tiles and a longer prompt: their view is the layer × token heatmap.
      await expect(presenter.getByTestId('heat-row')).toHaveCount(4);
      await shoot(page, testInfo, 'presenter-with-result', false);
      await page.keyboard.press('Escape');
    }
    const { bytes } = await downloadOf(page, page.getByTestId('export-json'));
    const durations = (JSON.parse(bytes.toString('utf8')) as { durations: Record<string, number> }).durations;
    const phases = Object.entries(durations)
      .map(([k, v]) => `${k} ${Math.round(v)}`)
      .join(', ');
    console.log(`timing: scenario ${sc.id} ran in ${ms} ms (${phases})`);
  });
}

test('presenter mode: the steps one at a time in large type, by keyboard; Escape leaves', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  const sc = SCENARIOS.find((s) => s.id === 'fused-add');
  if (!sc) throw new Error('no fused-add scenario');
  await page.goto('./#s=fused-add');
  await waitForModel(page);
  const present = page.getByTestId('present');
  await present.click();
  const presenter = page.getByTestId('presenter');
  await expect(presenter).toBeVisible();
  await expect(presenter).toBeFocused();
  const step = page.getByTestId('presenter-step');
  const count = page.getByTestId('presenter-count');
  await expect(step).toHaveText(sc.steps[0]);
  await expect(count).toHaveText(`Step 1 of ${sc.steps.length}`);
  // Large type: readable from the back of a room.
  const px = await step.evaluate((el) => Number.parseFloat(getComputedStyle(el).fontSize));
  expect(px).toBeGreaterThanOrEqual(28);
  await expect(page.getByTestId('presenter-prev')).toBeDisabled();
  await shoot(page, testInfo, 'presenter-step-1', false);
  await page.keyboard.press('ArrowRight');
  await expect(step).toHaveText(sc.steps[1]);
  await page.keyboard.press('PageDown');
  await expect(step).toHaveText(sc.steps[2]);
  await expect(count).toHaveText(`Step 3 of ${sc.steps.length}`);
  await page.keyboard.press('ArrowLeft');
  await expect(step).toHaveText(sc.steps[1]);
  await page.keyboard.press('PageUp');
  await expect(step).toHaveText(sc.steps[0]);
  await page.keyboard.press('ArrowLeft'); // stays on the first step
  await expect(step).toHaveAttribute('data-step', '0');
  for (let i = 1; i < sc.steps.length + 2; i++) await page.keyboard.press('ArrowRight');
  await expect(step).toHaveText(sc.steps[sc.steps.length - 1]); // and on the last
  await expect(page.getByTestId('presenter-next')).toBeDisabled();
  await shoot(page, testInfo, 'presenter-last-step', false);
  // The page behind follows the step.
  await page.keyboard.press('Escape');
  await expect(presenter).toHaveCount(0);
  await expect(present).toBeFocused();
  await expect(page.locator('[data-testid="scenario-step"][aria-current="step"]')).toHaveText(
    sc.steps[sc.steps.length - 1],
  );
  // Keys do nothing outside presenter mode, nor while typing.
  await page.getByLabel('Prompt', { exact: true }).focus();
  await page.keyboard.press('ArrowLeft');
  await expect(page.locator('[data-testid="scenario-step"][aria-current="step"]')).toHaveText(
    sc.steps[sc.steps.length - 1],
  );
  // A variant: its own short link, its settings, its expectation (not run here: see the scenario tests).
  const variant = sc.variants?.[0];
  if (!variant) throw new Error('fused-add has no variant');
  await page.locator('[data-testid="scenario-variant"][data-variant="1"]').click();
  await expect(page).toHaveURL(/#s=fused-add\/1$/);
  await expect(page.getByTestId('scenario')).toHaveAttribute('data-variant', '1');
  await expect(page.getByTestId('scenario-variant-label')).toHaveText(`Variant 1: ${variant.label}`);
  await expect(page.getByTestId('fault')).toHaveValue(variant.spec.faults[0].id);
  await expect(page.getByTestId('scenario-expect')).toContainText(variant.expect.note);
  await page.goBack();
  await expect(page.getByTestId('scenario')).toHaveAttribute('data-variant', '');
  await expect(page.getByTestId('fault')).toHaveValue(sc.spec.faults[0].id);
  expect(errors).toEqual([]);
});

test('every scenario is run to its outcome by some spec', () => {
  for (const id of Object.keys(RUN_ELSEWHERE)) expect(SCENARIOS.map((s) => s.id)).toContain(id);
});
