// The launchers of a plan's ops, with named arguments: one per reference op (the op registry's GPT-NeoX plan ops,
// reached by the plan through the registry's `wgsl` slots, wgsl-forms.ts), the embedding, final norm and LM head
// on their own arguments, and one per fusion of the fused-kernel table (fused-kernels.ts). A layer op takes the
// layer's context — its weights, the buffers of its intermediates, the residual stream — and returns what to
// dispatch and which taps it writes. The plan (plan.ts) only decides which of them run, in the order of the
// reference ops.
import type { BufferRef } from '../gpu/pipelines';
import type { DispatchSpec } from '../gpu/program';
import { attnScores, attnValues, softmaxCausal } from '../kernels/attention';
import { embedding } from '../kernels/embedding';
import { flashAttention } from '../kernels/flash-attention';
import {
  type GemmOpts,
  linearBiasOps,
  linearGeluOps,
  linearResidualOps,
  qkvRotaryOps,
} from '../kernels/fused-linear';
import { addLayerNorm, layerNorm2 } from '../kernels/fused-norm';
import { gelu } from '../kernels/gelu';
import type { KernelOpts } from '../kernels/grid';
import { layerNorm } from '../kernels/layernorm';
import { linear } from '../kernels/linear';
import { residualAdd } from '../kernels/residual';
import { rotary } from '../kernels/rotary';
import type { Fusion, LayerOp } from './fused-kernels';
import type { RowChunk } from './gpu-model';
import type { Launch, LayerCtx, PlanBuffers, TapSpec } from './plan-types';

export type { Launch, LayerCtx, PlanBuffers, TapSpec };

import {
  addLayerNormFoldLaunch,
  denseFoldLaunch,
  layerNorm2FoldLaunch,
  residualFoldLaunch,
  residualPartialLaunch,
} from './plan-fold-ops';

/** A reference LayerNorm into `y` (the tap `name`), its input and weights read when the op is made. */
function normOp(
  L: LayerCtx,
  name: string,
  y: GPUBuffer,
  input: () => { x: GPUBuffer; ln: { weight: GPUBuffer; bias: GPUBuffer } },
): Launch {
  return {
    make: (k) => {
      const { x, ln } = input();
      return layerNorm(`${L.p}.${name}`, { x, weight: ln.weight, bias: ln.bias, y }, L.T, L.d, L.eps, k);
    },
    writes: [[`${L.p}.${name}`, y, L.T * L.d]],
  };
}

/** On a CPU adapter, the attention kernels' barrier-free variant (PLAIN: the same bits, no staging). */
function cpuPlain(L: LayerCtx, k: KernelOpts): KernelOpts {
  return L.gemm.policy?.cpu ? { ...k, constants: { ...k.constants, PLAIN: true } } : k;
}

/** A reference linear layer [T, K] -> [T, N] into `y` (the tap `name`), its input and weights read when made. */
function linearOp(
  L: LayerCtx,
  name: string,
  y: GPUBuffer,
  N: number,
  K: number,
  input: () => { x: GPUBuffer; w: { weight: BufferRef; bias: GPUBuffer | null } },
): Launch {
  return {
    make: (k) => {
      const { x, w } = input();
      const buf = { x, w: w.weight, b: w.bias, y, dummy: L.dummy };
      return linear(`${L.p}.${name}`, buf, L.T, N, K, k, L.gemm.policy?.cpu);
    },
    writes: [[`${L.p}.${name}`, y, L.T * N]],
  };
}

