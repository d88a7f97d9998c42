// A Program is a flat list of dispatches compiled once (pipeline, uniform params, bind group) and then
// recorded into a command encoder as often as needed. Named copies ("taps") can follow any dispatch.

import type { BufferRef, KernelDef, OverrideConstants, PipelineCache } from './pipelines';
import type { GpuTimer } from './timestamps';

export interface DispatchSpec {
  /** Stable op name, e.g. 'layers.3.ln1' — the join key between plans, oracle and UI. */
  label: string;
  kernel: KernelDef;
  constants?: OverrideConstants;
  /** Binding name -> buffer; the 'params' uniform binding is filled from `params`. */
  buffers: Record<string, BufferRef>;
  /** Bytes of the uniform binding named 'params' (when the kernel has one). */
  params?: ArrayBuffer;
  workgroups: [number, number?, number?];
}

/** Packs a uniform params struct: plain numbers are u32, { f32 } are f32, { i32 } are i32; padded to 16 B. */
export function paramsBytes(values: Array<number | { f32: number } | { i32: number }>): ArrayBuffer {
  const words = Math.max(4, Math.ceil(values.length / 4) * 4);
  const buf = new ArrayBuffer(words * 4);
  const u = new Uint32Array(buf);
  const f = new Float32Array(buf);
  const s = new Int32Array(buf);
  values.forEach((v, i) => {
    if (typeof v === 'number') {
      if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new Error(`param ${i} is not a u32: ${v}`);
      u[i] = v;
    } else if ('f32' in v) f[i] = v.f32;
    else s[i] = v.i32;
  });
  return buf;
}

/** Bytes of one uniform slab: 256 params structs at the usual 256-byte offset alignment. */
const SLAB_BYTES = 64 * 1024;

interface Compiled {
  spec: DispatchSpec;
  pipeline: GPUComputePipeline;
  bindGroup: GPUBindGroup;
  /** Where its uniform params sit: slab index and byte offset (null without params). */
  slot: { slab: number; offset: number; size: number } | null;
}

/** Workgroup counts per dispatch, in the program's order (a replay with other positions). */
export type Workgroups = readonly [number, number?, number?];

export interface TapCopy {
  after: string; // label of the dispatch it follows
  src: GPUBuffer;
  srcOffset: number;
  dst: GPUBuffer;
  dstOffset: number;
  bytes: number;
}

export class Program {
  private ops: Compiled[] = [];
  /** Every op's uniform params live in a few slabs (one buffer and one write per slab, not one per op). */
  private slabs: { buffer: GPUBuffer; bytes: Uint8Array; used: number; dirty: boolean }[] = [];
  private copies = new Map<string, TapCopy[]>();

  constructor(
    private readonly device: GPUDevice,
    private readonly pipelines: PipelineCache,
  ) {}

  get dispatchCount(): number {
    return this.ops.length;
  }

  get labels(): string[] {
    return this.ops.map((o) => o.spec.label);
  }

  add(spec: DispatchSpec): void {
    const [x, y = 1, z = 1] = spec.workgroups;
    const maxDim = this.device.limits.maxComputeWorkgroupsPerDimension;
    if (x > maxDim || y > maxDim || z > maxDim) {
      throw new Error(
        `${spec.label}: dispatch ${x}x${y}x${z} exceeds maxComputeWorkgroupsPerDimension ${maxDim}`,
      );
    }
    const { pipeline, layout } = this.pipelines.get(spec.kernel, spec.constants);
    const buffers = { ...spec.buffers };
    let slot: Compiled['slot'] = null;
    if (spec.kernel.bindings.some((b) => b.name === 'params')) {
      if (!spec.params) throw new Error(`${spec.label}: kernel ${spec.kernel.name} needs params`);
      const binding = this.paramsSlot(spec.params);
      buffers.params = binding;
      slot = { slab: this.slabs.length - 1, offset: binding.offset ?? 0, size: spec.params.byteLength };
    }
    const bindGroup = this.pipelines.bindGroup(spec.kernel, layout, buffers, spec.label);
    this.ops.push({ spec, pipeline, bindGroup, slot });
  }

  /**
   * A replay's parameters: the uniform slabs' bytes (one array per slab) as they are for `specs`, the same
   * dispatches in the same order (same kernels, pipelines and buffers) with other params — a decode step at
   * another position. Throws when `specs` is not such a list.
   */
  paramsImage(specs: readonly DispatchSpec[]): Uint8Array[] {
    if (specs.length !== this.ops.length)
      throw new Error(`replay: ${specs.length} dispatches where the program has ${this.ops.length}`);
    const out = this.slabs.map((s) => s.bytes.slice(0, s.used));
    specs.forEach((spec, i) => {
      const op = this.ops[i];
      const same =
        spec.label === op.spec.label &&
        spec.kernel === op.spec.kernel &&
        this.pipelines.get(spec.kernel, spec.constants).pipeline === op.pipeline &&
        (spec.params?.byteLength ?? 0) === (op.slot?.size ?? 0);
      if (!same) throw new Error(`replay: dispatch ${i} (${spec.label}) differs from ${op.spec.label}`);
      if (op.slot && spec.params) out[op.slot.slab].set(new Uint8Array(spec.params), op.slot.offset);
    });
    return out;
  }

