import { describe, expect, it } from 'vitest';
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from '../numeric/bits';
import { mulberry32 } from '../numeric/random';
import type { DType, NeoXConfig } from '../numeric/types';
import { parseConfig } from './config';
import { ModelLoadError } from './errors';
import { type TensorToWrite, writeSafetensors } from './safetensors-write';
import { expectLoadError as loadError } from './testing';
import { loadWeights, modelSummary } from './weights';

// V 11, d 8, H 2 (headDim 4), ff 12, L 2: every dimension distinct so transposed shapes are caught.
const CFG: NeoXConfig = parseConfig({
  vocab_size: 11,
  hidden_size: 8,
  num_attention_heads: 2,
  intermediate_size: 12,
  num_hidden_layers: 2,
  rotary_pct: 0.5,
});

interface Opts {
  head?: 'embed_out' | 'lm_head' | 'none' | 'both';
  attnBias?: boolean;
  dtype?: DType;
  extra?: TensorToWrite[];
  layers?: number;
}

/** The tensors of a GPTNeoXForCausalLM for `cfg`, HF names and shapes, seeded random values. */
function modelTensors(cfg: NeoXConfig, opts: Opts = {}, seed = 1): TensorToWrite[] {
  const r = mulberry32(seed);
  const { vocabSize: V, hiddenSize: d, intermediateSize: ff } = cfg;
  const dtype = opts.dtype ?? 'F32';
  const out: TensorToWrite[] = [];
  const add = (name: string, shape: number[]) => {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = r() * 2 - 1;
    out.push({ name, dtype, shape, data });
  };
  add('gpt_neox.embed_in.weight', [V, d]);
  for (let i = 0; i < (opts.layers ?? cfg.numLayers); i++) {
    const p = `gpt_neox.layers.${i}`;
    for (const ln of ['input_layernorm', 'post_attention_layernorm']) {
      add(`${p}.${ln}.weight`, [d]);
      add(`${p}.${ln}.bias`, [d]);
    }
    add(`${p}.attention.query_key_value.weight`, [3 * d, d]);
    if (opts.attnBias ?? true) add(`${p}.attention.query_key_value.bias`, [3 * d]);
    add(`${p}.attention.dense.weight`, [d, d]);
    if (opts.attnBias ?? true) add(`${p}.attention.dense.bias`, [d]);
    add(`${p}.mlp.dense_h_to_4h.weight`, [ff, d]);
    add(`${p}.mlp.dense_h_to_4h.bias`, [ff]);
    add(`${p}.mlp.dense_4h_to_h.weight`, [d, ff]);
    add(`${p}.mlp.dense_4h_to_h.bias`, [d]);
  }
  add('gpt_neox.final_layer_norm.weight', [d]);
  add('gpt_neox.final_layer_norm.bias', [d]);
  const head = opts.head ?? 'embed_out';
  if (head === 'embed_out' || head === 'both') add('embed_out.weight', [V, d]);
  if (head === 'lm_head' || head === 'both') add('lm_head.weight', [V, d]);
  out.push(...(opts.extra ?? []));
  return out;
}

function byName(ts: TensorToWrite[], name: string): Float32Array {
  const t = ts.find((x) => x.name === name);
  if (t === undefined) throw new Error(`no ${name}`);
  return t.data;
}

