// A generation's decode steps recorded once (llama-generate.ts greedyLockstep; llama-reference.ts, llama-fused.ts
// `cache`): every step after the prompt feeds one row and makes the same dispatches on the same buffers, only their
// positions (uniform params) and workgroup counts differ. The first step builds its buffers and its compiled dispatches
// here (pipelines, one uniform buffer for every dispatch's params, bind groups: as gpu/program.ts Program does); a
// later step whose dispatches match — the same kernels, constants and buffers in the same order — writes its params
// into that uniform buffer (one write) and encodes the same pipelines and bind groups again in one pass: no buffer,
// bind group or pipeline lookup per step. A step that does not match is built anew (the same bits either way: the
// same dispatches). The steps'
// buffers are the cache's: a step's KeptRun owns none, the next step overwrites them (after the previous step's
// work in queue order), and destroy() frees them when the generation is done.
import type { BufferRef, OverrideConstants, PipelineCache } from '../gpu/pipelines';
import type { DispatchSpec } from '../gpu/program';

export class StepCache {
  private buffers: GPUBuffer[] = [];
  private next = 0;
  private constants = new Map<string, GPUBuffer>();
  private compiled: Compiled | null = null;
  private specs: readonly DispatchSpec[] = [];
  /** Steps built anew and steps replayed (tests, benches). */
  readonly counts = { built: 0, replayed: 0 };

  constructor(
    private readonly device: GPUDevice,
    private readonly pipelines: PipelineCache,
  ) {}

  /** A step starts: its buffers are handed out again in the order it asks for them. */
  begin(): void {
    this.next = 0;
  }

  /**
   * The step's next buffer: the one at this place in the order where it holds `size` bytes with this usage, else a
   * new one (twice the old size where one grows, as the attention's scores do with the keys: a kernel reads only the
   * elements its params name, so a larger buffer changes no bit).
   */
  buffer(size: number, usage: GPUBufferUsageFlags, label: string): GPUBuffer {
    const b = this.buffers[this.next];
    if (b && b.size >= size && b.usage === usage) {
      this.next++;
      return b;
    }
    const grown = b && b.usage === usage ? Math.max(size, Math.ceil((2 * b.size) / 16) * 16) : size;
    b?.destroy();
    const made = this.device.createBuffer({ size: grown, usage, label });
    this.buffers[this.next++] = made;
    return made;
  }

  /** A buffer whose contents are the same for every step (the rotary tables): made and written once. */
  constant(name: string, data: () => Float32Array | Uint32Array): GPUBuffer {
    let b = this.constants.get(name);
    if (!b) {
      const d = data();
      b = this.device.createBuffer({
        size: Math.max(16, Math.ceil(d.byteLength / 16) * 16),
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
        label: `step ${name}`,
      });
      this.device.queue.writeBuffer(b, 0, d.buffer, d.byteOffset, d.byteLength);
      this.constants.set(name, b);
    }
    return b;
  }

  /** Records the step's dispatches into `encoder`: the compiled ones with these params where they match, else anew. */
  encode(encoder: GPUCommandEncoder, specs: readonly DispatchSpec[]): void {
    const maxDim = this.device.limits.maxComputeWorkgroupsPerDimension;
    for (const s of specs) {
      const [x, y = 1, z = 1] = s.workgroups;
      if (x > maxDim || y > maxDim || z > maxDim)
        throw new Error(
          `${s.label}: dispatch ${x}x${y}x${z} exceeds maxComputeWorkgroupsPerDimension ${maxDim}`,
        );
    }
    let c = this.compiled;
    if (c && sameDispatches(this.specs, specs)) {
      for (const [i, op] of c.ops.entries()) {
        const params = specs[i].params;
        if (op.offset >= 0 && params) c.image.set(new Uint8Array(params), op.offset);
      }
      this.counts.replayed++;
    } else {
      this.release();
      c = this.compile(specs);
      this.compiled = c;
      this.counts.built++;
    }
    this.specs = specs;
    if (c.uniform) this.device.queue.writeBuffer(c.uniform, 0, c.image, 0, c.image.byteLength);
    const pass = encoder.beginComputePass({ label: 'decode step' });
    let last: GPUComputePipeline | null = null;
    for (const [i, op] of c.ops.entries()) {
      const [x, y = 1, z = 1] = specs[i].workgroups;
      if (x <= 0 || y <= 0 || z <= 0) continue;
      if (op.pipeline !== last) pass.setPipeline(op.pipeline);
      last = op.pipeline;
      pass.setBindGroup(0, op.bindGroup);
      pass.dispatchWorkgroups(x, y, z);
    }
    pass.end();
  }

