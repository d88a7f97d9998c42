import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from '../numeric/bits';
import type { DType, LlamaConfig, LlamaWeights } from '../numeric/types';
import { ModelLoadError } from './errors';
import { smallLlamaConfig } from './llama-config';
import { randomLlamaTensors } from './llama-random';
import {
  emptyLlamaWeights,
  llamaModelSummary,
  loadLlamaWeights,
  readLlamaWeights,
  streamLlamaWeights,
} from './llama-weights';
import { parseModelConfigText } from './model-config';
import { type TensorToWrite, writeSafetensors } from './safetensors-write';
import { bytesShard, shardedSource } from './shard-stream';
import { writeSharded } from './shard-write';
import { expectLoadError as loadError } from './testing';
import { bytesSource } from './weight-stream';

const FIXTURES = 'src/model/testdata/llama';

/** Every tensor of the weights by its HF name (the tied head as the embedding). */
function byName(w: LlamaWeights): Map<string, Float32Array> {
  const m = new Map<string, Float32Array>([
    ['model.embed_tokens.weight', w.embedTokens.data],
    ['model.norm.weight', w.norm.data],
    ['lm_head.weight', w.lmHead.data],
  ]);
  w.layers.forEach((l, i) => {
    const p = `model.layers.${i}`;
    m.set(`${p}.input_layernorm.weight`, l.inputLayernorm.data);
    m.set(`${p}.post_attention_layernorm.weight`, l.postAttentionLayernorm.data);
    for (const [k, lin] of [
      ['self_attn.q_proj', l.q],
      ['self_attn.k_proj', l.k],
      ['self_attn.v_proj', l.v],
      ['self_attn.o_proj', l.o],
      ['mlp.gate_proj', l.gate],
      ['mlp.up_proj', l.up],
      ['mlp.down_proj', l.down],
    ] as const) {
      m.set(`${p}.${k}.weight`, lin.weight.data);
      if (lin.bias) m.set(`${p}.${k}.bias`, lin.bias.data);
    }
    if (l.qNorm) m.set(`${p}.self_attn.q_norm.weight`, l.qNorm.data);
    if (l.kNorm) m.set(`${p}.self_attn.k_norm.weight`, l.kNorm.data);
  });
  return m;
}

/** What a value becomes stored as `dtype` and read back. */
function stored(x: number, dtype: DType): number {
  if (dtype === 'F16') return f16BitsToF32(f32ToF16Bits(x));
  if (dtype === 'BF16') return bf16BitsToF32(f32ToBf16Bits(x));
  return Math.fround(x);
}

const FLAVOURS: LlamaConfig[] = [
  smallLlamaConfig({ attentionBias: true, oProjBias: true, mlpBias: true }),
  smallLlamaConfig({ flavour: 'qwen2', attentionBias: true, numKvHeads: 5, tieWordEmbeddings: true }),
  smallLlamaConfig({ flavour: 'qwen3', qkNorm: true, headDim: 12, rotaryDim: 12, numLayers: 3 }),
  smallLlamaConfig({ flavour: 'mistral', slidingWindow: [3, 3] }),
];

describe('Llama-family weights', () => {
  it('loads each committed fixture, whole and streamed, to the same values', async () => {
    const names = readdirSync(FIXTURES);
    expect(names.length).toBeGreaterThanOrEqual(5);
    for (const name of names) {
      const cfg = parseModelConfigText(readFileSync(join(FIXTURES, name, 'config.json'), 'utf8'));
      if (cfg.family !== 'llama') throw new Error(`${name}: not the Llama family`);
      const bytes = new Uint8Array(readFileSync(join(FIXTURES, name, 'model.safetensors')));
      const whole = loadLlamaWeights(cfg, bytes);
      expect(whole.layers).toHaveLength(cfg.numLayers);
      expect(whole.lmHead === whole.embedTokens, name).toBe(cfg.tieWordEmbeddings);
      let n = 0;
      for (const d of byName(whole).values()) n += d.length;
      const summary = llamaModelSummary(cfg).params;
      expect(n - (cfg.tieWordEmbeddings ? cfg.vocabSize * cfg.hiddenSize : 0), name).toBe(summary);
      const streamed = await readLlamaWeights(cfg, bytesSource(bytes, 4093));
      expect(byName(streamed)).toEqual(byName(whole));
    }
  });

  for (const dtype of ['F32', 'F16', 'BF16'] as const) {
    it(`reads every flavour's tensors in ${dtype}, whole, streamed and sharded, to the stored values`, async () => {
      for (const [f, cfg] of FLAVOURS.entries()) {
        const tensors = randomLlamaTensors(cfg, 100 + f, dtype);
        const bytes = writeSafetensors(tensors, { format: 'pt' });
        const whole = loadLlamaWeights(cfg, bytes);
        const got = byName(whole);
        for (const t of tensors) {
          const want = Float32Array.from(t.data, (x) => stored(x, dtype));
          expect(got.get(t.name), `${cfg.flavour} ${t.name}`).toEqual(want);
        }
        expect(got.size).toBe(tensors.length + (cfg.tieWordEmbeddings ? 1 : 0));
        const files = writeSharded(tensors, 5000);
        expect(files.shards.size).toBeGreaterThan(2);
        const src = shardedSource(
          files.index,
          [...files.shards].map(([n, b]) => bytesShard(n, b, 777)),
        );
        expect(byName(await readLlamaWeights(cfg, src))).toEqual(got);
        expect(byName(await readLlamaWeights(cfg, bytesSource(bytes, 333)))).toEqual(got);
      }
    });
  }

  it('accepts a tied head stored equal to the embedding, and ignores old rotary inv_freq buffers', async () => {
    const cfg = smallLlamaConfig({ tieWordEmbeddings: true });
    const tensors = randomLlamaTensors(cfg, 7);
    const embed = tensors.find((t) => t.name === 'model.embed_tokens.weight')!;
    const extra: TensorToWrite[] = [
      { ...embed, name: 'lm_head.weight' },
      {
        name: 'model.layers.0.self_attn.rotary_emb.inv_freq',
        dtype: 'F32',
        shape: [4],
        data: new Float32Array(4),
      },
    ];
    const bytes = writeSafetensors([...tensors, ...extra]);
    const w = loadLlamaWeights(cfg, bytes);
    expect(w.lmHead).toBe(w.embedTokens);
    expect((await readLlamaWeights(cfg, bytesSource(bytes, 100))).lmHead.data).toEqual(embed.data);
  });
});

