import { describe, expect, it } from 'vitest';
import { type FamilyWeights, opForward } from '../kernels/cpu/op-forward';
import { parseConfigText } from '../model/config';
import { smallLlamaConfig } from '../model/llama-config';
import { randomLlamaTensors } from '../model/llama-random';
import { loadLlamaWeights } from '../model/llama-weights';
import { randomModelFiles } from '../model/random-model';
import { writeSafetensors } from '../model/safetensors-write';
import { loadWeights } from '../model/weights';
import { mulberry32 } from '../numeric/random';
import type { ModelConfig } from '../numeric/types';
import { familyOf, layerSteps } from './families';
import { headsOf, slotWidth } from './widths';

/** Every slot the fp64 forward writes holds T · slotWidth(its step's width) values. */
function checkTaps(cfg: ModelConfig, w: FamilyWeights, tokens: number[], msg: string): void {
  const taps = new Map<string, Float64Array>();
  opForward(cfg, w, tokens, taps);
  const T = tokens.length;
  const spec = familyOf(cfg);
  for (const s of [spec.embed, spec.finalNorm, spec.lmHead])
    expect(taps.get(s.slot)?.length, `${msg} ${s.slot}`).toBe(T * slotWidth(cfg, s.width));
  for (let i = 0; i < cfg.numLayers; i++)
    for (const s of layerSteps(spec, cfg)) {
      const tap = taps.get(`layers.${i}.${s.slot}`);
      expect(tap?.length, `${msg} layers.${i}.${s.slot} (${s.width})`).toBe(T * slotWidth(cfg, s.width));
    }
}

describe('the slot widths (ops/widths.ts), against what the fp64 forward writes', () => {
  it('gives every Llama-family slot its width: GQA, MQA, MHA, an explicit head_dim, q/k norms (30 seeds)', () => {
    for (let seed = 1; seed <= 30; seed++) {
      const r = mulberry32(seed);
      const kv = 1 + Math.floor(r() * 3);
      const numHeads = kv * (1 + Math.floor(r() * 3));
      const headDim = 2 * (2 + Math.floor(r() * 4)); // H · hd need not be d
      const cfg = smallLlamaConfig({
        numHeads,
        numKvHeads: kv,
        headDim,
        rotaryDim: headDim,
        hiddenSize: 12 + Math.floor(r() * 20),
        intermediateSize: 10 + Math.floor(r() * 20),
        vocabSize: 20 + Math.floor(r() * 30),
        qkNorm: r() < 0.5,
        numLayers: 1,
      });
      const w = loadLlamaWeights(cfg, writeSafetensors(randomLlamaTensors(cfg, seed)));
      const tokens = Array.from({ length: 2 + Math.floor(r() * 6) }, () => Math.floor(r() * cfg.vocabSize));
      const msg = `seed ${seed} H ${numHeads} KV ${kv} hd ${headDim}`;
      checkTaps(cfg, w, tokens, msg);
      expect(headsOf(cfg, 'kv'), msg).toBe(kv);
      expect(headsOf(cfg, 'kv_heads'), msg).toBe(kv);
      expect(headsOf(cfg, 'q_heads'), msg).toBe(numHeads);
    }
  });

  it("gives every GPT-NeoX slot its width (the KV heads are the query heads; the fused QKV's 3 · d)", () => {
    for (let seed = 1; seed <= 10; seed++) {
      const r = mulberry32(seed);
      const heads = 2 + Math.floor(r() * 3);
      const spec = {
        vocab: 23 + Math.floor(r() * 20),
        d: heads * 2 * (1 + Math.floor(r() * 3)),
        layers: 1,
        heads,
        ff: 10 + Math.floor(r() * 20),
        rotaryPct: 1,
        parallel: seed % 2 === 0,
      };
      const files = randomModelFiles(spec, seed);
      const cfg = parseConfigText(files.config);
      const tokens = Array.from({ length: 2 + Math.floor(r() * 6) }, () => Math.floor(r() * spec.vocab));
      checkTaps(cfg, loadWeights(cfg, files.weights), tokens, `seed ${seed} ${JSON.stringify(spec)}`);
      expect(headsOf(cfg, 'kv')).toBe(heads);
      expect(slotWidth(cfg, 'qkv')).toBe(3 * spec.d);
    }
  });

  it('refuses the heads of a width not laid out in heads, in one line', () => {
    expect(() => headsOf(smallLlamaConfig(), 'hidden')).toThrow(
      "a slot of width 'hidden' is not laid out in heads",
    );
  });
});
