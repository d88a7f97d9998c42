// The GPU oracle's layer and LM head, recorded op by op in double-float in the CPU oracle's op order
// (src/kernels/cpu/forward.ts), with the reference plan's tap names: what a whole forward, one layer and the local
// check of a whole layer share (src/engine/oracle-gpu.ts).
import type { BufferRef, OverrideConstants } from '../gpu/pipelines';
import { dfScores, dfSoftmax, dfValues } from '../kernels/oracle/attention';
import { dfGelu } from '../kernels/oracle/gelu';
import { dfLayerNorm } from '../kernels/oracle/layernorm';
import { dfLinear } from '../kernels/oracle/linear';
import { dfResidual } from '../kernels/oracle/residual';
import { dfRotary } from '../kernels/oracle/rotary';
import type { NeoXConfig } from '../numeric/types';
import type { GpuLinear, GpuModel, RowChunk } from './gpu-model';
import { ROW_GRANULE } from './gpu-model';
import { DF_BYTES, type DfBuffer, type OracleTaps, type Recording } from './oracle-df';

/** What the oracle's recorders read: the model on the GPU, the df constants (with the weights' format), the
 * largest storage binding. */
export interface OracleKit {
  model: GpuModel;
  df: OverrideConstants;
  dfW: OverrideConstants;
  maxBindingBytes: number;
}

/** The scratch tensors of a layer; in 'dump' mode one set serves every layer, in 'all' mode each has its own. */
export interface LayerBuffers {
  ln1: GPUBuffer;
  qkv: GPUBuffer;
  q: GPUBuffer;
  k: GPUBuffer;
  v: GPUBuffer;
  scores: GPUBuffer;
  probs: GPUBuffer;
  ctx: GPUBuffer;
  attnOut: GPUBuffer;
  residMid: GPUBuffer | null;
  ln2: GPUBuffer;
  fc1: GPUBuffer;
  gelu: GPUBuffer;
  mlpOut: GPUBuffer;
}

export function layerBuffers(cfg: NeoXConfig, rec: Recording, T: number, p: string): LayerBuffers {
  const d = cfg.hiddenSize;
  const H = cfg.numHeads;
  const ff = cfg.intermediateSize;
  return {
    ln1: rec.df(T * d, `${p}.ln1`),
    qkv: rec.df(T * 3 * d, `${p}.qkv`),
    q: rec.df(T * d, `${p}.q`),
    k: rec.df(T * d, `${p}.k`),
    v: rec.df(T * d, `${p}.v`),
    scores: rec.df(H * T * T, `${p}.scores`),
    probs: rec.df(H * T * T, `${p}.probs`),
    ctx: rec.df(T * d, `${p}.ctx`),
    attnOut: rec.df(T * d, `${p}.attn_out`),
    residMid: cfg.useParallelResidual ? null : rec.df(T * d, `${p}.resid_mid`),
    ln2: rec.df(T * d, `${p}.ln2`),
    fc1: rec.df(T * ff, `${p}.fc1`),
    gelu: rec.df(T * ff, `${p}.gelu`),
    mlpOut: rec.df(T * d, `${p}.mlp_out`),
  };
}

/**
 * The rows before `from` of a layer's QKV projection, already computed ([≥ from, 3d] df: a forward over the
 * prompt), and a scratch buffer for the new rows ([T − from, 3d] df): recordLayer then computes rows from..T−1 only.
 */
export interface QkvPrefix {
  from: number;
  qkv: GPUBuffer;
  rows: GPUBuffer;
}

/**
 * One GPTNeoXLayer on x [T, d] df, in the CPU oracle's op order; returns the new residual (its own buffer). With
 * `rows`, only the rows from..T−1 of its output ([T − from, d]; `rows.x` holds x's rows from..T−1): ln1 and the
 * QKV projection over every row (the keys and values of all positions), attention for the query rows from..T−1,
 * and the rest on those rows — the same bits as those rows of the whole layer. With `prefix` instead, x holds the
 * rows from..T−1 only and the QKV projection of the rows before comes from the prefix (a decode's earlier rows):
 * ln1 and the QKV projection on the new rows, the same bits again where the prefix holds the whole layer's rows.
 */
