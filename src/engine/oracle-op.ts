// One op of the model on a run's recorded inputs, in double-float (GpuOracle.opOn records it): the local check of a
// run (src/compare/run-checks.ts), each op as the whole forward computes it (oracle-layer.ts), on every row or on a
// row range.
import { dfScores, dfSoftmax, dfValues } from '../kernels/oracle/attention';
import { dfEmbedding } from '../kernels/oracle/embedding';
import { dfGelu } from '../kernels/oracle/gelu';
import { dfLayerNorm } from '../kernels/oracle/layernorm';
import { dfLinear } from '../kernels/oracle/linear';
import { dfPromote } from '../kernels/oracle/promote';
import { dfResidual } from '../kernels/oracle/residual';
import { dfRotary } from '../kernels/oracle/rotary';
import type { CheckOp } from '../ops/types';
import type { GpuLinear } from './gpu-model';
import { type DfBuffer, OracleError, type Recording } from './oracle-df';
import { layerBuffers, type OracleKit, recordLayer, recordLmHead } from './oracle-layer';

/** The ops a run's local checks re-run (src/compare/run-checks.ts): the registry's check ops (src/ops/types.ts). */
export type OracleOp = CheckOp;

/** One op on recorded inputs: f32 buffers of n floats each, in the op's argument order. */
export interface OracleOpCall {
  op: OracleOp;
  layer: number | null;
  inputs: { buffer: GPUBuffer; n: number }[];
  label: string;
}

/**
 * Records op `c` on its recorded inputs into `rec` (rows from..T−1 of its output; see GpuOracle.opOn) and returns
 * its output. `rotary` gives the cos/sin tables of all T positions, uploaded into `rec`.
 */
export function recordOp(
  k: OracleKit,
  rec: Recording,
  c: OracleOpCall,
  tokens: number[],
  from: number,
  rotary: () => { cos: GPUBuffer; sin: GPUBuffer },
): DfBuffer {
  const { cfg } = k.model;
  const T = tokens.length;
  const d = cfg.hiddenSize;
  const R = T - from;
  const allRows = c.op === 'attention' || c.op === 'layer';
  const width = c.op === 'act' || c.op === 'fc2' ? cfg.intermediateSize : c.op === 'attention' ? 3 * d : d;
  const xs = c.inputs.map(({ buffer, n }, j) => {
    // Every row (T·width), or only the checked ones ((T − from)·width) where the op is row-wise.
    const rows = n === T * width ? T : !allRows && n === R * width ? R : -1;
    if (rows < 0)
      throw new OracleError(
        `oracle ${c.label}: input ${j} holds ${n} floats, not ${allRows ? T : `${T} or ${R}`} rows of ${width}`,
      );
    const skip = allRows ? 0 : (rows - R) * width;
    const count = allRows ? n : R * width;
    const x = rec.df(count, `${c.label}.in${j}`);
    rec.program.add(dfPromote(`${c.label}.promote${j}`, { x: buffer, out: x }, count, {}, skip));
    return x;
  });
  const df = { constants: k.df };
  const lw = c.layer === null ? null : k.model.layers[c.layer];
  const linear = (w: GpuLinear, N: number, K: number) => {
    const y = rec.df(R * N, c.label);
    rec.program.add(
      dfLinear(c.label, { x: xs[0], w: w.weight, b: w.bias, y, dummy: k.model.dummy }, R, N, K, {
        constants: k.dfW,
      }),
    );
    return { buffer: y, n: R * N };
  };
  const norm = (nw: { weight: GPUBuffer; bias: GPUBuffer }) => {
    const y = rec.df(R * d, c.label);
    rec.program.add(dfLayerNorm(c.label, { x: xs[0], ...nw, y }, R, d, cfg.layerNormEps, df));
    return { buffer: y, n: R * d };
  };
  let out: DfBuffer;
  switch (c.op) {
    case 'embed': {
      const ids = rec.upload(new Uint32Array(tokens.slice(from)), 'ids');
      const y = rec.df(R * d, c.label);
      k.model.embedIn.forEach((chunk, i) => {
        rec.program.add(
          dfEmbedding(`${c.label}[${i}]`, { ids, table: chunk.buffer, out: y }, R, d, chunk, {
            constants: k.dfW,
          }),
        );
      });
      out = { buffer: y, n: R * d };
      break;
    }
    case 'ln1':
      out = norm(lw!.inputLayernorm);
      break;
    case 'ln2':
      out = norm(lw!.postAttentionLayernorm);
      break;
    case 'final_norm':
      out = norm(k.model.finalLayerNorm);
      break;
    case 'qkv':
      out = linear(lw!.attention.qkv, 3 * d, d);
      break;
    case 'dense':
      out = linear(lw!.attention.dense, d, d);
      break;
    case 'fc1':
      out = linear(lw!.mlp.denseHTo4h, cfg.intermediateSize, d);
      break;
    case 'fc2':
      out = linear(lw!.mlp.dense4hToH, d, cfg.intermediateSize);
      break;
    case 'act': {
      const n = R * cfg.intermediateSize;
      const y = rec.df(n, c.label);
      rec.program.add(dfGelu(c.label, { x: xs[0], y }, n, df));
      out = { buffer: y, n };
      break;
    }
    case 'attention': {
      const H = cfg.numHeads;
      const hd = cfg.headDim;
      const rope = rotary();
      const rows = { q0: from, R }; // the query rows; the keys and values of all T positions
      const [q, k, v] = ['q', 'k', 'v'].map((n) => rec.df(T * d, `${c.label}.${n}`));
      const scores = rec.df(H * R * T, `${c.label}.scores`);
      const probs = rec.df(H * R * T, `${c.label}.probs`);
      const ctx = rec.df(R * d, c.label);
      rec.program.add(
        dfRotary(`${c.label}.rotary`, { qkv: xs[0], ...rope, q, k, v }, T, H, hd, cfg.rotaryNdims, df),
      );
      rec.program.add(dfScores(`${c.label}.scores`, { q, k, s: scores }, H, T, hd, df, rows));
      rec.program.add(dfSoftmax(`${c.label}.probs`, { s: scores, p: probs }, H, T, df, rows));
      rec.program.add(dfValues(c.label, { p: probs, v, ctx }, H, T, hd, df, rows));
      out = { buffer: ctx, n: R * d };
      break;
    }
    case 'residual': {
      const y = rec.df(R * d, c.label);
      const [a, b, cc] = xs;
      rec.program.add(dfResidual(c.label, { a, b, c: cc ?? null, out: y, dummy: k.model.dummy }, R * d, df));
      out = { buffer: y, n: R * d };
      break;
    }
    case 'layer': {
      const rope = rotary();
      // Past attention, the layer reads its input's rows from..T−1 only: promoted again from there.
      let rows: { from: number; x: GPUBuffer } | undefined;
      if (from > 0) {
        rows = { from, x: rec.df(R * d, `${c.label}.in0.rows`) };
        const src = c.inputs[0].buffer;
        rec.program.add(dfPromote(`${c.label}.promote.rows`, { x: src, out: rows.x }, R * d, {}, from * d));
      }
      const b = layerBuffers(k.model.cfg, rec, T, c.label);
      const y = recordLayer(k, rec, c.layer!, xs[0], T, rope, b, 'dump', rows);
      out = { buffer: y, n: R * d };
      break;
    }
    case 'lm_head':
      out = recordLmHead(k, rec, xs[0], R, T);
      break;
  }
  return out;
}
