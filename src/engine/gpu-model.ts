// Weights on the GPU, in a structure named like Hugging Face's module tree
// (layers[3].attention.qkv.weight, …). Built once when a model loads.
import type { BufferRef } from '../gpu/pipelines';
import { readBuffer } from '../gpu/readback';
import { f16BitsToF32, f32ToF16Bits } from '../numeric/bits';
import type {
  LayerWeights,
  LinearWeights,
  ModelWeights,
  NeoXConfig,
  NormWeights,
  Tensor,
} from '../numeric/types';

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

/** Where one CPU tensor's values go: `count` elements from element `from` of the tensor, into `buffer`. */
export interface WeightTarget {
  buffer: GPUBuffer;
  from: number;
  count: number;
  /** Stored as packed f16 (two per u32). */
  f16: boolean;
  label: string;
}

/** A model's buffers made, not yet filled: `targets` says where each tensor of the skeleton goes. */
export interface AllocatedModel {
  model: GpuModel;
  targets: Map<Tensor, WeightTarget[]>;
}

/** GPU storage usage of every weight buffer (a function: GPUBufferUsage exists only once WebGPU is set up). */
const weightUsage = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;

/** Bytes of a weight buffer holding `n` values (f16: packed two per u32), padded to 16. */
export function weightBufferBytes(n: number, f16: boolean): number {
  const bytes = f16 ? 4 * Math.ceil(n / 2) : 4 * n;
  return Math.max(16, Math.ceil(bytes / 16) * 16);
}

/**
 * Makes every weight buffer for the tensors of `w` (only shapes are read: `w` may be a skeleton whose data is
 * still empty) and says where each tensor goes. With `weightsF16` the large matrices (linears, embedding, LM
 * head) are packed f16, the LayerNorm parameters and biases f32. A buffer past one storage binding throws
 * before anything is made. The caller fills them (writeWeights, or a generator on the GPU).
 */