  /** Pipelines, one uniform buffer of every dispatch's params (each at an aligned offset) and the bind groups. */
  private compile(specs: readonly DispatchSpec[]): Compiled {
    const align = this.device.limits.minUniformBufferOffsetAlignment;
    const hasParams = specs.map((s) => s.kernel.bindings.some((b) => b.name === 'params'));
    const offsets: number[] = [];
    let bytes = 0;
    specs.forEach((s, i) => {
      if (!hasParams[i]) {
        offsets.push(-1);
        return;
      }
      if (!s.params) throw new Error(`${s.label}: kernel ${s.kernel.name} needs params`);
      offsets.push(bytes);
      bytes += Math.ceil(s.params.byteLength / align) * align;
    });
    const uniform =
      bytes > 0
        ? this.device.createBuffer({
            size: bytes,
            usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
            label: 'decode step params',
          })
        : null;
    const image = new Uint8Array(bytes);
    const ops = specs.map((s, i) => {
      const { pipeline, layout } = this.pipelines.get(s.kernel, s.constants);
      const buffers: Record<string, BufferRef> = { ...s.buffers };
      const offset = offsets[i];
      if (offset >= 0 && uniform && s.params) {
        image.set(new Uint8Array(s.params), offset);
        buffers.params = { buffer: uniform, offset, size: s.params.byteLength };
      }
      return { pipeline, bindGroup: this.pipelines.bindGroup(s.kernel, layout, buffers, s.label), offset };
    });
    return { ops, uniform, image };
  }

  private release(): void {
    this.compiled?.uniform?.destroy();
    this.compiled = null;
  }

  destroy(): void {
    this.release();
    for (const b of [...this.buffers, ...this.constants.values()]) b.destroy();
    this.buffers = [];
    this.constants.clear();
  }
}

interface Compiled {
  ops: { pipeline: GPUComputePipeline; bindGroup: GPUBindGroup; offset: number }[];
  uniform: GPUBuffer | null;
  image: Uint8Array;
}

const refKey = (r: BufferRef): [GPUBuffer, number, number] =>
  'buffer' in r ? [r.buffer, r.offset ?? 0, r.size ?? -1] : [r, 0, -1];

/** The same override constants: the same names with the same values (as the pipeline cache keys them). */
function sameConstants(a: OverrideConstants | undefined, b: OverrideConstants | undefined): boolean {
  if (a === b) return true;
  const [ka, kb] = [Object.keys(a ?? {}), Object.keys(b ?? {})];
  if (ka.length !== kb.length) return false;
  return ka.every((k) => b !== undefined && k in b && Number(a?.[k]) === Number(b[k]));
}

/** The same kernels with the same constants on the same buffers, in the same order (params may differ). */
function sameDispatches(a: readonly DispatchSpec[], b: readonly DispatchSpec[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((x, i) => {
    const y = b[i];
    if (x.label !== y.label || x.kernel !== y.kernel) return false;
    if ((x.params?.byteLength ?? 0) !== (y.params?.byteLength ?? 0)) return false;
    if (!sameConstants(x.constants, y.constants)) return false;
    const keys = Object.keys(x.buffers);
    if (keys.length !== Object.keys(y.buffers).length) return false;
    return keys.every((k) => {
      const r = y.buffers[k];
      if (!r) return false;
      const [p, q] = [refKey(x.buffers[k]), refKey(r)];
      return p[0] === q[0] && p[1] === q[1] && p[2] === q[2];
    });
  });
}
