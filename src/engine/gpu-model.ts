// Weights on the GPU, in a structure named like Hugging Face's module tree
// (layers[3].attention.qkv.weight, …). Built once when a model loads.
import { uploadBuffer } from '../gpu/readback';
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

export interface GpuModel {
  cfg: NeoXConfig;
  embedIn: GPUBuffer; // [V, d]
  layers: GpuLayer[];
  finalLayerNorm: GpuNorm;
  lmHead: GPUBuffer; // [V, d]
  /** A 16-byte buffer bound where a kernel's optional input is absent. */
  dummy: GPUBuffer;
  bytes: number;
  destroy(): void;
}

export function uploadModel(device: GPUDevice, cfg: NeoXConfig, w: ModelWeights): GpuModel {
  const made: GPUBuffer[] = [];
  let bytes = 0;
  const up = (data: Float32Array, label: string) => {
    const b = uploadBuffer(device, data, label);
    made.push(b);
    bytes += b.size;
    return b;
  };
  const norm = (n: NormWeights, label: string): GpuNorm => ({
    weight: up(n.weight.data, `${label}.weight`),
    bias: up(n.bias.data, `${label}.bias`),
  });
  const lin = (l: LinearWeights, label: string): GpuLinear => ({
    weight: up(l.weight.data, `${label}.weight`),
    bias: l.bias ? up(l.bias.data, `${label}.bias`) : null,
  });
  try {
    const embedIn = up(w.embedIn.data, 'embed_in');
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
    const lmHead = w.lmHead.data === w.embedIn.data ? embedIn : up(w.lmHead.data, 'embed_out');
    const dummy = up(new Float32Array(4), 'dummy');
    return {
      cfg,
      embedIn,
      layers,
      finalLayerNorm,
      lmHead,
      dummy,
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
