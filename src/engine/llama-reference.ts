// The GPU reference forward of the Llama family (Llama, Qwen2, Qwen3, Mistral): the family's op steps read off the
// op registry (ops/families.ts layerSteps, as the fp64 forward kernels/cpu/op-forward.ts reads them), each run by
// its op's reference WGSL kernels (the registry's `wgsl` slots, wgsl-forms.ts: the launchers of llama-wgsl-forms.ts),
// every slot its own buffer, one submit per forward. Same dump contract as the GPT-NeoX engine: embeddings [T, d],
// layers[i] = the residual after layer i, finalNorm [T, d], logits [T, V]; every step's slot can be read back as a tap
// (`embed`, `layers.{i}.{slot}`, `final_norm`, `logits`), the join key with the fp64 forward's taps.
// Weights are uploaded once (LlamaReference.create) and reused by every forward.

import type { OverrideConstants, PipelineCache } from '../gpu/pipelines';
import { type DispatchSpec, Program } from '../gpu/program';
import { recordReadback, uploadBuffer } from '../gpu/readback';
import { llamaInvFreq } from '../kernels/ops/rotary';
import { ropeTables } from '../kernels/rope';
import type { HiddenDump, LlamaConfig, LlamaWeights, Tensor } from '../numeric/types';
import { familyOf, layerSteps } from '../ops/families';
import type { OpStep } from '../ops/types';
import { heldTensors, stepTensors } from '../ops/weights';
import { slotWidth } from '../ops/widths';
import { greedyWithCache, type KvRun } from './llama-generate';
import { KeptRun, type KeptSlot } from './llama-kept';
import type { StepCache } from './llama-step-cache';
import { wgslStepForm } from './wgsl-forms';

export interface LlamaGpu {
  device: GPUDevice;
  pipelines: PipelineCache;
}

export interface LlamaForwardOptions {
  /** A CPU adapter (SwiftShader): the barrier-free linear and attention kernels (the same bits). */
  cpu?: boolean;
  /** Pipeline constants for every kernel: a precision mode's STORAGE_PREC / ACC_F16. */
  constants?: OverrideConstants;
  /** Read back every step's slot as a tap (else only the dump's). */
  taps?: boolean;
  /**
   * The local re-runs: layer i reads `layerInputs[i]` ([T, d], the residual stream at positions 0..T-1) as its input
   * instead of the previous layer's output, every layer in this one submit; `dump.layers[i]` is then layer i's output
   * on its given input (the final norm and the logits follow the last layer's).
   */
  layerInputs?: readonly (Float32Array | GPUBuffer)[];
  /**
   * The token ids read from this buffer ([T] u32) instead of `tokens` (which then give T alone): a generation step
   * whose id the previous step's argmax wrote on the GPU (llama-generate.ts greedyLockstep).
   */
  ids?: GPUBuffer;
  /**
   * A generation's decode steps recorded once (llama-step-cache.ts): with a KV cache, the step's buffers and Program
   * are the cache's, replayed with this step's positions where its dispatches match the last step's.
   */
  cache?: StepCache;
}

export interface LlamaForwardResult {
  dump: HiddenDump<Float32Array>;
  /** `embed`, `layers.{i}.{slot}`, `final_norm`, `logits` (every step with `taps`, else the dump's). */
  taps: Map<string, Float32Array>;
}

/** A Llama-family model's weights on the GPU and its reference forward. */
export class LlamaReference {
  private readonly weightBufs = new Map<Tensor, GPUBuffer>();

  private constructor(
    private readonly gpu: LlamaGpu,
    readonly cfg: LlamaConfig,
    private readonly w: LlamaWeights,
  ) {}