  /** The uniform slabs (what a replay's paramsImage is copied into) and the bytes of each in use. */
  get paramSlabs(): { buffer: GPUBuffer; used: number }[] {
    return this.slabs.map((s) => ({ buffer: s.buffer, used: s.used }));
  }

  /** A range of a uniform slab holding `params` (written to the GPU at encode). */
  private paramsSlot(params: ArrayBuffer): GPUBufferBinding {
    const align = this.device.limits.minUniformBufferOffsetAlignment;
    const size = params.byteLength;
    let slab = this.slabs.at(-1);
    if (!slab || slab.used + size > slab.bytes.length) {
      const bytes = Math.max(SLAB_BYTES, Math.ceil(size / align) * align);
      slab = {
        buffer: this.device.createBuffer({
          size: bytes,
          usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
          label: 'params',
        }),
        bytes: new Uint8Array(bytes),
        used: 0,
        dirty: false,
      };
      this.slabs.push(slab);
    }
    const offset = slab.used;
    slab.bytes.set(new Uint8Array(params), offset);
    slab.used = Math.ceil((offset + size) / align) * align;
    slab.dirty = true;
    return { buffer: slab.buffer, offset, size };
  }

  /** Writes the params of ops added since the last encode. */
  private flushParams(): void {
    for (const slab of this.slabs) {
      if (!slab.dirty) continue;
      this.device.queue.writeBuffer(slab.buffer, 0, slab.bytes, 0, slab.used);
      slab.dirty = false;
    }
  }

  /** Forgets every copy added by copyAfter (a cached program replayed with other taps). */
  clearCopies(): void {
    this.copies.clear();
  }

  /** Copies `bytes` of `src` into `dst` right after the dispatch labelled `after` (taps, dumps). */
  copyAfter(copy: TapCopy): void {
    if (!this.ops.some((o) => o.spec.label === copy.after))
      throw new Error(`no dispatch labelled ${copy.after}`);
    let list = this.copies.get(copy.after);
    if (!list) this.copies.set(copy.after, (list = []));
    list.push(copy);
  }

  /**
   * Records every dispatch, or those of `range` ([start, end) in the program's order: one command buffer of a forward
   * submitted in several, gpu/submit-chunks.ts). With a timer, each dispatch gets its own timed pass; otherwise
   * consecutive dispatches share one pass, which is closed only where a copy must follow (and at the range's end).
   */
  encode(
    encoder: GPUCommandEncoder,
    timer?: GpuTimer | null,
    workgroups?: readonly Workgroups[],
    range: readonly [number, number] = [0, this.ops.length],
  ): void {
    const [start, end] = range;
    if (
      !(
        Number.isInteger(start) &&
        Number.isInteger(end) &&
        0 <= start &&
        start <= end &&
        end <= this.ops.length
      )
    )
      throw new Error(
        `encode: range [${start}, ${end}) is not within the program's ${this.ops.length} dispatches`,
      );
    this.flushParams();
    let pass: GPUComputePassEncoder | null = null;
    const timed = !!timer?.available;
    for (let i = start; i < end; i++) {
      const op = this.ops[i];
      if (!pass)
        pass = encoder.beginComputePass(timed ? timer!.pass(op.spec.label) : { label: op.spec.label });
      pass.setPipeline(op.pipeline);
      pass.setBindGroup(0, op.bindGroup);
      const [x, y = 1, z = 1] = workgroups?.[i] ?? op.spec.workgroups;
      if (x > 0 && y > 0 && z > 0) pass.dispatchWorkgroups(x, y, z);
      const copies = this.copies.get(op.spec.label);
      if (timed || copies) {
        pass.end();
        pass = null;
      }
      for (const c of copies ?? [])
        encoder.copyBufferToBuffer(c.src, c.srcOffset, c.dst, c.dstOffset, c.bytes);
    }
    pass?.end();
  }

  /**
   * Timing by repetition: for each op with repeats(label) > 1, one timed pass that runs its dispatch that many
   * times (same pipeline, bind group and workgroups; no copies). Meant for after a forward whose results were
   * read: every op is out of place, so re-running one rewrites the values it wrote.
   */
  encodeRepeated(encoder: GPUCommandEncoder, timer: GpuTimer, repeats: (label: string) => number): void {
    for (const op of this.ops) {
      const n = repeats(op.spec.label);
      if (n <= 1) continue;
      const pass = encoder.beginComputePass(timer.pass(op.spec.label));
      pass.setPipeline(op.pipeline);
      pass.setBindGroup(0, op.bindGroup);
      const [x, y = 1, z = 1] = op.spec.workgroups;
      if (x > 0 && y > 0 && z > 0) for (let i = 0; i < n; i++) pass.dispatchWorkgroups(x, y, z);
      pass.end();
    }
  }

  dispose(): void {
    for (const slab of this.slabs) slab.buffer.destroy();
    this.slabs = [];
    this.ops = [];
    this.copies.clear();
  }
}
