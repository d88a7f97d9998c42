// Hostile model files picked in the browser follow the CLI's rules: each is refused with one line naming the file
// and what is wrong, and the model already loaded stays loaded and usable (a run still completes on it).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { MODEL_DIR, runToEnd, setInputs, shoot, waitForModel, watchErrors } from './helpers';

const config = readFileSync(join(MODEL_DIR, 'config.json'), 'utf8');
const weights = readFileSync(join(MODEL_DIR, 'model.safetensors'));

/** The safetensors file split into its header JSON text and its data section. */
function split(bytes: Buffer): { header: string; data: Buffer } {
  const n = Number(bytes.readBigUInt64LE(0));
  return { header: bytes.subarray(8, 8 + n).toString('utf8'), data: bytes.subarray(8 + n) };
}

function join8(header: string, data: Buffer): Buffer {
  const h = Buffer.from(header, 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(h.length));
  return Buffer.concat([len, h, data]);
}

/** The embedded model (fp16) with one value of `tensor` set to f16 NaN. */
function withNaN(tensor: string): Buffer {
  const { header, data } = split(weights);
  const entry = JSON.parse(header)[tensor] as { dtype: string; data_offsets: [number, number] };
  if (entry.dtype !== 'F16') throw new Error(`expected F16, found ${entry.dtype}`);
  const copy = Buffer.from(data);
  copy.writeUInt16LE(0x7e00, entry.data_offsets[0] + 2 * 5);
  return join8(header, copy);
}

/** The header with its first tensor's entry listed a second time (JSON.parse would silently keep the last). */
function withDuplicateName(): Buffer {
  const { header, data } = split(weights);
  const first = Object.entries(JSON.parse(header)).find(([k]) => k !== '__metadata__');
  if (!first) throw new Error('no tensor');
  const dup = `${JSON.stringify(first[0])}:${JSON.stringify(first[1])},`;
  return join8(`{${dup}${header.slice(1)}`, data);
}

const CASES: { name: string; files: Record<string, string | Buffer>; message: RegExp }[] = [
  {
    name: 'nan-weights',
    files: {
      'config.json': config,
      'model.safetensors': withNaN('gpt_neox.layers.2.mlp.dense_h_to_4h.weight'),
    },
    message: /model\.safetensors.*gpt_neox\.layers\.2\.mlp\.dense_h_to_4h\.weight.*non-finite/,
  },
  {
    name: 'duplicate-name',
    files: { 'config.json': config, 'model.safetensors': withDuplicateName() },
    message: /model\.safetensors.*(twice|duplicate)/i,
  },
  {
    name: 'trailing-bytes',
    files: { 'config.json': config, 'model.safetensors': Buffer.concat([weights, Buffer.alloc(24)]) },
    message: /model\.safetensors.*24 trailing bytes/,
  },
  {
    name: 'deep-tokenizer',
    files: {
      'config.json': config,
      'model.safetensors': weights,
      'tokenizer.json': `${'['.repeat(50_000)}${']'.repeat(50_000)}`,
    },
    message: /tokenizer\.json.*nested 50000 levels/,
  },
  {
    name: 'config-newline',
    files: { 'config.json': '{"hidden_size": 16,\n"bad\nkey": [1,\n2]', 'model.safetensors': weights },
    message: /config\.json/,
  },
];

test('hostile model files: one line each naming the file, the loaded model kept and usable', async ({
  page,
}, testInfo) => {
  test.setTimeout(300_000);
  const errors = watchErrors(page);
  await page.goto('./');
  await waitForModel(page);
  const name = await page.getByTestId('model-name').textContent();
  await page.getByText('Load another model').click();
  for (const c of CASES) {
    const dir = testInfo.outputPath(c.name);
    mkdirSync(dir, { recursive: true });
    const paths = Object.entries(c.files).map(([file, body]) => {
      writeFileSync(join(dir, file), body);
      return join(dir, file);
    });
    await page.getByTestId('model-files').setInputFiles(paths);
    const alert = page.getByRole('alert');
    await expect(alert, c.name).toContainText(c.message, { timeout: 60_000 });
    // Beside the picker that was used (in the model panel), in view.
    await expect(page.getByTestId('model-panel').getByRole('alert'), c.name).toBeInViewport();
    // One line: the message paragraph holds no line break, whatever the file held.
    const text = (await alert.locator('p').first().textContent()) ?? '';
    expect(text, c.name).not.toMatch(/[\n\r]/);
    expect(text.length, c.name).toBeLessThan(400);
    // The model that was loaded stays loaded.
    await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'ready');
    await expect(page.getByTestId('model-name')).toHaveText(name ?? '');
    await expect(page.getByTestId('run')).toBeEnabled();
  }
  await shoot(page, testInfo, 'hostile-file-refused');
  // ... and usable: a short run on it completes.
  await page.getByRole('button', { name: 'Dismiss the error' }).click();
  await expect(page.getByRole('alert')).toHaveCount(0);
  await setInputs(page, 'And God', 0);
  await runToEnd(page);
  await expect(page.getByTestId('verdict')).toBeVisible();
  expect(errors.filter((e) => !/Failed to load resource/.test(e))).toEqual([]);
});