  /** Uploads the weights once (a tied LM head shares the embedding's buffer); checks them against the limits. */
  static create(gpu: LlamaGpu, cfg: LlamaConfig, w: LlamaWeights): LlamaReference {
    if (w.layers.length !== cfg.numLayers)
      throw new Error(`Llama reference: ${w.layers.length} layer weights for numLayers ${cfg.numLayers}`);
    const spec = familyOf(cfg);
    for (const step of [spec.embed, ...spec.layer, spec.finalNorm, spec.lmHead])
      if (!wgslStepForm(step.op))
        throw new Error(`Llama reference: op '${step.op}' (${step.slot}) has no WGSL form`);
    const r = new LlamaReference(gpu, cfg, w);
    // Every weight a step reads, by the field the step names (ops/weights.ts); a tied head is the embedding's tensor.
    const tensors = heldTensors(w, [spec.embed, spec.finalNorm, spec.lmHead]);
    for (const l of w.layers) tensors.push(...heldTensors(l, spec.layer));
    const limit = gpu.device.limits.maxStorageBufferBindingSize;
    for (const t of tensors) {
      if (t.data.byteLength > limit)
        throw new Error(
          `Llama reference: a weight of shape [${t.shape}] (${t.data.byteLength} B) exceeds the device's ${limit} B binding limit`,
        );
      if (!r.weightBufs.has(t)) r.weightBufs.set(t, uploadBuffer(gpu.device, t.data, 'llama weight'));
    }
    return r;
  }

  private buf(t: Tensor | null | undefined): GPUBuffer | null {
    return t ? (this.weightBufs.get(t) ?? null) : null;
  }

  /** A weight tensor's f32 buffer (the GPU oracle reads the same upload), or null when it is not one of them. */
  weightBuffer(t: Tensor): GPUBuffer | null {
    return this.buf(t);
  }

  /** The step's weight and bias buffers, from the layer's (or the model's) weight field the step names. */
  private weightsOf(owner: object, step: OpStep): { weight: GPUBuffer | null; bias: GPUBuffer | null } {
    const t = stepTensors(owner, step);
    return { weight: this.buf(t.weight), bias: this.buf(t.bias) };
  }

  /** The reference forward on `tokens` (positions 0..T-1): one submit, the dump and the taps read back. */
  async forward(tokens: readonly number[], o: LlamaForwardOptions = {}): Promise<LlamaForwardResult> {
    return (await this.run(tokens, o, null, false)) as LlamaForwardResult;
  }

  /**
   * The same forward submitted and not waited for, its slots kept on the GPU (every step's with `taps`, else the
   * dump's): the same dispatches, so the same bits as `forward` reads back.
   */
  async forwardKept(tokens: readonly number[], o: LlamaForwardOptions = {}): Promise<KeptRun> {
    return (await this.run(tokens, o, null, true)) as KeptRun;
  }

  /**
   * Greedy generation with a KV cache: the prompt in one forward (its keys and values written to each layer's
   * cache), then one row per new token at its position, reading the cache. Returns the `n` new ids and each step's
   * logits row (the prompt's last row first). The kernels do a decoded row's arithmetic as they do that row of a
   * whole forward, so the rows are the whole forward's bit for bit.
   */
  generate(
    prompt: readonly number[],
    n: number,
    o: Omit<LlamaForwardOptions, 'taps'> = {},
    /** Each forward's taps (its rows of every slot; the keys' slot is the cache) and its first position. */
    onStep?: (p0: number, taps: Map<string, Float32Array>) => void,
  ): Promise<{ ids: number[]; logits: Float32Array[] }> {
    return greedyWithCache(this.gpu.device, this.cfg, 'Llama reference', prompt, n, async (t, kv) => {
      const r = (await this.run(t, { ...o, taps: onStep !== undefined }, kv, false)) as LlamaForwardResult;
      onStep?.(kv.p0, r.taps);
      return r.dump;
    });
  }

  /** One cached forward of a generation (llama-generate.ts greedyLockstep): submitted, its dump kept on the GPU. */
  async forwardKeptAt(
    tokens: readonly number[],
    o: Omit<LlamaForwardOptions, 'taps'>,
    kv: KvRun,
  ): Promise<KeptRun> {
    return (await this.run(tokens, { ...o, taps: false }, kv, true)) as KeptRun;
  }

