// Shared steps of the e2e specs: wait for the GPU and the model, set the run's inputs, run to the end,
// collect page errors, save a download, take screenshots that are attached to the report, and check that a
// scenario's run reproduced its expectation.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { expect, type Locator, type Page, type TestInfo } from '@playwright/test';
import type { Scenario } from '../src/run/scenarios';

export const MODEL_DIR = 'public/models/neox-kjv-bytes';
/** 12 bytes = 12 tokens of the byte-level tokenizer: short, since SwiftShader is a CPU. */
export const PROMPT = 'And God said';
export const RUN_DONE_MS = 180_000;

/** Collects uncaught page errors and console errors so a test can assert there were none. */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  return errors;
}

export async function waitForModel(page: Page): Promise<void> {
  await expect(page.getByTestId('adapter-panel')).toHaveAttribute('data-status', 'ready', {
    timeout: 60_000,
  });
  await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', /ready|error/, {
    timeout: 120_000,
  });
  await expect(page.getByRole('alert')).toHaveCount(0);
  await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'ready');
}

/** The page at 1280x800 with its embedded model ready; the page's errors are collected in the array returned. */
export async function openPage(page: Page): Promise<string[]> {
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('./');
  await waitForModel(page);
  return errors;
}

/** Files picked from disk in place of the loaded model ("Load another model"); the caller waits for what follows. */
export async function pickModelFiles(page: Page, paths: string[]): Promise<void> {
  await page.getByText('Load another model').click();
  await page.getByTestId('model-files').setInputFiles(paths);
}

/** A Llama-family model folder (config.json, model.safetensors) picked from disk, loaded and ready. */
export async function loadLlamaFolder(page: Page, dir: string): Promise<void> {
  await pickModelFiles(page, [join(dir, 'config.json'), join(dir, 'model.safetensors')]);
  await expect(page.getByTestId('model-family')).toHaveAttribute('data-family', 'llama', { timeout: 60_000 });
  await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'ready');
}

export async function setInputs(page: Page, prompt: string, generate: number): Promise<void> {
  await page.getByLabel('Prompt', { exact: true }).fill(prompt);
  await page.getByTestId('generate').fill(String(generate));
}

/** Presses Run and waits for the end; returns the wall time in ms. */
export async function runToEnd(page: Page): Promise<number> {
  const button = page.getByTestId('run');
  await expect(button).toBeEnabled();
  return runBy(page, button, true);
}

/**
 * Clicks a button that starts a run and waits for its end, which must be 'done' (with no alert shown where
 * `noAlert`); returns the wall time in ms.
 */
async function runBy(page: Page, button: Locator, noAlert: boolean): Promise<number> {
  // A run on a tiny model can start and end between two polls: watch for 'running' from before the click.
  await page.evaluate(() => {
    const w = window as unknown as { __runSeen?: boolean };
    w.__runSeen = false;
    new MutationObserver(() => {
      if (document.querySelector('[data-testid="run-status"][data-state="running"]')) w.__runSeen = true;
    }).observe(document.body, { attributes: true, attributeFilter: ['data-state'], subtree: true });
  });
  const t0 = Date.now();
  await button.click();
  const status = page.getByTestId('run-status');
  await expect
    .poll(() => page.evaluate(() => (window as unknown as { __runSeen?: boolean }).__runSeen === true))
    .toBe(true);
  await expect(status).toHaveAttribute('data-state', /done|error|cancelled/, { timeout: RUN_DONE_MS });
  const ms = Date.now() - t0;
  if (noAlert) await expect(page.getByRole('alert')).toHaveCount(0);
  await expect(status).toHaveAttribute('data-state', 'done');
  return ms;
}

/** Clicks a button that downloads a file; returns the file's name and bytes. */
export async function downloadOf(page: Page, button: Locator): Promise<{ name: string; bytes: Buffer }> {
  const [dl] = await Promise.all([page.waitForEvent('download'), button.click()]);
  const path = await dl.path();
  return { name: dl.suggestedFilename(), bytes: readFileSync(path) };
}

export async function shoot(target: Page | Locator, testInfo: TestInfo, name: string, fullPage = true) {
  const path = testInfo.outputPath(`${name}.png`);
  if ('goto' in target) await target.screenshot({ path, fullPage });
  else await target.screenshot({ path });
  await testInfo.attach(name, { path, contentType: 'image/png' });
}

