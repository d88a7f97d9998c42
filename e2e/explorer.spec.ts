// The explorer in a real browser (Chromium, WebGPU on SwiftShader, the built site): a default run draws one
// curve point per layer and agrees; a planted fault puts the divergence marker where the analysis says;
// the drill-down and histogram open by keyboard; every export downloads (the JSON validates against
// docs/report.schema.json); Cancel stops a run and the GPU memory comes back; a lost device is restarted
// with the settings kept; models load from files (picker and drag-and-drop) and from a URL; the decode-only teaching
// fault gives the verdict 'generation diverged' with the decode's op and its cause named in view, no checkbox ticked.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { expect, type Page, test } from '@playwright/test';
import Ajv2020 from 'ajv/dist/2020.js';
import {
  downloadOf,
  MODEL_DIR,
  PROMPT,
  runToEnd,
  setInputs,
  shoot,
  waitForModel,
  watchErrors,
} from './helpers';

const schema: unknown = JSON.parse(readFileSync('docs/report.schema.json', 'utf8'));
const validateReport = new Ajv2020({ allErrors: true, strict: true }).compile(schema as object);

interface ExportedReport {
  spec: { prompt: { text?: string }; faults: { id: string; fromLayer?: number }[] };
  layers: { layer: number; diverged: boolean }[];
  firstDivergentLayer: number | null;
  verdict: string;
  taps: { layer: number | null; status: string }[];
  bisection: { kernel: string; reproduces: boolean; firstLayer: number | null }[] | null;
  generation: {
    reference: { ids: number[] };
    fused: { ids: number[] };
    firstDifference: number | null;
    parting: { step: number; kind: string } | null;
  } | null;
}

/** The Node engine's greedy continuation on the reference path (Dawn on SwiftShader), from the CLI. */
function nodeGenerate(prompt: string, n: number): { promptIds: number[]; newIds: number[] } {
  const out = execFileSync(
    'npx',
    [
      'tsx',
      'src/cli/main.ts',
      'generate',
      '--model',
      MODEL_DIR,
      '--prompt',
      prompt,
      '--n',
      String(n),
      '--json',
    ],
    {
      encoding: 'utf8',
      env: { ...process.env, VK_ICD_FILENAMES: '/usr/lib/chromium/vk_swiftshader_icd.json' },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 120_000,
    },
  );
  return JSON.parse(out.trim().split('\n').at(-1) ?? '');
}

/** Downloads the report, checks it against the schema, returns it parsed. */
async function exportReport(page: Page): Promise<{ report: ExportedReport; text: string; name: string }> {
  const { name, bytes } = await downloadOf(page, page.getByTestId('export-json'));
  const text = bytes.toString('utf8');
  const json: unknown = JSON.parse(text); // fails on a bare Infinity or NaN
  const ok = validateReport(json);
  expect(validateReport.errors ?? []).toEqual([]);
  expect(ok).toBe(true);
  return { report: json as ExportedReport, text, name };
}

async function chooseFault(page: Page, id: string, fromLayer: number): Promise<void> {
  await page.getByTestId('fault').selectOption(id);
  await expect(page.getByTestId('fault-info')).toBeVisible();
  await page.getByTestId('fault-layer-auto').uncheck();
  await page.getByTestId('fault-layer').fill(String(fromLayer));
}

