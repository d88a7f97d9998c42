// The GPU bytes a model's passes hold when they make their own buffers (the Llama family's forwards: every
// activation, the KV caches and the readback buffers are made per pass and destroyed after it) rather than take
// them from the engine's pool (gpu/pool.ts). `device` is the real device seen through a Proxy whose createBuffer
// counts each buffer made while a pass is open (`during`; passes may overlap) until it is destroyed; everything
// else is the real device's, bound to it. Weights are not counted (the page shows them apart): those made outside a
// pass never, those made while one is open (a weight uploaded at its first use, by other work running beside a
// pass) until the last open pass ends — every pass destroys its own buffers before it ends, so what is still alive
// then is not a pass's and is forgotten.

import type { PoolStats } from './pool';

export class BufferCount {
  readonly device: GPUDevice;
  private depth = 0;
  private bytes = 0;
  private buffers = 0;
  /** The counted buffers alive now (their labels say which pass holds them). */
  readonly live = new Set<GPUBuffer>();

  constructor(real: GPUDevice) {
    this.device = new Proxy(real, {
      get: (target, key) => {
        if (key === 'createBuffer')
          return (desc: GPUBufferDescriptor) => this.made(target.createBuffer(desc));
        const v = Reflect.get(target, key, target);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
  }

  /** Runs `pass` with counting on: the buffers made meanwhile count until destroyed or until no pass is open. */
  async during<T>(pass: () => Promise<T>): Promise<T> {
    this.depth++;
    try {
      return await pass();
    } finally {
      if (--this.depth === 0) this.forget();
    }
  }

  /** The counted buffers as the pool reports its own: every one is in use (none is kept for reuse). */
  stats(): PoolStats {
    return {
      bytesLive: this.bytes,
      bytesInUse: this.bytes,
      buffersLive: this.buffers,
      buffersInUse: this.buffers,
    };
  }

  /** No pass is open: whatever counted buffer is alive belongs to no pass. */
  private forget(): void {
    this.live.clear();
    this.bytes = 0;
    this.buffers = 0;
  }

  private made(buf: GPUBuffer): GPUBuffer {
    if (this.depth === 0) return buf;
    const size = buf.size;
    this.bytes += size;
    this.buffers++;
    this.live.add(buf);
    const destroy = buf.destroy.bind(buf);
    buf.destroy = () => {
      if (this.live.delete(buf)) {
        this.bytes -= size;
        this.buffers--;
      }
      destroy();
    };
    return buf;
  }
}

/** Two pools' figures added (the engine's pool and a model's own passes). */
export function addPoolStats(a: PoolStats, b: PoolStats): PoolStats {
  return {
    bytesLive: a.bytesLive + b.bytesLive,
    bytesInUse: a.bytesInUse + b.bytesInUse,
    buffersLive: a.buffersLive + b.buffersLive,
    buffersInUse: a.buffersInUse + b.buffersInUse,
  };
}
