// The oracle on the GPU: the same GPT-NeoX forward as the CPU fp64 oracle (src/kernels/cpu/forward.ts), every
// op in double-float (an f32 pair hi + lo, ~48 bits; shaders/oracle/). Tensors are df buffers
// (`array<vec2<f32>>`, x = hi, y = lo, row-major) with the reference plan's tap names and shapes. A whole
// forward, single layers on a given input, or one op on a run's recorded inputs are recorded into the caller's
// command encoder (one submit). The df tensors and their recording: oracle-df.ts; the layer and the LM head:
// oracle-layer.ts; one op on a run's recorded inputs: oracle-op.ts.
import type { OverrideConstants, PipelineCache } from '../gpu/pipelines';
import type { BufferPool } from '../gpu/pool';
import type { GpuTimer } from '../gpu/timestamps';
import type { RotaryAngles } from '../kernels/cpu/rotary-angles';
import { dfEmbedding } from '../kernels/oracle/embedding';
import { dfLayerNorm } from '../kernels/oracle/layernorm';
import { dfPromote } from '../kernels/oracle/promote';
import { rotaryTablesF64 } from '../kernels/oracle/rotary';
import { toDfPairs } from '../numeric/double-float';
import type { GpuModel } from './gpu-model';
import { layerBuffers, type OracleKit, recordLayer, recordLmHead } from './legacy-oracle-layer';
import { type OracleOpCall, recordOp } from './legacy-oracle-op';
import {
  DF_BYTES,
  type DfBuffer,
  OracleError,
  type OracleRun,
  type OracleTaps,
  Recording,
} from './oracle-df';

export type { OracleOp, OracleOpCall } from './legacy-oracle-op';

export class LegacyGpuOracle {
  private readonly df: OverrideConstants;
  private readonly dfW: OverrideConstants;
  private readonly kit: OracleKit;

