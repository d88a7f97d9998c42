// A buffer pool for GPU tests: every buffer it hands out is first filled with NaN (queue writes precede the next
// submit), so an element a kernel leaves unwritten fails the test instead of passing on an earlier result.
import { BufferPool } from './pool';

export class PoisonPool extends BufferPool {
  constructor(private readonly dev: GPUDevice) {
    super(dev);
  }
  override acquire(bytes: number, usage: GPUBufferUsageFlags, label?: string): GPUBuffer {
    const b = super.acquire(bytes, usage, label);
    this.dev.queue.writeBuffer(b, 0, new Float32Array(b.size / 4).fill(Number.NaN));
    return b;
  }
}
