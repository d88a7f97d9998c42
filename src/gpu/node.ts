// WebGPU in Node through Dawn's bindings (npm `webgpu`). Used by the CLI, tests and benchmarks only;
// the browser build never imports this file.
import { create, globals } from 'webgpu';

let instance: GPU | null = null;

/** The process-wide Dawn GPU object (GPUBufferUsage etc. are installed as globals on first call). */
export function nodeGpu(): GPU {
  if (!instance) {
    Object.assign(globalThis, globals);
    instance = create([]);
  }
  return instance;
}
