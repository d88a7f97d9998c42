import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LLAMA_KERNEL_OF, llamaKernels } from '../engine/family-llama';
import { FUSED_KERNELS } from '../engine/fused-kernels';
import { flashAttention } from '../kernels/flash-attention';
import { fusedLaunchers } from '../kernels/ops/index';
import { addRmsNorm, addRmsNormFold } from '../kernels/ops/rmsnorm';
import { linearSwigluOps } from '../kernels/ops/swiglu';
import { LLAMA_FAULTS } from '../run/faults';
import { kernelWords, llamaKernelOfSlot } from '../ui/kernel-words';
import { OP_KINDS, OPS } from './descriptors';
import { LLAMA_FAMILY, NEOX_SEQUENTIAL, planOpsOf } from './families';
import { FUSED, fusedOf, fusedSpec, LLAMA_FAULT_IDS } from './fused';
import { FUSED_KERNEL_IDS } from './types';

// The switches are in reports, permalinks and runs links, and the page's words are what people read: the registry's
// fused kernels are pinned here as the engine, the page and the Llama forward had them written out before.
describe("the op registry's fused kernels", () => {
  it('keeps the switch ids, their order and their GPT-NeoX words and fusions', () => {
    expect(FUSED.map((k) => k.id)).toEqual([...FUSED_KERNEL_IDS]);
    expect(FUSED_KERNELS.map((k) => `${k.id}: ${k.title}`)).toEqual([
      'layernorm: Fused LayerNorm',
      'qkv_rotary: QKV projection + bias + rotary',
      'flash_attention: Flash attention',
      'gemm: Tiled GEMM (dense, LM head)',
      'linear_gelu: Linear + bias + GELU',
      'residual_epilogue: Residual epilogue',
    ]);
    expect(FUSED_KERNELS.map((k) => k.replaces.join(' '))).toEqual([
      'ln1 ln2 resid_mid',
      'qkv rotary',
      'scores probs ctx',
      'attn_out logits',
      'fc1 gelu',
      'mlp_out out',
    ]);
    expect(FUSED_KERNELS.map((k) => k.fusedAway.join(' '))).toEqual([
      '',
      'qkv',
      'scores probs',
      '',
      'fc1',
      'mlp_out',
    ]);
  });

  it("names each switch's GPT-NeoX op kinds as the steps its fusions replace compute", () => {
    // A fusion replaces plan ops; the op kinds a switch lists are exactly those plan ops' steps' kinds.
    const kindOf = new Map<string, string>(
      [...NEOX_SEQUENTIAL.layer, NEOX_SEQUENTIAL.lmHead].flatMap((s) =>
        (s.plan ?? [s.slot]).map((p) => [p, s.op] as const),
      ),
    );
    expect(planOpsOf(NEOX_SEQUENTIAL).every((p) => kindOf.has(p))).toBe(true);
    for (const k of FUSED) {
      const kinds = new Set(k.neox.fusions.flatMap((f) => f.replaces.map((p) => kindOf.get(p))));
      expect([...kinds].sort(), k.id).toEqual([...k.neox.ops].sort());
    }
  });

  it("runs each switch's Llama kernel under it, and names it in the family's words", () => {
    expect(LLAMA_KERNEL_OF).toEqual({
      layernorm: 'addRmsNorm',
      qkv_rotary: 'qkvRope',
      flash_attention: 'flash',
      gemm: 'gemm',
      linear_gelu: 'swiglu',
      residual_epilogue: null,
    });
    const all = { addRmsNorm: true, qkvRope: true, swiglu: true, flash: true, gemm: true };
    expect(llamaKernels('fused')).toEqual(all);
    expect(llamaKernels(new Set(FUSED_KERNEL_IDS))).toEqual(all);
    expect(llamaKernels(new Set(['layernorm', 'linear_gelu'] as const))).toEqual({
      ...all,
      qkvRope: false,
      flash: false,
      gemm: false,
    });
    expect(llamaKernels(new Set(['residual_epilogue'] as const))).toEqual({
      addRmsNorm: false,
      qkvRope: false,
      swiglu: false,
      flash: false,
      gemm: false,
    });
    expect(llamaKernels('reference')).toBeNull();
    expect(llamaKernels(new Set())).toBeNull();
    expect(kernelWords('layernorm', 'llama').title).toBe('Residual add + RMSNorm');
    expect(kernelWords('linear_gelu', 'llama').title).toBe('Gate/up GEMM + SwiGLU');
    expect(kernelWords('linear_gelu').title).toBe('Linear + bias + GELU');
    expect(kernelWords('linear_gelu', 'gpt_neox').description).toBe(
      'dense_h_to_4h with bias and exact GELU in the GEMM epilogue.',
    );
    expect(kernelWords('nope', 'llama')).toEqual({ title: 'nope', description: '' });
    expect(() => fusedSpec('nope')).toThrow("op registry: no fused kernel 'nope'");
  });

  it("brackets each Llama layer slot by the kernel that writes it, off the steps' op kinds", () => {
    const all = [...FUSED_KERNEL_IDS];
    const bracket = Object.fromEntries(
      LLAMA_FAMILY.layer.map((s) => [s.slot, llamaKernelOfSlot(s.slot, all)?.id ?? null]),
    );
    expect(bracket).toEqual({
      ln1: 'layernorm',
      q: 'qkv_rotary',
      k: 'qkv_rotary',
      v: 'qkv_rotary',
      q_norm: null,
      k_norm: null,
      q_rot: 'qkv_rotary',
      k_rot: 'qkv_rotary',
      ctx: 'flash_attention',
      attn_out: 'gemm',
      ln2_in: 'layernorm',
      ln2: 'layernorm',
      gate: 'linear_gelu',
      up: 'linear_gelu',
      swiglu: 'linear_gelu',
      mlp_out: 'gemm',
      out: 'layernorm',
    });
    expect(llamaKernelOfSlot('ln1', ['gemm'])).toBeNull();
    expect(llamaKernelOfSlot('swiglu', ['linear_gelu'])).toEqual({
      id: 'linear_gelu',
      title: 'Gate/up GEMM + SwiGLU',
      name: 'swiglu',
    });
  });

  it("lists in each descriptor the kernels that may replace it, per family; every Llama op a kernel's is stepped", () => {
    expect(OPS.rmsnorm.fused).toEqual({ gpt_neox: [], llama: ['layernorm'] });
    expect(OPS.residual.fused).toEqual({
      gpt_neox: ['layernorm', 'residual_epilogue'],
      llama: ['layernorm'],
    });
    expect(OPS.qk_norm.fused).toEqual({ gpt_neox: [], llama: [] });
    for (const k of OP_KINDS)
      for (const fam of ['gpt_neox', 'llama'] as const) expect(OPS[k].fused[fam], k).toEqual(fusedOf(k, fam));
    const llamaOps = new Set(
      [LLAMA_FAMILY.embed, ...LLAMA_FAMILY.layer, LLAMA_FAMILY.finalNorm, LLAMA_FAMILY.lmHead].map(
        (s) => s.op,
      ),
    );
    for (const k of FUSED)
      for (const op of k.llama.ops) expect(llamaOps.has(op), `${k.id}: ${op}`).toBe(true);
  });

  it("gives the Llama fused forward each module's launchers by switch id, and names a switch no module registers", () => {
    expect(fusedLaunchers('layernorm')).toEqual({ add: addRmsNorm, addFold: addRmsNormFold });
    expect(fusedLaunchers('linear_gelu')).toEqual({ gemm: linearSwigluOps });
    expect(fusedLaunchers('flash_attention')).toEqual({ flash: flashAttention });
    // The q/k/v + rotary GEMM replaces ops of several modules: no module registers it.
    expect(() => fusedLaunchers('qkv_rotary' as 'layernorm')).toThrow(
      "op registry: no op module registers the launchers of fused kernel 'qkv_rotary'",
    );
  });

  it("carries each Llama teaching fault on one switch that runs a Llama kernel declaring the fault's overrides", () => {
    const carried = FUSED.flatMap((k) => k.llama.faults.map((f) => [f.id, k] as const));
    expect(carried.map(([id]) => id).sort()).toEqual([...LLAMA_FAULT_IDS].sort());
    expect(LLAMA_FAULTS.map((f) => `${f.id}: ${f.kernel} ${f.llama?.kernel}`)).toEqual([
      'rms_eps_outside: layernorm addRmsNorm',
      'swap_gate_up: linear_gelu swiglu',
      'kv_interleaved: flash_attention flash',
    ]);
    const shaders = join(dirname(fileURLToPath(import.meta.url)), '../../shaders');
    const wgsl = readdirSync(shaders, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.wgsl'))
      .map((f) => readFileSync(join(shaders, f), 'utf8'))
      .join('\n');
    for (const [id, k] of carried) {
      expect(k.llama.kernel, `${id} on ${k.id}`).not.toBeNull();
      const f = k.llama.faults.find((x) => x.id === id)!;
      for (const c of Object.keys(f.constants ?? {}))
        expect(new RegExp(`\\boverride ${c}\\b`).test(wgsl), `${id}: no shader declares override ${c}`).toBe(
          true,
        );
    }
  });
});