/** The reference ops: one plain kernel each (LayerNorm, linear, rotary, attention in three, GELU, adds). */
export const REFERENCE_OPS: Record<LayerOp, (L: LayerCtx) => Launch> = {
  ln1: (L) => normOp(L, 'ln1', L.b.ln1, () => ({ x: L.x, ln: L.weights.inputLayernorm })),
  qkv: (L) => linearOp(L, 'qkv', L.b.qkv, 3 * L.d, L.d, () => ({ x: L.b.ln1, w: L.weights.attention.qkv })),
  rotary: (L) => ({
    make: (k) => {
      const buf = { qkv: L.b.qkv, cos: L.cos, sin: L.sin, q: L.b.q, k: L.k, v: L.v };
      return rotary(`${L.p}.rotary`, buf, L.T, L.H, L.hd, L.rotaryNdims, k, L.at);
    },
    writes: qkvTaps(L),
  }),
  scores: (L) => ({
    make: (k) =>
      attnScores(`${L.p}.scores`, { q: L.b.q, k: L.k, s: L.b.scores! }, L.H, L.T, L.hd, cpuPlain(L, k), L.at),
    writes: [[`${L.p}.scores`, L.b.scores!, L.H * L.T * L.Tk]],
  }),
  probs: (L) => ({
    make: (k) =>
      softmaxCausal(`${L.p}.probs`, { s: L.b.scores!, p: L.b.probs! }, L.H, L.T, cpuPlain(L, k), L.at),
    writes: [[`${L.p}.probs`, L.b.probs!, L.H * L.T * L.Tk]],
  }),
  ctx: (L) => ({
    make: (k) =>
      attnValues(`${L.p}.ctx`, { p: L.b.probs!, v: L.v, ctx: L.ctx }, L.H, L.T, L.hd, cpuPlain(L, k), L.at),
    writes: [[`${L.p}.ctx`, L.ctx, L.T * L.d]],
  }),
  attn_out: (L) =>
    linearOp(L, 'attn_out', L.attnOut, L.d, L.d, () => ({ x: L.denseIn, w: L.weights.attention.dense })),
  resid_mid: (L) => ({
    make: (k) =>
      residualAdd(`${L.p}.resid_mid`, { a: L.x, b: L.attnOut, c: null, out: L.b.residMid }, L.T * L.d, k),
    writes: [[`${L.p}.resid_mid`, L.b.residMid, L.T * L.d]],
  }),
  ln2: (L) => normOp(L, 'ln2', L.b.ln2, () => ({ x: L.resid, ln: L.weights.postAttentionLayernorm })),
  fc1: (L) => linearOp(L, 'fc1', L.b.fc1, L.ff, L.d, () => ({ x: L.b.ln2, w: L.weights.mlp.denseHTo4h })),
  gelu: (L) => ({
    make: (k) => gelu(`${L.p}.gelu`, { x: L.b.fc1, y: L.b.gelu }, L.T * L.ff, k),
    writes: [[`${L.p}.gelu`, L.b.gelu, L.T * L.ff]],
  }),
  mlp_out: (L) =>
    linearOp(L, 'mlp_out', L.b.mlpOut, L.d, L.ff, () => ({ x: L.b.gelu, w: L.weights.mlp.dense4hToH })),
  // HF: parallel `mlp_output + attn_output + hidden_states`; sequential `mlp_output + (attn + x)`.
  out: (L) => ({
    make: (k) => {
      const [b, c] = L.parallel ? [L.attnOut, L.b.mlpOut] : [L.b.mlpOut, null];
      return residualAdd(`${L.p}.out`, { a: L.resid, b, c, out: L.xNext }, L.T * L.d, k);
    },
    writes: [[`${L.p}.out`, L.xNext, L.T * L.d]],
  }),
};

/** The arguments of GPT-NeoX's reference ops outside the layers, each its own (TOP_REFERENCE_OPS). */
export interface TopArgs {
  /** One row chunk of the embedding table (a large vocabulary is split so each fits one binding). */
  embed: { label: string; ids: GPUBuffer; chunk: RowChunk; out: GPUBuffer; T: number; d: number };
  final_norm: {
    x: GPUBuffer;
    ln: { weight: GPUBuffer; bias: GPUBuffer };
    y: GPUBuffer;
    T: number;
    d: number;
    eps: number;
  };
  /** One piece of the LM head: logits[:, rows of this piece] = final_norm · W_piece^T (no bias). */
  logits: {
    label: string;
    buf: { x: GPUBuffer; w: BufferRef; y: GPUBuffer; dummy: GPUBuffer };
    T: number;
    rows: number;
    d: number;
    cpu: boolean | undefined;
  };
}

type Make = (k: KernelOpts) => DispatchSpec | DispatchSpec[];

/** GPT-NeoX's reference ops before and after the layers: the embedding, the final LayerNorm, the LM head. */
export const TOP_REFERENCE_OPS: { [K in keyof TopArgs]: (a: TopArgs[K]) => Make } = {
  embed: (a) => (k) =>
    embedding(a.label, { ids: a.ids, table: a.chunk.buffer, out: a.out }, a.T, a.d, a.chunk, k),
  final_norm: (a) => (k) =>
    layerNorm('final_norm', { x: a.x, weight: a.ln.weight, bias: a.ln.bias, y: a.y }, a.T, a.d, a.eps, k),
  logits: (a) => (k) => linear(a.label, headBuffers(a), a.T, a.rows, a.d, k, a.cpu),
};

function qkvTaps(L: LayerCtx): TapSpec[] {
  return [
    [`${L.p}.q`, L.b.q, L.H * L.T * L.hd],
    [`${L.p}.k`, L.k, L.kvFloats],
    [`${L.p}.v`, L.v, L.kvFloats],
  ];
}