test('the default run: a point per layer, agreement, keyboard drill-down, histogram, timing, exports, themes', async ({
  page,
}, testInfo) => {
  const t0 = Date.now();
  const want = nodeGenerate(PROMPT, 4);
  const cliMs = Date.now() - t0;
  const errors = watchErrors(page);
  await page.goto('./');
  await waitForModel(page);
  await setInputs(page, PROMPT, 4);
  const runMs = await runToEnd(page);

  // (a) the curve: one point per layer, no divergence, hence no marker.
  await expect(page.getByTestId('verdict')).toHaveAttribute('data-verdict', 'agree');
  const points = page.getByTestId('curve-point');
  await expect(points).toHaveCount(4);
  expect(await points.evaluateAll((els) => els.map((e) => e.getAttribute('data-layer')))).toEqual([
    '0',
    '1',
    '2',
    '3',
  ]);
  await expect(page.getByTestId('divergence-marker')).toHaveCount(0);
  await expect(page.getByTestId('bisection')).toContainText('Bisection not run');
  await expect(page.getByTestId('determinism')).toHaveAttribute('data-identical', 'yes');
  // (b) the heatmap: layers × tokens.
  await expect(page.getByTestId('heatmap').locator('rect.cell')).toHaveCount(4 * PROMPT.length);
  // (c) drill-down by keyboard: focus layer 1's point, press Enter.
  await points.nth(1).focus();
  await page.keyboard.press('Enter');
  const drill = page.getByTestId('drilldown');
  await expect(drill).toBeVisible();
  await expect(drill.getByRole('heading')).toHaveText('Layer 1: error per op');
  await expect(points.nth(1)).toHaveAttribute('aria-pressed', 'true');
  // The opened drill-down has the keyboard (its first op row) and is in view.
  await expect(drill.locator('g.tap-row.compared').first()).toBeFocused();
  await expect(drill).toBeInViewport();
  const { report, text } = await exportReport(page);
  const layerTaps = report.taps.filter((t) => t.layer === 1);
  await expect(drill.getByTestId('tap-row')).toHaveCount(layerTaps.length);
  const away = layerTaps.filter((t) => t.status === 'fused-away').length;
  expect(away).toBeGreaterThan(0);
  await expect(drill.locator('[data-testid="tap-row"][data-status="fused-away"]')).toHaveCount(away);
  await expect(drill.locator('text.fused-away-label')).toHaveCount(away);
  await expect(drill.locator('text.fused-away-label').first()).toHaveText('fused away');
  // (d) histogram of a compared tap, chosen with Space.
  const tap = drill.locator('[data-testid="tap-row"][data-status="compared"]').first();
  const tapName = await tap.getAttribute('data-tap');
  await tap.focus();
  await page.keyboard.press('Space');
  await expect(page.getByTestId('histogram').getByRole('heading')).toHaveText(`Element errors: ${tapName}`);
  // (e) timing: SwiftShader has timestamp queries.
  await expect(page.getByTestId('timing-summary')).toBeVisible();
  await expect(page.getByTestId('speedup')).toHaveText(/^\d+\.\d\d× /);
  await expect(page.getByTestId('timing-layers').locator('rect.bar')).toHaveCount(2 * 4 + 2);
  // Generated text: both paths side by side; the reference path equals the Node engine's.
  expect(report.generation?.reference.ids).toEqual(want.newIds);
  await expect(page.getByTestId('gen-reference')).toHaveAttribute('data-ids', want.newIds.join(','));

  // Exports: the report JSON (validated above), the CSV, the curve as SVG and PNG.
  expect(report.layers).toHaveLength(4);
  expect(report.spec.prompt.text).toBe(PROMPT);
  expect(text).not.toMatch(/:\s*(-?Infinity|NaN)\b/); // non-finite numbers only ever as strings
  const csv = (await downloadOf(page, page.getByTestId('export-csv'))).bytes.toString('utf8');
  const all = csv.trimEnd().split('\r\n');
  // The run travels with the table: '#' comment lines above the header.
  const comments = all.filter((l) => l.startsWith('# '));
  expect(comments.join('\n')).toContain(`# Prompt: ${PROMPT}`);
  expect(comments.join('\n')).toMatch(/# Adapter: .*\n# Date: \d{4}-/);
  const lines = all.filter((l) => !l.startsWith('#'));
  expect(lines).toHaveLength(5);
  expect(lines[0]).toMatch(/^layer,diverged,born,ratio,localRatio,propagated\.maxAbs,/);
  expect(lines[2].split(',')[0]).toBe('1');
  const curve = page.getByTestId('error-curve');
  const svg = await downloadOf(page, curve.getByRole('button', { name: 'Download Error per layer as SVG' }));
  expect(svg.name).toMatch(/^divergence-neox-kjv-bytes-.*-error-curve\.svg$/);
  const svgText = svg.bytes.toString('utf8');
  expect(svgText).toContain('xmlns="http://www.w3.org/2000/svg"');
  expect(svgText).toContain('>Error per layer</text>'); // the title and the run above the chart
  expect(svgText).toContain(`Prompt: ${PROMPT}`);
  expect(svgText).toContain('Fused kernels: all 6');
  expect(svgText.match(/data-testid="curve-point"/g)).toHaveLength(4);
  expect(svgText).toMatch(/ stroke="(rgb|#)[^"]+"/); // computed styles written as presentation attributes
  expect(svgText).not.toContain('style="'); // which the page's CSP would block
  expect(svgText).not.toContain('var(--');
  const parsed = await page.evaluate((s) => {
    const doc = new DOMParser().parseFromString(s, 'image/svg+xml');
    return {
      error: doc.querySelector('parsererror')?.textContent ?? null,
      root: doc.documentElement.nodeName,
    };
  }, svgText);
  expect(parsed).toEqual({ error: null, root: 'svg' });
  const png = await downloadOf(page, curve.getByRole('button', { name: 'Download Error per layer as PNG' }));
  expect(png.name).toMatch(/-error-curve\.png$/);
  expect(png.bytes.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
  expect(png.bytes.length).toBeGreaterThan(5000);
  const pngPath = testInfo.outputPath('exported-curve.png');
  writeFileSync(pngPath, png.bytes);
  await testInfo.attach('exported-curve', { path: pngPath, contentType: 'image/png' });

  await shoot(page, testInfo, 'default-run');
  await shoot(curve, testInfo, 'default-curve');
  // Another metric in the charts (the verdict keeps its own): SQNR, drawn so that up is still worse.
  await page.getByTestId('view-metric').selectOption('sqnrDb');
  await expect(curve.locator('text.axis-label').nth(1)).toHaveText('SQNR (dB, up = more error)');
  await expect(points).toHaveCount(4);
  await expect(curve.locator('.axis text').filter({ hasText: / dB$/ }).first()).toBeVisible();
  await shoot(curve, testInfo, 'default-curve-sqnr');
  await page.getByTestId('view-metric').selectOption('relL2');
  // Themes and large type.
  await page.getByTestId('theme').selectOption('dark');
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  const bg = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  expect(bg).toBe('rgb(17, 20, 24)');
  await page.getByTestId('large-type').click();
  await expect(page.locator('html')).toHaveAttribute('data-large', 'yes');
  await shoot(page, testInfo, 'default-run-dark-large', false);
  await page.getByTestId('theme').selectOption('light');
  await expect(page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)).resolves.toBe(
    'rgb(246, 247, 249)',
  );
  expect(errors).toEqual([]);
  console.log(`timing: CLI generate ${cliMs} ms; default run in the page ${runMs} ms`);
});

test('a planted fault (GPT-J rotary from layer 2) puts the divergence marker where the analysis says', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  const prompt = '<b>In the</b>'; // 12 tokens, and HTML that must stay text
  const dialogs: string[] = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  await page.goto('./');
  await waitForModel(page);
  await setInputs(page, prompt, 4);
  await chooseFault(page, 'gptj_rotary', 2);
  await expect(page.getByTestId('fault-info')).toContainText('GPT-J way');
  await expect(page.getByTestId('fault-info')).toContainText('Field report:');
  // A fault whose kernel is off cannot run, and says why.
  await page.getByTestId('fused-qkv_rotary').uncheck();
  await expect(page.getByTestId('fault-blocked')).toContainText('switched off');
  await expect(page.getByTestId('run')).toBeDisabled();
  await expect(page.getByTestId('fault').locator('option[value="gptj_rotary"]')).toBeEnabled(); // still chosen
  await expect(page.getByTestId('fault').locator('option[value="fp16_accumulation"]')).toBeEnabled();
  // Another kernel off: its faults are disabled in the picker, with a note.
  await page.getByTestId('fused-gemm').uncheck();
  const tile = page.getByTestId('fault').locator('option[value="tile_offset"]');
  await expect(tile).toBeDisabled();
  await expect(tile).toContainText('(needs “Tiled GEMM (dense, LM head)” on)');
  await page.getByTestId('fused-gemm').check();
  await expect(tile).toBeEnabled();
  // Switch it back on with the keyboard (Enter on the switch).
  await page.getByTestId('fused-qkv_rotary').focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('fused-qkv_rotary')).toBeChecked();
  await expect(page.getByTestId('fault-blocked')).toHaveCount(0);
  const runMs = await runToEnd(page);

  const { report } = await exportReport(page);
  expect(report.spec.faults).toEqual([{ id: 'gptj_rotary', fromLayer: 2 }]);
  expect(report.firstDivergentLayer).toBe(2);
  const marker = page.getByTestId('divergence-marker');
  await expect(marker).toHaveCount(1);
  await expect(marker).toHaveAttribute('data-layer', String(report.firstDivergentLayer));
  await expect(marker).toContainText('first divergent layer: 2');
  await expect(page.getByTestId('curve-point')).toHaveCount(4);
  const diverged = await page
    .getByTestId('curve-point')
    .evaluateAll((els) => els.map((e) => e.getAttribute('data-diverged') === 'yes'));
  expect(diverged).toEqual(report.layers.map((l) => l.diverged));
  await expect(page.getByTestId('verdict')).toHaveAttribute('data-verdict', 'diverged');
  await expect(page.getByTestId('verdict')).toContainText('Diverged at layer 2');
  await expect(page.getByTestId('bisection')).toContainText(
    'Divergence reproduced by qkv_rotary from layer 2',
  );
  await expect(page.getByTestId('planted')).toContainText('GPT-J rotary convention from layer 2');
  // The generated texts: side by side, the first differing token highlighted in both.
  const gen = report.generation;
  expect(gen).not.toBeNull();
  if (gen && gen.firstDifference !== null) {
    await expect(page.getByTestId('gen-reference').getByTestId('first-diff')).toHaveCount(1);
    await expect(page.getByTestId('gen-fused').getByTestId('first-diff')).toHaveCount(1);
    // Why they part, beside the texts: the kind the report gives, at its step.
    expect(gen.parting?.step).toBe(gen.firstDifference);
    const parting = page.getByTestId('generation-parting');
    await expect(parting).toHaveAttribute('data-kind', gen.parting!.kind);
    await expect(parting).toContainText(`The texts part at generated token ${gen.firstDifference + 1}`);
  } else expect(gen?.parting).toBeNull();
  // The HTML prompt stayed text.
  await expect(page.getByTestId('generation-prompt')).toHaveText(prompt);
  await expect(page.locator('#root b')).toHaveCount(0);
  expect(dialogs).toEqual([]);
  // Open the divergent layer: fused-away taps are labelled as such.
  await page.locator('[data-testid="curve-point"][data-layer="2"]').click();
  await expect(page.getByTestId('drilldown').getByRole('heading')).toHaveText('Layer 2: error per op');
  await expect(page.getByTestId('drilldown-summary')).toContainText('born in this layer');
  await page.locator('[data-testid="tap-row"][data-tap="layers.2.k"]').click();
  await expect(page.getByTestId('histogram').getByRole('heading')).toHaveText('Element errors: layers.2.k');
  const heights = await page
    .getByTestId('histogram')
    .locator('[data-testid="hist-bar"]')
    .evaluateAll((els) => els.map((e) => Number(e.getAttribute('height'))));
  expect(heights.filter((h) => h > 0).length).toBeGreaterThan(3);
  expect(errors).toEqual([]);
  await shoot(page, testInfo, 'fault-run');
  await shoot(page.getByTestId('error-curve'), testInfo, 'fault-curve');
  await shoot(page.getByTestId('drilldown'), testInfo, 'fault-drilldown');
  console.log(`timing: fault run in the page ${runMs} ms`);
});