/** A '#r1=' fragment made here, independently of the app's encoder: raw DEFLATE (zlib) of the JSON, base64url. */
export function fragmentOf(payload: unknown): string {
  return `#r1=${deflateRawSync(Buffer.from(JSON.stringify(payload), 'utf8'), { level: 9 }).toString('base64url')}`;
}

/** A '#r1=' fragment of arbitrary bytes (for damaged links). */
export function fragmentOfBytes(bytes: Uint8Array, deflate = true): string {
  const data = deflate ? deflateRawSync(bytes) : Buffer.from(bytes);
  return `#r1=${data.toString('base64url')}`;
}

/** sha256 (hex) of the embedded model's weights. */
export function embeddedSha256(): string {
  return createHash('sha256')
    .update(readFileSync(`${MODEL_DIR}/model.safetensors`))
    .digest('hex');
}

/** Records Content-Security-Policy violations in the page (read them with cspViolations). */
export async function watchCsp(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const w = window as unknown as { __csp: string[] };
    w.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      w.__csp.push(`${e.effectiveDirective}: ${e.blockedURI || 'inline'} ${e.sample}`);
    });
  });
}

export function cspViolations(page: Page): Promise<string[]> {
  return page.evaluate(() => (window as unknown as { __csp?: string[] }).__csp ?? []);
}

/** Runs the opened link's comparison with its "Run this comparison / scenario" button; returns the wall ms. */
export async function runLinked(page: Page): Promise<number> {
  const button = page.getByTestId('run-linked').first();
  await expect(button).toBeEnabled({ timeout: 60_000 });
  return runBy(page, button, false);
}

/**
 * A scenario's run reproduced its own expectation: the verdict's first divergent layer, the kernel bisection
 * blames, and the scenario card's own check. Scenarios that another spec runs to the end are checked there
 * (scenarios.spec.ts runs the rest).
 */
export async function expectScenarioOutcome(page: Page, sc: Scenario): Promise<void> {
  await expect(page.getByTestId('verdict')).toHaveAttribute('data-verdict', sc.expect.verdict);
  await expect(page.getByTestId('verdict')).toHaveAttribute(
    'data-layer',
    String(sc.expect.firstDivergentLayer ?? ''),
  );
  if (sc.expect.kernel)
    await expect(
      page.locator(`[data-testid="bisection-hit"][data-kernel="${sc.expect.kernel}"]`),
    ).toHaveCount(1);
  const d = sc.expect.decode;
  if (d) {
    // The decode steps checked op by op: the path's check diverges, the other agrees, in words under the texts.
    const checks = page.getByTestId('decode-check');
    await expect(checks).toHaveCount(2);
    await expect(checks.and(page.locator(`[data-path="${d.path}"]`))).toHaveAttribute(
      'data-verdict',
      'diverged',
    );
    await expect(checks.and(page.locator(`[data-path="${d.path}"]`))).toContainText(
      `decode step ${d.step} (position`,
    );
    await expect(checks.and(page.locator(':not([data-path="' + d.path + '"])'))).toHaveAttribute(
      'data-verdict',
      'agree',
    );
  }
  const check = page.getByTestId('scenario-check');
  await expect(check).toHaveAttribute('data-match', 'yes');
  await expect(check).toContainText('as expected');
}

