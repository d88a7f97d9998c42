// The dumper in the "your runs" mode: dump_run.py is served by the site itself (the same bytes as
// tools/dump_run.py) and the four lines to paste name the loaded model and the page's prompt; the copy button
// puts exactly those lines on the clipboard.
import { readFileSync } from 'node:fs';
import { expect, test } from '@playwright/test';
import { shoot, waitForModel, watchErrors } from './helpers';

test('your runs: dump_run.py from the site and the four lines to paste, with a copy button', async ({
  page,
  context,
}, testInfo) => {
  const errors = watchErrors(page);
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('./');
  await waitForModel(page);
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

  await dumper.getByTestId('dumper-copy').click();
  await expect(dumper.getByTestId('dumper-copied')).toHaveText('Copied.');
  const clip = await page.evaluate(() => navigator.clipboard.readText());
  expect(clip).toBe(`${lines.join('\n')}\n`);
  await shoot(page, testInfo, 'runs-dumper-1280x800', false);
  expect(errors).toEqual([]);
});
