// The oracle on the GPU: the same GPT-NeoX forward as the CPU fp64 oracle (src/kernels/cpu/forward.ts), every
// op in double-float (an f32 pair hi + lo, ~48 bits; shaders/oracle/). Tensors are df buffers
// (`array<vec2<f32>>`, x = hi, y = lo, row-major) with the reference plan's tap names and shapes. A whole
// forward, or single layers on a given input, are recorded into the caller's command encoder (one submit).
import type { BufferRef, OverrideConstants, PipelineCache } from '../gpu/pipelines';
import type { BufferPool } from '../gpu/pool';
import { Program } from '../gpu/program';
import { recordReadback, uploadBuffer } from '../gpu/readback';
import type { GpuTimer } from '../gpu/timestamps';
import type { RotaryAngles } from '../kernels/cpu/rotary-angles';
import { dfScores, dfSoftmax, dfValues } from '../kernels/oracle/attention';
import { dfEmbedding } from '../kernels/oracle/embedding';
import { dfGelu } from '../kernels/oracle/gelu';
import { dfLayerNorm } from '../kernels/oracle/layernorm';
import { dfLinear } from '../kernels/oracle/linear';
import { dfPromote } from '../kernels/oracle/promote';
import { dfResidual } from '../kernels/oracle/residual';
import { dfRotary, rotaryTablesF64 } from '../kernels/oracle/rotary';
import { fromDfPairs, toDfPairs } from '../numeric/double-float';
import { type GpuLinear, type GpuModel, ROW_GRANULE, type RowChunk } from './gpu-model';

/** n elements of vec2<f32> (hi, lo); `parts` when split by columns (the logits of a large vocabulary), each
 * [rows, cols] in its own buffer, columns col0.. of the whole. */
export interface DfBuffer {
  buffer: GPUBuffer;
  n: number;
  parts?: { buffer: GPUBuffer; col0: number; cols: number }[];
}

/** The taps of one recorded oracle run. Release only after the encoder's work has been submitted and read. */
export interface OracleRun {
  taps: Map<string, DfBuffer>;
  release(): void;
}

export type OracleTaps = 'dump' | 'all';

/** The ops a run's local checks re-run (src/compare/run-checks.ts). */
export type OracleOp =
  | 'embed'
  | 'ln1'
  | 'qkv'
  | 'attention'
  | 'dense'
  | 'ln2'
  | 'fc1'
  | 'act'
  | 'fc2'
  | 'residual'
  | 'layer'
  | 'final_norm'
  | 'lm_head';

/** One op on recorded inputs: f32 buffers of n floats each, in the op's argument order. */
export interface OracleOpCall {
  op: OracleOp;
  layer: number | null;
  inputs: { buffer: GPUBuffer; n: number }[];
  label: string;
}

export class OracleError extends Error {
  override name = 'OracleError';
}

const DF_BYTES = 8;

/** Buffers, uploads and dispatches of one run, recorded once into an encoder and released together. */
class Recording {
  readonly program: Program;
  readonly taps = new Map<string, DfBuffer>();
  private pooled: GPUBuffer[] = [];
  private uploads: GPUBuffer[] = [];

  constructor(
    private readonly device: GPUDevice,
    pipelines: PipelineCache,
    private readonly pool: BufferPool,
    private readonly maxBinding: number,
  ) {
    this.program = new Program(device, pipelines);
  }

  /** A df buffer of n elements from the pool (refused, with the tensor's name, beyond one storage binding). */
  df(n: number, label: string): GPUBuffer {
    const bytes = n * DF_BYTES;
    if (bytes > this.maxBinding) {
      throw new OracleError(
        `oracle ${label} needs ${bytes} bytes, more than one storage binding on this adapter (${this.maxBinding}): use a shorter prompt`,
      );
    }
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const b = this.pool.acquire(bytes, usage, `oracle:${label}`);
    this.pooled.push(b);
    return b;
  }

  upload(data: Float32Array | Uint32Array, label: string): GPUBuffer {
    const b = uploadBuffer(this.device, data, `oracle:${label}`);
    this.uploads.push(b);
    return b;
  }

  release(): void {
    this.program.dispose();
    for (const b of this.pooled) this.pool.release(b);
    for (const b of this.uploads) b.destroy();
    this.pooled = [];
    this.uploads = [];
  }

  run(): OracleRun {
    return { taps: this.taps, release: () => this.release() };
  }
}

