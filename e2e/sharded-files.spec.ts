// Sharded weights picked from disk: an index and its shards load (checked against each other first, then read
// shard by shard) and run; hostile index files — a tensor moved to another shard, a shard left out, a total
// size that disagrees — are refused in one line each and leave the model loaded before.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from '@playwright/test';
import { randomConfigJson, randomTensors } from '../src/model/random-model';
import { INDEX_FILE } from '../src/model/shard-index';
import { writeSharded } from '../src/model/shard-write';
import { openPage, pickModelFiles, runToEnd, setInputs, shoot } from './helpers';

const spec = {
  vocab: 256,
  d: 64,
  layers: 2,
  heads: 4,
  ff: 256,
  rotaryPct: 0.25,
  parallel: true,
  dtype: 'F16' as const,
};

/** A folder holding the model sharded, with the index changed by `edit`; returns the paths to pick. */
function folder(
  edit?: (j: { metadata: { total_size: number }; weight_map: Record<string, string> }) => void,
  drop?: number,
) {
  const dir = mkdtempSync(join(tmpdir(), 'sharded-'));
  const files = writeSharded(randomTensors(spec, 77), 24 << 10);
  const j = JSON.parse(files.index);
  edit?.(j);
  writeFileSync(join(dir, INDEX_FILE), JSON.stringify(j));
  writeFileSync(join(dir, 'config.json'), JSON.stringify(randomConfigJson(spec)));
  writeFileSync(join(dir, 'tokenizer.json'), '{"type": "bytes"}\n');
  const shards = [...files.shards];
  for (const [n, b] of shards) writeFileSync(join(dir, n), b);
  const picked = shards.filter((_, i) => i !== drop).map(([n]) => join(dir, n));
  return {
    paths: [join(dir, INDEX_FILE), join(dir, 'config.json'), join(dir, 'tokenizer.json'), ...picked],
    shards,
  };
}

test('sharded weights from disk: loaded shard by shard and run; hostile index files refused in one line', async ({
  page,
}, testInfo) => {
  const errors = await openPage(page);
  const good = folder();
  expect(good.shards.length).toBeGreaterThan(2);
  await pickModelFiles(page, good.paths);
  await expect(page.getByTestId('model-shards')).toContainText(String(good.shards.length), {
    timeout: 60_000,
  });
  await expect(page.getByTestId('model-source')).toHaveAttribute('data-kind', 'files');
  const sha = await page.getByTestId('model-sha256').innerText();
  await setInputs(page, 'And God', 0);
  await runToEnd(page);

  // A tensor of a shard that holds several, put in another shard by the index.
  const map: Record<string, string> = JSON.parse(
    writeSharded(randomTensors(spec, 77), 24 << 10).index,
  ).weight_map;
  const counts = new Map<string, number>();
  for (const s of Object.values(map)) counts.set(s, (counts.get(s) ?? 0) + 1);
  const moved = Object.keys(map).find((k) => (counts.get(map[k]) ?? 0) > 1) ?? '';
  const other = good.shards.find(([n]) => n !== map[moved])?.[0] ?? '';
  const hostile: [ReturnType<typeof folder>, RegExp][] = [
    [
      folder((j) => {
        j.weight_map[moved] = other;
      }),
      /is in shard .* but the index puts it in/,
    ],
    [folder(undefined, 1), /shard '.*' is missing/],
    [
      folder((j) => {
        j.metadata.total_size += 1;
      }),
      /metadata\.total_size is \d+ bytes, but the shards' tensors hold/,
    ],
    [
      folder((j) => {
        j.weight_map['gpt_neox.ghost.weight'] = good.shards[0][0];
      }),
      /'gpt_neox\.ghost\.weight' is in no shard/,
    ],
  ];
  for (const [f, re] of hostile) {
    await page.getByTestId('model-files').setInputFiles(f.paths);
    const alert = page.getByTestId('error');
    await expect(alert).toBeVisible({ timeout: 60_000 });
    const line = await alert.locator('p').first().innerText();
    expect(line).toMatch(re);
    expect(line).not.toContain('\n');
    await expect(page.getByTestId('model-sha256')).toHaveText(sha);
    await expect(page.getByTestId('model-panel')).toHaveAttribute('data-status', 'ready');
    await shoot(page, testInfo, 'hostile-index', false);
    await page.getByRole('button', { name: 'Dismiss the error' }).click();
  }
  await runToEnd(page);
  expect(errors).toEqual([]);
});