test('the decode-only teaching fault in Explore: the prompt agrees, the verdict is not AGREE, the op is named', async ({
  page,
}, testInfo) => {
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('./');
  await waitForModel(page);
  await setInputs(page, 'In the beginning', 3);
  await chooseFault(page, 'decode_rotary', 2);
  // No checkbox ticked: the decode check starts by itself where the text diverges.
  await expect(page.getByTestId('check-decode')).not.toBeChecked();
  await runToEnd(page);
  const verdict = page.getByTestId('verdict');
  await expect(verdict).toHaveAttribute('data-verdict', 'generation-diverged');
  await expect(verdict).toHaveAttribute('data-layer', '');
  await expect(verdict).toBeInViewport();
  await expect(page.getByTestId('verdict-generation')).toContainText(
    'born at decode step 1 (position 16), layer 2, ',
  );
  // The decode finding under the verdict, in view with it, naming the op on the fused path.
  const fused = page.locator(
    '[data-testid="generation-verdict"] [data-testid="decode-check"][data-path="fused"]',
  );
  await expect(fused).toHaveAttribute('data-verdict', 'diverged');
  await expect(fused).toContainText('decode step 1 (position 16), layer 2: the error is born at ');
  // Its cause, named at that op on the decode's rows, closes the finding and the one story in the verdict.
  await expect(fused).toContainText('; probable cause: ');
  await expect(fused).toContainText(
    'from decode step 1 (position 16) on rotated as position 0 [rotary-offset]',
  );
  await expect(page.getByTestId('verdict-generation')).toContainText('rotated as position 0 [rotary-offset]');
  await expect(page.getByTestId('generation-verdict')).toBeInViewport();
  const { report } = await exportReport(page);
  expect(report.verdict).toBe('generation-diverged');
  expect(report.firstDivergentLayer).toBeNull();
  expect(errors).toEqual([]);
  await shoot(page, testInfo, 'decode-fault-verdict-1280', false);
});