/** The same file with its header JSON edited (the data section is kept as is). */
function rewriteHeader(bytes: Uint8Array, edit: (h: Record<string, unknown>) => void): Uint8Array {
  const n = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  edit(header);
  const json = new TextEncoder().encode(JSON.stringify(header));
  const data = bytes.subarray(8 + n);
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setUint32(0, json.length, true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

function replace(ts: TensorToWrite[], name: string, t: Partial<TensorToWrite> | null): TensorToWrite[] {
  return ts.flatMap((x) => (x.name !== name ? [x] : t === null ? [] : [{ ...x, ...t }]));
}

describe('loadWeights', () => {
  it('loads an F32 Pythia-style file into the HF module tree, exactly', () => {
    const ts = modelTensors(CFG);
    const w = loadWeights(CFG, writeSafetensors(ts, { format: 'pt' }));
    expect(w.embedIn.shape).toEqual([11, 8]);
    expect(w.embedIn.data).toEqual(byName(ts, 'gpt_neox.embed_in.weight'));
    expect(w.layers).toHaveLength(2);
    const l1 = w.layers[1];
    expect(l1.inputLayernorm.weight.data).toEqual(byName(ts, 'gpt_neox.layers.1.input_layernorm.weight'));
    expect(l1.postAttentionLayernorm.bias.data).toEqual(
      byName(ts, 'gpt_neox.layers.1.post_attention_layernorm.bias'),
    );
    expect(l1.qkv.weight.shape).toEqual([24, 8]);
    expect(l1.qkv.weight.data).toEqual(byName(ts, 'gpt_neox.layers.1.attention.query_key_value.weight'));
    expect(l1.qkv.bias!.data).toEqual(byName(ts, 'gpt_neox.layers.1.attention.query_key_value.bias'));
    expect(l1.dense.weight.shape).toEqual([8, 8]);
    expect(l1.dense.bias!.data).toEqual(byName(ts, 'gpt_neox.layers.1.attention.dense.bias'));
    expect(l1.fc1.weight.shape).toEqual([12, 8]);
    expect(l1.fc1.weight.data).toEqual(byName(ts, 'gpt_neox.layers.1.mlp.dense_h_to_4h.weight'));
    expect(l1.fc2.weight.shape).toEqual([8, 12]);
    expect(l1.fc2.bias!.data).toEqual(byName(ts, 'gpt_neox.layers.1.mlp.dense_4h_to_h.bias'));
    expect(w.layers[0].fc1.bias!.data).toEqual(byName(ts, 'gpt_neox.layers.0.mlp.dense_h_to_4h.bias'));
    expect(w.finalLayerNorm.weight.data).toEqual(byName(ts, 'gpt_neox.final_layer_norm.weight'));
    expect(w.lmHead.shape).toEqual([11, 8]);
    expect(w.lmHead.data).toEqual(byName(ts, 'embed_out.weight'));
    expect(w.lmHead).not.toBe(w.embedIn);
  });

  it('converts F16 and BF16 files to fp32', () => {
    for (const dtype of ['F16', 'BF16'] as const) {
      const ts = modelTensors(CFG, { dtype });
      const w = loadWeights(CFG, writeSafetensors(ts));
      const src = byName(ts, 'gpt_neox.layers.0.mlp.dense_4h_to_h.weight');
      const want = Float32Array.from(src, (x) =>
        dtype === 'F16' ? f16BitsToF32(f32ToF16Bits(x)) : bf16BitsToF32(f32ToBf16Bits(x)),
      );
      expect(w.layers[0].fc2.weight.data).toEqual(want);
    }
  });

  it('accepts lm_head.weight (current transformers) as the LM head', () => {
    const ts = modelTensors(CFG, { head: 'lm_head' });
    expect(loadWeights(CFG, writeSafetensors(ts)).lmHead.data).toEqual(byName(ts, 'lm_head.weight'));
  });

  it('refuses both heads, and a missing head when untied', () => {
    const both = loadError(() => loadWeights(CFG, writeSafetensors(modelTensors(CFG, { head: 'both' }))));
    expect(both.message).toContain("both 'embed_out.weight' and 'lm_head.weight' are present");
    const none = loadError(() => loadWeights(CFG, writeSafetensors(modelTensors(CFG, { head: 'none' }))));
    expect(none.message).toBe(
      "model.safetensors: missing tensor 'embed_out.weight' (or 'lm_head.weight'); config.json has tie_word_embeddings false",
    );
  });

  it('reuses embed_in when the embeddings are tied', () => {
    const tied = { ...CFG, tieWordEmbeddings: true };
    const w = loadWeights(tied, writeSafetensors(modelTensors(tied, { head: 'none' })));
    expect(w.lmHead).toBe(w.embedIn);
    const ts = modelTensors(tied, { head: 'lm_head' });
    const same = replace(ts, 'lm_head.weight', { data: byName(ts, 'gpt_neox.embed_in.weight') });
    const w2 = loadWeights(tied, writeSafetensors(same));
    expect(w2.lmHead).toBe(w2.embedIn);
    const e = loadError(() => loadWeights(tied, writeSafetensors(ts)));
    expect(e.message).toContain("tensor 'lm_head.weight' differs from 'gpt_neox.embed_in.weight'");
  });

  it('allows absent attention biases only with attention_bias false', () => {
    const noBias = { ...CFG, attentionBias: false };
    const w = loadWeights(noBias, writeSafetensors(modelTensors(noBias, { attnBias: false })));
    expect(w.layers[0].qkv.bias).toBeNull();
    expect(w.layers[1].dense.bias).toBeNull();
    expect(w.layers[0].fc1.bias).not.toBeNull();
    const missing = loadError(() =>
      loadWeights(CFG, writeSafetensors(modelTensors(CFG, { attnBias: false }))),
    );
    expect(missing.message).toBe(
      "model.safetensors: missing tensor 'gpt_neox.layers.0.attention.query_key_value.bias'",
    );
    const extra = loadError(() => loadWeights(noBias, writeSafetensors(modelTensors(noBias))));
    expect(extra.message).toBe(
      "model.safetensors: unexpected tensor 'gpt_neox.layers.0.attention.query_key_value.bias' but config.json has attention_bias false",
    );
  });

  it('ignores the known non-weight buffers, whatever their dtype', () => {
    const mask = {
      name: 'gpt_neox.layers.0.attention.bias',
      dtype: 'F32' as const,
      shape: [1, 1, 4, 4],
      data: new Float32Array(16),
    };
    const bytes = writeSafetensors(
      modelTensors(CFG, {
        extra: [
          mask,
          {
            name: 'gpt_neox.layers.1.attention.masked_bias',
            dtype: 'F32',
            shape: [],
            data: new Float32Array([-1e9]),
          },
          {
            name: 'gpt_neox.layers.1.attention.rotary_emb.inv_freq',
            dtype: 'F32',
            shape: [1],
            data: new Float32Array(1),
          },
          { name: 'gpt_neox.rotary_emb.inv_freq', dtype: 'F32', shape: [1], data: new Float32Array(1) },
        ],
      }),
    );
    expect(loadWeights(CFG, bytes).layers).toHaveLength(2);
    // the causal mask as old checkpoints store it: BOOL (same 16 bytes, new header)
    const boolFile = rewriteHeader(bytes, (h) => {
      h['gpt_neox.layers.0.attention.bias'] = {
        ...(h['gpt_neox.layers.0.attention.bias'] as object),
        dtype: 'BOOL',
        shape: [1, 1, 4, 4, 4],
      };
    });
    expect(loadWeights(CFG, boolFile).layers).toHaveLength(2);
    // ... but only under the buffer names: a BOOL weight is refused
    const boolWeight = rewriteHeader(bytes, (h) => {
      h['gpt_neox.layers.0.attention.bias'] = {
        ...(h['gpt_neox.layers.0.attention.bias'] as object),
        dtype: 'BOOL',
        shape: [1, 1, 4, 4, 4],
      };
      const ln = h['gpt_neox.final_layer_norm.bias'] as { data_offsets: number[] };
      h['gpt_neox.final_layer_norm.bias'] = { ...ln, dtype: 'U8', shape: [32] };
    });
    expect(loadError(() => loadWeights(CFG, boolWeight)).message).toBe(
      "model.safetensors: tensor 'gpt_neox.final_layer_norm.bias' has dtype U8, only F32, F16 and BF16 are supported",
    );
  });

  it('refuses a missing tensor by name', () => {
    for (const name of [
      'gpt_neox.embed_in.weight',
      'gpt_neox.layers.1.mlp.dense_4h_to_h.bias',
      'gpt_neox.final_layer_norm.bias',
    ]) {
      const e = loadError(() =>
        loadWeights(CFG, writeSafetensors(replace(modelTensors(CFG), name, null)), 'pythia.safetensors'),
      );
      expect(e.message).toBe(`pythia.safetensors: missing tensor '${name}'`);
      expect(e.key).toBe(name);
      expect(e.file).toBe('pythia.safetensors');
    }
  });

  it('refuses a wrong shape naming expected and actual', () => {
    const name = 'gpt_neox.layers.0.mlp.dense_h_to_4h.weight';
    const ts = modelTensors(CFG);
    const e = loadError(() => loadWeights(CFG, writeSafetensors(replace(ts, name, { shape: [8, 12] }))));
    expect(e.message).toBe(`model.safetensors: tensor '${name}' has shape [8,12], expected [12,8]`);
    const e2 = loadError(() =>
      loadWeights(CFG, writeSafetensors(replace(ts, 'gpt_neox.final_layer_norm.weight', { shape: [1, 8] }))),
    );
    expect(e2.message).toContain('has shape [1,8], expected [8]');
    const e3 = loadError(() =>
      loadWeights(CFG, writeSafetensors(replace(ts, 'embed_out.weight', { shape: [8, 11] }))),
    );
    expect(e3.message).toContain("tensor 'embed_out.weight' has shape [8,11], expected [11,8]");
  });

  it('refuses a config / weights layer count mismatch', () => {
    const three = modelTensors(CFG, { layers: 3 });
    const e = loadError(() => loadWeights(CFG, writeSafetensors(three)));
    expect(e.message).toMatch(
      /^model\.safetensors: tensor 'gpt_neox\.layers\.2\.[a-z_.]+' belongs to layer 2 but config\.json has num_hidden_layers 2/,
    );
    expect(e.message).toContain('config and weights do not match');
    const e2 = loadError(() => loadWeights({ ...CFG, numLayers: 3 }, writeSafetensors(modelTensors(CFG))));
    expect(e2.message).toBe("model.safetensors: missing tensor 'gpt_neox.layers.2.input_layernorm.weight'");
  });

  it('refuses a config whose dimensions do not match the file', () => {
    const e = loadError(() => loadWeights({ ...CFG, vocabSize: 12 }, writeSafetensors(modelTensors(CFG))));
    expect(e.message).toBe(
      "model.safetensors: tensor 'gpt_neox.embed_in.weight' has shape [11,8], expected [12,8]",
    );
  });

  it('refuses unexpected tensors', () => {
    const extra = { name: 'embed_out.bias', dtype: 'F32' as const, shape: [11], data: new Float32Array(11) };
    const e = loadError(() => loadWeights(CFG, writeSafetensors(modelTensors(CFG, { extra: [extra] }))));
    expect(e.message).toBe(
      "model.safetensors: unexpected tensor 'embed_out.bias' (not part of a GPT-NeoX causal LM)",
    );
  });

  it('passes header errors through', () => {
    const bytes = writeSafetensors(modelTensors(CFG));
    expect(loadError(() => loadWeights(CFG, bytes.subarray(0, 5))).message).toContain('too short');
    expect(loadError(() => loadWeights(CFG, bytes.subarray(0, bytes.length - 1))).message).toContain(
      'past the end of the data section',
    );
  });

  it('counts parameters like the module tree', () => {
    const ts = modelTensors(CFG);
    const n = ts.reduce((a, t) => a + t.data.length, 0);
    expect(modelSummary(CFG)).toEqual({ params: n, bytesF32: 4 * n });
    const noBias = { ...CFG, attentionBias: false, tieWordEmbeddings: true };
    const n2 = modelTensors(noBias, { attnBias: false, head: 'none' }).reduce((a, t) => a + t.data.length, 0);
    expect(modelSummary(noBias).params).toBe(n2);
    // Pythia-70M: 70,426,624 parameters (embed_in and embed_out untied)
    const p70 = parseConfig({
      vocab_size: 50304,
      hidden_size: 512,
      num_hidden_layers: 6,
      num_attention_heads: 8,
      intermediate_size: 2048,
    });
    expect(modelSummary(p70).params).toBe(70_426_624);
  });
});

describe('loadWeights: mutation fuzz', () => {
  it('either loads or throws ModelLoadError on 2000 mutated files', () => {
    const seed = Number(process.env.FUZZ_SEED ?? 20240611);
    const r = mulberry32(seed);
    const base = writeSafetensors(modelTensors(CFG, { dtype: 'F16' }), { format: 'pt' });
    const headerEnd = 8 + new DataView(base.buffer).getUint32(0, true);
    const header = JSON.parse(new TextDecoder().decode(base.subarray(8, headerEnd)));
    const t0 = performance.now();
    let loaded = 0;
    let refused = 0;
    for (let i = 0; i < 2000; i++) {
      const f = base.slice();
      const kind = i % 6;
      let what: string;
      let bytes: Uint8Array = f;
      if (kind === 0 || kind === 1) {
        // bit flips, mostly in the header
        const flips = 1 + Math.floor(r() * 4);
        const at: number[] = [];
        for (let k = 0; k < flips; k++) {
          const p = r() < 0.8 ? 8 + Math.floor(r() * (headerEnd - 8)) : Math.floor(r() * f.length);
          f[p] ^= 1 << Math.floor(r() * 8);
          at.push(p);
        }
        what = `bit flips at ${at.join(',')}`;
      } else if (kind === 2) {
        const n = Math.floor(r() * f.length);
        bytes = f.subarray(0, n);
        what = `truncated to ${n}`;
      } else if (kind === 3) {
        const dv = new DataView(f.buffer);
        const choices = [headerEnd - 8 + Math.floor(r() * 17) - 8, Math.floor(r() * 2 ** 32), 0, f.length];
        const n = choices[Math.floor(r() * choices.length)];
        dv.setUint32(0, Math.max(0, n) >>> 0, true);
        if (r() < 0.2) dv.setUint32(4, Math.floor(r() * 2 ** 32), true);
        what = `header length set to ${dv.getUint32(4, true)}:${dv.getUint32(0, true)}`;
      } else if (kind === 5) {
        // a structured edit: one field of one entry set to an odd JSON value
        const pool: unknown[] = [
          null,
          -1,
          0,
          1.5,
          2 ** 53,
          1e300,
          'F32',
          'BOOL',
          'F64',
          '8',
          true,
          [],
          [0],
          [0, 0],
          [-1, 4],
          [1, 2, 3],
          {},
          [[1]],
        ];
        const names = Object.keys(header);
        const name = names[Math.floor(r() * names.length)];
        const field = ['dtype', 'shape', 'data_offsets', 'extra'][Math.floor(r() * 4)];
        const value = pool[Math.floor(r() * pool.length)];
        bytes = rewriteHeader(base, (h) => {
          const entry = h[name];
          if (entry !== null && typeof entry === 'object') (entry as Record<string, unknown>)[field] = value;
          else h[name] = value;
        });
        what = `${name}.${field} = ${JSON.stringify(value)}`;
      } else {
        // a digit or punctuation of the header JSON replaced by another
        const pool = '0123456789[]{},:"-.e ';
        const p = 8 + Math.floor(r() * (headerEnd - 8));
        f[p] = pool.charCodeAt(Math.floor(r() * pool.length));
        what = `header byte ${p} set to '${String.fromCharCode(f[p])}'`;
      }
      try {
        loadWeights(CFG, bytes);
        loaded++;
      } catch (e) {
        if (!(e instanceof ModelLoadError)) {
          throw new Error(
            `fuzz seed ${seed}, case ${i} (${what}): threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`,
          );
        }
        if (e.message.includes('\n'))
          throw new Error(`fuzz seed ${seed}, case ${i} (${what}): multi-line message`);
        refused++;
      }
    }
    const ms = performance.now() - t0;
    expect(refused, `seed ${seed}`).toBeGreaterThan(800);
    expect(loaded, `seed ${seed}`).toBeGreaterThan(20);
    expect(ms, `seed ${seed}`).toBeLessThan(5000);
  });
});
