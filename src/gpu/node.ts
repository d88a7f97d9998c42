// WebGPU in Node through Dawn's bindings (npm `webgpu`). Used by the CLI, tests and benchmarks only;
// the browser build never imports this file.
import { tmpdir } from 'node:os';
import { create, globals } from 'webgpu';

let instance: GPU | null = null;

/**
 * Dawn toggles of the Node engine: timestamps at the GPU's own resolution instead of Dawn's coarse steps
 * (65.5 µs seen on an H200; with the toggle a tiny pass reads ~6.5 µs at ~32 ns resolution; GPU-NOTES.md), so
 * the CLI and the benchmarks time every op directly. The engine still detects the step it gets
 * (src/gpu/timestamp-refine.ts) and reports it with the timings.
 */
export const NODE_DAWN_TOGGLES = ['disable-dawn-features=timestamp_quantization'] as const;

/** The process-wide Dawn GPU object (GPUBufferUsage etc. are installed as globals on first call). */
export function nodeGpu(): GPU {
  if (!instance) {
    // The Vulkan loader complains on every start when this is unset (headless servers, CI).
    process.env.XDG_RUNTIME_DIR ??= tmpdir();
    Object.assign(globalThis, globals);
    instance = create([...NODE_DAWN_TOGGLES]);
  }
  return instance;
}