test('Cancel stops a run mid-way and the GPU memory in use goes back to 0', async ({ page }, testInfo) => {
  const errors = watchErrors(page);
  await page.goto('./');
  await waitForModel(page);
  await setInputs(page, PROMPT, 64);
  const mem = page.getByTestId('gpu-memory');
  await expect(mem).toHaveAttribute('data-bytes-in-use', '0');
  await page.getByTestId('run').click();
  const status = page.getByTestId('run-status');
  await expect(status).toHaveAttribute('data-state', 'running');
  // Let it get deep into the analysis (greedy generation on both paths: the longest phase), then check
  // that the pool hands out buffers while a pass runs.
  await expect(page.getByTestId('run-phase')).toHaveAttribute('data-phase', 'generation', {
    timeout: 120_000,
  });
  await expect
    .poll(async () => Number(await mem.getAttribute('data-bytes-in-use')), {
      timeout: 60_000,
      intervals: [100],
    })
    .toBeGreaterThan(0);
  const phase = await page.getByTestId('run-phase').getAttribute('data-phase');
  await shoot(page, testInfo, 'cancel-running');
  const t0 = Date.now();
  await page.getByTestId('cancel').click();
  await expect(status).toHaveAttribute('data-state', 'cancelled', { timeout: 60_000 });
  const cancelMs = Date.now() - t0;
  await expect(status).toContainText('Cancelled');
  await expect(mem).toHaveAttribute('data-bytes-in-use', '0');
  await expect(mem).toContainText('GPU memory in use: 0 B');
  await expect(page.getByRole('alert')).toHaveCount(0);
  // The analysis shown before the cancel stays, marked incomplete (no exports of half a report).
  await expect(page.getByTestId('incomplete')).toContainText('generation not run');
  await expect(page.getByTestId('export-json')).toHaveCount(0);
  await expect(page.getByTestId('run')).toBeEnabled();
  expect(errors).toEqual([]);
  await shoot(page, testInfo, 'cancelled');
  console.log(`timing: cancelled during '${phase}', stopped after ${cancelMs} ms`);
});

