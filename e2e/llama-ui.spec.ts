// The first minutes with a Llama-family model, as a person sees them: a committed HF fixture folder
// (src/model/testdata/llama/qwen2-bias: Qwen2, GQA, q/k/v biases, a sliding window) picked from disk. The fused
// kernels are named as the family's (no "LayerNorm" or "GELU" of a kernel that computes RMSNorm or SwiGLU); each of
// the family's teaching faults planted from layer 1 diverges there, its why born at its op with its cause, bisection
// naming the family's kernel; the layer's ops are named by their slot and bracketed under the family's kernels; the
// GPU memory counter counts what the passes hold and gives it back; the kernel editor and the classroom each say in
// one line what they do with a Llama-family model, the model kept; the permalink names the family and runs in another
// browser; a Hub preset (the stand-in Hub) names its family before any download. Screenshots at 1280x800 and
// 1920x1080.
import { join } from 'node:path';
import { expect, type Page, type TestInfo, test } from '@playwright/test';
import { HUB_OVERRIDE_KEY } from '../src/run/hub';
import { runToEnd, setInputs, shoot, waitForModel, watchErrors } from './helpers';
import { type StandIn, startHubServer } from './hub-server';

const DIR = join('src', 'model', 'testdata', 'llama', 'qwen2-bias');
const PROMPT = '1,2,3,4,5,6,7,8';

async function both(page: Page, testInfo: TestInfo, name: string) {
  await page.mouse.move(0, 0); // no tooltip left under the pointer
  await shoot(page, testInfo, `${name}-1280`, false);
  await page.setViewportSize({ width: 1920, height: 1080 });
  await shoot(page, testInfo, `${name}-1920`, false);
  await page.setViewportSize({ width: 1280, height: 800 });
}

/** Each family fault from layer 1: the op its why is born at and the words of its cause (docs/FAMILIES.md). */
const FAULTS = [
  {
    id: 'rms_eps_outside',
    born: 'layers.1.ln2',
    cause: 'eps',
    kernel: 'layernorm',
    title: 'Residual add + RMSNorm',
  },
  {
    id: 'swap_gate_up',
    born: 'layers.1.gate+up+swiglu',
    cause: 'gate and up are swapped',
    kernel: 'linear_gelu',
    title: 'Gate/up GEMM + SwiGLU',
  },
  {
    id: 'kv_interleaved',
    born: 'layers.1.ctx',
    cause: 'KV heads mapped to the wrong query heads',
    kernel: 'flash_attention',
    title: 'Flash attention (grouped-query)',
  },
] as const;

