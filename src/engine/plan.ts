// Plans: the ordered, named ops of one forward pass. Every op writes one or more taps (stable names such
// as 'layers.3.ln1', the join key with the oracle and the UI); the residual after layer i is 'layers.i.out'.
import type { BufferPool } from '../gpu/pool';
import type { DispatchSpec } from '../gpu/program';
import { uploadBuffer } from '../gpu/readback';
import { attnScores, attnValues, softmaxCausal } from '../kernels/attention';
import { embedding } from '../kernels/embedding';
import { gelu } from '../kernels/gelu';
import { layerNorm } from '../kernels/layernorm';
import { linear } from '../kernels/linear';
import { residualAdd } from '../kernels/residual';
import { rotary, rotaryTables } from '../kernels/rotary';
import type { GpuModel } from './gpu-model';

export interface TapWrite {
  name: string; // e.g. 'layers.0.q'
  buffer: GPUBuffer;
  floats: number;
}

export interface PlanOp {
  spec: DispatchSpec;
  writes: TapWrite[];
}

export interface Plan {
  T: number;
  ops: PlanOp[];
  /** Releases the plan's activation buffers to the pool. */
  release(): void;
}

/** Activation buffers for T tokens from the pool, named by tap; reused across layers (taps copy per op). */
class Activations {
  private made: GPUBuffer[] = [];
  constructor(private readonly pool: BufferPool) {}
  get(floats: number, label: string): GPUBuffer {
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const b = this.pool.acquire(floats * 4, usage, label);
    this.made.push(b);
    return b;
  }
  release(): void {
    for (const b of this.made) this.pool.release(b);
    this.made = [];
  }
}

/**
 * The reference plan: one plain kernel per op, in HF's order. Per layer:
 * ln1 → qkv → rotary (q, k, v) → scores → probs → ctx → attn_out → [resid_mid] → ln2 → fc1 → gelu →
 * mlp_out → out. Then final_norm and logits.
 */
