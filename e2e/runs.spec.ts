// Bring your own run, in the page: load the model two PyTorch runs were made with (src/model/testdata/runs/), drop
// a clean run and one whose layer 1 stores its residual add in bf16, see the verdict name run B's layer 1 add; a
// file that is no run is refused beside its picker with the loaded model kept; the link opens in a fresh context,
// names the files by sha256, asks for them, and shows the sharer's finding beside the viewer's own; the viewer's
// runs warm-up runs to its end once (not again when the panel reopens) and its first import shows the sharer's report, made at
// once without it. Runs dropped
// while another model is loaded are named together in one line that goes once theirs is loaded; a weights file is
// named as weights; two files picked on A are A and B; the empty view's dump_run.py link downloads (the page stays);
// the chart's legend is whole at 1280 and 1920 and run B's line is not hidden under B vs A.
import { join } from 'node:path';
import { expect, type Page, test } from '@playwright/test';
import { axeViolations, downloadOf, shoot, waitForModel, watchErrors } from './helpers';

const DIR = 'src/model/testdata/runs/parallel-classic';
const MODEL = [join(DIR, 'config.json'), join(DIR, 'model.safetensors')];
const CLEAN = join(DIR, 'clean-cuda.run.safetensors');
const FAULT = join(DIR, 'residual-bf16.run.safetensors');

async function loadFixtureModel(page: Page) {
  await page.getByText('Load another model').click();
  await page.getByTestId('model-files').setInputFiles(MODEL);
  await expect(page.getByTestId('model-name')).not.toHaveText('neox-kjv-bytes', { timeout: 60_000 });
  await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'ready', { timeout: 60_000 });
}

/** The shown report: the verdict, each finding as written (a link's sharer line taken out), each check's ratio. */
function shownReport(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const own = (el: Element) => {
      const c = el.cloneNode(true) as Element;
      for (const s of c.querySelectorAll('[data-testid^="sharer-"]')) s.remove();
      return c.textContent ?? '';
    };
    return [
      ...[...document.querySelectorAll('[data-testid="runs-verdict"], [data-testid^="finding-"]')].map(own),
      ...[...document.querySelectorAll('[data-testid^="check-"]')].map(
        (b) => b.getAttribute('aria-label') ?? '',
      ),
    ];
  });
}

/** The runs warm-up's line once it has settled: its state and how many were started and finished in this page. */
async function warmupSettled(page: Page) {
  const line = page.getByTestId('runs-warmup');
  await expect(line).not.toHaveAttribute('data-state', 'running', { timeout: 60_000 });
  return {
    state: await line.getAttribute('data-state'),
    started: Number(await line.getAttribute('data-started')),
    finished: Number(await line.getAttribute('data-finished')),
    text: await line.textContent(),
  };
}

async function analyze(page: Page) {
  await page.getByTestId('run-input-A').setInputFiles(CLEAN);
  await page.getByTestId('run-input-B').setInputFiles(FAULT);
  const t0 = Date.now();
  await page.getByTestId('analyze-runs').click();
  await expect(page.getByTestId('runs-verdict')).toHaveText('DIVERGED', { timeout: 120_000 });
  return Date.now() - t0;
}

for (const [width, height] of [
  [1280, 800],
  [1920, 1080],
] as const) {
  test(`your runs at ${width}×${height}: two runs dropped, the verdict at the right layer and op`, async ({
    page,
  }, testInfo) => {
    test.setTimeout(300_000);
    const errors = watchErrors(page);
    await page.setViewportSize({ width, height });
    await page.goto('./');
    await waitForModel(page);
    await loadFixtureModel(page);
    await page.getByTestId('mode-runs').click();
    await expect(page.getByTestId('runs-panel')).toBeInViewport();
    // Not a run: refused beside its picker, in one line; the model stays loaded.
    await page.getByTestId('run-input-A').setInputFiles({
      name: 'notes.safetensors',
      mimeType: 'application/octet-stream',
      buffer: Buffer.from('not a safetensors file at all'),
    });
    await page.getByTestId('analyze-runs').click();
    await expect(page.getByTestId('run-error-A')).toContainText('notes.safetensors:');
    await expect(page.getByTestId('run-error-A')).toBeInViewport();
    await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'ready');
    const ms = await analyze(page);
    testInfo.annotations.push({
      type: 'timing',
      description: `two runs read and analyzed in ${ms} ms (SwiftShader)`,
    });
    console.log(`[runs] ${width}x${height}: two runs read and analyzed in ${ms} ms`);
    await expect(page.getByTestId('run-error-A')).toHaveCount(0);
    await expect(page.getByTestId('finding-A')).toContainText('agrees with the exact forward');
    await expect(page.getByTestId('finding-B')).toContainText(
      'run B (parallel-classic residual-bf16), layer 1: the residual add',
    );
    await expect(page.getByTestId('runs-verdict')).toBeInViewport();
    // The grid: the born cell opens its drill-down, which takes focus; Escape closes it.
    const cell = page.getByTestId('check-B-layers.1.residual');
    await cell.focus();
    await page.keyboard.press('Enter');
    const detail = page.getByTestId('run-check-detail');
    await expect(detail).toBeFocused();
    await expect(detail).toContainText('gpt_neox.layers.1:out');
    await expect(detail).toBeInViewport();
    await shoot(page, testInfo, `runs-${width}`);
    expect(await axeViolations(page), 'axe with the check open').toEqual([]);
    // With the check's drill-down open, no heading level is skipped (axe's heading-order is a moderate rule).
    expect(
      await page.evaluate(async () => {
        type Result = { violations: { nodes: { html: string }[] }[] };
        const axe = (window as unknown as { axe?: { run(c: Document, o: unknown): Promise<Result> } }).axe;
        if (!axe) return ['axe not loaded'];
        const r = await axe.run(document, { runOnly: ['heading-order'] });
        return r.violations.flatMap((v) => v.nodes.map((n) => n.html.slice(0, 120)));
      }),
    ).toEqual([]);
    await page.keyboard.press('Escape');
    await expect(detail).toHaveCount(0);
    expect(await axeViolations(page)).toEqual([]);
    const sideways = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
    expect(sideways).toBe(false);
    expect(errors).toEqual([]);
  });
}