/** The fusions' launchers in a layer (the LM head's is headLaunch below). */
export const FUSION_OPS: Record<Exclude<Fusion['launcher'], 'lm_head'>, (L: LayerCtx) => Launch> = {
  // Parallel residual: ln1 and ln2 from one read of x. Sequential: ln1 alone (DUAL off).
  layernorm2: (L) => {
    const ln1 = L.weights.inputLayernorm;
    const ln2 = L.weights.postAttentionLayernorm;
    const second = L.parallel ? { w2: ln2.weight, b2: ln2.bias, y2: L.b.ln2 } : null;
    if (L.prevFold) return layerNorm2FoldLaunch(L, L.prevFold, second);
    return {
      make: (k) =>
        layerNorm2(
          `${L.p}.layernorm`,
          { x: L.x, w1: ln1.weight, b1: ln1.bias, y1: L.b.ln1, dummy: L.dummy },
          second,
          L.T,
          L.d,
          L.eps,
          { ...k, maxWorkgroupBytes: L.gemm.policy?.limits?.maxComputeWorkgroupStorageSize },
        ),
      writes: [
        [`${L.p}.ln1`, L.b.ln1, L.T * L.d],
        ...(second ? [[`${L.p}.ln2`, L.b.ln2, L.T * L.d] as TapSpec] : []),
      ],
    };
  },
  add_layernorm: (L) => {
    const ln2 = L.weights.postAttentionLayernorm;
    const maxWorkgroupBytes = L.gemm.policy?.limits?.maxComputeWorkgroupStorageSize;
    if (L.denseFold) return addLayerNormFoldLaunch(L);
    return {
      make: (k) =>
        addLayerNorm(
          `${L.p}.add_layernorm`,
          { a: L.x, b: L.attnOut, w: ln2.weight, bias: ln2.bias, r: L.b.residMid, y: L.b.ln2 },
          L.T,
          L.d,
          L.eps,
          { ...k, maxWorkgroupBytes },
        ),
      writes: [
        [`${L.p}.resid_mid`, L.b.residMid, L.T * L.d],
        [`${L.p}.ln2`, L.b.ln2, L.T * L.d],
      ],
    };
  },
  qkv_rotary: (L) => ({
    make: (k) => {
      const qkv = L.weights.attention.qkv;
      const buf = {
        x: L.b.ln1,
        w: qkv.weight,
        b: qkv.bias,
        cos: L.cos,
        sin: L.sin,
        q: L.b.q,
        k: L.k,
        v: L.v,
        dummy: L.dummy,
      };
      return qkvRotaryOps(`${L.p}.qkv_rotary`, buf, L.T, L.H, L.hd, L.rotaryNdims, { ...k, ...L.gemm }, L.at);
    },
    writes: qkvTaps(L),
  }),
  flash_attention: (L) => ({
    make: (k) =>
      flashAttention(
        `${L.p}.flash_attention`,
        { q: L.b.q, k: L.k, v: L.v, ctx: L.ctx },
        L.H,
        L.T,
        L.hd,
        k,
        L.at,
      ),
    writes: [[`${L.p}.ctx`, L.ctx, L.T * L.d]],
  }),
  dense: (L) => {
    const dense = L.weights.attention.dense;
    const buf = { x: L.denseIn, w: dense.weight, b: dense.bias, y: L.attnOut, dummy: L.dummy };
    if (L.denseFold) return denseFoldLaunch(L, buf);
    return {
      make: (k) => linearBiasOps(`${L.p}.attn_out`, buf, L.T, L.d, L.d, { ...k, ...L.gemm }),
      writes: [[`${L.p}.attn_out`, L.attnOut, L.T * L.d]],
    };
  },
  linear_gelu: (L) => ({
    make: (k) => {
      const fc1 = L.weights.mlp.denseHTo4h;
      const buf = { x: L.b.ln2, w: fc1.weight, b: fc1.bias, y: L.b.gelu, dummy: L.dummy };
      return linearGeluOps(`${L.p}.linear_gelu`, buf, L.T, L.ff, L.d, { ...k, ...L.gemm });
    },
    writes: [[`${L.p}.gelu`, L.b.gelu, L.T * L.ff]],
  }),
  residual_epilogue: (L) => {
    const buf = residualBuffers(L);
    if (L.outFold) return residualPartialLaunch(L, buf);
    if (L.denseFold && L.parallel) return residualFoldLaunch(L, buf);
    return {
      make: (k) => linearResidualOps(`${L.p}.residual_epilogue`, buf, L.T, L.d, L.ff, { ...k, ...L.gemm }),
      writes: [[`${L.p}.out`, L.xNext, L.T * L.d]],
    };
  },
};

/** dense_4h_to_h + residual's buffers: r1 = x (parallel) or attn + x; r2 = attn_output (parallel only). */
function residualBuffers(L: LayerCtx) {
  const fc2 = L.weights.mlp.dense4hToH;
  return {
    x: L.b.gelu,
    w: fc2.weight,
    b: fc2.bias,
    r1: L.resid,
    r2: L.parallel ? L.attnOut : null,
    y: L.xNext,
    dummy: L.dummy,
  };
}

/** One piece of the LM head by the fused GEMM (the reference's is TOP_REFERENCE_OPS.logits). */
export function headLaunch(a: TopArgs['logits'], gemm: GemmOpts): Make {
  return (k) => linearBiasOps(a.label, headBuffers(a), a.T, a.rows, a.d, { ...k, ...gemm });
}

const headBuffers = ({ buf }: TopArgs['logits']) => ({
  x: buf.x,
  w: buf.w,
  b: null,
  y: buf.y,
  dummy: buf.dummy,
});
