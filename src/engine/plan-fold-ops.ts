// The launchers of folded ops (plan-fold.ts says when a fold applies): a split-K GEMM whose reduction a later op
// does (its partial GEMM alone, into a workspace that lives until that op), and the ops that do it — writing the
// taps the reduction would have written, after their own dispatch.
//   attention.dense → the MLP's residual epilogue (parallel) or the add + LayerNorm (sequential), same layer;
//   dense_4h_to_h (and with it attention.dense, parallel) → the next layer's LayerNorm, which writes the
//   previous layer's attn_out and out taps.
import type { DispatchSpec } from '../gpu/program';
import {
  linearBiasPartial,
  linearResidualFoldOps,
  linearResidualPartial,
} from '../kernels/fused-linear-fold';
import { addLayerNormFold, layerNorm2Fold } from '../kernels/fused-norm';
import type { DenseFold, Launch, LayerCtx, OutFold, TapSpec } from './plan-types';

export type { DenseFold, OutFold };

function need<T>(v: T | null | undefined, what: string): T {
  if (!v) throw new Error(`plan: ${what} are missing (their GEMM must run before the op that folds them)`);
  return v;
}

const normOpts = (L: LayerCtx) => ({
  maxWorkgroupBytes: L.gemm.policy?.limits?.maxComputeWorkgroupStorageSize,
});

/** attention.dense folded: its partial GEMM alone, into its own workspace; no tap (the consumer writes it). */
export function denseFoldLaunch(
  L: LayerCtx,
  buf: { x: GPUBuffer; w: GPUBuffer; b: GPUBuffer | null; y: GPUBuffer; dummy: GPUBuffer },
): Launch {
  const fold = L.denseFold!;
  return {
    make: (k) => {
      const got = linearBiasPartial(`${L.p}.attn_out`, buf, L.T, L.d, L.d, fold.ws, { ...k, ...L.gemm });
      fold.partials = need(got, `${L.p}: attention.dense's split-K partials`).partials;
      return got!.spec;
    },
    writes: [],
  };
}

/** The add + LayerNorm (sequential) with attention.dense's reduction folded in: writes attn_out too. */
export function addLayerNormFoldLaunch(L: LayerCtx): Launch {
  const ln2 = L.weights.postAttentionLayernorm;
  return {
    make: (k) =>
      addLayerNormFold(
        `${L.p}.add_layernorm`,
        {
          a: L.x,
          dense: need(L.denseFold?.partials, `${L.p}: attention.dense's partials`),
          w: ln2.weight,
          bias: ln2.bias,
          attn: L.attnOut,
          r: L.b.residMid,
          y: L.b.ln2,
          dummy: L.dummy,
        },
        L.T,
        L.d,
        L.eps,
        { ...k, ...normOpts(L) },
      ),
    writes: [
      [`${L.p}.attn_out`, L.attnOut, L.T * L.d],
      [`${L.p}.resid_mid`, L.b.residMid, L.T * L.d],
      [`${L.p}.ln2`, L.b.ln2, L.T * L.d],
    ],
  };
}

type ResidualBuffers = Parameters<typeof linearResidualPartial>[1];

/** dense_4h_to_h + residual with attention.dense's reduction folded in (parallel): writes attn_out too. */
export function residualFoldLaunch(L: LayerCtx, buf: ResidualBuffers): Launch {
  return {
    make: (k) => {
      const dense = need(L.denseFold?.partials, `${L.p}: attention.dense's partials`);
      const fold = { ...buf, r1: L.x, attn: L.attnOut, dense };
      return linearResidualFoldOps(`${L.p}.residual_epilogue`, fold, L.T, L.d, L.ff, { ...k, ...L.gemm });
    },
    writes: [
      [`${L.p}.attn_out`, L.attnOut, L.T * L.d],
      [`${L.p}.out`, L.xNext, L.T * L.d],
    ],
  };
}

/** dense_4h_to_h folded into the next layer's LayerNorm: its partial GEMM alone; no tap (that op writes them). */
export function residualPartialLaunch(L: LayerCtx, buf: ResidualBuffers): Launch {
  const fold = L.outFold!;
  return {
    make: (k): DispatchSpec => {
      const label = `${L.p}.residual_epilogue`;
      const got = linearResidualPartial(label, buf, L.T, L.d, L.ff, fold.ws, { ...k, ...L.gemm });
      fold.mlp = need(got, `${L.p}: the MLP down-projection's split-K partials`).partials;
      return got!.spec;
    },
    writes: [],
  };
}

/**
 * The dual LayerNorm (ln1 alone, sequential) with the previous layer's MLP down-projection reduction folded in
 * (and its attention.dense reduction, when that moved along): writes the previous layer's attn_out and out taps,
 * then its own.
 */
export function layerNorm2FoldLaunch(
  L: LayerCtx,
  prev: OutFold,
  second: { w2: GPUBuffer; b2: GPUBuffer; y2: GPUBuffer } | null,
): Launch {
  const ln1 = L.weights.inputLayernorm;
  const taps: TapSpec[] = [];
  if (prev.dense) taps.push([`${prev.p}.attn_out`, prev.attnOut, L.T * L.d]);
  taps.push([`${prev.p}.out`, L.x, L.T * L.d]);
  taps.push([`${L.p}.ln1`, L.b.ln1, L.T * L.d]);
  if (second) taps.push([`${L.p}.ln2`, L.b.ln2, L.T * L.d]);
  return {
    make: (k) =>
      layerNorm2Fold(
        `${L.p}.layernorm`,
        {
          mlp: need(prev.mlp, `${prev.p}: the MLP down-projection's partials`),
          r1: prev.r1,
          residuals: L.parallel ? 2 : 1,
          attn: prev.attnOut,
          dense: prev.dense ? need(prev.dense.partials, `${prev.p}: attention.dense's partials`) : null,
          x: L.x,
          w1: ln1.weight,
          b1: ln1.bias,
          y1: L.b.ln1,
          dummy: L.dummy,
        },
        second,
        L.T,
        L.d,
        L.eps,
        { ...k, ...normOpts(L) },
      ),
    writes: taps,
  };
}
