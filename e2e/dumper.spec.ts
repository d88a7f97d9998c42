// The dumper in the "your runs" mode: dump_run.py is served by the site itself (the same bytes as
// tools/dump_run.py) and the four lines to paste name the loaded model and the page's prompt; the copy button
// puts exactly those lines on the clipboard and says so (the button and a status line); a model without a tokenizer
// gets token ids (or a named blank), never an empty tensor.
import { readFileSync } from 'node:fs';
import { expect, test } from '@playwright/test';
import { openPage, pickModelFiles, shoot } from './helpers';

test('your runs: dump_run.py from the site and the four lines to paste, with a copy button', async ({
  page,
  context,
}, testInfo) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const errors = await openPage(page);
  const prompt = await page.getByLabel('Prompt', { exact: true }).inputValue();
  await page.getByTestId('mode-runs').click();
  const dumper = page.getByTestId('dumper');
  await expect(dumper).toBeVisible();
  const lines = (await dumper.getByTestId('dumper-lines').innerText()).trimEnd().split('\n');
  expect(lines).toHaveLength(4);
  expect(lines[1]).toContain('from dump_run import dump_run');
  expect(lines[2]).toContain('neox-kjv-bytes');
  // The embedded model's tokenizer is byte-level: the prompt goes in as its UTF-8 bytes.
  expect(lines[3]).toBe(
    `dump_run(model, torch.tensor([${[...Buffer.from(prompt, 'utf8')].join(', ')}]), "run.safetensors", label="mine")`,
  );

  // The link is the site's own copy, byte for byte the file in tools/.
  const href = await dumper.getByTestId('dumper-link').getAttribute('href');
  const res = await page.request.get(new URL(href ?? '', page.url()).href);
  expect(res.status()).toBe(200);
  expect(Buffer.compare(await res.body(), readFileSync('tools/dump_run.py'))).toBe(0);

  // No AutoTokenizer where the prompt goes in as ids.
  expect(lines[0]).toBe('import torch; from transformers import AutoModelForCausalLM');

  // Copying says so: on the button (its words and colours) and in a status line read to screen readers.
  const copyButton = dumper.getByTestId('dumper-copy');
  await expect(copyButton).toHaveText('Copy the four lines');
  await copyButton.click();
  await expect(copyButton).toHaveText('Copied ✓');
  await expect(copyButton).toHaveAttribute('data-copied', 'yes');
  await expect(dumper.getByTestId('dumper-copied')).toHaveAttribute('role', 'status');
  await expect(dumper.getByTestId('dumper-copied')).toHaveText('Copied the four lines to the clipboard.');
  await shoot(page, testInfo, 'runs-dumper-copied-1280x800', false);
  await copyButton.click();
  await expect(dumper.getByTestId('dumper-copied')).toHaveText(
    'Copied the four lines to the clipboard (2 times).',
  );
  // The state does not stay: the button reads as before a few seconds later.
  await expect(copyButton).toHaveText('Copy the four lines', { timeout: 10_000 });
  const clip = await page.evaluate(() => navigator.clipboard.readText());
  expect(clip).toBe(`${lines.join('\n')}\n`);
  await shoot(page, testInfo, 'runs-dumper-1280x800', false);
  expect(errors).toEqual([]);
});

test('a model without a tokenizer: the four lines take token ids, never an empty tensor', async ({
  page,
}, testInfo) => {
  const errors = await openPage(page);
  // The runs' fixture model has config.json and weights only: token ids, no tokenizer.
  const DIR = 'src/model/testdata/runs/parallel-classic';
  await pickModelFiles(page, [`${DIR}/config.json`, `${DIR}/model.safetensors`]);
  await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'ready', { timeout: 60_000 });
  await expect(page.getByTestId('model-name')).not.toHaveText('neox-kjv-bytes');
  await page.getByTestId('mode-runs').click();
  const dumper = page.getByTestId('dumper');
  const lines = async () => (await dumper.getByTestId('dumper-lines').innerText()).trimEnd().split('\n');
  // The page's prompt is still text: no ids yet, so the last line names the blank and the page says what to do.
  let now = await lines();
  expect(now).toHaveLength(4);
  expect(now.join('\n')).not.toContain('tensor([])');
  expect(now.join('\n')).not.toContain('AutoTokenizer');
  expect(now[3]).toBe('dump_run(model, torch.tensor(YOUR_TOKEN_IDS), "run.safetensors", label="mine")');
  await expect(dumper.getByTestId('dumper-no-ids')).toBeVisible();
  await shoot(page, testInfo, 'runs-dumper-no-tokenizer-1280x800', false);
  // Ids typed in the Run panel are the lines' ids.
  await page.getByTestId('mode-explore').click();
  await page.getByLabel('Prompt', { exact: true }).fill('3, 14, 15');
  await page.getByTestId('mode-runs').click();
  now = await lines();
  expect(now[3]).toBe('dump_run(model, torch.tensor([3, 14, 15]), "run.safetensors", label="mine")');
  await expect(dumper.getByTestId('dumper-no-ids')).toHaveCount(0);
  expect(errors).toEqual([]);
});
