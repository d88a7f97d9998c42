// A family's exact forward on the GPU — the Llama family's oracle, and GPT-NeoX's through the same steps: the
// family's op steps read off the op registry (ops/families.ts layerSteps, as the fp64 forward kernels/cpu/op-forward.ts
// and the Llama reference forward llama-reference.ts read them), each run by its op's double-float form
// (kernels/oracle/df-forms.ts, the registry's `df` slots), every value an f32 pair hi + lo (~2^-48 per op). The same
// taps under the same names as the CPU fp64 forward (`embed`, `layers.{i}.{slot}`, `final_norm`, `logits`), as df
// buffers (oracle-df.ts); a whole forward, or every layer on a given input (the local re-runs), recorded into the
// caller's encoder (one submit). The weights are the caller's f32 buffers (for the Llama family the reference
// forward's, LlamaReference.weightBuffer): nothing is uploaded twice. Trusted only where the adapter passed the
// double-float self-test (compare/oracle-source.ts). GPT-NeoX's compare still runs its own oracle (oracle-gpu.ts).
import type { OverrideConstants, PipelineCache } from '../gpu/pipelines';
import type { BufferPool } from '../gpu/pool';
import { recordReadback } from '../gpu/readback';
import { llamaInvFreq } from '../kernels/cpu/op-fp64';
import type { RotaryAngles } from '../kernels/cpu/rotary-angles';
import { rotaryInvFreq } from '../kernels/cpu/rotary-angles';
import { DF_FORMS, dfSlotWidth } from '../kernels/oracle/df-forms';
import { dfLinear } from '../kernels/oracle/linear';
import { ropeTablesF64 } from '../kernels/oracle/llama';
import { dfPromote } from '../kernels/oracle/promote';
import { fromDfPairs, toDfPairs } from '../numeric/double-float';
import type { HiddenDump, LinearWeights, ModelConfig, Tensor } from '../numeric/types';
import { familyOf, layerSteps } from '../ops/families';
import type { OpStep } from '../ops/types';
import {
  DF_BYTES,
  type DfBuffer,
  OracleError,
  type OracleRun,
  type OracleTaps,
  Recording,
} from './oracle-df';

/** The f32 GPU buffer of a weight tensor (the reference forward's upload). */
export type WeightBuffers = (t: Tensor) => GPUBuffer | null;

/** Rows of an LM-head piece are a multiple of this: a piece's byte offset into W is then 256-byte aligned. */
const HEAD_ROW_GRANULE = 64;

/** A family's weights: model-level fields by the steps' `weight` names, and `layers` (LlamaWeights, ModelWeights). */
export interface OracleWeights {
  layers: readonly object[];
}

export class LegacyFamilyGpuOracle {
  private readonly df: OverrideConstants;
  private readonly dfW: OverrideConstants;

  constructor(
    private readonly device: GPUDevice,
    private readonly pipelines: PipelineCache,
    private readonly pool: BufferPool,
    readonly cfg: ModelConfig,
    private readonly w: OracleWeights,
    private readonly weightBuffer: WeightBuffers,
    private readonly opts: { dfFma: boolean; maxBindingBytes: number; angles?: RotaryAngles },
  ) {
    this.df = { DF_FMA: opts.dfFma };
    this.dfW = { DF_FMA: opts.dfFma, W_F16: false };
  }

  /**
   * The whole forward on tokens (positions 0..T−1). taps 'dump': embed, layers.i.out, final_norm, logits; 'all':
   * every step's slot too (the CPU fp64 forward's taps).
   */
  forward(encoder: GPUCommandEncoder, tokens: readonly number[], taps: OracleTaps): OracleRun {
    this.checkTokens(tokens);
    const rec = this.recording();
    try {
      const env = this.env(rec, tokens);
      const spec = familyOf(this.cfg);
      let x = this.step(env, spec.embed, -1, this.w, [], 'embed', true);
      for (let i = 0; i < this.cfg.numLayers; i++) x = this.layer(env, i, x, taps);
      const fn = this.step(env, spec.finalNorm, -1, this.w, [x], 'final_norm', true);
      rec.taps.set('logits', this.lmHead(env, fn));
      rec.program.encode(encoder);
    } catch (e) {
      rec.release();
      throw e;
    }
    return rec.run();
  }