/** The scratch tensors of a layer; in 'dump' mode one set serves every layer, in 'all' mode each has its own. */
interface LayerBuffers {
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

export class GpuOracle {
  private readonly df: OverrideConstants;
  private readonly dfW: OverrideConstants;

  constructor(
    private readonly device: GPUDevice,
    private readonly pipelines: PipelineCache,
    private readonly pool: BufferPool,
    private readonly model: GpuModel,
    private readonly opts: { dfFma: boolean; maxBindingBytes: number; angles?: RotaryAngles },
  ) {
    this.df = { DF_FMA: opts.dfFma };
    this.dfW = { DF_FMA: opts.dfFma, W_F16: model.weightsF16 };
  }

  /** Whole forward on tokens (positions 0..T-1). taps 'dump': embed, layers.i.out, final_norm, logits;
   * 'all': every tap. With a timer, each op is its own timed pass (the bench's view of where the time goes). */
  forward(
    encoder: GPUCommandEncoder,
    tokens: number[],
    taps: OracleTaps,
    timer?: GpuTimer | null,
  ): OracleRun {
    const { cfg } = this.model;
    const T = tokens.length;
    const d = cfg.hiddenSize;
    if (T === 0) throw new OracleError('oracle forward: empty token list');
    tokens.forEach((id, t) => {
      if (!Number.isInteger(id) || id < 0 || id >= cfg.vocabSize)
        throw new OracleError(
          `oracle forward: token ${id} at position ${t} is outside [0, ${cfg.vocabSize})`,
        );
    });
    const rec = this.recording();
    try {
      const ids = rec.upload(new Uint32Array(tokens), 'ids');
      const embed = rec.df(T * d, 'embed');
      this.model.embedIn.forEach((chunk, c) => {
        const label = this.model.embedIn.length === 1 ? 'embed' : `embed[${c}]`;
        rec.program.add(
          dfEmbedding(label, { ids, table: chunk.buffer, out: embed }, T, d, chunk, { constants: this.dfW }),
        );
      });
      rec.taps.set('embed', { buffer: embed, n: T * d });
      const rope = this.rotary(rec, T);
      const shared = taps === 'dump' ? this.layerBuffers(rec, T, 'scratch') : null;
      let x = embed;
      for (let i = 0; i < cfg.numLayers; i++) {
        x = this.recordLayer(rec, i, x, T, rope, shared ?? this.layerBuffers(rec, T, `layers.${i}`), taps);
      }
      const fn = this.model.finalLayerNorm;
      const finalNorm = rec.df(T * d, 'final_norm');
      rec.program.add(
        dfLayerNorm(
          'final_norm',
          { x, weight: fn.weight, bias: fn.bias, y: finalNorm },
          T,
          d,
          cfg.layerNormEps,
          { constants: this.df },
        ),
      );
      rec.taps.set('final_norm', { buffer: finalNorm, n: T * d });
      rec.taps.set('logits', this.lmHead(rec, finalNorm, T));
      rec.program.encode(encoder, timer);
    } catch (e) {
      rec.release();
      throw e;
    }
    return rec.run();
  }

  /** Layer i alone on a residual input [T, d] (an f32 buffer promoted exactly, or a df buffer): writes
   * 'layers.i.out' (+ the layer's taps when 'all'). Several layers can be recorded into one encoder. */
  layer(
    encoder: GPUCommandEncoder,
    i: number,
    input: { f32: GPUBuffer } | { df: GPUBuffer },
    T: number,
    taps: OracleTaps,
    timer?: GpuTimer | null,
  ): OracleRun {
    const { cfg } = this.model;
    const d = cfg.hiddenSize;
    if (!Number.isInteger(i) || i < 0 || i >= cfg.numLayers)
      throw new OracleError(`oracle layer: index ${i} is outside [0, ${cfg.numLayers})`);
    if (!Number.isInteger(T) || T < 1)
      throw new OracleError(`oracle layer: T = ${T} is not a positive integer`);
    const src = 'f32' in input ? input.f32 : input.df;
    const need = T * d * ('f32' in input ? 4 : DF_BYTES);
    if (src.size < need)
      throw new OracleError(
        `oracle layer ${i}: input buffer holds ${src.size} bytes, [${T}, ${d}] needs ${need}`,
      );
    const rec = this.recording();
    try {
      let x = src;
      if ('f32' in input) {
        x = rec.df(T * d, `layers.${i}.in`);
        rec.program.add(dfPromote(`layers.${i}.promote`, { x: input.f32, out: x }, T * d));
      }
      const rope = this.rotary(rec, T);
      this.recordLayer(rec, i, x, T, rope, this.layerBuffers(rec, T, `layers.${i}`), taps);
      rec.program.encode(encoder, timer);
    } catch (e) {
      rec.release();
      throw e;
    }
    return rec.run();
  }

