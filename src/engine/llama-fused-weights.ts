// The Llama family's weights on the GPU as the fused kernels read them (llama-fused.ts): q/k/v concatenated for the
// q/k/v + rotary GEMM (apart for Qwen3, whose q/k norms sit between projection and rotary), gate/up concatenated for
// the SwiGLU GEMM, a tied head sharing the embedding's buffer; the separate q/k/v and gate/up buffers a forward with
// those fused kernels switched off reads are made on first use. The norms' weights are read by each step's `weight`
// field (ops/families.ts), kept by the step's slot.

import type { PipelineCache } from '../gpu/pipelines';
import { uploadBuffer } from '../gpu/readback';
import type { LinearWeights, LlamaConfig, LlamaWeights, Tensor } from '../numeric/types';
import { OPS } from '../ops/descriptors';
import { LLAMA_FAMILY, layerSteps } from '../ops/families';
import type { OpStep } from '../ops/types';
import { stepTensors } from '../ops/weights';

export interface LinearBufs {
  w: GPUBuffer;
  b: GPUBuffer | null;
}

export interface LayerBufs {
  /** The weight of each of the layer's steps that is not a linear (its norms), by the step's slot. */
  norms: ReadonlyMap<string, GPUBuffer>;
  /** input_layernorm's and post_attention_layernorm's weights (the slots ln1 and ln2). */
  inNorm: GPUBuffer;
  postNorm: GPUBuffer;
  /** q_proj, k_proj, v_proj apart (where steps sit between projection and rotary: preRotary), else null. */
  qkvApart: { q: LinearBufs; k: LinearBufs; v: LinearBufs } | null;
  o: LinearBufs;
  gateUp: LinearBufs; // [2F, d] and [2F]
  /** [q; k; v] concatenated, [(H + 2KV)·hd, d] and its biases, for qkv_rope (null where they are apart). */
  qkv: LinearBufs | null;
  down: LinearBufs;
}

/**
 * The config's steps between the q/k projections and the rotary (Qwen3's per-head norms): what the rotary reads
 * where it is not a projection's output. None: q/k/v run as one GEMM with the rotary in its epilogue.
 */
export function preRotary(cfg: LlamaConfig): OpStep[] {
  const steps = layerSteps(LLAMA_FAMILY, cfg);
  const read = new Set(steps.filter((s) => s.op === 'rotary').flatMap((s) => s.inputs));
  return steps.filter((s) => read.has(s.slot) && !OPS[s.op].linear);
}

/** Rows of tensors one after another (a concatenated weight or bias). */
function cat(...ts: Tensor[]): Float32Array {
  const out = new Float32Array(ts.reduce((n, t) => n + t.data.length, 0));
  let at = 0;
  for (const t of ts) {
    out.set(t.data, at);
    at += t.data.length;
  }
  return out;
}

export class LlamaFusedWeights {
  private readonly made: GPUBuffer[] = [];
  readonly layers: LayerBufs[];
  readonly embed: GPUBuffer;
  readonly norm: GPUBuffer;
  readonly head: GPUBuffer;
  /** q/k/v and gate/up as separate buffers, made on first use by a forward with those fused kernels off. */
  private apartBufs = new Map<
    number,
    { q: LinearBufs; k: LinearBufs; v: LinearBufs; gate: LinearBufs; up: LinearBufs }
  >();

  /** Uploads the weights once, each checked against the device's binding limit. */
  constructor(
    private readonly gpu: { device: GPUDevice; pipelines: PipelineCache },
    cfg: LlamaConfig,
    private readonly w: LlamaWeights,
  ) {
    this.embed = this.up(w.embedTokens.data, 'embed_tokens');
    this.norm = this.up(w.norm.data, 'norm');
    this.head = w.lmHead === w.embedTokens ? this.embed : this.up(w.lmHead.data, 'lm_head');
    const steps = layerSteps(LLAMA_FAMILY, cfg).filter((s) => s.weight && !OPS[s.op].linear);
    const apart = preRotary(cfg).length > 0;
    this.layers = w.layers.map((l, i) => {
      const p = `layers.${i}`;
      const norms = new Map<string, GPUBuffer>();
      for (const s of steps) {
        const t = stepTensors(l, s).weight;
        if (t) norms.set(s.slot, this.up(t.data, `${p}.${s.module ?? s.slot}`));
      }
      const norm = (slot: string) => {
        const b = norms.get(slot);
        if (!b) throw new Error(`Llama fused: layer ${i} has no weight for '${slot}'`);
        return b;
      };
      const qkvApart = apart
        ? {
            q: this.lin(l.q, `${p}.q_proj`),
            k: this.lin(l.k, `${p}.k_proj`),
            v: this.lin(l.v, `${p}.v_proj`),
          }
        : null;
      const qkvBias = l.q.bias && l.k.bias && l.v.bias ? cat(l.q.bias, l.k.bias, l.v.bias) : null;
      return {
        norms,
        inNorm: norm('ln1'),
        postNorm: norm('ln2'),
        qkvApart,
        o: this.lin(l.o, `${p}.o_proj`),
        gateUp: {
          w: this.up(cat(l.gate.weight, l.up.weight), `${p}.gate_up`),
          b: l.gate.bias && l.up.bias ? this.up(cat(l.gate.bias, l.up.bias), `${p}.gate_up.bias`) : null,
        },
        qkv: qkvApart
          ? null
          : {
              w: this.up(cat(l.q.weight, l.k.weight, l.v.weight), `${p}.qkv`),
              b: qkvBias ? this.up(qkvBias, `${p}.qkv.bias`) : null,
            },
        down: this.lin(l.down, `${p}.down_proj`),
      };
    });
  }

  /** Layer i's q/k/v and gate/up projections as separate buffers. */
  apart(i: number) {
    let a = this.apartBufs.get(i);
    if (!a) {
      const l = this.w.layers[i];
      const q = this.layers[i].qkvApart;
      a = {
        q: q?.q ?? this.lin(l.q, `layers.${i}.q_proj`),
        k: q?.k ?? this.lin(l.k, `layers.${i}.k_proj`),
        v: q?.v ?? this.lin(l.v, `layers.${i}.v_proj`),
        gate: this.lin(l.gate, `layers.${i}.gate_proj`),
        up: this.lin(l.up, `layers.${i}.up_proj`),
      };
      this.apartBufs.set(i, a);
    }
    return a;
  }

  private up(data: Float32Array, label: string): GPUBuffer {
    const limit = this.gpu.device.limits.maxStorageBufferBindingSize;
    if (data.byteLength > limit)
      throw new Error(
        `Llama fused: ${label} (${data.byteLength} B) exceeds the device's ${limit} B binding limit`,
      );
    const b = uploadBuffer(this.gpu.device, data, label);
    this.made.push(b);
    return b;
  }

  private lin(l: LinearWeights, label: string): LinearBufs {
    return { w: this.up(l.weight.data, label), b: l.bias ? this.up(l.bias.data, `${label}.bias`) : null };
  }

  destroy(): void {
    for (const b of this.made) b.destroy();
    this.made.length = 0;
    this.apartBufs.clear();
  }
}
