import type { DispatchSpec } from '../gpu/program';
import { uploadBuffer } from '../gpu/readback';
import type { GemmPolicy } from '../kernels/gemm-configs';
import type { KernelOpts } from '../kernels/grid';
import { precisionConstants } from '../kernels/precision';
import { rotaryTables } from '../kernels/rotary';
import type { Precision } from '../numeric/precision';
import { Activations, type BufferSource } from './activations';
import {
  activeFusions,
  type FusedKernelId,
  type Fusion,
  HEAD_OPS,
  LAYER_OPS,
  type LayerOp,
  layerOpsOf,
  type PlanOpName,
} from './fused-kernels';
import { type GpuModel, lmHeadPieces } from './gpu-model';
import { type FoldOptions, planFolds } from './plan-fold';
import type { OutFold } from './plan-fold-ops';
import { FUSION_OPS, headLaunch } from './plan-ops';
import type { LayerCtx, PlanHooks } from './plan-types';
import { neoxReferenceLaunch, neoxTopLaunch } from './wgsl-forms';

export type { PlanHooks };

const ALL_OPS: readonly PlanOpName[] = [...LAYER_OPS, ...HEAD_OPS];

/** One piece of a tap split by columns: [rows, cols] in its own buffer, columns col0.. of the whole. */
export interface TapPart {
  buffer: GPUBuffer;
  col0: number;
  cols: number;
}

export interface TapWrite {
  name: string; // e.g. 'layers.0.q'
  buffer: GPUBuffer;
  floats: number;
  /** When the tap is split by columns (the LM head of a large vocabulary): its pieces, in column order. */
  parts?: TapPart[];
}

/** A plan's view of the KV cache: where its tokens sit and the buffers it writes and attends to. */
export interface KvCacheView {
  /** Position of the plan's first token. */
  p0: number;
  /** Capacity: rows per head of every k and v buffer. */
  rows: number;
  /** Per layer, keys [H, rows, hd] (rotary applied) and values [H, rows, hd]. */
  k: readonly GPUBuffer[];
  v: readonly GPUBuffer[];
  /** Rotary tables [rows, r/2] (rotaryTables of the cache's positions). */
  cos: GPUBuffer;
  sin: GPUBuffer;
}

export interface PlanOp {
  spec: DispatchSpec;
  writes: TapWrite[];
  /** The fused kernel that produced this op, or null for a reference op. */
  fused: FusedKernelId | null;
  layer: number | null;
}

export interface PlanOptions {
  fused: ReadonlySet<FusedKernelId>;
  precision: Precision;
  hooks?: PlanHooks;
  /** The largest storage binding to use (tensors beyond it are split). */
  maxBindingBytes: number;
  /** How the fused GEMMs pick tiles and split-K (src/kernels/gemm-configs.ts; default: the heuristic). */
  gemm?: GemmPolicy;
  /** KV-cache decoding (src/engine/decode.ts): the tokens sit at positions kv.p0.., each layer writes its k and v
   * into the cache and attends to keys 0 .. kv.p0 + T − 1 there; rotary tables come with the cache. */
  kv?: KvCacheView;
  /** Run layers [from, to) only; the residual entering layer `from` is `input` ([T, d]): values, or a GPU buffer
   * copied in by the plan's `before` copies. */
  layers?: { from: number; to: number; input?: Float32Array | GPUBuffer };
  /** The token ids [T] u32 already on the GPU (a cached plan's input buffer, or the previous decode step's
   * argmax): the embedding reads them there and `tokens` gives only their count. */
  ids?: GPUBuffer;
  /** Fold split-K reductions into the op after them where no tap can change (plan-fold.ts); off when absent. */
  fold?: FoldOptions;
}

export interface Plan {
  T: number;
  ops: PlanOp[];
  /** Buffer copies to record before the first op (a layer range's input that is already on the GPU). */
  before?: { src: GPUBuffer; dst: GPUBuffer; bytes: number }[];
  /** Bytes of the plan's activation buffers. */
  bytes: number;
  /** Releases the plan's activation buffers to the pool. */
  release(): void;
}