export function recordLayer(
  k: OracleKit,
  rec: Recording,
  i: number,
  x: GPUBuffer,
  T: number,
  rope: { cos: GPUBuffer; sin: GPUBuffer },
  b: LayerBuffers,
  taps: OracleTaps,
  rows?: { from: number; x: GPUBuffer },
  prefix?: QkvPrefix,
): GPUBuffer {
  const { cfg } = k.model;
  const lw = k.model.layers[i];
  const d = cfg.hiddenSize;
  const H = cfg.numHeads;
  const hd = cfg.headDim;
  const ff = cfg.intermediateSize;
  const eps = cfg.layerNormEps;
  const p = `layers.${i}`;
  const add = rec.program.add.bind(rec.program);
  const df = { constants: k.df };
  const tap = (name: string, buffer: GPUBuffer, n: number) => {
    if (taps === 'all') rec.taps.set(`${p}.${name}`, { buffer, n });
  };
  const from = prefix?.from ?? rows?.from ?? 0;
  const R = T - from; // the rows after attention
  const xr = prefix ? x : (rows?.x ?? x); // x's rows from..T−1
  const query = { q0: from, R };
  const linear = (name: string, w: GpuLinear, xIn: GPUBuffer, y: GPUBuffer, N: number, K: number, M = R) =>
    add(
      dfLinear(`${p}.${name}`, { x: xIn, w: w.weight, b: w.bias, y, dummy: k.model.dummy }, M, N, K, {
        constants: k.dfW,
      }),
    );
  const ln1 = lw.inputLayernorm;
  const ln2 = lw.postAttentionLayernorm;

  // Attention: dense(attention(input_layernorm(x))).
  if (prefix) {
    // ln1 and QKV on the new rows; the earlier rows' QKV copied in beside them: [T, 3d].
    add(dfLayerNorm(`${p}.ln1`, { x, weight: ln1.weight, bias: ln1.bias, y: b.ln1 }, R, d, eps, df)); // [R, d]
    linear('qkv', lw.attention.qkv, b.ln1, prefix.rows, 3 * d, d, R); // [R, 3d]
    const row = 3 * d * DF_BYTES;
    const after = `${p}.qkv`;
    rec.program.copyAfter({
      after,
      src: prefix.qkv,
      srcOffset: 0,
      dst: b.qkv,
      dstOffset: 0,
      bytes: from * row,
    });
    rec.program.copyAfter({
      after,
      src: prefix.rows,
      srcOffset: 0,
      dst: b.qkv,
      dstOffset: from * row,
      bytes: R * row,
    });
  } else {
    add(dfLayerNorm(`${p}.ln1`, { x, weight: ln1.weight, bias: ln1.bias, y: b.ln1 }, T, d, eps, df)); // [T, d]
    linear('qkv', lw.attention.qkv, b.ln1, b.qkv, 3 * d, d, T); // [T, 3d] = [T, H, 3, hd]
  }
  add(
    dfRotary(`${p}.rotary`, { qkv: b.qkv, ...rope, q: b.q, k: b.k, v: b.v }, T, H, hd, cfg.rotaryNdims, df),
  ); // [H, T, hd] each
  add(dfScores(`${p}.scores`, { q: b.q, k: b.k, s: b.scores }, H, T, hd, df, query)); // [H, R, T], 0 above the diagonal
  add(dfSoftmax(`${p}.probs`, { s: b.scores, p: b.probs }, H, T, df, query)); // [H, R, T]
  add(dfValues(`${p}.ctx`, { p: b.probs, v: b.v, ctx: b.ctx }, H, T, hd, df, query)); // [R, d]
  linear('attn_out', lw.attention.dense, b.ctx, b.attnOut, d, d); // [R, d]
  tap('ln1', b.ln1, (prefix ? R : T) * d);
  tap('qkv', b.qkv, T * 3 * d);
  tap('q', b.q, T * d);
  tap('k', b.k, T * d);
  tap('v', b.v, T * d);
  tap('scores', b.scores, H * R * T);
  tap('probs', b.probs, H * R * T);
  tap('ctx', b.ctx, R * d);
  tap('attn_out', b.attnOut, R * d);

  // MLP on x (parallel) or attn + x (sequential).
  const dummy = k.model.dummy;
  if (b.residMid) {
    add(dfResidual(`${p}.resid_mid`, { a: b.attnOut, b: xr, c: null, out: b.residMid, dummy }, R * d, df));
  }
  const mlpIn = b.residMid ?? xr;
  add(dfLayerNorm(`${p}.ln2`, { x: mlpIn, weight: ln2.weight, bias: ln2.bias, y: b.ln2 }, R, d, eps, df)); // [R, d]
  linear('fc1', lw.mlp.denseHTo4h, b.ln2, b.fc1, ff, d); // [R, ff]
  add(dfGelu(`${p}.gelu`, { x: b.fc1, y: b.gelu }, R * ff, df)); // [R, ff]
  linear('mlp_out', lw.mlp.dense4hToH, b.gelu, b.mlpOut, d, ff); // [R, d]
  // HF: parallel (mlp + attn) + x; sequential mlp + (attn + x).
  const out = rec.df(R * d, `${p}.out`);
  const sum = b.residMid ? { a: b.mlpOut, b: b.residMid, c: null } : { a: b.mlpOut, b: b.attnOut, c: xr };
  add(dfResidual(`${p}.out`, { ...sum, out, dummy }, R * d, df)); // [R, d]
  tap('ln2', b.ln2, R * d);
  tap('fc1', b.fc1, R * ff);
  tap('gelu', b.gelu, R * ff);
  tap('mlp_out', b.mlpOut, R * d);
  if (b.residMid) tap('resid_mid', b.residMid, R * d);
  rec.taps.set(`${p}.out`, { buffer: out, n: R * d });
  return out;
}

