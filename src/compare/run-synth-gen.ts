// Test support: runs of a greedy generation made without PyTorch — a prefill over the prompt, then one decode step per
// new token that reads a real KV cache (keys after rotary, values), every op's rows recorded in f32 as
// `dump_generation` records them (docs/RUNS.md, "Runs of a generation"). A decode-only fault is written here the way
// a decode kernel commits it (a cache stored in fp16, a window that evicts, a cache entry lost, the new key stored
// unrotated, another layer's cache, a decode kernel without its bias …), independently of the cause library's
// variants, so that the why is tested against faults it did not plant itself.
import { embeddingF64 } from '../kernels/cpu/embedding';
import { gelu } from '../kernels/cpu/gelu';
import { layerNormF64 } from '../kernels/cpu/layernorm';
import { linearF64 } from '../kernels/cpu/linear';
import { rotaryAngleTable } from '../kernels/cpu/rotary-angles';
import { type TensorToWrite, writeSafetensors } from '../model/safetensors-write';
import { roundTo } from '../numeric/round';
import type { LinearWeights, ModelWeights, NeoXConfig } from '../numeric/types';

/** A fault of the decode steps (rows from the prefill's length on) at one layer. */
export type GenFault =
  | { kind: 'gelu-tanh'; layer: number }
  | { kind: 'kv-fp16'; layer: number }
  | { kind: 'drop-position'; layer: number; position: number }
  | { kind: 'rotary-position'; layer: number; offset: number }
  | { kind: 'rotary-off-k'; layer: number }
  | { kind: 'bias-dropped'; layer: number }
  | { kind: 'scale'; layer: number; scale: number }
  | { kind: 'residual-term'; layer: number }
  | { kind: 'other-layer-cache'; layer: number; from: number }
  | { kind: 'window'; layer: number; window: number }
  | { kind: 'acc-fp16'; layer: number }
  // faults of the prompt, on some rows only
  | { kind: 'rows-input-fp16'; layer: number; from: number; to: number }
  | { kind: 'rows-output-fp16'; layer: number; from: number; to: number }
  | { kind: 'rows-gelu-tanh'; layer: number; from: number; to: number }
  /** dense_4h_to_h's output added to the residual from a bf16 copy (its module's output stays f32). */
  | { kind: 'rows-term-bf16'; layer: number; from: number; to: number }
  /** post_attention_layernorm reading its input through fp16 and writing fp16, in fp32 between. */
  | { kind: 'rows-ln2-fp16'; layer: number; from: number; to: number };

export interface GenSynthOptions {
  fault?: GenFault;
  /** Decode step s (1-based) feeds `id` instead of the greedy choice of step s − 1 (a text that parts there). */
  force?: { step: number; id: number };
  /** Products accumulated in f32 (a GPU's rounding), not exactly: a benign twin. */
  f32?: boolean;
  label?: string;
}

export interface GenSynth {
  bytes: Uint8Array;
  tokens: number[];
  generated: number[];
  prefill: number;
}

const f32 = (v: ArrayLike<number>) => Float64Array.from(Float32Array.from(v));

/** x [R, K] W^T + b with the running sums in f32 (each step rounded) or fp16 (each step rounded, the bias after). */
function productRounded(
  x: Float64Array,
  R: number,
  K: number,
  lw: LinearWeights,
  N: number,
  round: (s: number) => number,
  bias = true,
): Float64Array {
  const W = lw.weight.data;
  const b = lw.bias?.data;
  const out = new Float64Array(R * N);
  for (let r = 0; r < R; r++)
    for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < K; k++) s = round(s + x[r * K + k] * W[n * K + k]);
      out[r * N + n] = Math.fround(s + (bias && b ? b[n] : 0));
    }
  return out;
}

/**
 * A greedy generation of `n` new ids after `prompt` on the model `w`, recorded as a run of a generation (rows 0 … P−1
 * the prefill, row P + s − 1 decode step s); the fault, if any, acts at its layer on the decode steps (or, for the
 * prompt's faults, on its rows of the prefill).
 */
