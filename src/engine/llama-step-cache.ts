// A generation's decode steps recorded once (llama-generate.ts greedyLockstep; llama-reference.ts, llama-fused.ts
// `cache`): every step after the prompt feeds one row and makes the same dispatches on the same buffers, only their
// positions (uniform params) and workgroup counts differ. The first step builds its buffers and its Program (pipelines,
// bind groups) here; a later step whose dispatches match — the same kernels, constants and buffers in the same order —
// writes its params into the Program's uniform slabs and encodes it again: no buffer, bind group or pipeline lookup
// per step. A step that does not match is built anew (the same bits either way: the same dispatches). The steps'
// buffers are the cache's: a step's KeptRun owns none, the next step overwrites them (after the previous step's
// work in queue order), and destroy() frees them when the generation is done.
import type { BufferRef, PipelineCache } from '../gpu/pipelines';
import { type DispatchSpec, Program } from '../gpu/program';

export class StepCache {
  private buffers: GPUBuffer[] = [];
  private next = 0;
  private constants = new Map<string, GPUBuffer>();
  private program: Program | null = null;
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

  /** Records the step's dispatches into `encoder`: the cached Program with these params where they match, else anew. */
  encode(encoder: GPUCommandEncoder, specs: readonly DispatchSpec[]): void {
    if (this.program && sameDispatches(this.specs, specs, this.pipelines)) {
      const image = this.program.paramsImage(specs);
      this.program.paramSlabs.forEach((s, i) => {
        this.device.queue.writeBuffer(s.buffer, 0, image[i], 0, image[i].byteLength);
      });
      this.program.encode(
        encoder,
        null,
        specs.map((s) => s.workgroups),
      );
      this.counts.replayed++;
      this.specs = specs;
      return;
    }
    this.program?.dispose();
    this.program = null;
    const program = new Program(this.device, this.pipelines);
    for (const s of specs) program.add(s);
    program.encode(encoder);
    this.program = program;
    this.specs = specs;
    this.counts.built++;
  }

  destroy(): void {
    this.program?.dispose();
    this.program = null;
    for (const b of [...this.buffers, ...this.constants.values()]) b.destroy();
    this.buffers = [];
    this.constants.clear();
  }
}

const refKey = (r: BufferRef): [GPUBuffer, number, number] =>
  'buffer' in r ? [r.buffer, r.offset ?? 0, r.size ?? -1] : [r, 0, -1];

/** The same kernels with the same constants on the same buffers, in the same order (params may differ). */
function sameDispatches(
  a: readonly DispatchSpec[],
  b: readonly DispatchSpec[],
  pipelines: PipelineCache,
): boolean {
  if (a.length !== b.length) return false;
  return a.every((x, i) => {
    const y = b[i];
    if (x.label !== y.label || x.kernel !== y.kernel) return false;
    if ((x.params?.byteLength ?? 0) !== (y.params?.byteLength ?? 0)) return false;
    if (pipelines.get(x.kernel, x.constants).pipeline !== pipelines.get(y.kernel, y.constants).pipeline)
      return false;
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