  private async run(
    tokens: readonly number[],
    o: LlamaForwardOptions,
    kv: KvRun | null,
    keep: boolean,
  ): Promise<LlamaForwardResult | KeptRun> {
    const { cfg } = this;
    const { device, pipelines } = this.gpu;
    const T = tokens.length;
    if (T === 0) throw new Error('Llama reference: empty token list');
    for (const t of tokens)
      if (!Number.isInteger(t) || t < 0 || t >= cfg.vocabSize)
        throw new Error(`Llama reference: token id ${t} is outside the vocabulary (0..${cfg.vocabSize - 1})`);
    const limit = device.limits.maxStorageBufferBindingSize;
    const made: GPUBuffer[] = [];
    // A decode step's buffers and Program are the step cache's (kept runs only: a step's slots are read on the GPU).
    const cache = kv && keep && o.cache ? o.cache : null;
    cache?.begin();
    const alloc = (floats: number, label: string) => {
      if (floats * 4 > limit)
        throw new Error(`${label}: ${floats * 4} B exceed the device's ${limit} B binding limit`);
      const size = Math.max(16, Math.ceil((floats * 4) / 16) * 16);
      const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
      if (cache) return cache.buffer(size, usage, label);
      const b = device.createBuffer({ size, usage, label });
      made.push(b);
      return b;
    };
    const scratchBufs = new Map<string, GPUBuffer>();
    const scratch = (name: string, floats: number) => {
      let b = scratchBufs.get(name);
      if (!b || b.size < floats * 4) {
        b = alloc(floats, name);
        scratchBufs.set(name, b);
      }
      return b;
    };
    const ids = o.ids ?? uploadBuffer(device, new Uint32Array(tokens), 'ids');
    if (!o.ids) made.push(ids);
    let rope: { cos: GPUBuffer; sin: GPUBuffer };
    let dummy: GPUBuffer;
    if (cache && kv) {
      // Every step's tables: over all the cache's rows (each position's values as a table of p0 + T rows has them).
      let t: { cos: Float32Array; sin: Float32Array } | null = null;
      const tables = () => (t ??= ropeTables(kv.rows, llamaInvFreq(cfg)));
      rope = {
        cos: cache.constant('rope cos', () => tables().cos),
        sin: cache.constant('rope sin', () => tables().sin),
      };
      dummy = cache.constant('dummy', () => new Float32Array(4));
    } else {
      const { cos, sin } = ropeTables((kv?.p0 ?? 0) + T, llamaInvFreq(cfg));
      rope = { cos: uploadBuffer(device, cos, 'rope cos'), sin: uploadBuffer(device, sin, 'rope sin') };
      dummy = uploadBuffer(device, new Float32Array(4), 'dummy');
      made.push(rope.cos, rope.sin, dummy);
    }

    const specs: DispatchSpec[] = [];
    const slots = new Map<string, { buf: GPUBuffer; floats: number }>(); // tap name -> its buffer
    const step = (s: OpStep, layer: number, owner: object, inputs: GPUBuffer[], name: string) => {
      const lc = kv && layer >= 0 ? { at: { p0: kv.p0, rows: kv.rows }, ...kv.caches[layer] } : null;
      // With a cache the rotated keys go straight into it (and are read from it): that slot is the cache.
      const cacheK = lc && s.width === 'kv_heads' ? lc.k : null;
      const floats = (cacheK ? (kv?.rows ?? 0) : T) * slotWidth(cfg, s.width);
      const out = cacheK ?? alloc(floats, name);
      const form = wgslStepForm(s.op)!;
      const args = { cfg, T, layer, step: s, label: name, inputs, out, ...this.weightsOf(owner, s) };
      const cpu = o.cpu ?? false;
      specs.push(...form({ ...args, ids, rope, scratch, dummy, cpu, constants: o.constants ?? {}, kv: lc }));
      slots.set(name, { buf: out, floats });
      return out;
    };

    const spec = familyOf(cfg);
    const steps = layerSteps(spec, cfg);
    const { given, uploaded } = givenInputs(device, cfg, T, o.layerInputs, 'Llama reference');
    made.push(...uploaded);
    let x = step(spec.embed, -1, this.w, [], 'embed');
    const layerOut: string[] = [];
    for (let i = 0; i < cfg.numLayers; i++) {
      const env = new Map<string, GPUBuffer>([['in', given[i] ?? x]]);
      for (const s of steps) {
        const inputs = s.inputs.map((n) => {
          const b = env.get(n);
          if (!b) throw new Error(`layer ${i} ${s.slot}: reads '${n}' before it is computed`);
          return b;
        });
        env.set(s.slot, step(s, i, this.w.layers[i], inputs, `layers.${i}.${s.slot}`));
      }
      const out = env.get('out');
      if (!out) throw new Error(`layer ${i}: the family's steps compute no 'out'`);
      x = out;
      layerOut.push(`layers.${i}.out`);
    }
    const fn = step(spec.finalNorm, -1, this.w, [x], 'final_norm');
    step(spec.lmHead, -1, this.w, [fn], 'logits');

    const program = new Program(device, pipelines);
    let kept = false;
    try {
      device.pushErrorScope('validation');
      let thrown: unknown = null;
      try {
        const enc = device.createCommandEncoder();
        if (cache) cache.encode(enc, specs);
        else {
          for (const s of specs) program.add(s);
          program.encode(enc);
        }
        device.queue.submit([enc.finish()]);
        if (!keep) await device.queue.onSubmittedWorkDone();
      } catch (e) {
        thrown = e;
      }
      const err = await device.popErrorScope();
      if (thrown) throw thrown;
      if (err) throw new Error(`Llama reference: WebGPU validation error: ${err.message}`);
      if (keep) {
        const names = o.taps ? [...slots.keys()] : ['embed', ...layerOut, 'final_norm', 'logits'];
        const keptSlots = new Map(names.map((n) => [n, slots.get(n) as KeptSlot] as const));
        kept = true;
        return new KeptRun(device, T, cfg.hiddenSize, cfg.vocabSize, cfg.numLayers, keptSlots, made);
      }
      const want = o.taps ? [...slots.keys()] : ['embed', ...layerOut, 'final_norm', 'logits'];
      // Every tap read back in one submit and one wait (a wait apiece grew with the layers).
      const renc = device.createCommandEncoder({ label: 'Llama reference taps' });
      const reqs = want.map((name) => slots.get(name) as { buf: GPUBuffer; floats: number });
      const finish = recordReadback(
        device,
        renc,
        reqs.map((r) => ({ src: r.buf, bytes: r.floats * 4 })),
      );
      device.queue.submit([renc.finish()]);
      const read = await finish();
      const taps = new Map(want.map((name, i) => [name, read[i]] as const));
      const get = (n: string) => taps.get(n) as Float32Array;
      const dump = {
        T,
        d: cfg.hiddenSize,
        V: cfg.vocabSize,
        embeddings: get('embed'),
        layers: layerOut.map(get),
        finalNorm: get('final_norm'),
        logits: get('logits'),
      };
      return { dump, taps };
    } finally {
      program.dispose();
      if (!kept) for (const b of made) b.destroy();
    }
  }