test('a Llama-family model in the page: its kernels named as its own, each fault found, memory counted, one line where it is not taken', async ({
  page,
  browser,
}, testInfo) => {
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('./');
  await waitForModel(page);
  await page.getByText('Load another model').click();
  await page
    .getByTestId('model-files')
    .setInputFiles([join(DIR, 'config.json'), join(DIR, 'model.safetensors')]);
  await expect(page.getByTestId('model-family')).toHaveText('Llama family (qwen2)', { timeout: 60_000 });
  // Said beside the file picker too, in view where the files were picked.
  await expect(page.getByTestId('loader-status')).toHaveText(
    'Loaded Qwen2ForCausalLM 2 × 72: Llama family (qwen2), 2 layers.',
  );
  await expect(page.getByTestId('loader-status')).toBeInViewport();
  await both(page, testInfo, 'loaded');
  const mem = page.getByTestId('gpu-memory');
  await expect(mem).toHaveAttribute('data-bytes-in-use', '0');

  // The switches are GPT-NeoX's ids, named by the family's kernels.
  await expect(page.getByTestId('model-panel')).not.toContainText('GPT-NeoX checkpoints');
  const kernels = page.getByTestId('fused-kernels');
  await expect(kernels).toContainText('Residual add + RMSNorm');
  await expect(kernels).toContainText('Gate/up GEMM + SwiGLU');
  await expect(kernels).not.toContainText('LayerNorm');
  await expect(kernels).not.toContainText('GELU');

  // While the runs' passes hold their buffers the counter reads them (the page polls it every 400 ms): the most it
  // showed over the three runs below is recorded here.
  await page.evaluate(() => {
    const w = window as unknown as { __memMost: number };
    w.__memMost = 0;
    new MutationObserver(() => {
      const el = document.querySelector('[data-testid="gpu-memory"]');
      w.__memMost = Math.max(w.__memMost, Number(el?.getAttribute('data-bytes-in-use') ?? 0));
    }).observe(document.body, { attributes: true, subtree: true, attributeFilter: ['data-bytes-in-use'] });
  });
  for (const f of FAULTS) {
    await page.getByTestId('fault').selectOption(f.id);
    await expect(page.getByTestId('fault-info')).toContainText(`Lives in ${f.title}`);
    await page.getByTestId('fault-layer-auto').uncheck();
    await page.getByTestId('fault-layer').fill('1');
    await setInputs(page, PROMPT, 3);
    await runToEnd(page);
    await expect(mem).toHaveAttribute('data-bytes-in-use', '0');
    const verdict = page.locator('.results [data-testid="verdict"]');
    await expect(verdict).toHaveAttribute('data-verdict', 'diverged');
    await expect(verdict).toHaveAttribute('data-layer', '1');
    await expect(page.getByTestId('why')).toHaveAttribute('data-born', f.born);
    await expect(page.getByTestId('why')).toContainText(f.cause);
    const hit = page.getByTestId('bisection-hit');
    await expect(hit).toHaveAttribute('data-kernel', f.kernel);
    await expect(hit).toContainText(`${f.title} alone`);
    // The hit names the family's kernel, not GPT-NeoX's switch id it runs under (data-kernel keeps that).
    await expect(hit).not.toContainText(f.kernel);
    await expect(page.getByTestId('bisection')).not.toContainText('GELU');
    // The summary line names the family's kernels too, not GPT-NeoX's switch ids.
    await expect(page.getByTestId('bisection')).toContainText(`${f.title} reproduces`);
    await expect(page.getByTestId('bisection')).not.toContainText('layernorm does not');
    if (f.id === 'kv_interleaved') await both(page, testInfo, `fault-${f.id}`);
    else await shoot(page, testInfo, `fault-${f.id}-1280`, false);
  }

  const most = await page.evaluate(() => (window as unknown as { __memMost: number }).__memMost);
  expect(most, 'GPU bytes in use seen while the runs ran').toBeGreaterThan(0);
  console.log(`most GPU memory in use seen during the runs: ${most} B`);

  // The layer's ops: named by their slot, bracketed under the family's kernels (the last run: the KV mapping).
  await page.getByText('Open layer 1: its ops').click();
  const drill = page.getByTestId('drilldown');
  await expect(drill.locator('[data-testid="tap-row"][data-tap="layers.1.gate"]')).toContainText('gate');
  await expect(drill.locator('[data-testid="tap-row"][data-tap="layers.1.up"]')).toContainText('up');
  await expect(drill.locator('[data-testid="kernel-group"][data-kernel="linear_gelu"]')).toHaveAttribute(
    'data-ops',
    /gate up swiglu/,
  );
  await expect(drill.locator('[data-testid="kernel-group"][data-kernel="flash_attention"]')).toHaveCount(1);
  // The add + RMSNorm writes the norms and both residual adds: ln1, then ln2_in and ln2, then the layer's output.
  await expect(drill.locator('[data-testid="kernel-group"][data-kernel="layernorm"]')).toHaveCount(3);
  await expect(drill).not.toContainText('gate_up');
  // The brackets are labelled with the family's kernels' names, not the switch ids (no 'linear_gelu' over SwiGLU).
  const labels = await drill.locator('[data-testid="kernel-group"] .kernel-label').allTextContents();
  expect([...new Set(labels)].sort()).toEqual(['addRmsNorm', 'flash', 'gemm', 'qkvRope', 'swiglu']);
  await drill.scrollIntoViewIfNeeded();
  await both(page, testInfo, 'layer-ops');

  // The kernel editor: one line saying Run does not take a page kernel on this family; the editor still works.
  await page.getByTestId('mode-kernel').click();
  await page.evaluate(() => window.scrollTo(0, 0));
  await expect(page.getByTestId('kernel-family-note')).toContainText('Llama family');
  await expect(page.getByTestId('kernel-use')).toBeDisabled();
  await expect(page.getByTestId('kernel-status')).toHaveAttribute('data-state', 'ok', { timeout: 60_000 });
  await both(page, testInfo, 'kernel-editor');
  // The classroom: its stories are the embedded model's, said before one is opened.
  await page.getByTestId('mode-classroom').click();
  await page.evaluate(() => window.scrollTo(0, 0));
  await expect(page.getByTestId('scenario-family-note')).toContainText('Llama-family model (qwen2)');
  await both(page, testInfo, 'classroom');
  await expect(page.getByTestId('model-family')).toHaveText('Llama family (qwen2)');
  expect(errors).toEqual([]);

  // The permalink names the family; opened in another browser it asks for the model's files, then runs there.
  await page.getByTestId('mode-explore').click();
  const link = await page.getByTestId('share-link').inputValue();
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const b = await ctx.newPage();
  const errorsB = watchErrors(b);
  await b.goto(link);
  await expect(b.getByTestId('model-need')).toBeVisible({ timeout: 60_000 });
  await expect(b.getByTestId('need-family')).toHaveText(' (Llama family, qwen2)');
  await expect(b.getByTestId('link-banner')).toContainText('(Llama family, qwen2) from the sharer');
  await expect(b.getByTestId('link-banner')).toContainText('KV heads interleaved');
  await expect(b.getByTestId('link-banner')).toContainText("the Llama family's five kernels");
  await both(b, testInfo, 'link-opened');
  await b.getByTestId('need-files').setInputFiles([join(DIR, 'config.json'), join(DIR, 'model.safetensors')]);
  await expect(b.getByTestId('model-family')).toHaveText('Llama family (qwen2)', { timeout: 60_000 });
  await b.getByTestId('run-linked').first().click();
  await expect(b.getByTestId('run-status')).toHaveAttribute('data-state', 'done', { timeout: 180_000 });
  await expect(b.locator('.results [data-testid="verdict"]')).toHaveAttribute('data-layer', '1');
  await expect(b.getByTestId('sharer-comparison')).toHaveAttribute('data-same-first', 'yes');
  await both(b, testInfo, 'link-run');
  expect(errorsB).toEqual([]);
  await ctx.close();
});

test('a Hub preset names its family before anything is downloaded', async ({ page }, testInfo) => {
  const errors = watchErrors(page);
  const hub: StandIn = await startHubServer();
  try {
    await page.addInitScript(([k, v]) => localStorage.setItem(k, v), [
      HUB_OVERRIDE_KEY,
      JSON.stringify(hub.override),
    ] as const);
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto('./');
    await waitForModel(page);
    const presets = page.getByTestId('hub-presets');
    const detail = presets.getByTestId('hub-detail');
    for (const [id, words] of [
      ['preset-Qwen3-0.6B', 'Llama family (qwen3)'],
      ['preset-pythia-160m', 'GPT-NeoX'],
    ] as const) {
      await presets.getByTestId(id).click();
      await expect(detail).toHaveAttribute('data-state', 'done');
      await expect(detail.getByTestId('hub-family')).toHaveText(words);
    }
    await presets.getByTestId('preset-Qwen3-0.6B').click();
    await expect(detail.getByTestId('hub-family')).toHaveText('Llama family (qwen3)');
    await detail.scrollIntoViewIfNeeded();
    await shoot(page, testInfo, 'hub-family-1280', false);
    expect(errors).toEqual([]);
  } finally {
    await hub.close();
  }
});