test('a lost GPU device shows a message and one click restarts it with the settings kept', async ({
  page,
}, testInfo) => {
  await page.goto('./?debug');
  await waitForModel(page);
  await setInputs(page, 'keep this prompt', 3);
  await page.getByTestId('k').fill('25');
  await page.getByTestId('fault').selectOption('gelu_relu');
  await page.getByTestId('lose-device').click();
  const alert = page.getByRole('alert');
  await expect(alert).toHaveAttribute('data-kind', 'device-lost', { timeout: 30_000 });
  await expect(alert).toContainText('The GPU device was lost');
  await expect(page.getByTestId('run')).toBeDisabled();
  await shoot(page, testInfo, 'device-lost');
  await page.getByTestId('retry').click();
  await waitForModel(page);
  await expect(page.getByLabel('Prompt', { exact: true })).toHaveValue('keep this prompt');
  await expect(page.getByTestId('generate')).toHaveValue('3');
  await expect(page.getByTestId('k')).toHaveValue('25');
  await expect(page.getByTestId('fault')).toHaveValue('gelu_relu');
  await expect(page.getByTestId('run')).toBeEnabled();
  await expect(page.getByTestId('gpu-memory')).toHaveAttribute('data-bytes-in-use', '0');
});

test('models load from files (picker and drag-and-drop) and from a URL', async ({ page }, testInfo) => {
  const errors = watchErrors(page);
  await page.goto('./');
  await waitForModel(page);
  const sha = await page.getByTestId('model-panel').locator('dd.mono').getAttribute('title');
  expect(sha).toMatch(/^[0-9a-f]{64}$/);
  await page.getByText('Load another model').click();
  // Picker.
  await page
    .getByTestId('model-files')
    .setInputFiles(['config.json', 'model.safetensors', 'tokenizer.json'].map((f) => `${MODEL_DIR}/${f}`));
  await expect(page.getByTestId('model-source')).toHaveAttribute('data-kind', 'files', { timeout: 60_000 });
  await waitForModel(page);
  // model.safetensors from no folder: named by its config (no _name_or_path: architecture, layers × width)
  await expect(page.getByTestId('model-name')).toHaveText('GPTNeoXForCausalLM 4 × 256');
  await expect(page.getByTestId('model-panel').locator('dd.mono')).toHaveAttribute('title', sha ?? '');
  // URL (relative to the page).
  await page.getByTestId('model-url').fill('models/neox-kjv-bytes/');
  await page.getByTestId('load-url').click();
  await expect(page.getByTestId('model-source')).toHaveAttribute('data-kind', 'url', { timeout: 60_000 });
  await waitForModel(page);
  await expect(page.getByTestId('model-source')).toContainText('/models/neox-kjv-bytes/');
  // Drag-and-drop of the three files onto the drop zone.
  await page.evaluate(async () => {
    const names = ['config.json', 'model.safetensors', 'tokenizer.json'];
    const files = await Promise.all(
      names.map(async (n) => new File([await (await fetch(`models/neox-kjv-bytes/${n}`)).blob()], n)),
    );
    const dt = new DataTransfer();
    for (const f of files) dt.items.add(f);
    const zone = document.querySelector('[data-testid="dropzone"]');
    zone?.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  });
  await expect(page.getByTestId('model-source')).toHaveAttribute('data-kind', 'files', { timeout: 60_000 });
  await waitForModel(page);
  // Files without weights: one clear error.
  await page.getByTestId('model-files').setInputFiles([`${MODEL_DIR}/config.json`]);
  await expect(page.getByRole('alert')).toContainText('No model.safetensors among the files.');
  // The model already loaded stays loaded.
  await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'ready');
  await expect(page.getByTestId('run')).toBeEnabled();
  expect(errors).toEqual([]);
  await shoot(page, testInfo, 'model-loading');
});
