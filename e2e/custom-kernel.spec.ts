// Bring your own kernel, in Chromium on SwiftShader (the built site): type a syntax error and see it at its
// line, fix it, run the isolated test; plant a bug that passes the isolated test at its shapes but diverges in
// the model, run, read the verdict and the drill-down; copy the link, open it in a fresh context, see the
// diff and the consent step, agree, run. Both exercises from buggy to fixed (alone and in the model). Then a
// custom kernel that never answers (the watchdog) and a lost device with a custom kernel in use: the message,
// a restart, the edited source kept. Each step's wall time on SwiftShader is printed and attached.
import { readFileSync } from 'node:fs';
import { expect, type Page, test } from '@playwright/test';
import { cspViolations, downloadOf, PROMPT, shoot, waitForModel, watchCsp, watchErrors } from './helpers';

const SHIPPED = readFileSync('shaders/fused/layernorm2.wgsl', 'utf8');
const BASE_LINE = 'let base = r * params.d;';
/** 1-based line of `let base = …;` in the shipped dual LayerNorm. */
const LINE = SHIPPED.split('\n').findIndex((l) => l.includes(BASE_LINE)) + 1;
/**
 * A fast path's copy-paste slip: when the row is a whole number of workgroup strides (d % WG == 0) ln1 takes
 * ln2's bias. The isolated test's d (90, 300, 515) is never such a multiple; the embedded model's d = 256 is.
 */
const BUG_FROM = 'y1[base + c] = st(xhat * w1[c] + b1[c]);';
const BUG_TO = 'y1[base + c] = st(xhat * w1[c] + select(b1[c], b2[c], params.d % WG == 0u));';

const timings: Record<string, number> = {};
async function timed<T>(name: string, f: () => Promise<T>): Promise<T> {
  const t0 = Date.now();
  const r = await f();
  timings[name] = Date.now() - t0;
  return r;
}

/** The editor's whole text, as its Download .wgsl button saves it (CodeMirror renders only what is in view). */
async function editorText(page: Page): Promise<string> {
  const { bytes } = await downloadOf(page, page.getByTestId('kernel-download'));
  // An edited kernel is saved under a two-line header (what it replaces, when): the editor's text follows it.
  return bytes.toString('utf8').replace(/^\/\/ Custom .*\n\/\/ Saved .*\n/, '');
}

/** Replaces the first occurrence of `from` in the editor by selecting it with the search-free way: select all, type. */
async function replaceInEditor(page: Page, from: string, to: string): Promise<void> {
  const text = await editorText(page);
  expect(text).toContain(from);
  const code = page.getByTestId('kernel-code');
  await code.click();
  await page.keyboard.press('Control+a');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(text.replace(from, to));
}

async function runAndWait(page: Page): Promise<void> {
  await expect(page.getByTestId('run')).toBeEnabled();
  await page.getByTestId('run').click();
  const status = page.getByTestId('run-status');
  await expect(status).toHaveAttribute('data-state', 'running', { timeout: 120_000 });
  await expect(status).toHaveAttribute('data-state', /done|error|cancelled/, { timeout: 240_000 });
  await expect(status).toHaveAttribute('data-state', 'done');
}

test.afterAll(() => {
  const lines = Object.entries(timings).map(([k, v]) => `  ${k}: ${(v / 1000).toFixed(2)} s`);
  console.log(`custom-kernel step timings (SwiftShader):\n${lines.join('\n')}`);
});