  /**
   * Every layer i on its own given input (`inputs[i]`, an f32 [T, d] buffer promoted exactly): the exact layer on
   * the reference path's input to it (the local floor's fp64 side). Writes `layers.{i}.out` (+ every step's slot with
   * 'all'); `layers` picks the layers (default all).
   */
  layersOn(
    encoder: GPUCommandEncoder,
    tokens: readonly number[],
    inputs: readonly GPUBuffer[],
    taps: OracleTaps = 'dump',
    layers: readonly number[] = inputs.map((_, i) => i),
  ): OracleRun {
    this.checkTokens(tokens);
    const T = tokens.length;
    const n = T * this.cfg.hiddenSize;
    if (inputs.length !== layers.length)
      throw new OracleError(`oracle layers: ${inputs.length} inputs for ${layers.length} layers`);
    const rec = this.recording();
    try {
      const env = this.env(rec, tokens);
      layers.forEach((i, j) => {
        if (!Number.isInteger(i) || i < 0 || i >= this.cfg.numLayers)
          throw new OracleError(`oracle layer: index ${i} is outside [0, ${this.cfg.numLayers})`);
        if (inputs[j].size < n * 4)
          throw new OracleError(
            `oracle layer ${i}: input holds ${inputs[j].size} bytes, [${T}, d] needs ${n * 4}`,
          );
        const x = rec.df(n, `layers.${i}.in`);
        rec.program.add(dfPromote(`layers.${i}.promote`, { x: inputs[j], out: x }, n));
        this.layer(env, i, x, taps);
      });
      rec.program.encode(encoder);
    } catch (e) {
      rec.release();
      throw e;
    }
    return rec.run();
  }

  private checkTokens(tokens: readonly number[]): void {
    const V = this.cfg.vocabSize;
    if (tokens.length === 0) throw new OracleError('oracle forward: empty token list');
    tokens.forEach((id, t) => {
      if (!Number.isInteger(id) || id < 0 || id >= V)
        throw new OracleError(`oracle forward: token ${id} at position ${t} is outside [0, ${V})`);
    });
  }

  private recording(): Recording {
    return new Recording(this.device, this.pipelines, this.pool, this.opts.maxBindingBytes);
  }

  /** What every step of one recording shares: the ids, the rotary tables, a dummy, the scratch buffers. */
  private env(rec: Recording, tokens: readonly number[]): Env {
    const T = tokens.length;
    const c = this.cfg;
    const a = this.opts.angles;
    const inv = c.family === 'llama' ? llamaInvFreq(c, a) : rotaryInvFreq(c.rotaryNdims, c.rotaryBase, a);
    const t = ropeTablesF64(T, inv, a);
    const scratch = new Map<string, { buffer: GPUBuffer; n: number }>();
    return {
      rec,
      T,
      ids: rec.upload(new Uint32Array(tokens), 'ids'),
      rope: { cos: rec.upload(toDfPairs(t.cos), 'cos'), sin: rec.upload(toDfPairs(t.sin), 'sin') },
      dummy: rec.upload(new Float32Array(4), 'dummy'),
      scratch: (name, n) => {
        const s = scratch.get(name);
        if (s && s.n >= n) return s.buffer;
        const buffer = rec.df(n, `scratch.${name}`);
        scratch.set(name, { buffer, n });
        return buffer;
      },
    };
  }

  /** One layer on x [T, d] df: every step in order; its output is `layers.{i}.out` (always tapped). */
  private layer(env: Env, i: number, x: GPUBuffer, taps: OracleTaps): GPUBuffer {
    const slots = new Map<string, GPUBuffer>([['in', x]]);
    for (const s of layerSteps(familyOf(this.cfg), this.cfg)) {
      const inputs = s.inputs.map((name) => {
        const b = slots.get(name);
        if (!b) throw new OracleError(`oracle layer ${i} ${s.slot}: reads '${name}' before it is computed`);
        return b;
      });
      const keep = taps === 'all' || s.slot === 'out';
      slots.set(s.slot, this.step(env, s, i, this.w.layers[i], inputs, `layers.${i}.${s.slot}`, keep));
    }
    const out = slots.get('out');
    if (!out) throw new OracleError(`oracle layer ${i}: the family's steps compute no 'out'`);
    return out;
  }

