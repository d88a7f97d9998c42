// A plan's activation buffers: named by tap, taken from a pool (the engine's, or a recorded plan's own) and
// given back together; one storage binding is the most any of them may be (a longer prompt is refused first).
import type { BufferPool } from '../gpu/pool';

export class PlanError extends Error {
  override name = 'PlanError';
}

/** Where a plan's activation buffers come from: the engine's pool, or a cached plan's own (plan-cache.ts). */
export type BufferSource = Pick<BufferPool, 'acquire' | 'release'>;

/** Activation buffers for T tokens from the pool, named by tap; reused across layers (taps copy per op). */
export class Activations {
  private made: GPUBuffer[] = [];
  constructor(
    private readonly pool: BufferSource,
    private readonly maxBinding: number,
  ) {}
  get(floats: number, label: string): GPUBuffer {
    if (floats * 4 > this.maxBinding) {
      throw new PlanError(
        `${label} needs ${floats * 4} bytes, more than one storage binding on this adapter (${this.maxBinding}): use a shorter prompt`,
      );
    }
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const b = this.pool.acquire(floats * 4, usage, label);
    this.made.push(b);
    return b;
  }
  get bytes(): number {
    return this.made.reduce((s, b) => s + b.size, 0);
  }
  release(): void {
    for (const b of this.made) this.pool.release(b);
    this.made = [];
  }
}
