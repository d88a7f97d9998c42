// Test harness for GPU kernels in Node (Dawn on SwiftShader): one device per test file, inputs uploaded,
// outputs poisoned with NaN before the kernel runs, results read back and compared with a tolerance. The
// harness itself (and compare) is device-agnostic, in harness.ts, so the page's worker runs the same one.
import { acquireGpu, type GpuContext } from '../gpu/device';
import { nodeGpu } from '../gpu/node';
import { PipelineCache } from '../gpu/pipelines';
import { type DeviceHarness, deviceHarness } from './harness';
import { nodeShaderSource } from './shaders-node';

export { type CompareResult, compare, dotBound, U32 } from './harness';

export interface Harness extends DeviceHarness {
  ctx: GpuContext;
  destroy(): void;
}

export async function createHarness(): Promise<Harness> {
  const ctx = await acquireGpu(nodeGpu());
  const device = ctx.device;
  const h = deviceHarness(device, new PipelineCache(device, nodeShaderSource()));
  return {
    ...h,
    ctx,
    destroy() {
      h.release();
      device.destroy();
    },
  };
}

/** A fresh random seed for a test run (printed on failure; set KERNEL_SEED to replay). */
export function freshSeed(): number {
  const fixed = process.env.KERNEL_SEED;
  return fixed ? Number(fixed) : (Math.random() * 2 ** 31) >>> 0;
}
