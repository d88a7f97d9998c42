// Seeded fuzzing of the hostile-input classes that must be REFUSED (not merely "loaded or refused"): NaN/Inf
// weights, a tensor name listed twice, unlisted bytes between or after tensors, JSON nested too deep; a UTF-8
// BOM must change nothing; every message stays on one line. Both readers (whole file and stream) are run on
// each case. A failure names its seed; `FUZZ_SEED=<seed> npx vitest run src/model/hostile-fuzz.test.ts`
// replays it.

import { describe, expect, it } from 'vitest';
import { f32ToBf16Bits, f32ToF16Bits } from '../numeric/bits';
import { mulberry32 } from '../numeric/random';
import type { DType } from '../numeric/types';
import { CONFIG_MAX_DEPTH, parseConfigText } from './config';
import { ModelLoadError, oneLine } from './errors';
import { randomModelFiles } from './random-model';
import { parseSafetensorsHeader } from './safetensors';
import { parseTokenizerText, TOKENIZER_MAX_DEPTH } from './tokenizer';
import { readWeights } from './weight-stream';
import { loadWeights, loadWeightsStream } from './weights';

const CASES = 300;
const REPLAY = process.env.FUZZ_SEED === undefined ? null : Number(process.env.FUZZ_SEED);
const seeds = (group: number) =>
  REPLAY !== null ? [REPLAY] : Array.from({ length: CASES }, (_, i) => group * 0x1000000 + i);

/** A control character (C0, DEL, C1) or a Unicode line/paragraph separator: what must not reach a terminal raw. */
function hasControl(s: string): boolean {
  return [...s].some((c) => {
    const x = c.charCodeAt(0);
    return x < 0x20 || (x >= 0x7f && x <= 0x9f) || x === 0x2028 || x === 0x2029;
  });
}

function rng(seed: number) {
  const next = mulberry32(seed);
  const int = (n: number) => Math.floor(next() * n);
  return { int, pick: <T>(xs: readonly T[]) => xs[int(xs.length)], chance: (p: number) => next() < p };
}

function base(seed: number, dtype: DType) {
  const r = rng(seed ^ 0x3c3c3c3c);
  const heads = 1 + r.int(3);
  return randomModelFiles(
    {
      vocab: 5 + r.int(20),
      d: heads * 4 * (1 + r.int(3)),
      layers: 1 + r.int(3),
      heads,
      ff: 3 + r.int(20),
      rotaryPct: 0.5,
      parallel: r.chance(0.5),
      dtype,
    },
    seed,
  );
}

/** The ModelLoadError of the whole-file and the streaming reader (random chunks, length known or not). */
async function refusals(seed: number, config: string, bytes: Uint8Array): Promise<string[]> {
  const r = rng(seed ^ 0x5a5a5a5a);
  const cfg = parseConfigText(config);
  const msg = (e: unknown) => {
    if (!(e instanceof ModelLoadError)) throw new Error(`not a ModelLoadError: ${String(e)}`);
    if (hasControl(e.message)) throw new Error(`message spans lines: ${JSON.stringify(e.message)}`);
    return e.message;
  };
  let whole = 'loaded';
  try {
    loadWeights(cfg, bytes);
  } catch (e) {
    whole = msg(e);
  }
  const max = r.pick([1, 7, 64, 1 << 16]);
  async function* chunks() {
    for (let p = 0; p < bytes.length; ) {
      const n = 1 + r.int(max);
      yield bytes.subarray(p, p + n);
      p += n;
    }
  }
  let streamed = 'loaded';
  try {
    await loadWeightsStream(cfg, chunks(), r.chance(0.5) ? bytes.length : null);
  } catch (e) {
    streamed = msg(e);
  }
  // The engine's path: tensors streamed from a source, the header checked against the config first.
  let tensors = 'loaded';
  try {
    await readWeights(cfg, { open: chunks, bytes: r.chance(0.5) ? bytes.length : null });
  } catch (e) {
    tensors = msg(e);
  }
  return [whole, streamed, tensors];
}

function headerOf(bytes: Uint8Array) {
  const n = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true);
  return { n, text: new TextDecoder().decode(bytes.subarray(8, 8 + n)), data: bytes.subarray(8 + n) };
}

