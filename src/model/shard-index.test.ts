// The index of a sharded checkpoint, checked against the shards' headers: every way the two can disagree is
// one ModelLoadError line naming what is wrong, raised before any tensor is read.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../numeric/random';
import { ModelLoadError } from './errors';
import { randomTensors } from './random-model';
import { writeSafetensors } from './safetensors-write';
import { checkShards, INDEX_FILE, manifestSha256, parseShardIndex, shardManifest } from './shard-index';
import { bytesShard, planShards, readShardHeader, shardedSource } from './shard-stream';
import { writeSharded } from './shard-write';
import { expectLoadError } from './testing';

const spec = {
  vocab: 64,
  d: 16,
  layers: 2,
  heads: 2,
  ff: 32,
  rotaryPct: 0.5,
  parallel: true,
  dtype: 'F16' as const,
};
const tensors = randomTensors(spec, 7);

/** The model in shards of ~3 KiB, as in-memory shard files. */
function sharded(
  index?: (j: { metadata: { total_size: number }; weight_map: Record<string, string> }) => unknown,
) {
  const files = writeSharded(tensors, 3 << 10);
  const j = JSON.parse(files.index);
  const text = index ? JSON.stringify(index(j) ?? j) : files.index;
  return { text, files, shards: [...files.shards].map(([n, b]) => bytesShard(n, b, 500)) };
}

async function refusal(src: ReturnType<typeof shardedSource>): Promise<string> {
  try {
    await planShards(src);
  } catch (e) {
    expect((e as Error).name).toBe('ModelLoadError');
    const m = (e as Error).message;
    expect(m).not.toContain('\n');
    return m;
  }
  throw new Error('expected a refusal');
}