export function allocateModel(
  device: GPUDevice,
  cfg: NeoXConfig,
  w: ModelWeights,
  maxBindingBytes: number,
  weightsF16 = false,
): AllocatedModel {
  const { vocabSize: V, hiddenSize: d } = cfg;
  const bpe = weightsF16 ? 2 : 4;
  const rows = chunkRows(V, d, maxBindingBytes, bpe);
  // Every size first: a model that cannot be laid out is refused before a buffer exists.
  const check = (n: number, f16: boolean, label: string) => {
    const bytes = f16 ? 4 * Math.ceil(n / 2) : 4 * n;
    if (bytes > maxBindingBytes) {
      throw new Error(
        `${label} needs ${bytes} bytes, more than one storage binding allows (${maxBindingBytes})`,
      );
    }
  };
  for (const [i, l] of w.layers.entries()) {
    for (const [name, lin] of [
      ['attention.query_key_value', l.qkv],
      ['attention.dense', l.dense],
      ['mlp.dense_h_to_4h', l.fc1],
      ['mlp.dense_4h_to_h', l.fc2],
    ] as const) {
      check(numel(lin.weight), weightsF16, `layers.${i}.${name}.weight`);
    }
  }
  const made: GPUBuffer[] = [];
  const targets = new Map<Tensor, WeightTarget[]>();
  let bytes = 0;
  const make = (n: number, f16: boolean, label: string) => {
    const b = device.createBuffer({ size: weightBufferBytes(n, f16), usage: weightUsage(), label });
    made.push(b);
    bytes += b.size;
    return b;
  };
  const whole = (t: Tensor, label: string, f16 = false) => {
    const n = numel(t);
    check(n, f16, label);
    const buffer = make(n, f16, label);
    targets.set(t, [{ buffer, from: 0, count: n, f16, label }]);
    return buffer;
  };
  const norm = (n: NormWeights, label: string): GpuNorm => ({
    weight: whole(n.weight, `${label}.weight`),
    bias: whole(n.bias, `${label}.bias`),
  });
  const lin = (l: LinearWeights, label: string): GpuLinear => ({
    weight: whole(l.weight, `${label}.weight`, weightsF16),
    bias: l.bias ? whole(l.bias, `${label}.bias`) : null,
  });
  const chunks = (t: Tensor, label: string): RowChunk[] => {
    const out: RowChunk[] = [];
    const list: WeightTarget[] = [];
    for (let row0 = 0; row0 < V; row0 += rows) {
      const n = Math.min(rows, V - row0);
      const l = `${label}[${out.length}]`;
      const buffer = make(n * d, weightsF16, l);
      out.push({ buffer, row0, rows: n });
      list.push({ buffer, from: row0 * d, count: n * d, f16: weightsF16, label: l });
    }
    targets.set(t, list);
    return out;
  };
  try {
    const embedIn = chunks(w.embedIn, 'embed_in');
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
    const lmHead = w.lmHead === w.embedIn ? embedIn : chunks(w.lmHead, 'embed_out');
    const dummy = make(4, false, 'dummy');
    device.queue.writeBuffer(dummy, 0, new Float32Array(4));
    const model: GpuModel = {
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
    return { model, targets };
  } catch (e) {
    for (const b of made) b.destroy();
    throw e;
  }
}

function numel(t: Tensor): number {
  return t.shape.reduce((a, b) => a * b, 1);
}

/** Writes one tensor's fp32 values (`data`: [numel]) into its buffers (packed f16 where they hold f16). */
export function writeWeights(device: GPUDevice, targets: readonly WeightTarget[], data: Float32Array): void {
  for (const t of targets) {
    const part = data.subarray(t.from, t.from + t.count);
    const words = t.f16 ? packF16(part) : part;
    device.queue.writeBuffer(t.buffer, 0, words.buffer, words.byteOffset, words.byteLength);
  }
}

/**
 * Uploads the weights (allocateModel, then every tensor's data). With `weightsF16` the large matrices are
 * stored as packed f16 — exact for an fp16 checkpoint, half the memory.
 */
export function uploadModel(
  device: GPUDevice,
  cfg: NeoXConfig,
  w: ModelWeights,
  maxBindingBytes: number,
  weightsF16 = false,
): GpuModel {
  const { model, targets } = allocateModel(device, cfg, w, maxBindingBytes, weightsF16);
  for (const [t, list] of targets) writeWeights(device, list, t.data);
  return model;
}

/**
 * The model's weights read back from the GPU as fp32 CPU tensors (f16 storage widened exactly), piece by piece:
 * the values the kernels use, for the CPU oracle (or one op's causes) where the CPU copy was not kept at load.
 */
export function weightReader(device: GPUDevice, m: GpuModel) {
  const { vocabSize: V, hiddenSize: d, intermediateSize: ff } = m.cfg;
  const read = async (b: GPUBuffer, n: number, f16: boolean): Promise<Float32Array> => {
    const raw = await readBuffer(device, b, f16 ? 4 * Math.ceil(n / 2) : 4 * n);
    if (!f16) return raw.length === n ? raw : raw.slice(0, n);
    const halves = new Uint16Array(raw.buffer, raw.byteOffset, 2 * raw.length); // element i in half i (LE)
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = f16BitsToF32(halves[i]);
    return out;
  };
  const tensor = async (b: GPUBuffer, shape: number[], f16 = false): Promise<Tensor> => ({
    shape,
    data: await read(
      b,
      shape.reduce((a, x) => a * x, 1),
      f16,
    ),
  });
  const rows = async (chunks: RowChunk[]): Promise<Tensor> => {
    const data = new Float32Array(V * d);
    for (const c of chunks) data.set(await read(c.buffer, c.rows * d, m.weightsF16), c.row0 * d);
    return { shape: [V, d], data };
  };
  const norm = async (n: GpuNorm): Promise<NormWeights> => ({
    weight: await tensor(n.weight, [d]),
    bias: await tensor(n.bias, [d]),
  });
  const lin = async (l: GpuLinear, out: number, inp: number): Promise<LinearWeights> => ({
    weight: await tensor(l.weight, [out, inp], m.weightsF16),
    bias: l.bias ? await tensor(l.bias, [out]) : null,
  });
  return {
    embedIn: () => rows(m.embedIn),
    layer: async (i: number): Promise<LayerWeights> => {
      const l = m.layers[i];
      return {
        inputLayernorm: await norm(l.inputLayernorm),
        postAttentionLayernorm: await norm(l.postAttentionLayernorm),
        qkv: await lin(l.attention.qkv, 3 * d, d),
        dense: await lin(l.attention.dense, d, d),
        fc1: await lin(l.mlp.denseHTo4h, ff, d),
        fc2: await lin(l.mlp.dense4hToH, d, ff),
      };
    },
    /** One linear of layer i alone (one op's causes read only its own weights). */
    linear: (i: number, which: 'qkv' | 'dense' | 'fc1' | 'fc2'): Promise<LinearWeights> => {
      const l = m.layers[i];
      if (which === 'qkv') return lin(l.attention.qkv, 3 * d, d);
      if (which === 'dense') return lin(l.attention.dense, d, d);
      if (which === 'fc1') return lin(l.mlp.denseHTo4h, ff, d);
      return lin(l.mlp.dense4hToH, d, ff);
    },
    layerNorm: (i: number, which: 'input' | 'post'): Promise<NormWeights> =>
      norm(which === 'input' ? m.layers[i].inputLayernorm : m.layers[i].postAttentionLayernorm),
    finalLayerNorm: () => norm(m.finalLayerNorm),
    lmHead: () => rows(m.lmHead),
  };
}

export async function readModelWeights(device: GPUDevice, m: GpuModel): Promise<ModelWeights> {
  const r = weightReader(device, m);
  const embedIn = await r.embedIn();
  const layers: LayerWeights[] = [];
  for (let i = 0; i < m.layers.length; i++) layers.push(await r.layer(i));
  const finalLayerNorm = await r.finalLayerNorm();
  const lmHead = m.lmHead === m.embedIn ? embedIn : await r.lmHead();
  return { embedIn, layers, finalLayerNorm, lmHead };
}

/**
 * The LM head in pieces that each fit one binding for T tokens: the weight chunks of the upload, split again by
 * rows so that each piece's [T, rows] output fits too. `w` is the piece's weight rows (a chunk or a range of one),
 * `col0` its first logit column.
 */
export function lmHeadPieces(
  m: GpuModel,
  T: number,
  maxBindingBytes: number,
): { chunk: RowChunk; r0: number; rows: number; col0: number; w: BufferRef }[] {
  const d = m.cfg.hiddenSize;
  const wBytes = m.weightsF16 ? 2 : 4;
  const actRows = Math.max(ROW_GRANULE, Math.floor(maxBindingBytes / (4 * T) / ROW_GRANULE) * ROW_GRANULE);
  const pieces: { chunk: RowChunk; r0: number; rows: number; col0: number; w: BufferRef }[] = [];
  for (const chunk of m.lmHead) {
    for (let r0 = 0; r0 < chunk.rows; r0 += actRows) {
      const rows = Math.min(actRows, chunk.rows - r0);
      const w: BufferRef =
        rows === chunk.rows
          ? chunk.buffer
          : { buffer: chunk.buffer, offset: r0 * d * wBytes, size: rows * d * wBytes };
      pieces.push({ chunk, r0, rows, col0: chunk.row0 + r0, w });
    }
  }
  return pieces;
}
