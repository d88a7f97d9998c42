// The fault catalog: seeded, named teaching faults, off by default. Each is a small switch inside a real fused
// kernel (a WGSL override) or a wiring change in the fused plan — never a copy of a kernel. Faults live in the
// fused path only; the reference path is the baseline they are measured against.
import type { FusedKernelId } from '../engine/fused-kernels';
import type { PlanHooks } from '../engine/plan';
import { checkFaultLayer } from '../model/limits';
import { mulberry32 } from '../numeric/random';
import {
  type FaultExpectation,
  FUSED,
  fusedSpec,
  type KernelFault,
  LLAMA_FAULT_IDS,
  type LlamaFaultId,
  type LlamaFusedKernel,
} from '../ops/fused';

export type FaultId =
  | 'tile_offset'
  | 'missing_barrier'
  | 'fp16_accumulation'
  | 'reordered_sum'
  | 'alias_residual'
  | 'stale_buffer'
  | 'wrong_ln_eps'
  | 'gptj_rotary'
  | 'no_rescale'
  | 'gelu_relu'
  | 'dropped_bias'
  | 'residual_wiring'
  | 'decode_rotary'
  // The Llama family's (LLAMA_FAULTS: the registry's)
  | LlamaFaultId;

export type { FaultExpectation };

/** A teaching fault (its words and constants: ops/fused.ts KernelFault) and the switch that carries it. */
export interface FaultInfo extends KernelFault<FaultId> {
  /** The fused kernel that carries it (it has no effect unless that kernel is switched on). */
  kernel: FusedKernelId;
  /**
   * A Llama-family fault (LLAMA_FAULTS): the kernel of engine/llama-fused.ts its constants go to, in every layer
   * (`kernel` is the GPT-NeoX slot a RunSpec switches on for it). Absent: a GPT-NeoX fault.
   */
  llama?: { kernel: LlamaFusedKernel };
}

/**
 * A Llama-family fault's switch: `kernel` (the RunSpec's switch id) and the Llama fused forward's kernel that
 * switch runs there, read off the registry (ops/fused.ts).
 */
function onLlama(kernel: FusedKernelId): Pick<FaultInfo, 'kernel' | 'llama'> {
  const k = fusedSpec(kernel).llama.kernel;
  if (!k) throw new Error(`fault catalog: switch '${kernel}' runs no kernel in the Llama family`);
  return { kernel, llama: { kernel: k } };
}