  /**
   * One op of the model, exactly, on inputs a run recorded (f32 [T, width] buffers, promoted exactly): the local
   * check of a run from elsewhere (src/compare/run-checks.ts). The result is the tap 'out'. `embed` reads `tokens`;
   * `residual` adds its two or three inputs in HF's order; `layer` is the whole layer.
   */
  opOn(encoder: GPUCommandEncoder, c: OracleOpCall, tokens: number[]): OracleRun {
    const { cfg } = this.model;
    const T = tokens.length;
    const d = cfg.hiddenSize;
    const rec = this.recording();
    try {
      const xs = c.inputs.map(({ buffer, n }, j) => {
        const x = rec.df(n, `${c.label}.in${j}`);
        rec.program.add(dfPromote(`${c.label}.promote${j}`, { x: buffer, out: x }, n));
        return x;
      });
      const df = { constants: this.df };
      const lw = c.layer === null ? null : this.model.layers[c.layer];
      const linear = (w: GpuLinear, N: number, K: number) => {
        const y = rec.df(T * N, c.label);
        rec.program.add(
          dfLinear(c.label, { x: xs[0], w: w.weight, b: w.bias, y, dummy: this.model.dummy }, T, N, K, {
            constants: this.dfW,
          }),
        );
        return { buffer: y, n: T * N };
      };
      const norm = (nw: { weight: GPUBuffer; bias: GPUBuffer }) => {
        const y = rec.df(T * d, c.label);
        rec.program.add(dfLayerNorm(c.label, { x: xs[0], ...nw, y }, T, d, cfg.layerNormEps, df));
        return { buffer: y, n: T * d };
      };
      let out: DfBuffer;
      switch (c.op) {
        case 'embed': {
          const ids = rec.upload(new Uint32Array(tokens), 'ids');
          const y = rec.df(T * d, c.label);
          this.model.embedIn.forEach((chunk, k) => {
            rec.program.add(
              dfEmbedding(`${c.label}[${k}]`, { ids, table: chunk.buffer, out: y }, T, d, chunk, {
                constants: this.dfW,
              }),
            );
          });
          out = { buffer: y, n: T * d };
          break;
        }
        case 'ln1':
          out = norm(lw!.inputLayernorm);
          break;
        case 'ln2':
          out = norm(lw!.postAttentionLayernorm);
          break;
        case 'final_norm':
          out = norm(this.model.finalLayerNorm);
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
          const n = T * cfg.intermediateSize;
          const y = rec.df(n, c.label);
          rec.program.add(dfGelu(c.label, { x: xs[0], y }, n, df));
          out = { buffer: y, n };
          break;
        }
        case 'attention': {
          const H = cfg.numHeads;
          const hd = cfg.headDim;
          const rope = this.rotary(rec, T);
          const [q, k, v] = ['q', 'k', 'v'].map((n) => rec.df(T * d, `${c.label}.${n}`));
          const scores = rec.df(H * T * T, `${c.label}.scores`);
          const probs = rec.df(H * T * T, `${c.label}.probs`);
          const ctx = rec.df(T * d, c.label);
          rec.program.add(
            dfRotary(`${c.label}.rotary`, { qkv: xs[0], ...rope, q, k, v }, T, H, hd, cfg.rotaryNdims, df),
          );
          rec.program.add(dfScores(`${c.label}.scores`, { q, k, s: scores }, H, T, hd, df));
          rec.program.add(dfSoftmax(`${c.label}.probs`, { s: scores, p: probs }, H, T, df));
          rec.program.add(dfValues(c.label, { p: probs, v, ctx }, H, T, hd, df));
          out = { buffer: ctx, n: T * d };
          break;
        }
        case 'residual': {
          const y = rec.df(T * d, c.label);
          const [a, b, cc] = xs;
          rec.program.add(
            dfResidual(c.label, { a, b, c: cc ?? null, out: y, dummy: this.model.dummy }, T * d, df),
          );
          out = { buffer: y, n: T * d };
          break;
        }
        case 'layer': {
          const rope = this.rotary(rec, T);
          const y = this.recordLayer(
            rec,
            c.layer!,
            xs[0],
            T,
            rope,
            this.layerBuffers(rec, T, c.label),
            'dump',
          );
          out = { buffer: y, n: T * d };
          break;
        }
        case 'lm_head':
          out = this.lmHead(rec, xs[0], T);
          break;
      }
      rec.taps.set('out', out);
      rec.program.encode(encoder);
    } catch (e) {
      rec.release();
      throw e;
    }
    return rec.run();
  }

