// Buffer pool with accounting. Buffers are keyed by (usage, size rounded up to 256 B); a released buffer
// is kept for reuse until trim()/destroyAll(). `bytesLive` counts every buffer this pool created and has not
// destroyed; `bytesInUse` those handed out and not yet released.

const ALIGN = 256;

export interface PoolStats {
  bytesLive: number;
  bytesInUse: number;
  buffersLive: number;
  buffersInUse: number;
}

export class BufferPool {
  private free = new Map<string, GPUBuffer[]>();
  private inUse = new Set<GPUBuffer>();
  private sizes = new Map<GPUBuffer, number>();
  private live = 0;
  private used = 0;

  constructor(private readonly device: GPUDevice) {}

  static roundSize(bytes: number): number {
    return Math.max(ALIGN, Math.ceil(bytes / ALIGN) * ALIGN);
  }

  acquire(bytes: number, usage: GPUBufferUsageFlags, label = 'pooled'): GPUBuffer {
    const size = BufferPool.roundSize(bytes);
    const key = `${usage}:${size}`;
    let buf = this.free.get(key)?.pop();
    if (!buf) {
      buf = this.device.createBuffer({ size, usage, label });
      this.sizes.set(buf, size);
      this.live += size;
    }
    this.inUse.add(buf);
    this.used += size;
    return buf;
  }

  release(buf: GPUBuffer): void {
    if (!this.inUse.delete(buf)) return;
    const size = this.sizes.get(buf)!;
    this.used -= size;
    const key = `${buf.usage}:${size}`;
    let list = this.free.get(key);
    if (!list) this.free.set(key, (list = []));
    list.push(buf);
  }

  /** Destroys every free buffer (in-use ones stay). */
  trim(): void {
    for (const list of this.free.values()) {
      for (const buf of list) this.destroy(buf);
    }
    this.free.clear();
  }

  /** Destroys everything, including buffers still handed out. */
  destroyAll(): void {
    this.trim();
    for (const buf of this.inUse) this.destroy(buf);
    this.inUse.clear();
    this.used = 0;
  }

  stats(): PoolStats {
    let freeCount = 0;
    for (const list of this.free.values()) freeCount += list.length;
    return {
      bytesLive: this.live,
      bytesInUse: this.used,
      buffersLive: freeCount + this.inUse.size,
      buffersInUse: this.inUse.size,
    };
  }

  private destroy(buf: GPUBuffer): void {
    this.live -= this.sizes.get(buf) ?? 0;
    this.sizes.delete(buf);
    buf.destroy();
  }
}
