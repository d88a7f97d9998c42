// The oracle on the GPU: the exact forward of any family, every op in double-float (an f32 pair hi + lo, ~48 bits;
// shaders/oracle/), the same forward as the CPU fp64 one (src/kernels/cpu/op-forward.ts). It iterates the family's
// steps off the op registry with their df forms (oracle-steps.ts): GPT-NeoX's on the model's own upload (f16-packed
// where the checkpoint is half), the Llama family's on the reference forward's f32 buffers (FamilyGpuOracle,
// llama-oracle-gpu.ts). Tensors are df buffers (`array<vec2<f32>>`, x = hi, y = lo, row-major; oracle-df.ts) under
// the engine's tap names (GPT-NeoX) or the steps' slots (the Llama family). A whole forward, the rows of a decode,
// single layers on given inputs, or one op on a run's recorded inputs (oracle-op.ts) are recorded into the caller's
// command encoder (one submit). Trusted only where the adapter passed the double-float self-test
// (compare/oracle-source.ts).
import type { PipelineCache } from '../gpu/pipelines';
import type { BufferPool } from '../gpu/pool';
import type { GpuTimer } from '../gpu/timestamps';
import type { RotaryAngles } from '../kernels/cpu/rotary-angles';
import { dfPromote } from '../kernels/oracle/promote';
import type { GpuModel } from './gpu-model';
import {
  DF_BYTES,
  type DfBuffer,
  OracleError,
  type OracleRun,
  type OracleTaps,
  Recording,
} from './oracle-df';
import { type OracleOpCall, recordOp } from './oracle-op';
import {
  type Env,
  type OracleCore,
  oracleEnv,
  recordEmbedding,
  recordFinalNorm,
  recordLayer,
  recordLmHead,
} from './oracle-steps';
import { gpuModelWeights, type OracleWeightSource } from './oracle-weights';

export type { OracleOp, OracleOpCall } from './oracle-op';

export interface GpuOracleOptions {
  dfFma: boolean;
  maxBindingBytes: number;
  angles?: RotaryAngles;
  /** Taps under the engine's plan names (default: GPT-NeoX's; the Llama family's under the steps' slots). */
  planNames?: boolean;
}

export class GpuOracle {
  protected readonly core: OracleCore;

  constructor(
    private readonly device: GPUDevice,
    private readonly pipelines: PipelineCache,
    private readonly pool: BufferPool,
    model: GpuModel | OracleWeightSource,
    opts: GpuOracleOptions,
  ) {
    const src = 'weightsF16' in model ? gpuModelWeights(model) : model;
    this.core = {
      src,
      df: { DF_FMA: opts.dfFma },
      dfW: { DF_FMA: opts.dfFma, W_F16: src.f16 },
      maxBindingBytes: opts.maxBindingBytes,
      planNames: opts.planNames ?? src.cfg.family !== 'llama',
      angles: opts.angles,
    };
  }

  /** Whole forward on tokens (positions 0..T-1). taps 'dump': embed, layers.i.out, final_norm, logits;
   * 'all': every tap. With a timer, each op is its own timed pass (the bench's view of where the time goes). */
  forward(
    encoder: GPUCommandEncoder,
    tokens: readonly number[],
    taps: OracleTaps,
    timer?: GpuTimer | null,
  ): OracleRun {
    this.checkTokens(tokens);
    return this.record(encoder, tokens.length, tokens, timer, (env) => {
      let x = recordEmbedding(env, 0);
      for (let i = 0; i < this.core.src.cfg.numLayers; i++)
        x = recordLayer(env, i, { from: 0, x: { all: x }, taps });
      recordLmHead(env, recordFinalNorm(env, x, 0), 0);
    });
  }

