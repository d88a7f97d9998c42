// Weights on the GPU, in a structure named like Hugging Face's module tree
// (layers[3].attention.qkv.weight, …). Built once when a model loads.
import { uploadBuffer } from '../gpu/readback';
import { f32ToF16Bits } from '../model/safetensors';
import type { LinearWeights, ModelWeights, NeoXConfig, NormWeights } from '../model/types';

export interface GpuLinear {
  weight: GPUBuffer; // [out, in]
  bias: GPUBuffer | null; // [out]
}

export interface GpuNorm {
  weight: GPUBuffer; // [d]
  bias: GPUBuffer; // [d]
}

export interface GpuLayer {
  inputLayernorm: GpuNorm;
  postAttentionLayernorm: GpuNorm;
  attention: { qkv: GpuLinear; dense: GpuLinear };
  mlp: { denseHTo4h: GpuLinear; dense4hToH: GpuLinear };
}

/** Rows [row0, row0 + rows) of a [V, d] matrix, in one buffer (a large vocabulary is split across several). */
export interface RowChunk {
  buffer: GPUBuffer; // [rows, d]
  row0: number;
  rows: number;
}

export interface GpuModel {
  cfg: NeoXConfig;
  embedIn: RowChunk[]; // [V, d] in row chunks
  layers: GpuLayer[];
  finalLayerNorm: GpuNorm;
  lmHead: RowChunk[]; // [V, d] in row chunks (the same chunks as embedIn when tied)
  /** Large weight matrices stored as packed f16 on the GPU (LayerNorm parameters and biases stay f32). */
  weightsF16: boolean;
  /** A 16-byte buffer bound where a kernel's optional input is absent. */
  dummy: GPUBuffer;
  bytes: number;
  destroy(): void;
}

/** Row granule of chunks and pieces: 128 rows of f32 or f16 start on the 256-byte binding-offset alignment. */
export const ROW_GRANULE = 128;

/**
 * Rows per chunk of a [V, d] matrix of `bytesPerElement` so that a chunk fits one storage binding of
 * `maxBindingBytes`: a multiple of ROW_GRANULE, or all V rows when they fit.
 */
export function chunkRows(V: number, d: number, maxBindingBytes: number, bytesPerElement = 4): number {
  if (V * d * bytesPerElement <= maxBindingBytes) return V;
  const rows = Math.floor(maxBindingBytes / (bytesPerElement * d) / ROW_GRANULE) * ROW_GRANULE;
  if (rows < ROW_GRANULE) {
    throw new Error(`hidden size ${d} is too large for a ${maxBindingBytes}-byte storage binding`);
  }
  return rows;
}

/** Packs f32 values (exactly representable in f16: an fp16 checkpoint) two per u32, element i in half i & 1. */
export function packF16(data: Float32Array): Uint32Array {
  const out = new Uint32Array(Math.ceil(data.length / 2));
  for (let i = 0; i < data.length; i += 2) {
    const lo = f32ToF16Bits(data[i]);
    const hi = i + 1 < data.length ? f32ToF16Bits(data[i + 1]) : 0;
    out[i >> 1] = (lo | (hi << 16)) >>> 0;
  }
  return out;
}

/**
 * Uploads the weights. With `weightsF16` the large matrices (linears, embedding, LM head) are stored as packed
 * f16 — exact for an fp16 checkpoint, half the memory — and the LayerNorm parameters and biases stay f32.
 */
export function uploadModel(
  device: GPUDevice,
  cfg: NeoXConfig,
  w: ModelWeights,
  maxBindingBytes: number,
  weightsF16 = false,
): GpuModel {
  const made: GPUBuffer[] = [];
  let bytes = 0;
  const bpe = weightsF16 ? 2 : 4;
  const up = (data: Float32Array, label: string, packed = false) => {
    const words = packed ? packF16(data) : data;
    if (words.byteLength > maxBindingBytes) {
      throw new Error(
        `${label} needs ${words.byteLength} bytes, more than one storage binding allows (${maxBindingBytes})`,
      );
    }
    const b = uploadBuffer(device, words, label);
    made.push(b);
    bytes += b.size;
    return b;
  };
  const norm = (n: NormWeights, label: string): GpuNorm => ({
    weight: up(n.weight.data, `${label}.weight`),
    bias: up(n.bias.data, `${label}.bias`),
  });
  const lin = (l: LinearWeights, label: string): GpuLinear => ({
    weight: up(l.weight.data, `${label}.weight`, weightsF16),
    bias: l.bias ? up(l.bias.data, `${label}.bias`) : null,
  });
  const chunks = (data: Float32Array, label: string): RowChunk[] => {
    const { vocabSize: V, hiddenSize: d } = cfg;
    const rows = chunkRows(V, d, maxBindingBytes, bpe);
    const out: RowChunk[] = [];
    for (let row0 = 0; row0 < V; row0 += rows) {
      const n = Math.min(rows, V - row0);
      out.push({
        buffer: up(data.subarray(row0 * d, (row0 + n) * d), `${label}[${out.length}]`, weightsF16),
        row0,
        rows: n,
      });
    }
    return out;
  };
  try {
    const embedIn = chunks(w.embedIn.data, 'embed_in');
    const layers = w.layers.map((l, i) => ({
      inputLayernorm: norm(l.inputLayernorm, `layers.${i}.input_layernorm`),
      postAttentionLayernorm: norm(l.postAttentionLayernorm, `layers.${i}.post_attention_layernorm`),
      attention: {
        qkv: lin(l.qkv, `layers.${i}.attention.query_key_value`),
        dense: lin(l.dense, `layers.${i}.attention.dense`),
      },
      mlp: {
        denseHTo4h: lin(l.fc1, `layers.${i}.mlp.dense_h_to_4h`),
        dense4hToH: lin(l.fc2, `layers.${i}.mlp.dense_4h_to_h`),
      },
    }));
    const finalLayerNorm = norm(w.finalLayerNorm, 'final_layer_norm');
    const lmHead = w.lmHead.data === w.embedIn.data ? embedIn : chunks(w.lmHead.data, 'embed_out');
    const dummy = up(new Float32Array(4), 'dummy');
    return {
      cfg,
      embedIn,
      layers,
      finalLayerNorm,
      lmHead,
      dummy,
      weightsF16,
      bytes,
      destroy: () => {
        for (const b of made) b.destroy();
        made.length = 0;
      },
    };
  } catch (e) {
    for (const b of made) b.destroy();
    throw e;
  }
}