test('a runs link opens in a fresh context: the files asked for by sha256, the sharer beside the viewer', async ({
  browser,
  page,
  baseURL,
}, testInfo) => {
  test.setTimeout(400_000);
  await page.goto('./');
  await waitForModel(page);
  await loadFixtureModel(page);
  await page.getByTestId('mode-runs').click();
  // The sharer's import comes at once: the warm-up, started as the panel opened, is stopped by it and paid by it.
  const coldMs = await analyze(page);
  const cold = await shownReport(page);
  expect((await warmupSettled(page)).finished).toBeLessThanOrEqual(1);
  await page
    .context()
    .grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(baseURL!).origin });
  await page.getByTestId('copy-runs-link').click();
  const link = await page.evaluate(() => navigator.clipboard.readText());
  expect(link).toMatch(/#u1=/);

  const fresh = await browser.newContext();
  const viewer = await fresh.newPage();
  const errors = watchErrors(viewer);
  await viewer.goto(link);
  await waitForModel(viewer);
  await expect(viewer.getByTestId('runs-link-note')).toBeVisible();
  await expect(viewer.getByTestId('runs-link-note')).toContainText('clean-cuda.run.safetensors');
  // Another model is loaded: the link says which it needs.
  await expect(viewer.getByTestId('runs-link-model')).toBeVisible();
  await loadFixtureModel(viewer);
  await viewer.getByTestId('mode-runs').click();
  await expect(viewer.getByTestId('runs-link-model')).toHaveCount(0);
  // The viewer waits for the warm-up (the panel opened on a loaded model): it ran to its end once, its cost named (a
  // warm-up started on the model the link replaced was stopped by the load).
  const warmed = await warmupSettled(viewer);
  expect(warmed, warmed.text ?? '').toMatchObject({ state: 'done', finished: 1 });
  expect(warmed.text).toMatch(
    /^Warm-up, once in this page: [\d,]+ ms on 64 tokens \(start \d+.*why \d+ ms\)\.$/,
  );
  // The wrong file for A is refused by its hash, beside its picker.
  await viewer.getByTestId('run-input-A').setInputFiles(FAULT);
  await viewer.getByTestId('analyze-runs').click();
  await expect(viewer.getByTestId('run-error-A')).toContainText('the link names');
  const warmMs = await analyze(viewer);
  console.log(
    `[runs] the first import: ${coldMs} ms at once, ${warmMs} ms after the warm-up (${warmed.text})`,
  );
  await expect(viewer.getByTestId('finding-B')).toContainText('layer 1: the residual add');
  await expect(viewer.getByTestId('sharer-B')).toContainText('layers.1.residual');
  // The first import after the warm-up shows the report the sharer's import showed without it.
  expect(await shownReport(viewer)).toEqual(cold);
  expect(cold.length).toBeGreaterThan(20);
  // Back to the runs after another mode: the warm-up is not run again.
  await viewer.getByTestId('mode-explore').click();
  await viewer.getByTestId('mode-runs').click();
  expect(await warmupSettled(viewer)).toMatchObject({
    state: 'done',
    started: warmed.started,
    finished: 1,
  });
  await shoot(viewer, testInfo, 'runs-link-viewer');
  expect(errors).toEqual([]);
  await fresh.close();
});