/**
 * The LM head in pieces that each fit one binding, as the reference plan splits it: the weight chunks of the
 * upload, split again by rows so that each piece's [T, rows] df output fits too. `cutFor`: the row count the
 * pieces are cut for (default T; a run's checked rows are cut as its whole, so that the pieces pair up).
 */
export function recordLmHead(k: OracleKit, rec: Recording, x: GPUBuffer, T: number, cutFor = T): DfBuffer {
  const { cfg } = k.model;
  const d = cfg.hiddenSize;
  const V = cfg.vocabSize;
  const wBytes = k.model.weightsF16 ? 2 : 4;
  const actRows = Math.max(
    ROW_GRANULE,
    Math.floor(k.maxBindingBytes / (DF_BYTES * cutFor) / ROW_GRANULE) * ROW_GRANULE,
  );
  const pieces: { chunk: RowChunk; r0: number; rows: number }[] = [];
  for (const chunk of k.model.lmHead) {
    for (let r0 = 0; r0 < chunk.rows; r0 += actRows)
      pieces.push({ chunk, r0, rows: Math.min(actRows, chunk.rows - r0) });
  }
  const parts: { buffer: GPUBuffer; col0: number; cols: number }[] = [];
  pieces.forEach((piece, i) => {
    const label = pieces.length === 1 ? 'logits' : `logits[${i}]`;
    const y = rec.df(T * piece.rows, label);
    const w: BufferRef =
      piece.rows === piece.chunk.rows
        ? piece.chunk.buffer
        : { buffer: piece.chunk.buffer, offset: piece.r0 * d * wBytes, size: piece.rows * d * wBytes };
    rec.program.add(
      dfLinear(label, { x, w, b: null, y, dummy: k.model.dummy }, T, piece.rows, d, {
        constants: k.dfW,
      }),
    );
    parts.push({ buffer: y, col0: piece.chunk.row0 + piece.r0, cols: piece.rows });
  });
  return parts.length === 1
    ? { buffer: parts[0].buffer, n: T * V }
    : { buffer: parts[0].buffer, n: T * V, parts };
}