export function synthGeneration(
  cfg: NeoXConfig,
  w: ModelWeights,
  prompt: number[],
  n: number,
  o: GenSynthOptions = {},
): GenSynth {
  if (!cfg.useParallelResidual)
    throw new Error('synthGeneration: a parallel-residual model only (GPT-NeoX / Pythia)');
  const d = cfg.hiddenSize;
  const H = cfg.numHeads;
  const hd = cfg.headDim;
  const ff = cfg.intermediateSize;
  const L = cfg.numLayers;
  const P = prompt.length;
  const T = P + n - 1;
  const half = cfg.rotaryNdims / 2;
  const taps = new Map<string, Float32Array>();
  const rec = (name: string, width: number, row0: number, v: ArrayLike<number>) => {
    let t = taps.get(name);
    if (!t) {
      t = new Float32Array(T * width);
      taps.set(name, t);
    }
    t.set(Float32Array.from(v), row0 * width);
  };
  // The cache, per layer: keys after rotary and values, [H][T·hd], as the decode reads them.
  const cacheK = Array.from({ length: L }, () => new Float64Array(H * T * hd));
  const cacheV = Array.from({ length: L }, () => new Float64Array(H * T * hd));
  const f = o.fault;
  const tokens = [...prompt];
  const generated: number[] = [];
  const sum = o.f32 ? Math.fround : (s: number) => s;

  // Rows [a, b): the prefill (a = 0) or one decode step.
  const chunk = (a: number, b: number): number => {
    const R = b - a;
    const decode = a >= P;
    const at = (i: number) => f && f.layer === i && (decode || f.kind.startsWith('rows-'));
    const inRows = (r: number) =>
      f && 'to' in f && f.kind.startsWith('rows-') ? a + r >= f.from && a + r < f.to : true;
    const lin = (x: Float64Array, K: number, lw: LinearWeights, N: number, bias = true) =>
      o.f32
        ? productRounded(x, R, K, lw, N, Math.fround, bias)
        : linearF64(x, R, K, lw.weight.data, bias ? (lw.bias?.data ?? null) : null, N);
    let x = f32(embeddingF64(w.embedIn.data, d, tokens.slice(a, b)));
    rec('gpt_neox.embed_in:out', d, a, x);
    for (let i = 0; i < L; i++) {
      const lw = w.layers[i];
      const fi = at(i) ? f : undefined;
      const ln1 = f32(
        layerNormF64(x, R, d, lw.inputLayernorm.weight.data, lw.inputLayernorm.bias.data, cfg.layerNormEps),
      );
      const qkv = f32(lin(ln1, d, lw.qkv, 3 * d));
      // Rotary at each row's position (a decode kernel's wrong position: the fault's offset).
      const pos = Array.from(
        { length: R },
        (_, r) => a + r + (fi?.kind === 'rotary-position' ? fi.offset : 0),
      );
      const theta = rotaryAngleTable(R, cfg.rotaryNdims, cfg.rotaryBase, 'hf-fp32', pos);
      const q = new Float64Array(H * R * hd);
      for (let r = 0; r < R; r++)
        for (let h = 0; h < H; h++) {
          const src = (r * H + h) * 3 * hd;
          const qo = (h * R + r) * hd;
          const ko = (h * T + a + r) * hd;
          for (let e = 0; e < hd; e++) {
            q[qo + e] = qkv[src + e];
            cacheK[i][ko + e] = qkv[src + hd + e];
            cacheV[i][ko + e] = qkv[src + 2 * hd + e];
          }
          for (let j = 0; j < half; j++) {
            const c = Math.cos(theta[r * half + j]);
            const s = Math.sin(theta[r * half + j]);
            const [q1, q2] = [q[qo + j], q[qo + j + half]];
            q[qo + j] = q1 * c - q2 * s;
            q[qo + j + half] = q2 * c + q1 * s;
            if (fi?.kind === 'rotary-off-k') continue; // the new key stored before its rotation
            const [k1, k2] = [cacheK[i][ko + j], cacheK[i][ko + j + half]];
            cacheK[i][ko + j] = k1 * c - k2 * s;
            cacheK[i][ko + j + half] = k2 * c + k1 * s;
          }
        }
      // The keys and values this step reads: its layer's cache (another's, under that fault), as stored.
      const src = fi?.kind === 'other-layer-cache' ? fi.from : i;
      const read = (c: Float64Array, j: number) => (fi?.kind === 'kv-fp16' ? roundTo('fp16', c[j]) : c[j]);
      const scale = fi?.kind === 'scale' ? fi.scale : 1 / Math.sqrt(hd);
      const ctx = new Float64Array(R * d);
      const p = new Float64Array(T);
      for (let r = 0; r < R; r++) {
        const t = a + r;
        const sees = (j: number) =>
          !(fi?.kind === 'drop-position' && j === fi.position) &&
          !(fi?.kind === 'window' && j <= t - fi.window);
        for (let h = 0; h < H; h++) {
          let max = Number.NEGATIVE_INFINITY;
          for (let j = 0; j <= t; j++) {
            if (!sees(j)) continue;
            let dot = 0;
            for (let e = 0; e < hd; e++)
              dot += q[(h * R + r) * hd + e] * read(cacheK[src], (h * T + j) * hd + e);
            p[j] = dot * scale;
            max = Math.max(max, p[j]);
          }
          let z = 0;
          for (let j = 0; j <= t; j++) if (sees(j)) z += Math.exp(p[j] - max);
          for (let j = 0; j <= t; j++) {
            if (!sees(j)) continue;
            const pj = Math.exp(p[j] - max) / z;
            for (let e = 0; e < hd; e++)
              ctx[r * d + h * hd + e] += pj * read(cacheV[src], (h * T + j) * hd + e);
          }
        }
      }
      const ctx32 = f32(ctx);
      const attn = f32(lin(ctx32, d, lw.dense, d, fi?.kind !== 'bias-dropped'));
      const lnIn =
        fi?.kind === 'rows-ln2-fp16'
          ? x.map((v, j) => (inRows(Math.floor(j / d)) ? roundTo('fp16', v) : v))
          : x;
      let ln2 = f32(
        layerNormF64(
          lnIn,
          R,
          d,
          lw.postAttentionLayernorm.weight.data,
          lw.postAttentionLayernorm.bias.data,
          cfg.layerNormEps,
        ),
      );
      if (fi?.kind === 'rows-ln2-fp16')
        ln2 = ln2.map((v, j) => (inRows(Math.floor(j / d)) ? roundTo('fp16', v) : v));
      // dense_h_to_4h: its input read through fp16 on some rows; a decode GEMV with an fp16 accumulator.
      const fc1In =
        fi?.kind === 'rows-input-fp16'
          ? ln2.map((v, j) => (inRows(Math.floor(j / d)) ? roundTo('fp16', v) : v))
          : ln2;
      const fc1 = f32(
        fi?.kind === 'acc-fp16'
          ? productRounded(ln2, R, d, lw.fc1, ff, (s) => roundTo('fp16', s))
          : lin(fc1In, d, lw.fc1, ff),
      );
      const act = f32(
        fc1.map((v, j) =>
          fi?.kind === 'gelu-tanh' || (fi?.kind === 'rows-gelu-tanh' && inRows(Math.floor(j / ff)))
            ? 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v * v * v)))
            : gelu(v),
        ),
      );
      let mlp = f32(lin(act, ff, lw.fc2, d));
      if (fi?.kind === 'rows-output-fp16')
        mlp = mlp.map((v, j) => (inRows(Math.floor(j / d)) ? roundTo('fp16', v) : v));
      const term = (j: number) =>
        fi?.kind === 'rows-term-bf16' && inRows(Math.floor(j / d)) ? roundTo('bf16', mlp[j]) : mlp[j];
      const out = f32(x.map((v, j) => sum(sum(term(j) + (fi?.kind === 'residual-term' ? 0 : attn[j])) + v)));
      const pre = `gpt_neox.layers.${i}`;
      rec(`${pre}.input_layernorm:out`, d, a, ln1);
      rec(`${pre}.attention.query_key_value:out`, 3 * d, a, qkv);
      rec(`${pre}.attention.dense:in`, d, a, ctx32);
      rec(`${pre}.attention.dense:out`, d, a, attn);
      rec(`${pre}.post_attention_layernorm:out`, d, a, ln2);
      rec(`${pre}.mlp.dense_h_to_4h:out`, ff, a, fc1);
      rec(`${pre}.mlp.act:out`, ff, a, act);
      rec(`${pre}.mlp.dense_4h_to_h:out`, d, a, mlp);
      rec(`${pre}:out`, d, a, out);
      x = out;
    }
    const fn = f32(
      layerNormF64(x, R, d, w.finalLayerNorm.weight.data, w.finalLayerNorm.bias.data, cfg.layerNormEps),
    );
    const logits = f32(linearF64(fn, R, d, w.lmHead.data, null, cfg.vocabSize));
    rec('gpt_neox.final_layer_norm:out', d, a, fn);
    rec('embed_out:out', cfg.vocabSize, a, logits);
    let best = 0;
    const last = (R - 1) * cfg.vocabSize;
    for (let v = 1; v < cfg.vocabSize; v++) if (logits[last + v] > logits[last + best]) best = v;
    return best;
  };

  let next = chunk(0, P);
  for (let s = 1; s <= n; s++) {
    const id = o.force?.step === s ? o.force.id : next;
    generated.push(id);
    if (s === n) break;
    tokens.push(id);
    next = chunk(P + s - 1, P + s);
  }
  const tensors: TensorToWrite[] = [...taps].map(([name, data]) => ({
    name,
    dtype: 'F32',
    shape: [T, data.length / T],
    data,
  }));
  const bytes = writeSafetensors(tensors, {
    tokens: JSON.stringify(tokens),
    prefill: String(P),
    generated: JSON.stringify(generated),
    dtype: 'float32',
    ...(o.label ? { label: o.label } : {}),
  });
  return { bytes, tokens, generated, prefill: P };
}