export { type BufferSource, PlanError } from './activations';

/**
 * Reference op order per layer (LAYER_OPS): ln1 → qkv → rotary (q, k, v) → scores → probs → ctx → attn_out →
 * [resid_mid] → ln2 → fc1 → gelu → mlp_out → out; then final_norm and logits.
 * All fused (parallel residual): layernorm2 (ln1, ln2) → qkv_rotary (q, k, v) → flash (ctx) → dense (attn_out)
 * → linear_gelu (gelu) → residual epilogue (out): 6 dispatches a layer (split-K GEMMs add their reduction).
 * With `fold` (plan-fold.ts) a split reduction runs inside the op after it: attention.dense's in the residual
 * epilogue (or add + LayerNorm), the MLP down-projection's (with attention.dense's) in the next layer's
 * LayerNorm, which then writes the previous layer's attn_out and out taps. Every tap keeps its bits.
 */
export function buildPlan(
  device: GPUDevice,
  pool: BufferSource,
  m: GpuModel,
  tokens: number[],
  o: PlanOptions,
): Plan {
  const { cfg } = m;
  const T = tokens.length;
  const d = cfg.hiddenSize;
  const H = cfg.numHeads;
  const hd = cfg.headDim;
  const ff = cfg.intermediateSize;
  const V = cfg.vocabSize;
  const eps = cfg.layerNormEps;
  const from = o.layers?.from ?? 0;
  const to = o.layers?.to ?? cfg.numLayers;
  const whole = from === 0 && to === cfg.numLayers && !o.layers?.input;
  const on = (k: FusedKernelId) => o.fused.has(k);
  const prec = { ...precisionConstants(o.precision), W_F16: m.weightsF16 };
  const acts = new Activations(pool, o.maxBindingBytes);
  const uploads: GPUBuffer[] = [];
  const upload = (data: Float32Array | Uint32Array, label: string) => {
    const b = uploadBuffer(device, data, `upload:${label}`);
    uploads.push(b);
    return b;
  };
  const ops: PlanOp[] = [];
  const before: { src: GPUBuffer; dst: GPUBuffer; bytes: number }[] = [];
  try {
    const tables = o.kv ? null : rotaryTables(T, cfg.rotaryNdims, cfg.rotaryBase);
    const cos = tables ? upload(tables.cos, 'cos') : o.kv!.cos;
    const sin = tables ? upload(tables.sin, 'sin') : o.kv!.sin;
    // Token positions and the k/v layout: [H, T, hd] per layer, or the cache's [H, rows, hd] (KV cache).
    const at = o.kv ? { p0: o.kv.p0, rows: o.kv.rows } : { p0: 0, rows: T };
    const Tk = at.p0 + T; // keys the last token attends to

    const xs = [acts.get(T * d, 'x0'), acts.get(T * d, 'x1')]; // residual stream ping-pong
    const b = {
      ln1: acts.get(T * d, 'ln1'),
      qkv: acts.get(T * 3 * d, 'qkv'),
      q: acts.get(H * T * hd, 'q'),
      k: o.kv ? null : acts.get(H * T * hd, 'k'),
      v: o.kv ? null : acts.get(H * T * hd, 'v'),
      // [H, T, Tk], sized for the cache's capacity with a KV cache (one size for every decode step)
      scores: on('flash_attention') ? null : acts.get(H * T * at.rows, 'scores'),
      probs: on('flash_attention') ? null : acts.get(H * T * at.rows, 'probs'),
      ctx: [acts.get(T * d, 'ctx0'), acts.get(T * d, 'ctx1')], // alternate per layer (stale-buffer fault)
      attnOut: acts.get(T * d, 'attn_out'),
      residMid: acts.get(T * d, 'resid_mid'),
      ln2: acts.get(T * d, 'ln2'),
      fc1: acts.get(T * ff, 'fc1'),
      gelu: acts.get(T * ff, 'gelu'),
      mlpOut: acts.get(T * d, 'mlp_out'),
      finalNorm: acts.get(T * d, 'final_norm'),
      logits: () => acts.get(T * V, 'logits'),
    };
    const kopts = (kernel: FusedKernelId | 'reference', layer: number | null): KernelOpts => ({
      constants: { ...prec, ...o.hooks?.constants?.(kernel, layer) },
    });
    // Split-K GEMMs share one workspace: each is consumed by the reduction right after it.
    let workspace: GPUBuffer | null = null;
    const gemmOpts = {
      policy: o.gemm,
      workspace: (floats: number) => {
        if (!workspace || workspace.size < floats * 4) workspace = acts.get(floats, 'gemm_workspace');
        return workspace;
      },
    };
    // Which layers fold a split-K reduction into the next op, and where the partials they keep go (plan-fold.ts).
    const fold = planFolds(o, {
      parallel: cfg.useParallelResidual,
      from,
      to,
      T,
      d,
      ff,
      limits: device.limits,
      gemm: gemmOpts,
      constants: (k, i) => kopts(k, i).constants ?? {},
      alloc: (floats) => acts.get(floats, 'fold_partials'),
    });
    // An op is one dispatch, or several (a split-K GEMM and its reduction): the taps follow the last.
    const op = (
      fused: FusedKernelId | null,
      layer: number | null,
      make: (opts: KernelOpts) => DispatchSpec | DispatchSpec[],
      ...writes: [string, GPUBuffer, number, TapPart[]?][]
    ) => {
      const specs = [make(kopts(fused ?? 'reference', layer))].flat();
      specs.forEach((spec, j) => {
        const last = j === specs.length - 1;
        ops.push({
          spec,
          fused,
          layer,
          writes: last
            ? writes.map(([name, buffer, floats, parts]) => ({ name, buffer, floats, parts }))
            : [],
        });
      });
    };

    if (whole) {
      const ids = o.ids ?? upload(new Uint32Array(tokens), 'ids');
      // A large vocabulary is split into row chunks; each chunk's dispatch writes the tokens it holds.
      m.embedIn.forEach((chunk, c) => {
        const last = c === m.embedIn.length - 1;
        const label = m.embedIn.length === 1 ? 'embed' : `embed[${c}]`;
        op(
          null,
          null,
          neoxTopLaunch('embed')({ label, ids, chunk, out: xs[0], T, d }),
          ...(last ? [['embed', xs[0], T * d] as [string, GPUBuffer, number]] : []),
        );
      });
    } else {
      const input = o.layers?.input;
      if (input instanceof Float32Array && input.length === T * d)
        device.queue.writeBuffer(xs[0], 0, input.buffer, input.byteOffset, T * d * 4);
      else if (input && !(input instanceof Float32Array) && input.size >= T * d * 4)
        before.push({ src: input, dst: xs[0], bytes: T * d * 4 });
      else throw new Error(`plan: layers ${from}..${to} need an input of [${T}, ${d}]`);
    }
    // Which fusions of the switched-on kernels run on this model, each where its first replaced op would.
    const fusions = activeFusions(o.fused, cfg.useParallelResidual);
    const fusionAt = new Map<PlanOpName, Fusion>();
    const replaced = new Set<PlanOpName>();
    for (const { fusion } of fusions) {
      const first = ALL_OPS.find((op) => fusion.replaces.includes(op));
      if (first) fusionAt.set(first, fusion);
      for (const op of fusion.replaces) replaced.add(op);
    }
    const kernelOf = new Map(fusions.map((f) => [f.fusion, f.kernel]));
    const layerOps = layerOpsOf(cfg.useParallelResidual);
    const gemmOn = on('gemm');
    let cur = 0;
    let prevFold: OutFold | null = null; // the previous layer's MLP reduction, when this layer's LayerNorm does it
    for (let i = from; i < to; i++) {
      const x = xs[cur];
      const ctx = b.ctx[i % 2];
      // Wiring faults belong to the fused path: they apply only where the fused GEMM runs attention.dense.
      const attnOut = gemmOn && o.hooks?.aliasResidual?.(i) ? x : b.attnOut;
      const L: LayerCtx = {
        p: `layers.${i}`,
        T,
        d,
        H,
        hd,
        ff,
        eps,
        rotaryNdims: cfg.rotaryNdims,
        parallel: cfg.useParallelResidual,
        weights: m.layers[i],
        dummy: m.dummy,
        b,
        x,
        xNext: xs[1 - cur],
        ctx,
        denseIn: gemmOn && o.hooks?.staleContext?.(i) ? b.ctx[(i + 1) % 2] : ctx,
        attnOut,
        resid: cfg.useParallelResidual ? x : b.residMid,
        k: o.kv?.k[i] ?? b.k!, // [H, at.rows, hd]
        v: o.kv?.v[i] ?? b.v!,
        kvFloats: H * at.rows * hd,
        cos,
        sin,
        at,
        Tk,
        gemm: gemmOpts,
        denseFold: fold.layers[i - from].dense ? { ws: fold.dense, partials: null } : null,
        outFold: null,
        prevFold,
      };
      if (fold.layers[i - from].out) {
        const dense = L.parallel ? L.denseFold : null;
        L.outFold = { p: L.p, ws: fold.mlp, r1: L.resid, attnOut, dense, mlp: null };
      }
      // The layer, op by op in the reference order (forward.ts): a fusion where its first replaced op would
      // run, the reference kernel for every op no switched-on kernel replaces.
      for (const name of layerOps) {
        const fusion = fusionAt.get(name);
        if (fusion && fusion.launcher !== 'lm_head') {
          const launch = FUSION_OPS[fusion.launcher](L);
          op(kernelOf.get(fusion)!, i, launch.make, ...launch.writes);
        } else if (!replaced.has(name)) {
          const launch = neoxReferenceLaunch(name as LayerOp)(L); // the op's `wgsl` slot in the op registry
          op(null, i, launch.make, ...launch.writes);
        }
      }
      prevFold = L.outFold;
      cur = 1 - cur;
    }
    if (whole) {
      const ln = m.finalLayerNorm;
      const norm = neoxTopLaunch('final_norm')({ x: xs[cur], ln, y: b.finalNorm, T, d, eps });
      op(null, null, norm, ['final_norm', b.finalNorm, T * d]);
      // The LM head in pieces that each fit one binding: the weight chunks of the upload, split again by rows so
      // that each piece's [T, rows] output fits too. Every piece writes its own buffer; the 'logits' tap is the
      // pieces side by side.
      // The LM head in pieces that each fit one binding; every piece writes its own buffer and the 'logits' tap
      // is the pieces side by side.
      const pieces = lmHeadPieces(m, T, o.maxBindingBytes);
      const head = fusionAt.get('logits');
      const parts: TapPart[] = [];
      pieces.forEach((piece, i) => {
        const label = pieces.length === 1 ? 'logits' : `logits[${i}]`;
        const y = pieces.length === 1 ? b.logits() : acts.get(T * piece.rows, label);
        parts.push({ buffer: y, col0: piece.col0, cols: piece.rows });
        const last = i === pieces.length - 1;
        const write: [string, GPUBuffer, number, TapPart[]] = ['logits', parts[0].buffer, T * V, parts];
        const buf = { x: b.finalNorm, w: piece.w, y, dummy: m.dummy };
        const args = { label, buf, T, rows: piece.rows, d, cpu: gemmOpts.policy?.cpu };
        const make = head ? headLaunch(args, gemmOpts) : neoxTopLaunch('logits')(args);
        op(head ? kernelOf.get(head)! : null, null, make, ...(last ? [write] : []));
      });
    }
  } catch (e) {
    acts.release();
    for (const u of uploads) u.destroy();
    throw e;
  }
  return {
    T,
    ops,
    before,
    bytes: acts.bytes,
    release: () => {
      acts.release();
      for (const u of uploads) u.destroy();
    },
  };
}