describe("Llama-family weights: read off the family's steps", () => {
  it("names a random model's tensors as HF's state_dict does, in its order (q/k norms after o_proj)", () => {
    const cfg = smallLlamaConfig({ flavour: 'qwen3', qkNorm: true, attentionBias: true, numLayers: 1 });
    const names = randomLlamaTensors(cfg, 1).map((t) => t.name);
    const attn = (m: string) => [`self_attn.${m}.weight`, `self_attn.${m}.bias`];
    const mlp = (m: string) => [`mlp.${m}.weight`];
    expect(names).toEqual([
      'model.embed_tokens.weight',
      ...[
        'input_layernorm.weight',
        ...attn('q_proj'),
        ...attn('k_proj'),
        ...attn('v_proj'),
        'self_attn.o_proj.weight',
        'self_attn.q_norm.weight',
        'self_attn.k_norm.weight',
        'post_attention_layernorm.weight',
        ...mlp('gate_proj'),
        ...mlp('up_proj'),
        ...mlp('down_proj'),
      ].map((n) => `model.layers.0.${n}`),
      'model.norm.weight',
      'lm_head.weight',
    ]);
    // Each step's weight shape from its width and its input's: o_proj reads the heads' context, q/k norms one head.
    const w = emptyLlamaWeights(cfg).layers[0];
    const { hiddenSize: d, numHeads: H, numKvHeads: KV, headDim: hd, intermediateSize: ff } = cfg;
    expect([w.q.weight.shape, w.k.weight.shape, w.o.weight.shape, w.down.weight.shape]).toEqual([
      [H * hd, d],
      [KV * hd, d],
      [d, H * hd],
      [d, ff],
    ]);
    expect([w.qNorm?.shape, w.k.bias?.shape, w.o.bias]).toEqual([[hd], [KV * hd], null]);
  });
});

describe('Llama-family weights: streamed', () => {
  it('plans first, then hands out every tensor of the skeleton once (a stored tied head only compared), whole or sharded', async () => {
    for (const [f, cfg] of [
      ...FLAVOURS,
      smallLlamaConfig({ tieWordEmbeddings: true, numLayers: 3 }),
    ].entries()) {
      const tensors = randomLlamaTensors(cfg, 300 + f, 'BF16');
      if (cfg.tieWordEmbeddings) {
        const e = tensors.find((t) => t.name === 'model.embed_tokens.weight')!;
        tensors.push({ ...e, name: 'lm_head.weight' });
      }
      const bytes = writeSafetensors(tensors);
      const files = writeSharded(tensors, 4000);
      for (const source of [
        bytesSource(bytes, 999),
        shardedSource(
          files.index,
          [...files.shards].map(([n, b]) => bytesShard(n, b, 611)),
        ),
      ]) {
        const events: string[] = [];
        let skeletonShapes = '';
        let planned: Map<string, unknown> | null = null;
        const progress: number[] = [];
        const plan = await streamLlamaWeights(cfg, source, {
          onPlan: (p) => {
            events.push('plan');
            planned = p.byName;
            skeletonShapes = JSON.stringify(p.skeleton, (k, v) => (k === 'data' ? undefined : v));
          },
          onTensor: (t, name, data) => {
            expect(planned?.get(name)).toBe(t);
            expect(data.length).toBe(t.shape.reduce((a, b) => a * b, 1));
            events.push(name);
          },
          onProgress: (loaded) => progress.push(loaded),
        });
        expect(events[0]).toBe('plan');
        const handed = events.slice(1);
        expect(new Set(handed).size).toBe(handed.length);
        expect(handed.sort()).toEqual(
          tensors
            .map((t) => t.name)
            .filter((n) => n !== plan.tiedHead)
            .sort(),
        );
        expect(progress).toEqual([...progress].sort((a, b) => a - b));
        const empty = JSON.stringify(emptyLlamaWeights(cfg), (k, v) => (k === 'data' ? undefined : v));
        expect(empty, cfg.flavour).toBe(skeletonShapes);
      }
    }
  });
});