/**
 * Serious and critical accessibility violations axe-core finds in the page as it is now (one line each: the
 * rule, its impact and up to three elements). axe is evaluated through the DevTools protocol, which the
 * page's Content-Security-Policy (no inline script) does not block.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  const has = await page.evaluate(() => 'axe' in window);
  if (!has) await page.evaluate(readFileSync(AXE_PATH, 'utf8'));
  return page.evaluate(async () => {
    type Result = { violations: { id: string; impact: string | null; nodes: { target: unknown[] }[] }[] };
    const axe = (window as unknown as { axe: { run(ctx: Document): Promise<Result> } }).axe;
    const r = await axe.run(document);
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map(
        (v) =>
          `${v.id} (${v.impact}): ${v.nodes
            .slice(0, 3)
            .map((n) => n.target.join(' '))
            .join(', ')}`,
      );
  });
}

const AXE_PATH = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/** Font sizes (px) of the text inside a locator: the smallest SVG tick, the smallest other SVG text, the smallest HTML text. */
export function textSizes(
  target: Locator,
): Promise<{ tick: number; svg: number; html: number; smallest: string }> {
  return target.evaluate((root) => {
    const px = (e: Element) => Number.parseFloat(getComputedStyle(e).fontSize);
    const visible = (e: Element) => {
      const r = e.getBoundingClientRect();
      return r.width > 1 && r.height > 1 && getComputedStyle(e).visibility !== 'hidden';
    };
    const min = (xs: number[]) => (xs.length ? Math.min(...xs) : Number.POSITIVE_INFINITY);
    const texts = [...root.querySelectorAll('svg text')].filter((t) => visible(t) && t.textContent?.trim());
    const ticks = texts.filter((t) => t.closest('.tick'));
    const others = texts.filter((t) => !t.closest('.tick'));
    const html: number[] = [];
    let smallest = '';
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      if (!el || el.closest('svg') || !n.textContent?.trim() || !visible(el)) continue;
      if (el.closest('.sr-only, [hidden], .tooltip')) continue;
      if (px(el) < min(html))
        smallest = `${el.tagName.toLowerCase()}.${el.className} “${n.textContent.trim().slice(0, 30)}”`;
      html.push(px(el));
    }
    for (const t of [...ticks, ...others])
      if (px(t) < min(html)) smallest = `svg text “${t.textContent?.slice(0, 30)}”`;
    return { tick: min(ticks.map(px)), svg: min(others.map(px)), html: min(html), smallest };
  });
}

/**
 * Pairs of text that overlap inside a locator (each line box of HTML text, each SVG text element), as
 * "a / b" with both texts; empty when none does.
 */
export function textOverlaps(target: Locator): Promise<string[]> {
  return target.evaluate((root) => {
    type Box = { text: string; r: DOMRect };
    const boxes: Box[] = [];
    const seenSvg = new Set<Element>();
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      const text = n.textContent?.trim() ?? '';
      if (!el || !text || el.closest('.sr-only, [hidden], .tooltip')) continue;
      const svgText = el.closest('text');
      if (svgText) {
        if (seenSvg.has(svgText)) continue;
        seenSvg.add(svgText);
        boxes.push({ text: svgText.textContent ?? '', r: svgText.getBoundingClientRect() });
        continue;
      }
      const range = document.createRange();
      range.selectNodeContents(n);
      for (const r of range.getClientRects()) if (r.width > 1 && r.height > 1) boxes.push({ text, r });
    }
    const out: string[] = [];
    const slack = 1; // touching line boxes are not an overlap
    for (let i = 0; i < boxes.length; i++)
      for (let j = i + 1; j < boxes.length; j++) {
        const a = boxes[i].r;
        const b = boxes[j].r;
        const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (w > slack && h > slack) out.push(`${boxes[i].text.slice(0, 40)} / ${boxes[j].text.slice(0, 40)}`);
      }
    return out;
  });
}

/** Whether an element lies wholly inside the viewport as the page (and its scrolling parents) are now. */
export function insideViewport(target: Locator): Promise<boolean> {
  return target.evaluate((el) => {
    const r = el.getBoundingClientRect();
    return r.top >= 0 && r.left >= 0 && r.bottom <= window.innerHeight && r.right <= window.innerWidth;
  });
}

/**
 * The texts of a chart's <svg> drawn (partly) outside it — cut off at its edge — and the svg itself where it spills
 * out of its chart's body; empty when every label is whole.
 */
export function clippedTexts(svg: Locator): Promise<string[]> {
  return svg.evaluate((el) => {
    const box = el.getBoundingClientRect();
    const out: string[] = [];
    const slack = 0.5;
    const body = el.closest('.chart-body')?.getBoundingClientRect();
    if (body && (box.left < body.left - slack || box.right > body.right + slack))
      out.push(`the svg (${box.left}–${box.right}) outside its chart (${body.left}–${body.right})`);
    for (const t of el.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (!t.textContent?.trim() || r.width === 0) continue;
      if (
        r.left < box.left - slack ||
        r.right > box.right + slack ||
        r.top < box.top - slack ||
        r.bottom > box.bottom + slack
      )
        out.push(
          `“${t.textContent.trim().slice(0, 40)}” at ${Math.round(r.left)}–${Math.round(r.right)}, svg ${Math.round(box.left)}–${Math.round(box.right)}`,
        );
    }
    return out;
  });
}