  private recording(): Recording {
    return new Recording(this.device, this.pipelines, this.pool, this.opts.maxBindingBytes);
  }

  /** cos/sin [T, r/2] in fp64 as the CPU oracle computes them, uploaded as df pairs. */
  private rotary(rec: Recording, T: number): { cos: GPUBuffer; sin: GPUBuffer } {
    const { cfg } = this.model;
    const t = rotaryTablesF64(T, cfg.rotaryNdims, cfg.rotaryBase, this.opts.angles);
    return { cos: rec.upload(toDfPairs(t.cos), 'cos'), sin: rec.upload(toDfPairs(t.sin), 'sin') };
  }

  private layerBuffers(rec: Recording, T: number, p: string): LayerBuffers {
    const { cfg } = this.model;
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

  /** One GPTNeoXLayer on x [T, d] df, in the CPU oracle's op order; returns the new residual (its own buffer). */
  private recordLayer(
    rec: Recording,
    i: number,
    x: GPUBuffer,
    T: number,
    rope: { cos: GPUBuffer; sin: GPUBuffer },
    b: LayerBuffers,
    taps: OracleTaps,
  ): GPUBuffer {
    const { cfg } = this.model;
    const lw = this.model.layers[i];
    const d = cfg.hiddenSize;
    const H = cfg.numHeads;
    const hd = cfg.headDim;
    const ff = cfg.intermediateSize;
    const eps = cfg.layerNormEps;
    const p = `layers.${i}`;
    const add = rec.program.add.bind(rec.program);
    const df = { constants: this.df };
    const tap = (name: string, buffer: GPUBuffer, n: number) => {
      if (taps === 'all') rec.taps.set(`${p}.${name}`, { buffer, n });
    };
    const linear = (name: string, w: GpuLinear, xIn: GPUBuffer, y: GPUBuffer, N: number, K: number) =>
      add(
        dfLinear(`${p}.${name}`, { x: xIn, w: w.weight, b: w.bias, y, dummy: this.model.dummy }, T, N, K, {
          constants: this.dfW,
        }),
      );
    const ln1 = lw.inputLayernorm;
    const ln2 = lw.postAttentionLayernorm;

    // Attention: dense(attention(input_layernorm(x))).
    add(dfLayerNorm(`${p}.ln1`, { x, weight: ln1.weight, bias: ln1.bias, y: b.ln1 }, T, d, eps, df)); // [T, d]
    linear('qkv', lw.attention.qkv, b.ln1, b.qkv, 3 * d, d); // [T, 3d] = [T, H, 3, hd]
    add(
      dfRotary(`${p}.rotary`, { qkv: b.qkv, ...rope, q: b.q, k: b.k, v: b.v }, T, H, hd, cfg.rotaryNdims, df),
    ); // [H, T, hd] each
    add(dfScores(`${p}.scores`, { q: b.q, k: b.k, s: b.scores }, H, T, hd, df)); // [H, T, T], 0 above the diagonal
    add(dfSoftmax(`${p}.probs`, { s: b.scores, p: b.probs }, H, T, df)); // [H, T, T]
    add(dfValues(`${p}.ctx`, { p: b.probs, v: b.v, ctx: b.ctx }, H, T, hd, df)); // [T, d]
    linear('attn_out', lw.attention.dense, b.ctx, b.attnOut, d, d); // [T, d]
    tap('ln1', b.ln1, T * d);
    tap('qkv', b.qkv, T * 3 * d);
    tap('q', b.q, T * d);
    tap('k', b.k, T * d);
    tap('v', b.v, T * d);
    tap('scores', b.scores, H * T * T);
    tap('probs', b.probs, H * T * T);
    tap('ctx', b.ctx, T * d);
    tap('attn_out', b.attnOut, T * d);

    // MLP on x (parallel) or attn + x (sequential).
    const dummy = this.model.dummy;
    if (b.residMid) {
      add(dfResidual(`${p}.resid_mid`, { a: b.attnOut, b: x, c: null, out: b.residMid, dummy }, T * d, df));
    }
    const mlpIn = b.residMid ?? x;
    add(dfLayerNorm(`${p}.ln2`, { x: mlpIn, weight: ln2.weight, bias: ln2.bias, y: b.ln2 }, T, d, eps, df)); // [T, d]
    linear('fc1', lw.mlp.denseHTo4h, b.ln2, b.fc1, ff, d); // [T, ff]
    add(dfGelu(`${p}.gelu`, { x: b.fc1, y: b.gelu }, T * ff, df)); // [T, ff]
    linear('mlp_out', lw.mlp.dense4hToH, b.gelu, b.mlpOut, d, ff); // [T, d]
    // HF: parallel (mlp + attn) + x; sequential mlp + (attn + x).
    const out = rec.df(T * d, `${p}.out`);
    const sum = b.residMid ? { a: b.mlpOut, b: b.residMid, c: null } : { a: b.mlpOut, b: b.attnOut, c: x };
    add(dfResidual(`${p}.out`, { ...sum, out, dummy }, T * d, df)); // [T, d]
    tap('ln2', b.ln2, T * d);
    tap('fc1', b.fc1, T * ff);
    tap('gelu', b.gelu, T * ff);
    tap('mlp_out', b.mlpOut, T * d);
    if (b.residMid) tap('resid_mid', b.residMid, T * d);
    rec.taps.set(`${p}.out`, { buffer: out, n: T * d });
    return out;
  }

  /**
   * The LM head in pieces that each fit one binding, as the reference plan splits it: the weight chunks of the
   * upload, split again by rows so that each piece's [T, rows] df output fits too.
   */
  private lmHead(rec: Recording, x: GPUBuffer, T: number): DfBuffer {
    const { cfg } = this.model;
    const d = cfg.hiddenSize;
    const V = cfg.vocabSize;
    const wBytes = this.model.weightsF16 ? 2 : 4;
    const actRows = Math.max(
      ROW_GRANULE,
      Math.floor(this.opts.maxBindingBytes / (DF_BYTES * T) / ROW_GRANULE) * ROW_GRANULE,
    );
    const pieces: { chunk: RowChunk; r0: number; rows: number }[] = [];
    for (const chunk of this.model.lmHead) {
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
        dfLinear(label, { x, w, b: null, y, dummy: this.model.dummy }, T, piece.rows, d, {
          constants: this.dfW,
        }),
      );
      parts.push({ buffer: y, col0: piece.chunk.row0 + piece.r0, cols: piece.rows });
    });
    return parts.length === 1
      ? { buffer: parts[0].buffer, n: T * V }
      : { buffer: parts[0].buffer, n: T * V, parts };
  }
}

