// The names of the fused kernels (a RunSpec's `fused` entries) and of the WGSL files they run (the custom-kernel
// slots), as the op registry declares them (src/ops/fused.ts): re-exported here, below the engine, so that the
// kernels' custom-kernel slots and the engine's fused-kernel table (src/engine/fused-kernels.ts) share them.

export type { CustomSlotId, FusedKernelId } from '../ops/fused';
