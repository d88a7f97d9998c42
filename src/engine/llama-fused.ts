// The fused forward of the Llama family: the kernels people write for these models, in one submit — RMSNorm fused
// with the residual add (shaders/fused/add_rmsnorm.wgsl: the layer's first norm takes the previous layer's MLP add,
// the second the attention add, the final norm the last MLP add), the q/k/v, o, down and LM-head projections on the
// shared GEMM cores (fused-linear.ts), the q/k/v projection with the head split and the rotary in one GEMM over the
// concatenated [q; k; v] weight (qkv_rope.wgsl), the SwiGLU epilogue on one GEMM over the concatenated [gate; up]
// weight (linear_swiglu.wgsl), and grouped-query attention (with a sliding window) in the flash attention. Qwen3's
// q/k norms sit between the projection and the rotary: there the projections stay three GEMMs and the norms and the
// head split + rotary are the reference kernels (rmsnorm.wgsl, rope.wgsl). Where the o or the down projection splits
// K, its reduction is folded into the add + RMSNorm after it (add_rmsnorm_fold.wgsl: the same bits, one dispatch
// fewer each). Same dump contract as the reference forward (llama-reference.ts); teaching faults through `faults`
// (one kernel's constants, every layer). The submit and its timings: llama-fused-submit.ts. With `keep` the slots
// stay on the GPU (llama-kept.ts). Past 400 lines: one forward's recording, read in order (its weights, submit and
// kept slots are in files of their own).

import type { OverrideConstants, PipelineCache } from '../gpu/pipelines';
import type { DispatchSpec } from '../gpu/program';
import { uploadBuffer } from '../gpu/readback';
import { attnScores, attnShapeConstants, attnValues, softmaxCausal } from '../kernels/attention';
import { embedding } from '../kernels/embedding';
import { type GemmOpts, linearBiasOps } from '../kernels/fused-linear';
import { linearBiasPartial, type SplitPartials } from '../kernels/fused-linear-fold';
import { qkvRopeOps } from '../kernels/fused-llama';
import { fusedNormMaxD } from '../kernels/fused-norm';
import { CPU_ADAPTER, type GemmPolicy, UNKNOWN_ADAPTER } from '../kernels/gemm-configs';
import { linear } from '../kernels/linear';
import { fusedLaunchers } from '../kernels/ops/index';
import { llamaInvFreq } from '../kernels/ops/rotary';
import { residualAdd } from '../kernels/residual';
import { ropeHeads, ropeTables } from '../kernels/rope';
import type { HiddenDump, LlamaConfig, LlamaWeights } from '../numeric/types';
import { LLAMA_FAMILY, layerSteps } from '../ops/families';
import type { LlamaFusedKernel } from '../ops/fused';
import type { OpStep } from '../ops/types';
import { type SubmitTiming, submitTimed } from './llama-fused-submit';
import { type LinearBufs, LlamaFusedWeights, preRotary } from './llama-fused-weights';
import { greedyWithCache, type KvRun } from './llama-generate';
import { KeptRun, type KeptSlot } from './llama-kept';
import { givenInputs } from './llama-reference';
import type { StepCache } from './llama-step-cache';
import { WGSL_FORMS } from './llama-wgsl-forms';

/**
 * The fused kernels of the path (the registry's, ops/fused.ts), each switchable (bisection): off, its ops run on the
 * reference kernels.
 */
export type { LlamaFusedKernel };