describe('Llama-family weights: refusals name the tensor, in one line', () => {
  const cfg = smallLlamaConfig({ flavour: 'qwen2', attentionBias: true });
  const base = randomLlamaTensors(cfg, 3);
  const edit = (f: (ts: TensorToWrite[]) => TensorToWrite[]) =>
    writeSafetensors(f(base.map((t) => ({ ...t }))));
  const cases: [string, LlamaConfig, Uint8Array, string, string][] = [
    [
      'a missing tensor',
      cfg,
      edit((ts) => ts.filter((t) => t.name !== 'model.layers.1.mlp.up_proj.weight')),
      'model.layers.1.mlp.up_proj.weight',
      "missing tensor 'model.layers.1.mlp.up_proj.weight'",
    ],
    [
      'a transposed k_proj',
      cfg,
      edit((ts) =>
        ts.map((t) =>
          t.name === 'model.layers.0.self_attn.k_proj.weight' ? { ...t, shape: [t.shape[1], t.shape[0]] } : t,
        ),
      ),
      'model.layers.0.self_attn.k_proj.weight',
      'has shape [40,8], expected [8,40]',
    ],
    [
      'a missing q bias (qwen2)',
      cfg,
      edit((ts) => ts.filter((t) => t.name !== 'model.layers.0.self_attn.q_proj.bias')),
      'model.layers.0.self_attn.q_proj.bias',
      'missing tensor',
    ],
    [
      'an o_proj bias (qwen2)',
      cfg,
      edit((ts) => [
        ...ts,
        {
          name: 'model.layers.0.self_attn.o_proj.bias',
          dtype: 'F32',
          shape: [40],
          data: new Float32Array(40),
        },
      ]),
      'model.layers.0.self_attn.o_proj.bias',
      "but qwen2's o_proj has no bias",
    ],
    [
      'a q_norm outside qwen3',
      cfg,
      edit((ts) => [
        ...ts,
        {
          name: 'model.layers.0.self_attn.q_norm.weight',
          dtype: 'F32',
          shape: [8],
          data: new Float32Array(8),
        },
      ]),
      'model.layers.0.self_attn.q_norm.weight',
      "q/k norms belong to model_type 'qwen3'",
    ],
    [
      'a layer past the config',
      cfg,
      edit((ts) => [
        ...ts,
        {
          name: 'model.layers.2.input_layernorm.weight',
          dtype: 'F32',
          shape: [40],
          data: new Float32Array(40),
        },
      ]),
      'model.layers.2.input_layernorm.weight',
      'belongs to layer 2 but config.json has num_hidden_layers 2',
    ],
    [
      'no LM head, untied',
      cfg,
      edit((ts) => ts.filter((t) => t.name !== 'lm_head.weight')),
      'lm_head.weight',
      "missing tensor 'lm_head.weight'; config.json has tie_word_embeddings false",
    ],
    [
      'a tied head that differs',
      { ...cfg, tieWordEmbeddings: true },
      edit((ts) => ts),
      'lm_head.weight',
      "differs from 'model.embed_tokens.weight'",
    ],
    [
      'a NaN',
      cfg,
      edit((ts) =>
        ts.map((t) =>
          t.name === 'model.norm.weight'
            ? { ...t, data: Float32Array.from(t.data, (x, i) => (i === 3 ? Number.NaN : x)) }
            : t,
        ),
      ),
      'model.norm.weight',
      'holds 1 non-finite value',
    ],
  ];
  it.each(cases)('refuses %s, whole and streamed', async (_what, c, bytes, key, fragment) => {
    const e = loadError(() => loadLlamaWeights(c, bytes));
    expect(e.key).toBe(key);
    expect(e.message).toContain(fragment);
    expect(e.message).not.toContain('\n');
    const s = await readLlamaWeights(c, bytesSource(bytes, 501)).then(
      () => null,
      (x: unknown) => x,
    );
    expect(s).toBeInstanceOf(ModelLoadError);
    expect((s as ModelLoadError).message).toBe(e.message);
  });
});
