// One descriptor per op kind (docs/ARCHITECTURE.md, "The op registry"): its name in words, whether it is a matrix
// product, the weights it reads, the forms it must have and the fused kernels that may replace it (ops/fused.ts). Which slots, module names and inputs a family uses for
// it are in that family's steps (ops/families.ts).

import { fusedOf } from './fused';
import type { FormKind, OpDescriptor, OpKind } from './types';

/**
 * Every op is computed three ways at least: exactly on the CPU (fp64), by the WGSL reference path, in double-float
 * on the GPU; fused kernels that replace it and the causes (variants of its exact form) come on top.
 */
const ALL: readonly FormKind[] = ['fp64', 'wgsl', 'df'];

function op(
  kind: OpKind,
  title: string,
  linear: boolean,
  weights: OpDescriptor['weights'],
  wholeSequence = false,
): OpDescriptor {
  const fused = { gpt_neox: fusedOf(kind, 'gpt_neox'), llama: fusedOf(kind, 'llama') };
  return { kind, title, linear, weights, needs: ALL, wholeSequence, fused };
}

export const OPS: Readonly<Record<OpKind, OpDescriptor>> = {
  embedding: op('embedding', 'the token embedding', false, ['weight']),
  layernorm: op('layernorm', 'the LayerNorm', false, ['weight', 'bias']),
  rmsnorm: op('rmsnorm', 'the RMSNorm', false, ['weight']),
  qkv: op('qkv', 'the fused QKV projection', true, ['weight', 'bias']),
  q_proj: op('q_proj', 'the q projection', true, ['weight', 'bias']),
  k_proj: op('k_proj', 'the k projection', true, ['weight', 'bias']),
  v_proj: op('v_proj', 'the v projection', true, ['weight', 'bias']),
  qk_norm: op('qk_norm', 'the per-head q/k RMSNorm', false, ['weight']),
  rotary: op('rotary', 'the rotary embedding', false, [], true),
  attention: op('attention', 'the attention core', false, [], true),
  out_proj: op('out_proj', 'the attention output projection', true, ['weight', 'bias']),
  residual: op('residual', 'the residual add', false, []),
  gate_up: op('gate_up', 'the gate/up projection', true, ['weight', 'bias']),
  swiglu: op('swiglu', 'the SwiGLU product', false, []),
  mlp_up: op('mlp_up', 'the MLP up projection', true, ['weight', 'bias']),
  gelu: op('gelu', 'the GELU', false, []),
  mlp_down: op('mlp_down', 'the MLP down projection', true, ['weight', 'bias']),
  final_norm: op('final_norm', 'the final norm', false, ['weight', 'bias']),
  lm_head: op('lm_head', 'the LM head', true, ['weight']),
};
