// GPU timing through timestamp queries: one begin/end pair per compute pass. When the device lacks
// 'timestamp-query' every method is a no-op and read() resolves to null ("timing unavailable").
// Timestamps may come in coarse steps (Dawn and browsers quantize them): timestamp-quantum.ts detects the step
// from the raw values (raw()) and timestamp-refine.ts re-times short ops by repetition.

export interface PassTiming {
  label: string;
  /** GPU time of the op (per dispatch when it was repeated). */
  ns: number;
  /** The op's dispatch ran this many times in one pass and the total was divided (absent: once). */
  repeats?: number;
  /** The measured span is within a few timestamp steps: the number is a step count, not a measurement. */
  quantized?: boolean;
  /** The adapter's timestamp step in ns (1: unquantized; null: could not be told), when detected. */
  quantumNs?: number | null;
}

export class GpuTimer {
  private readonly querySet: GPUQuerySet | null;
  private readonly resolveBuf: GPUBuffer | null;
  private readonly readBuf: GPUBuffer | null;
  private labels: string[] = [];
  private lastRaw: bigint[] = [];

  constructor(
    device: GPUDevice,
    private readonly maxPasses: number,
  ) {
    if (!device.features.has('timestamp-query') || maxPasses <= 0) {
      this.querySet = this.resolveBuf = this.readBuf = null;
      return;
    }
    const count = maxPasses * 2;
    this.querySet = device.createQuerySet({ type: 'timestamp', count });
    this.resolveBuf = device.createBuffer({
      size: count * 8,
      usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
    });
    this.readBuf = device.createBuffer({
      size: count * 8,
      usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ,
    });
  }

  get available(): boolean {
    return this.querySet !== null;
  }

  /** A pass descriptor that records this pass's start and end (when there is room and support). */
  pass(label: string): GPUComputePassDescriptor {
    if (!this.querySet || this.labels.length >= this.maxPasses) return { label };
    const i = this.labels.length;
    this.labels.push(label);
    return {
      label,
      timestampWrites: {
        querySet: this.querySet,
        beginningOfPassWriteIndex: 2 * i,
        endOfPassWriteIndex: 2 * i + 1,
      },
    };
  }

  /** Records the resolve + copy; call once, after the last pass, before finish(). */
  resolve(encoder: GPUCommandEncoder): void {
    if (!this.querySet || !this.resolveBuf || !this.readBuf || this.labels.length === 0) return;
    const n = this.labels.length * 2;
    encoder.resolveQuerySet(this.querySet, 0, n, this.resolveBuf, 0);
    encoder.copyBufferToBuffer(this.resolveBuf, 0, this.readBuf, 0, n * 8);
  }

  /** Per-pass durations after the submit completed; null when timing is unavailable. */
  async read(): Promise<PassTiming[] | null> {
    if (!this.readBuf || this.labels.length === 0) return null;
    await this.readBuf.mapAsync(GPUMapMode.READ);
    const t = new BigInt64Array(this.readBuf.getMappedRange().slice(0));
    this.readBuf.unmap();
    this.lastRaw = Array.from(t.subarray(0, this.labels.length * 2));
    return this.labels.map((label, i) => ({ label, ns: Math.max(0, Number(t[2 * i + 1] - t[2 * i])) }));
  }

  /** The raw timestamps of the last read(), begin and end of each pass in order. */
  raw(): readonly bigint[] {
    return this.lastRaw;
  }

  destroy(): void {
    this.querySet?.destroy();
    this.resolveBuf?.destroy();
    this.readBuf?.destroy();
  }
}