export interface LlamaFusedOptions {
  /**
   * Which fused kernels run (absent: all). Off: `addRmsNorm` → the residual add and RMSNorm kernels; `qkvRope` → the
   * three projections and the rotary kernel; `swiglu` → the gate and up projections and the SwiGLU kernel; `flash`
   * → the three attention kernels; `gemm` → the reference linear kernel for every other projection. All off is the
   * reference forward, bit for bit.
   */
  kernels?: Partial<Record<LlamaFusedKernel, boolean>>;
  /** Pipeline constants of every kernel: a precision mode's STORAGE_PREC / ACC_F16 (common/precision.wgsl). */
  constants?: OverrideConstants;
  /** The layers a teaching fault is planted in (absent: every layer). */
  faultLayers?: readonly number[];
  /** A CPU adapter (SwiftShader): the barrier-free GEMM core (the same bits as the tiled one). */
  cpu?: boolean;
  /** The adapter's GEMM policy (the engine's `gemmPolicy`); absent: the CPU or the unknown adapter's. */
  gemmPolicy?: GemmPolicy;
  /**
   * Benchmarks: after the forward, the same recorded dispatches are encoded and submitted `reps` more times, each
   * submit-to-done timed on the wall clock into `ms` (no readback; as engine/time-forward.ts times a plan), the part
   * of it spent encoding on the CPU into `encodeMs` and in the submit call into `submitMs` where given. With
   * `ops` (an empty array), one more submit with each dispatch in a timed pass of its own: its GPU time per label
   * (null where the device has no timestamps).
   */
  time?: SubmitTiming;
  /**
   * Benchmarks and tests: false leaves the o and the down projections' split-K reductions in dispatches of their own
   * (as before the fold); absent or true, the add + RMSNorm after each forms its output from the partials. The same
   * bits either way (src/kernels/fused-llama-fold.test.ts, src/engine/llama-fused-split.test.ts).
   */
  foldSplitK?: boolean;
  /**
   * The dispatches in this many command buffers, each submitted as soon as it is encoded (absent: one): the GPU starts
   * on the first while the CPU encodes the rest. The same dispatches in the same order, so the same bits.
   */
  submitChunks?: number;
  /** Keep and read back every slot the path computes, under the registry's names (forwardTaps). */
  taps?: boolean;
  /**
   * The local re-runs (as LlamaForwardOptions.layerInputs): layer i reads `layerInputs[i]` ([T, d]) instead of the
   * previous layer's output, every layer in this one submit. Layer i's input norm is then the RMSNorm kernel alone on
   * that input, with the faults of the kernel that computes it in the whole forward (layer i − 1's add + RMSNorm).
   */
  layerInputs?: readonly (Float32Array | GPUBuffer)[];
  /** The token ids read from this buffer ([T] u32; `tokens` then give T alone), as LlamaForwardOptions.ids. */
  ids?: GPUBuffer;
  /** A generation's decode steps recorded once, as LlamaForwardOptions.cache (llama-step-cache.ts). */
  cache?: StepCache;
  /** Pipeline constants of one fused kernel in every layer: a teaching fault (FAULT_EPS_OUTSIDE, …). */
  faults?: Partial<Record<LlamaFusedKernel, OverrideConstants>>;
}

/** A Llama-family model's weights on the GPU as the fused kernels read them, and its fused forward. */
export class LlamaFused {
  private constructor(
    private readonly gpu: { device: GPUDevice; pipelines: PipelineCache },
    readonly cfg: LlamaConfig,
    private readonly wb: LlamaFusedWeights,
  ) {}

  /** Uploads the weights once (llama-fused-weights.ts); refuses a hidden size the fused RMSNorm cannot hold. */
  static create(
    gpu: { device: GPUDevice; pipelines: PipelineCache },
    cfg: LlamaConfig,
    w: LlamaWeights,
  ): LlamaFused {
    if (w.layers.length !== cfg.numLayers)
      throw new Error(`Llama fused: ${w.layers.length} layer weights for numLayers ${cfg.numLayers}`);
    const maxD = fusedNormMaxD(gpu.device.limits.maxComputeWorkgroupStorageSize);
    if (cfg.hiddenSize > maxD)
      throw new Error(
        `Llama fused: hidden size ${cfg.hiddenSize} exceeds the ${maxD} the fused RMSNorm holds in this device's workgroup memory`,
      );
    return new LlamaFused(gpu, cfg, new LlamaFusedWeights(gpu, cfg, w));
  }

  /** The fused forward on `tokens` (positions 0..T-1): one submit, the dump read back. */
  async forward(tokens: readonly number[], o: LlamaFusedOptions = {}): Promise<HiddenDump<Float32Array>> {
    return (await this.readRun(tokens, { ...o, taps: false }, null)).dump;
  }

