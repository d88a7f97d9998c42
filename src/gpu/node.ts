// WebGPU in Node through Dawn's bindings (npm `webgpu`). Used by the CLI, tests and benchmarks only;
// the browser build never imports this file.
import { tmpdir } from 'node:os';
import { create, globals } from 'webgpu';

let instance: GPU | null = null;

/** The process-wide Dawn GPU object (GPUBufferUsage etc. are installed as globals on first call). */
export function nodeGpu(): GPU {
  if (!instance) {
    // The Vulkan loader complains on every start when this is unset (headless servers, CI).
    process.env.XDG_RUNTIME_DIR ??= tmpdir();
    Object.assign(globalThis, globals);
    instance = create([]);
  }
  return instance;
}