export function referencePlan(device: GPUDevice, pool: BufferPool, m: GpuModel, tokens: number[]): Plan {
  const { cfg } = m;
  const T = tokens.length;
  const d = cfg.hiddenSize;
  const H = cfg.numHeads;
  const hd = cfg.headDim;
  const ff = cfg.intermediateSize;
  const V = cfg.vocabSize;
  const acts = new Activations(pool);
  const uploads: GPUBuffer[] = [];
  const ids = uploadBuffer(device, new Uint32Array(tokens), 'upload:ids');
  const tables = rotaryTables(T, cfg.rotaryNdims, cfg.rotaryBase);
  const cos = uploadBuffer(device, tables.cos, 'upload:cos');
  const sin = uploadBuffer(device, tables.sin, 'upload:sin');
  uploads.push(ids, cos, sin);

  const xs = [acts.get(T * d, 'x0'), acts.get(T * d, 'x1')]; // residual stream ping-pong
  const b = {
    ln1: acts.get(T * d, 'ln1'),
    qkv: acts.get(T * 3 * d, 'qkv'),
    q: acts.get(H * T * hd, 'q'),
    k: acts.get(H * T * hd, 'k'),
    v: acts.get(H * T * hd, 'v'),
    scores: acts.get(H * T * T, 'scores'),
    probs: acts.get(H * T * T, 'probs'),
    ctx: acts.get(T * d, 'ctx'),
    attnOut: acts.get(T * d, 'attn_out'),
    residMid: acts.get(T * d, 'resid_mid'),
    ln2: acts.get(T * d, 'ln2'),
    fc1: acts.get(T * ff, 'fc1'),
    gelu: acts.get(T * ff, 'gelu'),
    mlpOut: acts.get(T * d, 'mlp_out'),
    finalNorm: acts.get(T * d, 'final_norm'),
    logits: acts.get(T * V, 'logits'),
  };
  const ops: PlanOp[] = [];
  const op = (spec: DispatchSpec, ...writes: [string, GPUBuffer, number][]) =>
    ops.push({ spec, writes: writes.map(([name, buffer, floats]) => ({ name, buffer, floats })) });

  op(embedding('embed', { ids, table: m.embedIn, out: xs[0] }, T, d, V), ['embed', xs[0], T * d]);
  let cur = 0;
  m.layers.forEach((layer, i) => {
    const p = `layers.${i}`;
    const x = xs[cur];
    const xNext = xs[1 - cur];
    const ln1 = layer.inputLayernorm;
    op(layerNorm(`${p}.ln1`, { x, weight: ln1.weight, bias: ln1.bias, y: b.ln1 }, T, d, cfg.layerNormEps), [`${p}.ln1`, b.ln1, T * d]);
    const qkv = layer.attention.qkv;
    op(linear(`${p}.qkv`, { x: b.ln1, w: qkv.weight, b: qkv.bias, y: b.qkv, dummy: m.dummy }, T, 3 * d, d), [`${p}.qkv`, b.qkv, T * 3 * d]);
    op(
      rotary(`${p}.rotary`, { qkv: b.qkv, cos, sin, q: b.q, k: b.k, v: b.v }, T, H, hd, cfg.rotaryNdims),
      [`${p}.q`, b.q, H * T * hd],
      [`${p}.k`, b.k, H * T * hd],
      [`${p}.v`, b.v, H * T * hd],
    );
    op(attnScores(`${p}.scores`, { q: b.q, k: b.k, s: b.scores }, H, T, hd), [`${p}.scores`, b.scores, H * T * T]);
    op(softmaxCausal(`${p}.probs`, { s: b.scores, p: b.probs }, H, T), [`${p}.probs`, b.probs, H * T * T]);
    op(attnValues(`${p}.ctx`, { p: b.probs, v: b.v, ctx: b.ctx }, H, T, hd), [`${p}.ctx`, b.ctx, T * d]);
    const dense = layer.attention.dense;
    op(linear(`${p}.attn_out`, { x: b.ctx, w: dense.weight, b: dense.bias, y: b.attnOut, dummy: m.dummy }, T, d, d), [`${p}.attn_out`, b.attnOut, T * d]);
    let mlpIn = x;
    if (!cfg.useParallelResidual) {
      op(residualAdd(`${p}.resid_mid`, { a: x, b: b.attnOut, c: null, out: b.residMid }, T * d), [`${p}.resid_mid`, b.residMid, T * d]);
      mlpIn = b.residMid;
    }
    const ln2 = layer.postAttentionLayernorm;
    op(layerNorm(`${p}.ln2`, { x: mlpIn, weight: ln2.weight, bias: ln2.bias, y: b.ln2 }, T, d, cfg.layerNormEps), [`${p}.ln2`, b.ln2, T * d]);
    const fc1 = layer.mlp.denseHTo4h;
    op(linear(`${p}.fc1`, { x: b.ln2, w: fc1.weight, b: fc1.bias, y: b.fc1, dummy: m.dummy }, T, ff, d), [`${p}.fc1`, b.fc1, T * ff]);
    op(gelu(`${p}.gelu`, { x: b.fc1, y: b.gelu }, T * ff), [`${p}.gelu`, b.gelu, T * ff]);
    const fc2 = layer.mlp.dense4hToH;
    op(linear(`${p}.mlp_out`, { x: b.gelu, w: fc2.weight, b: fc2.bias, y: b.mlpOut, dummy: m.dummy }, T, d, ff), [`${p}.mlp_out`, b.mlpOut, T * d]);
    const residual = cfg.useParallelResidual
      ? residualAdd(`${p}.out`, { a: x, b: b.attnOut, c: b.mlpOut, out: xNext }, T * d)
      : residualAdd(`${p}.out`, { a: b.residMid, b: b.mlpOut, c: null, out: xNext }, T * d);
    op(residual, [`${p}.out`, xNext, T * d]);
    cur = 1 - cur;
  });
  const fn = m.finalLayerNorm;
  op(layerNorm('final_norm', { x: xs[cur], weight: fn.weight, bias: fn.bias, y: b.finalNorm }, T, d, cfg.layerNormEps), ['final_norm', b.finalNorm, T * d]);
  op(linear('logits', { x: b.finalNorm, w: m.lmHead, b: null, y: b.logits, dummy: m.dummy }, T, V, d), ['logits', b.logits, T * V]);
  return {
    T,
    ops,
    release: () => {
      acts.release();
      for (const u of uploads) u.destroy();
    },
  };
}