test('runs dropped while another model is loaded: both named in one line, gone once theirs is loaded; a pair on A is A and B', async ({
  page,
}, testInfo) => {
  test.setTimeout(300_000);
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('./');
  await waitForModel(page);
  await page.getByTestId('mode-runs').click();
  // The empty view's dump_run.py link downloads the file and leaves the page (and the files picked) where they are.
  const url = page.url();
  const { name, bytes } = await downloadOf(page, page.getByTestId('results-empty-dumper-link'));
  expect(name).toBe('dump_run.py');
  expect(bytes.toString('utf8')).toContain('def dump_run');
  expect(page.url()).toBe(url);
  // A model's weights picked as a run: said so, beside its picker.
  await page.getByTestId('run-input-A').setInputFiles(MODEL[1]);
  await page.getByTestId('analyze-runs').click();
  await expect(page.getByTestId('run-error-A')).toContainText("model.safetensors: a model's weights");
  await expect(page.getByTestId('run-error-A')).toContainText('not a run');
  // Two files picked together on A: runs A and B, in their order, said in a note (not an error).
  await page.getByTestId('run-input-A').setInputFiles([CLEAN, FAULT]);
  await expect(page.getByTestId('run-note-A')).toContainText(
    'clean-cuda.run.safetensors is run A, residual-bf16.run.safetensors is run B',
  );
  await expect(page.getByTestId('run-error-A')).toHaveCount(0);
  await expect(page.getByTestId('run-drop-B')).toContainText('residual-bf16.run.safetensors');
  // The embedded model is loaded, not theirs: one line for both runs, before any analysis.
  await page.getByTestId('analyze-runs').click();
  const refused = page.getByTestId('run-error-analyze');
  await expect(refused).toHaveText(
    'these runs come from another model (vocabulary 260, this one has 256; hidden size 32, this one has 256): load theirs',
  );
  await expect(page.getByTestId('run-error-A')).toHaveCount(0);
  await expect(page.getByTestId('run-error-B')).toHaveCount(0);
  await shoot(page, testInfo, 'runs-other-model-1280', false);
  // Theirs loaded: the line goes, and the same two files analyze.
  await loadFixtureModel(page);
  await page.getByTestId('mode-runs').click();
  await expect(refused).toHaveCount(0);
  await expect(page.getByTestId('run-drop-A')).toContainText('clean-cuda.run.safetensors');
  await page.getByTestId('analyze-runs').click();
  await expect(page.getByTestId('runs-verdict')).toHaveText('DIVERGED', { timeout: 120_000 });
  expect(errors).toEqual([]);
});

for (const [width, height] of [
  [1280, 800],
  [1920, 1080],
] as const) {
  test(`the runs chart at ${width}×${height}: every legend entry whole and inside the chart; run B's line not hidden by B vs A`, async ({
    page,
  }, testInfo) => {
    test.setTimeout(300_000);
    await page.setViewportSize({ width, height });
    await page.goto('./');
    await waitForModel(page);
    await loadFixtureModel(page);
    await page.getByTestId('mode-runs').click();
    await page.getByTestId('run-input-A').setInputFiles(CLEAN);
    await page.getByTestId('run-input-B').setInputFiles(join(DIR, 'clean-cuda-bf16.run.safetensors'));
    await page.getByTestId('analyze-runs').click();
    await expect(page.getByTestId('runs-verdict')).toBeVisible({ timeout: 120_000 });
    const chart = page.locator('svg:has([data-testid="legend-run-a"])');
    await expect(chart).toHaveCount(1);
    const seen = await chart.evaluate((svg) => {
      const box = svg.getBoundingClientRect();
      return [...svg.querySelectorAll('[data-testid^="legend-"]')].map((g) => {
        const t = g.querySelector('text')!;
        const r = t.getBoundingClientRect();
        return {
          id: g.getAttribute('data-testid'),
          text: t.textContent,
          inside: r.left >= box.left - 0.5 && r.right <= box.right + 0.5 && r.top >= box.top - 0.5,
        };
      });
    });
    expect(seen.map((s) => s.id).sort()).toEqual(['legend-run-a', 'legend-run-b', 'legend-run-ba']);
    for (const s of seen) {
      expect(s.inside, `${s.text} inside the chart`).toBe(true);
      expect(s.text).not.toContain('…');
    }
    expect(seen.find((s) => s.id === 'legend-run-a')?.text).toBe(
      'run A (parallel-classic clean-cuda) vs exact',
    );
    // B against A is drawn first (under run B), dashed, with hollow marks; run B's are filled and on top.
    const order = await chart.evaluate((svg) =>
      [...svg.querySelectorAll('[data-testid^="curve-"]')].map((g) => g.getAttribute('data-testid')),
    );
    expect(order.indexOf('curve-run-ba')).toBeLessThan(order.indexOf('curve-run-b'));
    const style = (id: string) =>
      chart.locator(`[data-testid="${id}"] .run-line`).evaluate((p) => {
        const s = getComputedStyle(p);
        return { dash: s.strokeDasharray, stroke: s.stroke, fill: s.fill };
      });
    const ba = await style('curve-run-ba');
    const b = await style('curve-run-b');
    expect(ba.dash).not.toBe('none');
    expect(b.dash).toBe('none');
    expect(ba.stroke).not.toBe(b.stroke);
    // Lines, not areas.
    expect(ba.fill).toBe('none');
    expect(b.fill).toBe('none');
    await chart.scrollIntoViewIfNeeded();
    await shoot(page, testInfo, `runs-chart-${width}`, false);
  });
}