  /**
   * The same forward submitted and not waited for, its slots kept on the GPU (with `taps` every slot the path
   * writes out, else the dump's): the same dispatches, so the same bits as `forward` and `forwardTaps` read back.
   */
  async forwardKept(tokens: readonly number[], o: LlamaFusedOptions = {}): Promise<KeptRun> {
    return (await this.run(tokens, o, null, true)) as KeptRun;
  }

  /**
   * The fused forward with every slot it computes read back, under the registry's names (`embed`,
   * `layers.{i}.{slot}`, `final_norm`, `logits`): the slots a fused kernel keeps inside it are not there (with
   * qkv_rope no `q`, `k`, `v` rows; with the SwiGLU GEMM no `gate`, `up`).
   */
  forwardTaps(
    tokens: readonly number[],
    o: LlamaFusedOptions = {},
  ): Promise<{ dump: HiddenDump<Float32Array>; taps: Map<string, Float32Array> }> {
    return this.readRun(tokens, { ...o, taps: true }, null);
  }

  /**
   * Greedy generation with a KV cache on the fused kernels: the prompt in one forward writing each layer's cache
   * (the q/k/v + rotary GEMM writes keys and values at their positions), then a row per new token reading it.
   * Returns the `n` new ids and each step's logits row; a row's arithmetic does not depend on the rows beside it, so
   * each is the fused whole forward's row bit for bit.
   */
  generate(
    prompt: readonly number[],
    n: number,
    o: LlamaFusedOptions = {},
    /** Each forward's taps (the slots its kernels write out, of its rows) and its first position. */
    onStep?: (p0: number, taps: Map<string, Float32Array>) => void,
  ): Promise<{ ids: number[]; logits: Float32Array[] }> {
    return greedyWithCache(this.gpu.device, this.cfg, 'Llama fused', prompt, n, async (t, kv) => {
      const r = await this.readRun(t, { ...o, taps: onStep !== undefined }, kv);
      onStep?.(kv.p0, r.taps);
      return r.dump;
    });
  }

  /** One cached forward of a generation (llama-generate.ts greedyLockstep): submitted, its dump kept on the GPU. */
  async forwardKeptAt(tokens: readonly number[], o: LlamaFusedOptions, kv: KvRun): Promise<KeptRun> {
    return (await this.run(tokens, { ...o, taps: false }, kv, true)) as KeptRun;
  }

  private async readRun(
    tokens: readonly number[],
    o: LlamaFusedOptions,
    kv: KvRun | null,
  ): Promise<{ dump: HiddenDump<Float32Array>; taps: Map<string, Float32Array> }> {
    return (await this.run(tokens, o, kv, false)) as {
      dump: HiddenDump<Float32Array>;
      taps: Map<string, Float32Array>;
    };
  }