  destroy(): void {
    for (const b of this.weightBufs.values()) b.destroy();
    this.weightBufs.clear();
  }
}

/**
 * Each layer's given residual input ([T, d]) as a buffer (none: an empty list): an array uploaded (in `uploaded`,
 * the caller's to destroy), a buffer already on the GPU taken as it is; after checking there is one per layer and
 * each holds T · d values (the local re-runs; a wrong count or size is one line).
 */
export function givenInputs(
  device: GPUDevice,
  cfg: LlamaConfig,
  T: number,
  inputs: readonly (Float32Array | GPUBuffer)[] | undefined,
  who: string,
): { given: GPUBuffer[]; uploaded: GPUBuffer[] } {
  if (!inputs) return { given: [], uploaded: [] };
  if (inputs.length !== cfg.numLayers)
    throw new Error(`${who}: ${inputs.length} layer inputs for numLayers ${cfg.numLayers}`);
  const n = T * cfg.hiddenSize;
  inputs.forEach((x, i) => {
    const has = x instanceof Float32Array ? x.length : Math.floor(x.size / 4);
    if (x instanceof Float32Array ? has !== n : has < n)
      throw new Error(`${who}: layer ${i}'s input has ${has} values, [${T}, ${cfg.hiddenSize}] needs ${n}`);
  });
  const uploaded: GPUBuffer[] = [];
  const given = inputs.map((x, i) => {
    if (!(x instanceof Float32Array)) return x;
    const b = uploadBuffer(device, x, `layers.${i} given input`);
    uploaded.push(b);
    return b;
  });
  return { given, uploaded };
}