  /**
   * One step by its op's df form into a buffer of its own (`keep`: tapped under `name`) or a scratch buffer shared
   * by that slot across layers (a 'dump' forward keeps only each layer's output).
   */
  private step(
    env: Env,
    s: OpStep,
    layer: number,
    owner: object,
    inputs: GPUBuffer[],
    name: string,
    keep: boolean,
  ): GPUBuffer {
    const n = env.T * dfSlotWidth(this.cfg, s.width);
    const out = keep ? env.rec.df(n, name) : env.scratch(`slot.${s.slot}`, n);
    const specs = DF_FORMS[s.op]({
      cfg: this.cfg,
      T: env.T,
      layer,
      step: s,
      label: name,
      inputs,
      out,
      ...this.weightsOf(owner, s),
      ids: env.ids,
      rope: env.rope,
      scratch: env.scratch,
      dummy: env.dummy,
      df: this.df,
      dfW: this.dfW,
    });
    for (const d of specs) env.rec.program.add(d);
    if (keep) env.rec.taps.set(name, { buffer: out, n });
    return out;
  }

  /** The step's weight and bias buffers, from the layer's (or the model's) weight field the step names. */
  private weightsOf(owner: object, s: OpStep): { weight: GPUBuffer | null; bias: GPUBuffer | null } {
    if (!s.weight) return { weight: null, bias: null };
    const v = (owner as Record<string, unknown>)[s.weight] as Tensor | LinearWeights | null | undefined;
    if (!v) throw new OracleError(`oracle ${s.slot}: the weights have no '${s.weight}'`);
    const buf = (t: Tensor) => {
      const b = this.weightBuffer(t);
      if (!b) throw new OracleError(`oracle ${s.slot}: weight '${s.weight}' is not on the GPU`);
      return b;
    };
    if ('weight' in v) return { weight: buf(v.weight), bias: v.bias ? buf(v.bias) : null };
    return { weight: buf(v), bias: null };
  }

  /**
   * The LM head on x [T, d] df: its df form where the [T, V] output fits one storage binding, else in pieces of
   * W's rows, each [T, rows] in its own buffer (a DfBuffer with parts, as GPT-NeoX's oracle splits it).
   */
  private lmHead(env: Env, x: GPUBuffer): DfBuffer {
    const { hiddenSize: d, vocabSize: V } = this.cfg;
    const T = env.T;
    const spec = familyOf(this.cfg).lmHead;
    if (T * V * DF_BYTES <= this.opts.maxBindingBytes) {
      this.step(env, spec, -1, this.w, [x], 'logits', true);
      return env.rec.taps.get('logits') as DfBuffer;
    }
    const rows = Math.floor(this.opts.maxBindingBytes / (DF_BYTES * T) / HEAD_ROW_GRANULE) * HEAD_ROW_GRANULE;
    if (rows < HEAD_ROW_GRANULE)
      throw new OracleError(
        `oracle logits: ${T} rows of the LM head do not fit one storage binding: use a shorter prompt`,
      );
    const w = this.weightsOf(this.w, spec).weight as GPUBuffer;
    const parts: { buffer: GPUBuffer; col0: number; cols: number }[] = [];
    for (let r0 = 0, k = 0; r0 < V; r0 += rows, k++) {
      const cols = Math.min(rows, V - r0);
      const y = env.rec.df(T * cols, `logits[${k}]`);
      const wRef = { buffer: w, offset: r0 * d * 4, size: cols * d * 4 };
      env.rec.program.add(
        dfLinear(`logits[${k}]`, { x, w: wRef, b: null, y, dummy: env.dummy }, T, cols, d, {
          constants: this.dfW,
        }),
      );
      parts.push({ buffer: y, col0: r0, cols });
    }
    return { buffer: parts[0].buffer, n: T * V, parts };
  }
}

interface Env {
  rec: Recording;
  T: number;
  ids: GPUBuffer;
  rope: { cos: GPUBuffer; sin: GPUBuffer };
  dummy: GPUBuffer;
  scratch: (name: string, n: number) => GPUBuffer;
}
