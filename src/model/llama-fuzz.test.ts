// Seeded fuzzing of Llama-family checkpoints: random byte flips, truncations and shape lies in a small random
// model's safetensors file. Each case is loaded or refused with one ModelLoadError on one line — never another
// error, never a half-loaded model — and the whole-file and streamed readers agree on which. 200 seeds; a failure
// names its seed (`FUZZ_SEED=<seed>` replays it).
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../numeric/random';
import type { LlamaConfig, LlamaWeights } from '../numeric/types';
import { ModelLoadError } from './errors';
import { smallLlamaConfig } from './llama-config';
import { randomLlamaTensors } from './llama-random';
import { loadLlamaWeights, readLlamaWeights } from './llama-weights';
import { writeSafetensors } from './safetensors-write';
import { bytesSource } from './weight-stream';

const CASES = 200;
const REPLAY = process.env.FUZZ_SEED === undefined ? null : Number(process.env.FUZZ_SEED);
const SEEDS = REPLAY !== null ? [REPLAY] : Array.from({ length: CASES }, (_, i) => 0x4c000000 + i);

function mutate(seed: number): { cfg: LlamaConfig; bytes: Uint8Array; what: string } {
  const r = mulberry32(seed);
  const int = (n: number) => Math.floor(r() * n);
  const flavour = (['llama', 'qwen2', 'qwen3', 'mistral'] as const)[int(4)];
  const cfg = smallLlamaConfig({
    flavour,
    numLayers: 1 + int(2),
    attentionBias: flavour === 'qwen2',
    qkNorm: flavour === 'qwen3',
    tieWordEmbeddings: r() < 0.3,
  });
  const tensors = randomLlamaTensors(cfg, seed, (['F32', 'F16', 'BF16'] as const)[int(3)]);
  const bytes = writeSafetensors(tensors, { format: 'pt' });
  const kind = int(4);
  if (kind === 0) {
    const n = 1 + int(bytes.length - 1);
    return { cfg, bytes: bytes.slice(0, n), what: `truncated to ${n}` };
  }
  const out = bytes.slice();
  const headerLen = Number(new DataView(out.buffer).getBigUint64(0, true));
  if (kind === 1) {
    // A byte of the JSON header changed.
    const at = 8 + int(headerLen);
    out[at] = int(256);
    return { cfg, bytes: out, what: `header byte ${at}` };
  }
  if (kind === 2) {
    // A byte of the data changed (may make a NaN or an Inf: refused; else a value changed: loaded).
    const at = 8 + headerLen + int(out.length - 8 - headerLen);
    out[at] = int(256);
    return { cfg, bytes: out, what: `data byte ${at}` };
  }
  // The config lies: one size off by one.
  const key = (['vocabSize', 'hiddenSize', 'intermediateSize', 'numLayers'] as const)[int(4)];
  const lie = { ...cfg, [key]: cfg[key] + 1 };
  if (key === 'numLayers') lie.slidingWindow = [...cfg.slidingWindow, null];
  return { cfg: lie, bytes, what: `config ${key} + 1` };
}

function outcome(fn: () => LlamaWeights): string {
  try {
    const w = fn();
    for (const l of w.layers) expect(l.q.weight.data.length).toBe(l.q.weight.shape[0] * l.q.weight.shape[1]);
    return 'loaded';
  } catch (e) {
    if (!(e instanceof ModelLoadError)) throw e;
    expect(e.message).not.toMatch(/[\n\r\u2028\u2029]/);
    return 'refused';
  }
}

describe('Llama-family checkpoints, fuzzed', () => {
  it(`loads or refuses in one line, whole and streamed alike (${SEEDS.length} seeds)`, async () => {
    const counts = { loaded: 0, refused: 0 };
    for (const seed of SEEDS) {
      const { cfg, bytes, what } = mutate(seed);
      const msg = `FUZZ_SEED=${seed} (${what})`;
      let whole: string;
      try {
        whole = outcome(() => loadLlamaWeights(cfg, bytes));
      } catch (e) {
        throw new Error(`${msg}: ${String(e)}`);
      }
      let streamed: string;
      try {
        streamed = await readLlamaWeights(cfg, bytesSource(bytes, 257)).then(
          (w) => outcome(() => w),
          (e: unknown) =>
            outcome(() => {
              throw e;
            }),
        );
      } catch (e) {
        throw new Error(`${msg} (streamed): ${String(e)}`);
      }
      expect(streamed, msg).toBe(whole);
      counts[whole as 'loaded' | 'refused']++;
    }
    if (REPLAY === null) {
      expect(counts.refused).toBeGreaterThan(50);
      expect(counts.loaded).toBeGreaterThan(10);
    }
  });
});