  /**
   * The rows from..T−1 of the whole forward on tokens ('dump' taps, each [T − from, width]), given each layer's
   * earlier rows of the slots a whole-sequence op reads first (`prefix(i, slot)`, [≥ from, width] df; GPT-NeoX: the
   * QKV projection, from a forward over tokens[0..from) with the same angles, which computes those rows exactly as a
   * forward over all T does): a decode's rows checked after its prompt's forward, at the cost of those rows. The
   * same bits as those rows of forward(tokens).
   */
  forwardFrom(
    encoder: GPUCommandEncoder,
    tokens: readonly number[],
    from: number,
    prefix: (layer: number, slot: string) => DfBuffer,
  ): OracleRun {
    const T = tokens.length;
    if (!Number.isInteger(from) || from < 1 || from >= T)
      throw new OracleError(`oracle forward: rows from ${from} are not within the ${T} rows after a prefix`);
    this.checkTokens(tokens);
    return this.record(encoder, T, tokens.slice(from), null, (env) => {
      let x = recordEmbedding(env, from);
      for (let i = 0; i < this.core.src.cfg.numLayers; i++)
        x = recordLayer(env, i, { from, x: { tail: x }, prefix, taps: 'dump' });
      recordLmHead(env, recordFinalNorm(env, x, from), from);
    });
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
    if (!Number.isInteger(T) || T < 1)
      throw new OracleError(`oracle layer: T = ${T} is not a positive integer`);
    return this.record(encoder, T, null, timer, (env) => {
      recordLayer(env, i, { from: 0, x: { all: this.layerInput(env, i, input) }, taps });
    });
  }

  /**
   * Every layer i on its own given input (`inputs[j]` for layer `layers[j]`, an f32 [T, d] buffer promoted exactly):
   * the exact layer on the reference path's input to it (the local floor's fp64 side). Writes `layers.{i}.out` (+
   * every step's tap with 'all'); `layers` picks the layers (default all).
   */
  layersOn(
    encoder: GPUCommandEncoder,
    tokens: readonly number[],
    inputs: readonly GPUBuffer[],
    taps: OracleTaps = 'dump',
    layers: readonly number[] = inputs.map((_, i) => i),
  ): OracleRun {
    this.checkTokens(tokens);
    if (inputs.length !== layers.length)
      throw new OracleError(`oracle layers: ${inputs.length} inputs for ${layers.length} layers`);
    return this.record(encoder, tokens.length, tokens, null, (env) => {
      layers.forEach((i, j) => {
        recordLayer(env, i, { from: 0, x: { all: this.layerInput(env, i, { f32: inputs[j] }) }, taps });
      });
    });
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
    tokens: readonly number[],
    from = 0,
    timer?: GpuTimer | null,
  ): OracleRun {
    if (!Number.isInteger(from) || from < 0 || from >= tokens.length)
      throw new OracleError(`oracle ${c.label}: rows from ${from} are not within the ${tokens.length} rows`);
    return this.record(encoder, tokens.length, tokens.slice(from), timer, (env) => {
      const out = recordOp(env, c, from);
      env.rec.taps.clear(); // the steps' own taps: the op's output alone is the run's
      env.rec.taps.set('out', out);
    });
  }

  private checkTokens(tokens: readonly number[]): void {
    const V = this.core.src.cfg.vocabSize;
    if (tokens.length === 0) throw new OracleError('oracle forward: empty token list');
    tokens.forEach((id, t) => {
      if (!Number.isInteger(id) || id < 0 || id >= V)
        throw new OracleError(`oracle forward: token ${id} at position ${t} is outside [0, ${V})`);
    });
  }

  /** The layer's input as a df buffer: a df one as given, an f32 one promoted exactly; its size checked. */
  private layerInput(env: Env, i: number, input: { f32: GPUBuffer } | { df: GPUBuffer }): GPUBuffer {
    const L = this.core.src.cfg.numLayers;
    if (!Number.isInteger(i) || i < 0 || i >= L)
      throw new OracleError(`oracle layer: index ${i} is outside [0, ${L})`);
    const n = env.T * this.core.src.cfg.hiddenSize;
    const src = 'f32' in input ? input.f32 : input.df;
    const need = n * ('f32' in input ? 4 : DF_BYTES);
    if (src.size < need)
      throw new OracleError(
        `oracle layer ${i}: input buffer holds ${src.size} bytes, [${env.T}, ${n / env.T}] needs ${need}`,
      );
    if (!('f32' in input)) return input.df;
    const x = env.rec.df(n, `layers.${i}.in`);
    env.rec.program.add(dfPromote(`layers.${i}.promote`, { x: input.f32, out: x }, n));
    return x;
  }

  /** One recording: `body` records into it, then it is encoded (released, and the error thrown, on failure). */
  private record(
    encoder: GPUCommandEncoder,
    T: number,
    ids: readonly number[] | null,
    timer: GpuTimer | null | undefined,
    body: (env: Env) => void,
  ): OracleRun {
    const rec = new Recording(this.device, this.pipelines, this.pool, this.core.maxBindingBytes);
    try {
      body(oracleEnv(this.core, rec, T, ids));
      rec.program.encode(encoder, timer);
    } catch (e) {
      rec.release();
      throw e;
    }
    return rec.run();
  }
}