  constructor(
    private readonly device: GPUDevice,
    private readonly pipelines: PipelineCache,
    private readonly pool: BufferPool,
    private readonly model: GpuModel,
    private readonly opts: { dfFma: boolean; maxBindingBytes: number; angles?: RotaryAngles },
  ) {
    this.df = { DF_FMA: opts.dfFma };
    this.dfW = { DF_FMA: opts.dfFma, W_F16: model.weightsF16 };
    this.kit = { model, df: this.df, dfW: this.dfW, maxBindingBytes: opts.maxBindingBytes };
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
    this.checkTokens(tokens);
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
      const shared = taps === 'dump' ? layerBuffers(this.model.cfg, rec, T, 'scratch') : null;
      let x = embed;
      for (let i = 0; i < cfg.numLayers; i++) {
        x = recordLayer(
          this.kit,
          rec,
          i,
          x,
          T,
          rope,
          shared ?? layerBuffers(this.model.cfg, rec, T, `layers.${i}`),
          taps,
        );
      }
      this.recordHead(rec, x, T, T);
      rec.program.encode(encoder, timer);
    } catch (e) {
      rec.release();
      throw e;
    }
    return rec.run();
  }

  /**
   * The rows from..T−1 of the whole forward on tokens ('dump' taps, each [T − from, width]), given each layer's QKV
   * projection of the rows before (`prefix(i)`, [≥ from, 3d] df: from a forward over tokens[0..from) with the same
   * angles, which computes those rows exactly as a forward over all T does): a decode's rows checked after its
   * prompt's forward, at the cost of those rows. The same bits as those rows of forward(tokens).
   */
  forwardFrom(
    encoder: GPUCommandEncoder,
    tokens: number[],
    from: number,
    prefix: (layer: number) => DfBuffer,
  ): OracleRun {
    const { cfg } = this.model;
    const T = tokens.length;
    const d = cfg.hiddenSize;
    if (!Number.isInteger(from) || from < 1 || from >= T)
      throw new OracleError(`oracle forward: rows from ${from} are not within the ${T} rows after a prefix`);
    this.checkTokens(tokens);
    const R = T - from;
    const rec = this.recording();
    try {
      const ids = rec.upload(new Uint32Array(tokens.slice(from)), 'ids');
      const embed = rec.df(R * d, 'embed');
      this.model.embedIn.forEach((chunk, c) => {
        const label = this.model.embedIn.length === 1 ? 'embed' : `embed[${c}]`;
        rec.program.add(
          dfEmbedding(label, { ids, table: chunk.buffer, out: embed }, R, d, chunk, { constants: this.dfW }),
        );
      });
      rec.taps.set('embed', { buffer: embed, n: R * d });
      const rope = this.rotary(rec, T);
      const shared = layerBuffers(cfg, rec, T, 'scratch');
      const rows = rec.df(R * 3 * d, 'scratch.qkv.rows');
      let x = embed;
      for (let i = 0; i < cfg.numLayers; i++) {
        const p = prefix(i);
        if (p.n < from * 3 * d)
          throw new OracleError(`oracle forward: layer ${i}'s prefix holds ${p.n} values, not ${from} rows`);
        x = recordLayer(this.kit, rec, i, x, T, rope, shared, 'dump', undefined, {
          from,
          qkv: p.buffer,
          rows,
        });
      }
      this.recordHead(rec, x, R, T);
      rec.program.encode(encoder);
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
      recordLayer(this.kit, rec, i, x, T, rope, layerBuffers(this.model.cfg, rec, T, `layers.${i}`), taps);
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
   *
   * With `from` > 0 only the rows from..T−1 are checked: 'out' holds those rows ([T − from, width]), the same bits
   * as the same rows of the whole op. A row-wise op's input may hold every row or only those; attention and the
   * whole layer read every row (the keys and values of all positions; query row p sees keys 0..p): attention
   * computes the query rows from..T−1 only, the layer its ln1 and QKV over every row and the rest on those rows.
   */
  opOn(
    encoder: GPUCommandEncoder,
    c: OracleOpCall,
    tokens: number[],
    from = 0,
    timer?: GpuTimer | null,
  ): OracleRun {
    if (!Number.isInteger(from) || from < 0 || from >= tokens.length)
      throw new OracleError(`oracle ${c.label}: rows from ${from} are not within the ${tokens.length} rows`);
    const rec = this.recording();
    try {
      const out = recordOp(this.kit, rec, c, tokens, from, () => this.rotary(rec, tokens.length));
      rec.taps.set('out', out);
      rec.program.encode(encoder, timer);
    } catch (e) {
      rec.release();
      throw e;
    }
    return rec.run();
  }

  private checkTokens(tokens: number[]): void {
    const V = this.model.cfg.vocabSize;
    if (tokens.length === 0) throw new OracleError('oracle forward: empty token list');
    tokens.forEach((id, t) => {
      if (!Number.isInteger(id) || id < 0 || id >= V)
        throw new OracleError(`oracle forward: token ${id} at position ${t} is outside [0, ${V})`);
    });
  }

  /** final_norm and the LM head on x [R, d] df (the logits cut as for `cutFor` rows, as the reference plan's). */
  private recordHead(rec: Recording, x: GPUBuffer, R: number, cutFor: number): void {
    const { cfg } = this.model;
    const d = cfg.hiddenSize;
    const fn = this.model.finalLayerNorm;
    const finalNorm = rec.df(R * d, 'final_norm');
    rec.program.add(
      dfLayerNorm(
        'final_norm',
        { x, weight: fn.weight, bias: fn.bias, y: finalNorm },
        R,
        d,
        cfg.layerNormEps,
        {
          constants: this.df,
        },
      ),
    );
    rec.taps.set('final_norm', { buffer: finalNorm, n: R * d });
    rec.taps.set('logits', recordLmHead(this.kit, rec, finalNorm, R, cutFor));
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
}