export const FAULTS: readonly FaultInfo[] = [
  {
    id: 'tile_offset',
    title: 'Tile load offset by 2 elements',
    kernel: 'gemm',
    constants: { FAULT_TILE_OFFSET: true },
    expect: 'diverges',
    description:
      'The GEMM stages each tile of its input from two columns too far along K — every output is built from ' +
      'the wrong products, yet stays finite and plausible in size.',
    story:
      'A FlashAttention kernel whose cp.async shared-memory writes were misaligned by exactly 2 bytes (450 errors).',
  },
  {
    id: 'missing_barrier',
    title: 'Missing workgroupBarrier (race)',
    kernel: 'flash_attention',
    constants: { FAULT_NO_BARRIER: true },
    expect: 'race',
    description:
      'Flash attention reads a key tile before every thread has finished writing it. Whether it reads the new ' +
      'or the old values depends on scheduling: results can change from run to run.',
    story:
      'An intermittent kernel bug: the baseline configuration "worked", then failed on the next validation run.',
  },
  {
    id: 'fp16_accumulation',
    title: 'fp16 accumulation',
    kernel: 'linear_gelu',
    constants: { ACC_F16: true },
    expect: 'diverges',
    description:
      'The MLP up-projection keeps its running sums in fp16: each partial sum loses everything below 2^-11 ' +
      'of its size, far more than fp32 rounding.',
    story:
      'A fused add that passed every isolated test, then diverged from layer 1 in the model — fp16 was a suspect.',
  },
  {
    id: 'reordered_sum',
    title: 'Changed summation order (benign)',
    kernel: 'layernorm',
    constants: { FAULT_REORDER: true },
    expect: 'benign',
    description:
      'LayerNorm sums its row in another order. Floating-point addition is not associative, so bits change — ' +
      'but only at the level of fp32 rounding: this stays under the noise floor.',
    story:
      'Hypothesis 2 of the fused-add report: "(a + b) + c vs a + (b + c)" — real, but far too small to explain it.',
  },
  {
    id: 'alias_residual',
    title: 'In-place aliasing of the residual buffer',
    kernel: 'gemm',
    constants: null,
    expect: 'diverges',
    description:
      'attention.dense writes its output into the buffer that still holds the residual stream, so the ' +
      'residual add later reads the attention output where the hidden state should be.',
    story: 'The fused-add report suspected tensors whose data_ptr overlapped ("memory aliasing").',
  },
  {
    id: 'stale_buffer',
    title: 'Stale pooled buffer read',
    kernel: 'gemm',
    constants: null,
    expect: 'diverges',
    description:
      'attention.dense reads the attention context from the pooled buffer of the previous layer instead of ' +
      "this layer's — the kind of bug a buffer pool invites. Layer 0 reads whatever the pool left there.",
    story: 'Module state lost when a forward was monkey-patched (fused-add report, hypothesis 5).',
  },
  {
    id: 'wrong_ln_eps',
    title: 'Wrong LayerNorm epsilon',
    kernel: 'layernorm',
    constants: { FAULT_EPS_SCALE: 1e4 },
    expect: 'diverges',
    description:
      'The fused LayerNorm uses epsilon × 10^4 (1e-1 instead of 1e-5): small rows are normalized too little.',
    story: 'A config mismatch between two builds of "the same" kernel (the FlashAttention debug guide).',
  },
  {
    id: 'gptj_rotary',
    title: 'GPT-J rotary convention',
    kernel: 'qkv_rotary',
    constants: { FAULT_GPTJ_ROTARY: true },
    expect: 'diverges',
    description:
      'Rotary embedding pairs neighbouring dims (2i, 2i+1), the GPT-J way, instead of GPT-NeoX rotate-half ' +
      '(i, i + r/2). Attention scores are wrong wherever positions differ.',
    story:
      'Kernels that agree on every parameter print, yet take another code path (the FlashAttention debug guide).',
  },
  {
    id: 'no_rescale',
    title: 'Online softmax without rescale',
    kernel: 'flash_attention',
    constants: { FAULT_NO_RESCALE: true },
    expect: 'long-prompt',
    description:
      'When a later key tile raises the running maximum, the running sum and accumulator are not rescaled. ' +
      'Exact while the prompt fits one key tile (8 tokens); wrong on longer prompts.',
    story: 'A persistent kernel that passed its first tests and broke when the tuning (tile shapes) changed.',
  },
  {
    id: 'gelu_relu',
    title: 'GELU swapped for ReLU (the wrong module)',
    kernel: 'linear_gelu',
    constants: { FAULT_RELU: true },
    expect: 'diverges',
    description: 'The fused MLP applies ReLU where the model was trained with exact GELU.',
    story: 'A fused Linear+ReLU rebuilt as the wrong module: 0.31 error (the FusedLinearReLU report).',
  },
  {
    id: 'dropped_bias',
    title: 'Dropped bias',
    kernel: 'residual_epilogue',
    constants: { FAULT_DROP_BIAS: true },
    expect: 'diverges',
    description: 'The MLP down-projection epilogue forgets to add its bias.',
    story: 'The FusedMLP reconstruction that lost parameters on the way (the FusedLinearReLU report).',
  },
  {
    id: 'residual_wiring',
    title: 'Parallel-residual wiring mixed up',
    kernel: 'residual_epilogue',
    constants: { FAULT_WIRING: true },
    expect: 'diverges',
    description:
      'The epilogue adds the attention output twice and drops the hidden state: x + attn + mlp becomes attn + attn + mlp.',
    story: 'Integration, not the kernel: every isolated test passed (the fused-add report).',
  },
  {
    id: 'decode_rotary',
    title: 'Decode step rotated as position 0',
    kernel: 'qkv_rotary',
    constants: { FAULT_DECODE_ROTARY: true },
    expect: 'decode',
    description:
      "The single-row decode step forgets its position: each new token's query and key are rotated as position " +
      '0. The prompt is exact (every check of it agrees); the generated text goes wrong once a step reads it.',
    story:
      'Field report 000: "the generated tokens were completely different" — the decode path, which the prompt ' +
      'never runs.',
  },
];

