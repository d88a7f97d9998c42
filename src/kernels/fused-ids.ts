// The names of the fused kernels (a RunSpec's `fused` entries) and of the WGSL files they run (the custom-kernel
// slots). Declared here, below the engine, so that the kernels' custom-kernel slots and the engine's fused-kernel
// table (src/engine/fused-kernels.ts) share them with imports that run one way.

export type FusedKernelId =
  | 'layernorm'
  | 'qkv_rotary'
  | 'flash_attention'
  | 'gemm'
  | 'linear_gelu'
  | 'residual_epilogue';

/**
 * The WGSL files a fusion runs, by slot name: each is a custom-kernel slot (src/kernels/custom/slots.ts holds
 * the slot's kernel descriptors, title and note).
 */
export type CustomSlotId =
  | 'layernorm2'
  | 'add_layernorm'
  | 'qkv_rotary'
  | 'flash_attention'
  | 'linear_bias'
  | 'linear_gelu'
  | 'linear_residual';