  private async run(
    tokens: readonly number[],
    o: LlamaFusedOptions,
    kv: KvRun | null,
    keepOnGpu: boolean,
  ): Promise<{ dump: HiddenDump<Float32Array>; taps: Map<string, Float32Array> } | KeptRun> {
    const { cfg } = this;
    const { device } = this.gpu;
    const T = tokens.length;
    if (T === 0) throw new Error('Llama fused: empty token list');
    for (const t of tokens)
      if (!Number.isInteger(t) || t < 0 || t >= cfg.vocabSize)
        throw new Error(`Llama fused: token id ${t} is outside the vocabulary (0..${cfg.vocabSize - 1})`);
    const {
      hiddenSize: d,
      numHeads: H,
      numKvHeads: KV,
      headDim: hd,
      intermediateSize: F,
      vocabSize: V,
    } = cfg;
    const temp: GPUBuffer[] = [];
    const limit = device.limits.maxStorageBufferBindingSize;
    // A decode step's buffers and Program are the step cache's (kept runs only: a step's slots are read on the GPU).
    const cache = kv && keepOnGpu && o.cache ? o.cache : null;
    cache?.begin();
    const alloc = (floats: number, label: string) => {
      if (floats * 4 > limit)
        throw new Error(`${label}: ${floats * 4} B exceed the device's ${limit} B binding limit`);
      const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
      const size = Math.max(16, Math.ceil((floats * 4) / 16) * 16);
      if (cache) return cache.buffer(size, usage, label);
      const b = device.createBuffer({ size, usage, label });
      temp.push(b);
      return b;
    };
    const keep = (b: GPUBuffer) => {
      temp.push(b);
      return b;
    };
    const ids = o.ids ?? keep(uploadBuffer(device, new Uint32Array(tokens), 'ids'));
    const at = kv ? { p0: kv.p0, rows: kv.rows } : undefined;
    let [cos, sin, dummy]: GPUBuffer[] = [];
    if (cache && kv) {
      // Every step's tables: over all the cache's rows (each position's values as a table of p0 + T rows has them).
      let t: { cos: Float32Array; sin: Float32Array } | null = null;
      const tables = () => (t ??= ropeTables(kv.rows, llamaInvFreq(cfg)));
      [cos, sin] = [
        cache.constant('rope cos', () => tables().cos),
        cache.constant('rope sin', () => tables().sin),
      ];
      dummy = cache.constant('dummy', () => new Float32Array(4));
    } else {
      const tables = ropeTables((kv?.p0 ?? 0) + T, llamaInvFreq(cfg));
      cos = keep(uploadBuffer(device, tables.cos, 'rope cos'));
      sin = keep(uploadBuffer(device, tables.sin, 'rope sin'));
      dummy = keep(uploadBuffer(device, new Float32Array(4), 'dummy'));
    }
    // Split-K GEMMs share one workspace (as engine/plan.ts): each is consumed by the reduction right after it.
    let workspace: GPUBuffer | null = null;
    const gemm: GemmOpts = {
      policy: o.gemmPolicy ?? (o.cpu ? CPU_ADAPTER : UNKNOWN_ADAPTER),
      workspace: (floats: number) => {
        if (!workspace || workspace.size < floats * 4) workspace = alloc(floats, 'gemm_workspace');
        return workspace;
      },
    };
    const faults = o.faults ?? {};

    const specs: DispatchSpec[] = [];
    const on = (k: LlamaFusedKernel) => o.kernels?.[k] ?? true;
    const faultAt = (i: number) => o.faultLayers === undefined || o.faultLayers.includes(i);
    const cpu = o.cpu ?? false;
    const proj = (label: string, x: GPUBuffer, l: LinearBufs, y: GPUBuffer, N: number, K: number) => {
      if (on('gemm')) specs.push(...linearBiasOps(label, { x, w: l.w, b: l.b, y, dummy }, T, N, K, gemm));
      else specs.push(linear(label, { x, w: l.w, b: l.b, y, dummy }, T, N, K, {}, cpu));
    };
    // The o and the down projections when split-K feeds an add + RMSNorm: the partial GEMM alone, its reduction left
    // to that norm (kernels/ops/rmsnorm.ts addRmsNormFold; the same bits, one dispatch fewer). Null where it runs whole (then `proj`).
    const fold = on('gemm') && on('addRmsNorm') && (o.foldSplitK ?? true);
    const partialWs = (floats: number) => ({ buffer: gemm.workspace?.(floats) as GPUBuffer, offset: 0 });
    const projPartial = (label: string, x: GPUBuffer, l: LinearBufs, y: GPUBuffer, N: number, K: number) => {
      const got = fold
        ? linearBiasPartial(label, { x, w: l.w, b: l.b, y, dummy }, T, N, K, partialWs, gemm)
        : null;
      if (got) {
        specs.push(got.spec);
        return got.partials;
      }
      proj(label, x, l, y, N, K);
      return null;
    };
    // A slot's buffer: one per name, reused by every layer; with taps, one per layer, kept as `layers.{i}.{name}`.
    const slots = new Map<string, { buf: GPUBuffer; floats: number }>();
    const slot = (i: number, name: string, floats: number): GPUBuffer => {
      const key = o.taps || name === 'out' || name === 'ln2_in' ? `layers.${i}.${name}` : name;
      let s = slots.get(key);
      if (!s) slots.set(key, (s = { buf: alloc(floats, key), floats }));
      return s.buf;
    };
    const top = (name: string, floats: number) => {
      const buf = alloc(floats, name);
      slots.set(name, { buf, floats });
      return buf;
    };
    const embedOut = top('embed', T * d);
    specs.push(embedding('embed', { ids, table: this.wb.embed, out: embedOut }, T, d, { row0: 0, rows: V }));
    // Keys and values [KV, rows, hd]: this forward's own, or each layer's cache (written at the rows' positions).
    const kvOf = (i: number) =>
      kv ? kv.caches[i] : { k: slot(i, 'k_rot', KV * T * hd), v: slot(i, 'v_heads', KV * T * hd) };
    const keys = (kv?.p0 ?? 0) + T;
    const scores = on('flash') ? null : alloc(H * T * keys, 'scores');
    const probs = on('flash') ? null : alloc(H * T * keys, 'probs');
    const finalNorm = top('final_norm', T * d);
    const logits = top('logits', T * V);
    // A step's reference form (llama-wgsl-forms.ts, the registry's wgsl slot): where its fused kernel is off, or none
    // replaces it (the steps between the projections and the rotary).
    const reference = (
      step: OpStep,
      i: number,
      label: string,
      inputs: GPUBuffer[],
      out: GPUBuffer,
      w: GPUBuffer | null,
    ) => {
      const form = WGSL_FORMS[step.op];
      if (!form) throw new Error(`Llama fused: op '${step.op}' (${step.slot}) has no WGSL form`);
      const scratch = () => {
        throw new Error(`${label}: the fused forward gives a reference form no scratch buffers`);
      };
      const rope = { cos, sin };
      const a = {
        cfg,
        T,
        layer: i,
        step,
        label,
        inputs,
        out,
        weight: w,
        bias: null,
        ids,
        rope,
        scratch,
        dummy,
      };
      specs.push(...form({ ...a, cpu, constants: {}, kv: null }));
    };
    const stepOf = (slot: string) => {
      const st = LLAMA_FAMILY.layer.find((x) => x.slot === slot);
      if (!st) throw new Error(`Llama fused: the family has no step '${slot}'`);
      return st;
    };
    const fusedNorm = fusedLaunchers('layernorm');
    // r = a + b and y = the norm of r (b null: of a), the norm step `step`; layer i's faults. With `part`, b is formed
    // from those split-K partials on the way (and written).
    const norm = (
      step: OpStep,
      label: string,
      i: number,
      a: GPUBuffer,
      b: GPUBuffer | null,
      w: GPUBuffer,
      r: GPUBuffer | null,
      y: GPUBuffer,
      part: SplitPartials | null = null,
    ) => {
      if (on('addRmsNorm')) {
        const constants = faultAt(i) ? faults.addRmsNorm : undefined;
        const maxWorkgroupBytes = device.limits.maxComputeWorkgroupStorageSize;
        if (part && b && r) {
          const buf = { a, part, w, b, r, y, dummy };
          specs.push(fusedNorm.addFold(label, buf, T, d, cfg.rmsNormEps, { constants, maxWorkgroupBytes }));
          return;
        }
        const bufs = { a, b, w, r, y, dummy };
        specs.push(fusedNorm.add(label, bufs, T, d, cfg.rmsNormEps, { constants, maxWorkgroupBytes }));
        return;
      }
      if (b && r) specs.push(residualAdd(`${label}/add`, { a, b, c: null, out: r }, T * d));
      reference(step, i, label, [b && r ? r : a], y, w);
    };

    // layer 0's input norm alone; each later input norm (and the final norm) takes the previous MLP's residual add.
    // Given layer inputs: each layer's input norm alone on its own input (written after the previous layer's add +
    // RMSNorm wrote that slot, so it is this one's), with the faults of the kernel it stands for.
    const { given, uploaded } = givenInputs(device, cfg, T, o.layerInputs, 'Llama fused');
    temp.push(...uploaded);
    if (given.length === 0)
      norm(
        stepOf('ln1'),
        'layers.0.ln1',
        0,
        embedOut,
        null,
        this.wb.layers[0].inNorm,
        null,
        slot(0, 'ln1', T * d),
      );
    // What the rotary reads (q's, then k's) and the steps that sit before it, as the config has them (ops/families.ts).
    const between = preRotary(cfg);
    const rotaryIn = layerSteps(LLAMA_FAMILY, cfg)
      .filter((st) => st.op === 'rotary')
      .map((st) => st.inputs[0]);
    const missing = (st: OpStep, n: string): never => {
      throw new Error(`Llama fused: '${st.slot}' reads '${n}', which no step before it wrote`);
    };
    const gateUpAct = fusedLaunchers('linear_gelu');
    const attend = fusedLaunchers('flash_attention');
    this.wb.layers.forEach((L, i) => {
      const p = `layers.${i}`;
      const x = given[i] ?? (i === 0 ? embedOut : slot(i - 1, 'out', T * d));
      if (given.length > 0)
        norm(stepOf('ln1'), `${p}.ln1`, Math.max(0, i - 1), x, null, L.inNorm, null, slot(i, 'ln1', T * d));
      const r = cfg.rotaryDim;
      const { k: kh, v: vh } = kvOf(i);
      const ln = slot(i, 'ln1', T * d);
      const qh = slot(i, 'q_rot', H * T * hd);
      const ctx = slot(i, 'ctx', T * H * hd);
      if (L.qkv && on('qkvRope')) {
        const buf = { x: ln, w: L.qkv.w, b: L.qkv.b, cos, sin, q: qh, k: kh, v: vh, dummy };
        const shape = { T, K: d, H, KV, hd, r };
        const constants = faultAt(i) ? faults.qkvRope : undefined;
        specs.push(...qkvRopeOps(`${p}.qkv_rot`, buf, shape, { ...gemm, constants }, at));
      } else {
        const A = L.qkvApart ?? this.wb.apart(i);
        const [q, k, v] = [slot(i, 'q', T * H * hd), slot(i, 'k', T * KV * hd), slot(i, 'v', T * KV * hd)];
        proj(`${p}.q`, ln, A.q, q, H * hd, d);
        proj(`${p}.k`, ln, A.k, k, KV * hd, d);
        proj(`${p}.v`, ln, A.v, v, KV * hd, d);
        // The steps between the projections and the rotary (Qwen3's q/k norms), each by its reference form.
        const out = new Map([
          ['q', q],
          ['k', k],
        ]);
        for (const st of between) {
          const o = slot(i, st.slot, st.width === 'q' ? T * H * hd : T * KV * hd);
          const ins = st.inputs.map((n) => out.get(n) ?? missing(st, n));
          reference(st, i, `${p}.${st.slot}`, ins, o, L.norms.get(st.slot) ?? null);
          out.set(st.slot, o);
        }
        const rot = rotaryIn.map((n) => out.get(n) ?? missing(stepOf(n), n));
        const [qIn, kIn] = rot;
        specs.push(
          ropeHeads(`${p}.q_rot`, { x: qIn, cos, sin, out: qh }, T, H, hd, r, {}, undefined, at, true),
        );
        specs.push(ropeHeads(`${p}.k_rot`, { x: kIn, cos, sin, out: kh }, T, KV, hd, r, {}, undefined, at));
        specs.push(ropeHeads(`${p}.v_heads`, { x: v, cos, sin, out: vh }, T, KV, hd, 0, {}, undefined, at));
      }
      const shape = attnShapeConstants(p, { H, kvHeads: KV, window: cfg.slidingWindow[i] ?? null });
      if (on('flash')) {
        const flash = { ...shape.flash, ...(faultAt(i) ? faults.flash : {}) };
        specs.push(
          attend.flash(`${p}.ctx`, { q: qh, k: kh, v: vh, ctx }, H, T, hd, { constants: flash }, at),
        );
      } else if (scores && probs) {
        const plain: OverrideConstants = cpu ? { PLAIN: true } : {};
        const c = (x: OverrideConstants) => ({ constants: { ...x, ...plain } });
        const [s_, p_] = [scores, probs];
        specs.push(attnScores(`${p}.ctx/scores`, { q: qh, k: kh, s: s_ }, H, T, hd, c(shape.scores), at));
        specs.push(softmaxCausal(`${p}.ctx/probs`, { s: s_, p: p_ }, H, T, c(shape.softmax), at));
        specs.push(attnValues(`${p}.ctx`, { p: p_, v: vh, ctx }, H, T, hd, c(shape.values), at));
      }
      const attnOut = slot(i, 'attn_out', T * d);
      const oPart = projPartial(`${p}.attn_out`, ctx, L.o, attnOut, d, H * hd);
      const ln2 = slot(i, 'ln2', T * d);
      norm(stepOf('ln2'), `${p}.ln2`, i, x, attnOut, L.postNorm, slot(i, 'ln2_in', T * d), ln2, oPart);
      const act = slot(i, 'swiglu', T * F);
      if (on('swiglu')) {
        const buf = { x: ln2, w: L.gateUp.w, b: L.gateUp.b, y: act, dummy };
        const constants = faultAt(i) ? faults.swiglu : undefined;
        specs.push(...gateUpAct.gemm(`${p}.swiglu`, buf, T, F, d, { ...gemm, constants }));
      } else {
        const A = this.wb.apart(i);
        const [gateOut, upOut] = [slot(i, 'gate', T * F), slot(i, 'up', T * F)];
        proj(`${p}.gate`, ln2, A.gate, gateOut, F, d);
        proj(`${p}.up`, ln2, A.up, upOut, F, d);
        reference(stepOf('swiglu'), i, `${p}.swiglu`, [gateOut, upOut], act, null);
      }
      const mlpOut = slot(i, 'mlp_out', T * d);
      const downPart = projPartial(`${p}.mlp_out`, act, L.down, mlpOut, d, F);
      const last = i === cfg.numLayers - 1;
      const w = last ? this.wb.norm : this.wb.layers[i + 1].inNorm;
      const y = last ? finalNorm : slot(i + 1, 'ln1', T * d);
      norm(
        last ? LLAMA_FAMILY.finalNorm : stepOf('ln1'),
        last ? 'final_norm' : `layers.${i + 1}.ln1`,
        i,
        slot(i, 'ln2_in', T * d),
        mlpOut,
        w,
        slot(i, 'out', T * d),
        y,
        downPart,
      );
    });
    proj('logits', finalNorm, { w: this.wb.head, b: null }, logits, V, d);

    let kept = false;
    try {
      if (keepOnGpu) {
        const layerOut = Array.from({ length: cfg.numLayers }, (_, i) => `layers.${i}.out`);
        const names = o.taps ? [...slots.keys()] : ['embed', ...layerOut, 'final_norm', 'logits'];
        if (cache) {
          const all = specs.map((s) => ({ ...s, constants: { ...o.constants, ...s.constants } }));
          device.pushErrorScope('validation');
          const enc = device.createCommandEncoder({ label: 'llama fused step' });
          cache.encode(enc, all);
          device.queue.submit([enc.finish()]);
          const err = await device.popErrorScope();
          if (err) throw new Error(`Llama fused: WebGPU validation error: ${err.message}`);
        } else await submitTimed(this.gpu, specs, { ...o, time: undefined, chunks: o.submitChunks }, []);
        const keptSlots = new Map(names.map((n) => [n, slots.get(n) as KeptSlot] as const));
        kept = true;
        return new KeptRun(device, T, d, V, cfg.numLayers, keptSlots, temp);
      }
      // Every slot read in the forward's own submit and one wait (a wait apiece grew with the layers: ~290 at the
      // Qwen2.5-0.5B shape with taps, 27 a decode step without).
      const layerOut = Array.from({ length: cfg.numLayers }, (_, i) => `layers.${i}.out`);
      const want = o.taps ? [...slots.keys()] : ['embed', ...layerOut, 'final_norm', 'logits'];
      const reqs = want.map((key) => slots.get(key) as { buf: GPUBuffer; floats: number });
      const reads = reqs.map((r) => ({ src: r.buf, bytes: r.floats * 4 }));
      const read = await submitTimed(this.gpu, specs, { ...o, chunks: o.submitChunks }, reads);
      const taps = new Map(want.map((key, i) => [key, read[i]] as const));
      const get = (key: string) => taps.get(key) as Float32Array;
      const layers = layerOut.map(get);
      const dump = {
        T,
        d,
        V,
        embeddings: get('embed'),
        layers,
        finalNorm: get('final_norm'),
        logits: get('logits'),
      };
      return { dump, taps };
    } finally {
      if (!kept) for (const b of temp) b.destroy();
    }
  }

  destroy(): void {
    this.wb.destroy();
  }
}