function fileOf(text: string, data: Uint8Array): Uint8Array {
  const json = new TextEncoder().encode(text);
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setUint32(0, json.length, true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

async function eachSeed(group: number, body: (seed: number) => Promise<void> | void) {
  for (const seed of seeds(group)) {
    try {
      await body(seed);
    } catch (e) {
      throw new Error(
        `seed ${seed} (replay: FUZZ_SEED=${seed} npx vitest run src/model/hostile-fuzz.test.ts): ${(e as Error).message}`,
      );
    }
  }
}

describe('hostile-input fuzzing: every case refused by both readers, one line, naming the cause', () => {
  it('NaN / ±Inf in any tensor of any dtype: refused naming the tensor and the count', async () => {
    await eachSeed(1, async (seed) => {
      const r = rng(seed);
      const dtype = r.pick(['F32', 'F16', 'BF16'] as const);
      const files = base(seed, dtype);
      const h = parseSafetensorsHeader(files.weights);
      const e = r.pick([...h.entries.values()].filter((x) => x.end > x.begin));
      const n = (e.end - e.begin) / (dtype === 'F32' ? 4 : 2);
      const at = new Set(Array.from({ length: 1 + r.int(4) }, () => r.int(n)));
      const bytes = files.weights.slice();
      const dv = new DataView(bytes.buffer);
      for (const i of at) {
        const v = r.pick([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]);
        const p = h.dataOffset + e.begin + i * (dtype === 'F32' ? 4 : 2);
        if (dtype === 'F32') dv.setFloat32(p, v, true);
        else dv.setUint16(p, dtype === 'F16' ? f32ToF16Bits(v) : f32ToBf16Bits(v), true);
      }
      const want = `tensor '${e.name}' holds ${at.size} non-finite value${at.size === 1 ? '' : 's'}`;
      for (const m of await refusals(seed, files.config, bytes)) expect(m).toContain(want);
    });
  });

  it('a tensor name listed twice (same or escaped spelling): refused, never "last copy wins"', async () => {
    await eachSeed(2, async (seed) => {
      const r = rng(seed);
      const files = base(seed, 'F32');
      const { text: padded, data } = headerOf(files.weights);
      const text = padded.trimEnd(); // writeSafetensors pads the header with spaces
      const names = Object.keys(JSON.parse(text)).filter((k) => k !== '__metadata__');
      const name = r.pick(names);
      const entry = JSON.stringify(JSON.parse(text)[name]);
      const spelled = r.chance(0.5)
        ? JSON.stringify(name)
        : `"\\u${name.charCodeAt(0).toString(16).padStart(4, '0')}${name.slice(1)}"`;
      const at = r.chance(0.5) ? 1 : text.length - 1; // first or last member
      const copy = at === 1 ? `${spelled}:${entry},` : `,${spelled}:${entry}`;
      const bytes = fileOf(text.slice(0, at) + copy + text.slice(at), data);
      for (const m of await refusals(seed, files.config, bytes))
        expect(m).toContain(`'${name}' appears twice`);
    });
  });

  it('unlisted bytes before, between or after tensors: refused', async () => {
    await eachSeed(3, async (seed) => {
      const r = rng(seed);
      const files = base(seed, r.pick(['F32', 'F16'] as const));
      const { text, data } = headerOf(files.weights);
      const header = JSON.parse(text) as Record<string, { data_offsets: number[] }>;
      const gap = 1 + r.int(16);
      const trailing = r.chance(0.3);
      let bytes: Uint8Array;
      if (trailing) {
        const out = new Uint8Array(files.weights.length + gap);
        out.set(files.weights);
        bytes = out;
      } else {
        const cut = r.int(data.length); // every tensor starting at or after `cut` moves by `gap`
        for (const [k, v] of Object.entries(header)) {
          if (k === '__metadata__') continue;
          if (v.data_offsets[0] >= cut) v.data_offsets = v.data_offsets.map((o) => o + gap);
        }
        const moved = new Uint8Array(data.length + gap);
        moved.set(data.subarray(0, cut));
        moved.set(data.subarray(cut), cut + gap);
        bytes = fileOf(JSON.stringify(header), moved);
      }
      for (const m of await refusals(seed, files.config, bytes))
        expect(m, m).toMatch(trailing ? /trailing bytes/ : /unlisted bytes|trailing bytes/);
    });
  });

  it('config.json and tokenizer.json: a BOM changes nothing; nesting past the limit is refused naming the file', () => {
    const tok = JSON.stringify({ type: 'bytes' });
    for (const seed of seeds(4)) {
      const r = rng(seed);
      const files = base(seed, 'F32');
      const depth = 1 + r.int(3 * TOKENIZER_MAX_DEPTH);
      const nest = `${'['.repeat(depth)}${']'.repeat(depth)}`;
      const bom = r.chance(0.5) ? '\uFEFF' : '';
      const where = `seed ${seed}, depth ${depth}, bom ${bom !== ''}`;
      const cfgText = `${bom}${files.config.replace(/^\{/, `{"fuzz_extra": ${nest},`)}`;
      const cfgDepth = depth + 1;
      let cfgErr = '';
      try {
        parseConfigText(cfgText);
      } catch (e) {
        cfgErr = (e as Error).message;
      }
      if (cfgDepth > CONFIG_MAX_DEPTH)
        expect(cfgErr, where).toBe(
          `config.json: JSON is nested ${cfgDepth} levels deep, more than the ${CONFIG_MAX_DEPTH} this file can have`,
        );
      else expect(cfgErr, where).not.toMatch(/nested|not valid JSON/);
      const tokText = `${bom}${tok.replace(/^\{/, `{"fuzz_extra": ${nest},`)}`;
      let tokErr = '';
      try {
        parseTokenizerText(tokText);
      } catch (e) {
        tokErr = (e as Error).message;
      }
      if (depth + 1 > TOKENIZER_MAX_DEPTH) expect(tokErr, where).toMatch(/^tokenizer\.json: JSON is nested/);
      else expect(tokErr, where).toBe('');
    }
  });

  it('oneLine leaves no control character and changes nothing else', () => {
    for (const seed of seeds(5)) {
      const r = rng(seed);
      const s = Array.from({ length: r.int(60) }, () =>
        String.fromCharCode(
          r.pick([r.int(0x20), 0x7f, 0x85, 0x2028, 0x20 + r.int(0x5f), 0x100 + r.int(0xff00)]),
        ),
      ).join('');
      const out = oneLine(s);
      expect(hasControl(out), `seed ${seed}`).toBe(false);
      expect(out.replace(/\\u[0-9a-f]{4}/g, '').length, `seed ${seed}`).toBeLessThanOrEqual(s.length);
      if (!hasControl(s)) expect(out).toBe(s);
    }
  });
});