describe('model.safetensors.index.json', () => {
  it('writes and reads back an index whose shards agree with it', async () => {
    const { text, files, shards } = sharded();
    expect(files.shards.size).toBeGreaterThan(2);
    const idx = parseShardIndex(text);
    expect(idx.shards).toEqual([...files.shards.keys()]);
    expect(idx.weightMap.size).toBe(tensors.length);
    const { heads } = await planShards(shardedSource(text, shards));
    expect(heads.map((h) => h.bytes)).toEqual([...files.shards.values()].map((b) => b.length));
  });

  it('refuses malformed index text in one line', () => {
    const bad: [string, RegExp][] = [
      ['not json', /not JSON/],
      ['[]', /must be a JSON object/],
      ['{"metadata": {}}', /no weight_map/],
      ['{"weight_map": {}}', /empty weight_map/],
      ['{"weight_map": {"a": 3}}', /maps to number 3/],
      ['{"weight_map": {"a": "../x.safetensors"}}', /a shard is a \*\.safetensors file/],
      ['{"weight_map": {"a": "sub/x.safetensors"}}', /a shard is a/],
      ['{"weight_map": {"a": "x.bin"}}', /a shard is a/],
      ['{"weight_map": {"a": "x.safetensors", "a": "y.safetensors"}}', /'a' is in the weight map twice/],
      ['{"weight_map": {"a": "x.safetensors"}, "weight_map": {}}', /'weight_map' appears twice/],
      [
        '{"metadata": {"total_size": "12"}, "weight_map": {"a": "x.safetensors"}}',
        /total_size must be a number/,
      ],
      ['{"metadata": {"total_size": -1}, "weight_map": {"a": "x.safetensors"}}', /total_size/],
      [`${'['.repeat(50)}${']'.repeat(50)}`, /nested/],
    ];
    for (const [text, re] of bad) {
      const e = expectLoadError(() => parseShardIndex(text));
      expect(e.message).toMatch(re);
      expect(e.message.startsWith(`${INDEX_FILE}: `)).toBe(true);
    }
  });

  it('refuses a shard missing, a tensor in two shards or in none, unlisted tensors, a wrong total size', async () => {
    const base = sharded();
    const [first, second] = [...base.files.shards.keys()];
    const firstTensor = Object.entries(JSON.parse(base.text).weight_map as Record<string, string>).find(
      ([, s]) => s === first,
    )![0];
    // A shard the index names is not among the files.
    expect(await refusal(shardedSource(base.text, base.shards.slice(1)))).toMatch(
      new RegExp(`shard '${first}' is missing`),
    );
    // A file that the index does not name.
    const stray = bytesShard('extra.safetensors', writeSafetensors([tensors[0]]));
    expect(await refusal(shardedSource(base.text, [...base.shards, stray]))).toMatch(
      /'extra.safetensors' is not a shard of this index/,
    );
    // The index puts a tensor in another shard than the one holding it.
    const moved = sharded((j) => {
      j.weight_map[firstTensor] = second;
    });
    expect(await refusal(shardedSource(moved.text, moved.shards))).toMatch(
      new RegExp(`tensor '${firstTensor}' is in shard ${first}, but the index puts it in ${second}`),
    );
    // A tensor the index does not list at all.
    const unlisted = sharded((j) => {
      delete j.weight_map[firstTensor];
    });
    expect(await refusal(shardedSource(unlisted.text, unlisted.shards))).toMatch(
      new RegExp(`shard ${first} holds tensor '${firstTensor}', which the index does not list`),
    );
    // A tensor the index lists that no shard holds.
    const ghost = sharded((j) => {
      j.weight_map['gpt_neox.extra.weight'] = second;
    });
    expect(await refusal(shardedSource(ghost.text, ghost.shards))).toMatch(
      /tensor 'gpt_neox.extra.weight' is in no shard/,
    );
    // The same tensor stored in two shards.
    const files = writeSharded(tensors, 3 << 10);
    const names = [...files.shards.keys()];
    const twice = new Map(files.shards);
    twice.set(
      names[1],
      writeSafetensors([
        ...tensors.filter((t) => JSON.parse(files.index).weight_map[t.name] === names[1]),
        tensors[0],
      ]),
    );
    expect(
      await refusal(
        shardedSource(
          files.index,
          [...twice].map(([n, b]) => bytesShard(n, b)),
        ),
      ),
    ).toMatch(new RegExp(`tensor '${tensors[0].name}' is in two shards: ${names[0]} and ${names[1]}`));
    // A total size that disagrees.
    const size = sharded((j) => {
      j.metadata.total_size += 2;
    });
    expect(await refusal(shardedSource(size.text, size.shards))).toMatch(
      /metadata.total_size is \d+ bytes, but the shards' tensors hold \d+ bytes/,
    );
  });

  it("accepts transformers' count of U8/BOOL mask buffers at 1/8 byte, and no total at all", async () => {
    const mask = {
      name: 'gpt_neox.layers.0.attention.bias',
      dtype: 'F16' as const,
      shape: [1, 1, 4, 4],
      data: new Float32Array(16),
    };
    // A U8 buffer written by hand: the writer has no U8, so patch the dtype and size in a tiny file.
    const u8 = writeSafetensors([{ ...mask, shape: [8], data: new Float32Array(8) }]);
    const text = new TextDecoder().decode(
      u8.subarray(8, 8 + Number(new DataView(u8.buffer).getUint32(0, true))),
    );
    const hdr = JSON.parse(text);
    hdr[mask.name] = { dtype: 'U8', shape: [16], data_offsets: [0, 16] };
    const json = new TextEncoder().encode(JSON.stringify(hdr).padEnd(text.length, ' '));
    const file = new Uint8Array(8 + json.length + 16);
    new DataView(file.buffer).setUint32(0, json.length, true);
    file.set(json, 8);
    const h = await readShardHeader(bytesShard('m.safetensors', file));
    for (const total of [16, 2, null]) {
      const idx = {
        weightMap: new Map([[mask.name, 'm.safetensors']]),
        shards: ['m.safetensors'],
        totalSize: total,
      };
      expect(() => checkShards(idx, [h])).not.toThrow();
    }
    const idx = {
      weightMap: new Map([[mask.name, 'm.safetensors']]),
      shards: ['m.safetensors'],
      totalSize: 8,
    };
    expect(() => checkShards(idx, [h])).toThrow(
      /total_size is 8 bytes, but the shards' tensors hold 16 bytes/,
    );
  });

  it('refuses a shard that is not safetensors, or shorter than its header says', async () => {
    const base = sharded();
    const [first] = [...base.files.shards.keys()];
    const junk = base.shards.map((s) =>
      s.file === first ? bytesShard(first, new TextEncoder().encode('<html>')) : s,
    );
    expect(await refusal(shardedSource(base.text, junk))).toMatch(new RegExp(`^${first}: `));
    const cut = base.shards.map((s) =>
      s.file === first ? bytesShard(first, base.files.shards.get(first)!.subarray(0, 40)) : s,
    );
    expect(await refusal(shardedSource(base.text, cut))).toMatch(new RegExp(`^${first}: header length`));
  });

  it('names a sharded model by the manifest of its shards, independent of order', () => {
    const a = shardManifest(
      new Map([
        ['b.safetensors', '2'.repeat(64)],
        ['a.safetensors', '1'.repeat(64)],
      ]),
    );
    expect(a).toBe(`${'1'.repeat(64)}  a.safetensors\n${'2'.repeat(64)}  b.safetensors\n`);
    // What `sha256sum a.safetensors b.safetensors | sha256sum` prints, computed here independently.
    const want = createHash('sha256').update(a).digest('hex');
    expect(
      manifestSha256(
        new Map([
          ['a.safetensors', '1'.repeat(64)],
          ['b.safetensors', '2'.repeat(64)],
        ]),
      ),
    ).toBe(want);
  });
});