/** A storage buffer holding `data` as df pairs (hi = fround(v), lo = fround(v − hi)). */
export function uploadDf(device: GPUDevice, data: Float64Array): GPUBuffer {
  return uploadBuffer(device, toDfPairs(data), 'df');
}

/**
 * Reads a df tensor back as hi + lo in f64 (one submit). A tensor split by columns is reassembled into
 * [rows, Σ cols]; `rows` (the tensor's row count) is then n / Σ cols unless given, and checked when given.
 */
export async function readDf(device: GPUDevice, t: DfBuffer, rows?: number): Promise<Float64Array> {
  const encoder = device.createCommandEncoder({ label: 'readDf' });
  if (!t.parts) {
    if (rows !== undefined && (!Number.isInteger(rows) || rows < 1 || t.n % rows !== 0))
      throw new OracleError(`readDf: ${t.n} elements are not ${rows} whole rows`);
    const finish = recordReadback(device, encoder, [{ src: t.buffer, bytes: t.n * DF_BYTES }]);
    device.queue.submit([encoder.finish()]);
    const [pairs] = await finish();
    return fromDfPairs(pairs, t.n);
  }
  const cols = t.parts.reduce((s, p) => s + p.cols, 0);
  const R = rows ?? t.n / cols;
  if (!Number.isInteger(R) || R * cols !== t.n)
    throw new OracleError(`readDf: ${t.n} elements do not make ${rows ?? 'whole'} rows of ${cols} columns`);
  const finish = recordReadback(
    device,
    encoder,
    t.parts.map((p) => ({ src: p.buffer, bytes: R * p.cols * DF_BYTES })),
  );
  device.queue.submit([encoder.finish()]);
  const got = await finish();
  const out = new Float64Array(t.n);
  t.parts.forEach((p, k) => {
    const vals = fromDfPairs(got[k], R * p.cols);
    for (let r = 0; r < R; r++) out.set(vals.subarray(r * p.cols, (r + 1) * p.cols), r * cols + p.col0);
  });
  return out;
}