/**
 * The Llama family's teaching faults, each a switch in one of its fused kernels (shaders/fused/add_rmsnorm.wgsl,
 * linear_swiglu.wgsl, flash_attention.wgsl), on in every layer: read off the registry (ops/fused.ts, each switch's
 * `llama.faults`), in its order (LLAMA_FAULT_IDS). A GPT-NeoX model does not offer them, nor a Llama-family model
 * FAULTS (faultsFor).
 */
export const LLAMA_FAULTS: readonly FaultInfo[] = LLAMA_FAULT_IDS.map((id) => {
  const spec = FUSED.find((k) => k.llama.faults.some((f) => f.id === id));
  const f = spec?.llama.faults.find((x) => x.id === id);
  if (!spec || !f) throw new Error(`fault catalog: no fused kernel carries the Llama fault '${id}'`);
  const { title, constants, expect, description, story } = f;
  return { id, title, ...onLlama(spec.id), constants, expect, description, story };
});

/** The faults a model of `family` offers ('llama': LLAMA_FAULTS; GPT-NeoX: FAULTS). */
export function faultsFor(family: 'gpt_neox' | 'llama' | undefined): readonly FaultInfo[] {
  return family === 'llama' ? LLAMA_FAULTS : FAULTS;
}

export function faultInfo(id: FaultId): FaultInfo {
  const f = FAULTS.find((x) => x.id === id) ?? LLAMA_FAULTS.find((x) => x.id === id);
  if (!f) throw new Error(`unknown fault '${id}'`);
  return f;
}

export function isFaultId(s: string): s is FaultId {
  return FAULTS.some((f) => f.id === s) || LLAMA_FAULTS.some((f) => f.id === s);
}

export interface PlantedFault {
  id: FaultId;
  /** First layer the fault is active in (it stays on in every later layer). */
  fromLayer: number;
}

/**
 * The first faulty layer: as given, or drawn from the seed (so a link replays the same run). A layer outside
 * 0..numLayers-1 is refused (InputError), never moved to a layer the spec did not name.
 */
export function placeFaults(
  faults: readonly { id: FaultId; fromLayer?: number }[],
  seed: number,
  numLayers: number,
): PlantedFault[] {
  const rng = mulberry32(seed);
  return faults.map((f) => {
    checkFaultLayer(f, numLayers);
    return { id: f.id, fromLayer: f.fromLayer ?? Math.floor(rng() * numLayers) };
  });
}

/** Plan hooks that plant the faults in their fused kernels from their first layer on. */
export function faultHooks(faults: readonly PlantedFault[]): PlanHooks {
  const active = (f: PlantedFault, layer: number | null) => layer !== null && layer >= f.fromLayer;
  return {
    constants(kernel, layer) {
      const out: Record<string, number | boolean> = {};
      for (const f of faults) {
        const info = faultInfo(f.id);
        if (info.llama) continue; // a Llama-family fault: never a GPT-NeoX kernel's constant
        if (info.kernel === kernel && info.constants && active(f, layer)) Object.assign(out, info.constants);
      }
      return out;
    },
    aliasResidual: (layer) => faults.some((f) => f.id === 'alias_residual' && active(f, layer)),
    staleContext: (layer) => faults.some((f) => f.id === 'stale_buffer' && active(f, layer)),
  };
}