test('write a kernel, test it alone, watch the model, share it', async ({ page, browser }, testInfo) => {
  test.setTimeout(600_000);
  const errors = watchErrors(page);
  await watchCsp(page);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('./');
  await waitForModel(page);
  await page.getByLabel('Prompt', { exact: true }).fill(PROMPT);
  await page.getByTestId('generate').fill('0');

  // Open the editor (the "your kernel" mode): the shipped dual LayerNorm compiles and fits its slot.
  await timed('open editor → shipped kernel checked', async () => {
    await page.getByTestId('mode-kernel').click();
    await expect(page.getByTestId('kernel-status')).toHaveAttribute('data-state', 'ok', { timeout: 60_000 });
  });
  expect(await editorText(page)).toBe(SHIPPED);

  // A syntax error, typed: the missing ';' is reported at its line. (The text is typed whole: long lines
  // wrap, so the cursor cannot be walked to a line with arrow keys.)
  await timed('syntax error typed → shown at its line', async () => {
    await replaceInEditor(page, BASE_LINE, BASE_LINE.slice(0, -1));
    await expect(page.getByTestId('kernel-status')).toHaveAttribute('data-state', 'errors');
  });
  const diag = page.getByTestId('kernel-diagnostic').first();
  const at = Number(await diag.getAttribute('data-line'));
  expect([LINE, LINE + 1]).toContain(at);
  await expect(page.locator('.cm-lintRange-error').first()).toBeVisible();
  await expect(page.getByTestId('kernel-use')).toBeDisabled();
  await expect(page.getByTestId('kernel-test')).toBeDisabled();
  await shoot(page.getByTestId('kernel-editor'), testInfo, 'syntax-error');

  await timed('fixed → checked clean', async () => {
    await replaceInEditor(page, BASE_LINE.slice(0, -1), BASE_LINE);
    await expect(page.getByTestId('kernel-status')).toHaveAttribute('data-state', 'ok');
  });
  expect(await editorText(page)).toBe(SHIPPED);

  // A binding that does not match the slot is refused, naming it.
  await replaceInEditor(
    page,
    'var<storage, read> w1: array<f32>;',
    'var<storage, read_write> w1: array<f32>;',
  );
  await expect(page.getByTestId('kernel-status')).toHaveAttribute('data-state', 'interface');
  await expect(page.getByTestId('kernel-interface').first()).toContainText("binding 2 'w1'");
  await page.getByTestId('kernel-reset').click();
  await expect(page.getByTestId('kernel-status')).toHaveAttribute('data-state', 'ok');

  // The planted bug: passes the isolated test at its shapes.
  await replaceInEditor(page, BUG_FROM, BUG_TO);
  await expect(page.getByTestId('kernel-status')).toHaveAttribute('data-state', 'ok');
  // Long lines wrap: after an edit the editor does not scroll sideways (every line's start stays in view).
  await page.keyboard.type(' ');
  await page.keyboard.press('Backspace');
  expect(
    await page.locator('.cm-scroller').evaluate((el) => [el.scrollLeft, el.scrollWidth - el.clientWidth]),
  ).toEqual([0, 0]);
  // An edited kernel downloads as *.custom.wgsl under a header saying what it replaces.
  const saved = await downloadOf(page, page.getByTestId('kernel-download'));
  expect(saved.name).toBe('layernorm2.custom.wgsl');
  expect(saved.bytes.toString('utf8')).toMatch(
    /^\/\/ Custom .* kernel for the divergence explorer: replaces shaders\//,
  );
  expect(saved.bytes.toString('utf8')).toContain(BUG_TO);
  await timed('isolated test (3 shapes, 6 outputs)', async () => {
    await page.getByTestId('kernel-test').click();
    await expect(page.getByTestId('isolated-result')).toBeVisible({ timeout: 120_000 });
  });
  await expect(page.getByTestId('isolated-result')).toHaveAttribute('data-pass', 'yes');
  await expect(page.getByTestId('isolated-row')).toHaveCount(6);
  await shoot(page.getByTestId('kernel-editor'), testInfo, 'isolated-test');

  // …and diverges in the model.
  await page.getByTestId('kernel-use').check();
  await timed('model run with the custom kernel', () => runAndWait(page));
  const verdict = page.getByTestId('kernel-verdict');
  await expect(verdict).toHaveAttribute('data-state', 'passed-yet-diverged');
  await expect(verdict).toContainText('It passed its isolated test, yet the model diverges');
  await expect(verdict).toContainText('layer 0');
  await expect(page.getByTestId('kernel-verdict-op')).toContainText('ln1');
  await page.getByTestId('kernel-verdict-drill').click();
  await expect(page.getByTestId('drilldown')).toBeVisible();
  await expect(page.getByTestId('drilldown')).toContainText('ln1');
  await expect(page.getByTestId('drilldown')).toBeInViewport();
  await shoot(page, testInfo, 'custom-kernel-run');
  await page.setViewportSize({ width: 1920, height: 1080 });
  await shoot(page, testInfo, 'custom-kernel-run-1920');
  for (const w of [1280, 1920]) {
    await page.setViewportSize({ width: w, height: w === 1280 ? 800 : 1080 });
    const { sideways, wide } = await page.evaluate(() => {
      const el = document.scrollingElement ?? document.documentElement;
      const wide = [...document.querySelectorAll<HTMLElement>('body *')]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
        .slice(0, 5)
        .map(
          (e) => `${e.tagName.toLowerCase()}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`,
        );
      return { sideways: el.scrollWidth - window.innerWidth, wide };
    });
    expect(sideways, `sideways scroll at ${w}: ${wide.join('; ')}`).toBeLessThanOrEqual(0);
  }

  // The link carries the kernel; a fresh context sees the diff and must agree first.
  const link = await page.getByTestId('share-link').inputValue();
  expect(link).toMatch(/#r1=/);
  const ctx2 = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const viewer = await ctx2.newPage();
  const viewerErrors = watchErrors(viewer);
  await viewer.goto(link);
  await waitForModel(viewer);
  const consent = viewer.getByTestId('kernel-consent');
  await expect(consent).toBeVisible();
  // The link opens the "your kernel" mode with the diff in view and the keyboard on it.
  await expect(viewer.getByTestId('mode-kernel')).toHaveAttribute('aria-pressed', 'true');
  await expect(consent).toBeInViewport();
  await expect(consent).toBeFocused();
  await expect(consent.getByTestId('kernel-diff')).toContainText(BUG_TO);
  await expect(consent.getByTestId('kernel-diff')).toContainText(BUG_FROM);
  await expect(viewer.getByTestId('run')).toBeDisabled();
  await expect(viewer.getByTestId('run-linked').first()).toBeDisabled();
  // The kernel waiting for consent is still the link's: the banner does not call it a changed setting.
  await expect(viewer.getByText('Your settings differ from the link')).toHaveCount(0);
  await expect(viewer.getByTestId('spec-custom')).toContainText('layernorm2');
  await expect(viewer.getByTestId('run-status')).not.toHaveAttribute('data-state', 'running');
  await shoot(viewer, testInfo, 'consent');
  await viewer.getByTestId('kernel-consent-accept').click();
  await expect(consent).toHaveCount(0);
  // Agreeing starts nothing by itself.
  await expect(viewer.getByTestId('run-status')).not.toHaveAttribute('data-state', 'running');
  expect(await editorText(viewer)).toContain(BUG_TO);
  await timed('viewer: run of the shared kernel', () => runAndWait(viewer));
  await expect(viewer.getByTestId('kernel-verdict')).toHaveAttribute('data-state', /diverged/);
  await ctx2.close();

  expect(await cspViolations(page)).toEqual([]);
  expect(errors).toEqual([]);
  expect(viewerErrors).toEqual([]);
  await testInfo.attach('step-timings.json', {
    body: JSON.stringify(timings, null, 2),
    contentType: 'application/json',
  });
});

/** Each exercise: its buggy kernel fails alone; the fix (from → to) passes alone and the model agrees. */
const EXERCISE_FIXES = [
  {
    id: 'layernorm-barrier',
    from: 'for (var c = lid; c < params.d; c += WG) { row[c] = x[base + c]; }',
    to: 'for (var c = lid; c < params.d; c += WG) { row[c] = x[base + c]; }\n  workgroupBarrier();',
  },
  { id: 'gelu-tanh', from: 'st(select(gelu_tanh(z)', to: 'st(select(gelu_exact(z)' },
] as const;

for (const ex of EXERCISE_FIXES) {
  test(`exercise ${ex.id}: the buggy kernel fails alone; fixed, it passes and the model agrees`, async ({
    page,
  }, testInfo) => {
    test.setTimeout(400_000);
    await page.goto('./');
    await waitForModel(page);
    await page.getByLabel('Prompt', { exact: true }).fill(PROMPT);
    await page.getByTestId('generate').fill('0');
    await page.getByTestId('mode-kernel').click();
    await page.getByTestId('kernel-start').selectOption(ex.id);
    await expect(page.getByTestId('kernel-exercise')).toContainText('Goal');
    await expect(page.getByTestId('kernel-status')).toHaveAttribute('data-state', 'ok', { timeout: 60_000 });
    await page.getByTestId('kernel-test').click();
    await expect(page.getByTestId('isolated-result')).toHaveAttribute('data-pass', 'no', {
      timeout: 120_000,
    });
    await replaceInEditor(page, ex.from, ex.to);
    await expect(page.getByTestId('kernel-status')).toHaveAttribute('data-state', 'ok');
    await timed(`exercise ${ex.id}: isolated test of the fix`, async () => {
      await page.getByTestId('kernel-test').click();
      await expect(page.getByTestId('isolated-result')).toHaveAttribute('data-pass', 'yes', {
        timeout: 120_000,
      });
    });
    await page.getByTestId('kernel-use').check();
    await timed(`exercise ${ex.id}: model run`, () => runAndWait(page));
    await expect(page.getByTestId('exercise-status')).toHaveAttribute('data-fixed', 'yes');
    await expect(page.getByTestId('kernel-verdict')).toHaveAttribute('data-state', 'agree');
    await expect(page.getByTestId('kernel-verdict')).toContainText('passed its isolated test');
    await shoot(page.getByTestId('kernel-verdict'), testInfo, `exercise-${ex.id}-fixed`);
  });
}

/**
 * A kernel that spins: one invocation of the first row's workgroup runs a long float loop (its trip count
 * read at run time, its result kept alive by a comparison no value passes) before the row is loaded: 1.2e9
 * steps, some 20 s in Chromium's SwiftShader (1.5e8 steps took 2.3 s there), far past the page's 3 s watchdog.
 * It does end, so that the CPU driver's thread is free again some seconds after the page gave up on it.
 */
const SPIN =
  'if (r == 0u && lid == 0u) { var acc = 1.0; for (var i = 0u; i < max(params.d, 1200000000u); i++) { acc = acc * 1.0000001 + 0.5; } if (acc == -1.0) { y1[0] = acc; } }';

test('a custom kernel that never answers, then a lost device: the message, a restart, the source kept', async ({
  page,
}, testInfo) => {
  test.setTimeout(300_000);
  await page.goto('./?debug&watchdog=3');
  await waitForModel(page);
  await page.getByTestId('mode-kernel').click();
  await expect(page.getByTestId('kernel-status')).toHaveAttribute('data-state', 'ok', { timeout: 60_000 });
  const spin = SPIN;
  await replaceInEditor(page, BASE_LINE, `${BASE_LINE}\n  ${spin}`);
  await expect(page.getByTestId('kernel-status')).toHaveAttribute('data-state', 'ok');
  await page.getByTestId('kernel-use').check();
  // Run: the isolated test goes first and never answers within the watchdog's 3 s.
  await timed('hang → device-loss message', async () => {
    await page.getByTestId('run').click();
    // While the isolated test runs, Run waits and says why (a second press cannot start a second run).
    await expect(page.getByTestId('run')).toBeDisabled();
    await expect(page.getByTestId('run-status')).toContainText("Run waits for your kernel's isolated test");
    await expect(page.getByRole('alert')).toHaveCount(0);
    await expect(page.getByTestId('error')).toHaveAttribute('data-kind', 'device-lost', { timeout: 60_000 });
  });
  await expect(page.getByTestId('error')).toContainText('No answer from the GPU for 3 s');
  await expect(page.getByTestId('lost-custom-kernel')).toBeVisible();
  await expect(page.getByTestId('run-status')).not.toHaveAttribute('data-state', 'running');
  await shoot(page, testInfo, 'hang');
  await timed('hang → restarted', async () => {
    await page.getByTestId('retry').click();
    await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'ready', {
      timeout: 120_000,
    });
  });
  await expect(page.getByTestId('error')).toHaveCount(0);
  // The editor still says what became of this source's isolated test.
  await expect(page.getByTestId('kernel-editor').getByRole('alert')).toContainText('No answer from the GPU');
  expect(await editorText(page)).toContain(spin);
  await expect(page.getByTestId('kernel-use')).toBeChecked();
  await expect(page.getByTestId('kernel-status')).toHaveAttribute('data-state', 'ok', { timeout: 60_000 });

  // The shipped LayerNorm again, and the device lost under it (the test hook): the same way back.
  await replaceInEditor(page, spin, '');
  await replaceInEditor(page, BUG_FROM, BUG_TO);
  await expect(page.getByTestId('kernel-status')).toHaveAttribute('data-state', 'ok');
  await page.getByTestId('lose-device').click();
  await expect(page.getByTestId('error')).toHaveAttribute('data-kind', 'device-lost');
  await expect(page.getByTestId('lost-custom-kernel')).toBeVisible();
  await timed('device lost → restarted', async () => {
    await page.getByTestId('retry').click();
    await waitForModel(page);
  });
  expect(await editorText(page)).toContain(BUG_TO);
  await expect(page.getByTestId('kernel-use')).toBeChecked();
  await expect(page.getByTestId('kernel-status')).toHaveAttribute('data-state', 'ok', { timeout: 60_000 });
});