describe('hostile index files (seeded fuzz)', () => {
  const seed = Number(process.env.SHARD_SEED ?? Date.now() % 1e9);
  it(`mutated index texts and structures: checked, or one ModelLoadError line (seed ${seed}, SHARD_SEED replays)`, async () => {
    const rng = mulberry32(seed);
    const base = sharded();
    const j0 = JSON.parse(base.text);
    const names = Object.keys(j0.weight_map);
    const shardNames = [...base.files.shards.keys()];
    const pick = <T>(a: T[]): T => a[Math.floor(rng() * a.length)];
    const values: unknown[] = [
      null,
      0,
      -1,
      1.5,
      1e300,
      '',
      'x',
      [],
      {},
      '../a.safetensors',
      'a.safetensors',
      true,
    ];
    let loaded = 0;
    for (let i = 0; i < 1500; i++) {
      let text: string;
      const j = JSON.parse(base.text);
      const m = Math.floor(rng() * 8);
      if (m === 0) {
        // byte flips in the text
        const b = new TextEncoder().encode(base.text);
        for (let k = 0; k < 1 + rng() * 4; k++) b[Math.floor(rng() * b.length)] = Math.floor(rng() * 256);
        text = new TextDecoder().decode(b);
      } else {
        if (m === 1) delete j.weight_map[pick(names)];
        if (m === 2) j.weight_map[pick(names)] = pick(shardNames);
        if (m === 3) j.weight_map[`gpt_neox.x${i}`] = pick(shardNames);
        if (m === 4) j.metadata.total_size = pick(values);
        if (m === 5) j.weight_map[pick(names)] = pick(values);
        if (m === 6) j[pick(['metadata', 'weight_map'])] = pick(values);
        text = JSON.stringify(j);
        if (m === 7) text = text.replace(`"${pick(names)}"`, `"${pick(names)}"`); // a name twice, one lost
      }
      const shards = rng() < 0.2 ? base.shards.filter((s) => s.file !== pick(shardNames)) : base.shards;
      try {
        await planShards(shardedSource(text, shards));
        loaded++;
      } catch (e) {
        expect(e, `case ${i}`).toBeInstanceOf(ModelLoadError);
        expect((e as Error).message, `case ${i}`).not.toContain('\n');
      }
    }
    expect(loaded).toBeGreaterThan(0); // some mutations are harmless (a total size equal, a tensor set to its own shard)
  });
});
