// Narrated classroom scenarios: each retells one field report (../shared/field-reports, credited by number)
// as a run of the explorer on the embedded model, with a few on-screen steps saying what to look at and what
// it means. Prompts are short (≤ 40 bytes = tokens on the byte-level model) so slow adapters finish quickly.
// A scenario opens from the short link '#s=<id>' (permalink.ts), never on its own: autorun is off.
import type { FusedKernelId } from '../engine/fused-kernels';
import { DEFAULT_K, type RunSpec } from './runspec';

export interface ScenarioExpectation {
  /**
   * The headline (Report.verdict): 'diverged' (the prompt), 'generation-diverged' (the prompt agrees, the generated
   * text does not) or 'agree'.
   */
  verdict: 'agree' | 'diverged' | 'generation-diverged';
  /** What the analysis reports as the first divergent layer (null: every layer agrees). */
  firstDivergentLayer: number | null;
  /** The fused kernel bisection blames, where there is one. */
  kernel?: FusedKernelId;
  /** false: the determinism check is expected to find bits that change between runs (a race). */
  deterministic?: boolean;
  /**
   * The path whose decode check finds the error (it starts by itself where the generation diverges), at this decode
   * step and layer.
   */
  decode?: { path: 'reference' | 'fused'; step: number; layer: number };
  /** One or two sentences for the viewer: what the result should look like and why. */
  note: string;
}

export interface ScenarioVariant {
  /** A few words shown on the variant's button. */
  label: string;
  spec: RunSpec;
  expect: ScenarioExpectation;
}

export interface Scenario {
  /** Short slug, used in the link '#s=<id>'. */
  id: string;
  title: string;
  /** The field report this retells, by number (../shared/field-reports/NNN_*). */
  report: number;
  /** The field report in 2–3 plain sentences. */
  story: string;
  /** 3–6 short on-screen steps: what to look at, what it means. */
  steps: string[];
  spec: RunSpec;
  expect: ScenarioExpectation;
  /** Related runs to compare with (linked as '#s=<id>/<n>', n from 1). */
  variants?: ScenarioVariant[];
}

const EMBEDDED = { kind: 'embedded', id: 'neox-kjv-bytes' } as const;
const ALL: FusedKernelId[] = [
  'layernorm',
  'qkv_rotary',
  'flash_attention',
  'gemm',
  'linear_gelu',
  'residual_epilogue',
];

/** A scenario spec: the embedded model, fp32, every fused kernel on, relL2 with the default k. */
function spec(prompt: string, faults: RunSpec['faults'], generate = 16): RunSpec {
  return {
    version: 1,
    model: { ...EMBEDDED },
    prompt: { text: prompt },
    generate,
    precision: 'fp32',
    fused: [...ALL],
    faults,
    seed: 1,
    k: DEFAULT_K,
    metric: 'relL2',
  };
}

const GENESIS = 'In the beginning God created the heaven'; // 39 bytes
const LIGHT = 'And God said, Let there be light: and'; // 37 bytes
const ONE_TILE = 'And God '; // 8 bytes: exactly one key tile of flash attention

export const SCENARIOS: readonly Scenario[] = [
  {
    id: 'fused-add',
    title: 'The fused add that passed every isolated test, yet diverged from layer 1',
    report: 0,
    story:
      'Field report 000: a hand-written fused add passed every isolated test with zero error and was really ' +
      'called 64 times per forward, yet the model diverged from layer 1 and grew to an error of 400. The ' +
      'kernel was fine; the way it was wired into the layer was not.',
    steps: [
      'Look at the layer chart: layer 0 sits under the noise floor, layer 1 jumps far above it.',
      'Open layer 1: its local error (the fused layer fed the reference input) is large too, so the error is born here, not carried in.',
      'Layers 2 and 3 show propagated error: they inherit layer 1’s mistake and add their own.',
      'Bisection blames the residual epilogue alone. Its arithmetic is right; it adds the wrong tensors (attn + attn + mlp instead of x + attn + mlp).',
      'The lesson: isolated kernel tests cannot catch an integration bug; compare the whole model, layer by layer.',
    ],
    spec: spec(GENESIS, [{ id: 'residual_wiring', fromLayer: 1 }]),
    expect: {
      verdict: 'diverged',
      firstDivergentLayer: 1,
      kernel: 'residual_epilogue',
      note: 'Clean before layer 1, born at layer 1, carried and amplified after it.',
    },
    variants: [
      {
        label: 'The suspect the report named: aliasing',
        spec: spec(GENESIS, [{ id: 'alias_residual', fromLayer: 1 }]),
        expect: {
          verdict: 'diverged',
          firstDivergentLayer: 1,
          kernel: 'gemm',
          note: 'attention.dense writes over the residual buffer: the same picture, another integration bug.',
        },
      },
    ],
  },
  {
    id: 'reorder-vs-fp16',
    title: 'Benign reordering vs fp16 accumulation',
    report: 0,
    story:
      'Field report 000 asked whether (a + b) + c vs a + (b + c) in fp16 could explain its divergence. ' +
      'Reordering a sum really does change bits, but only at the level of rounding; keeping the running ' +
      'sums in fp16 loses far more.',
    steps: [
      'Run the reordered LayerNorm sum: bits change, yet every layer stays under the noise floor (k × the floor).',
      'The noise floor is how far the reference path itself is from exact (fp64): honest rounding.',
      'Now open the fp16-accumulation variant: the ratio leaves the floor at the layer where the fault is planted.',
      'The verdict is about size, not about bits being identical: a different order is not a bug; lost precision is.',
    ],
    spec: spec(LIGHT, [{ id: 'reordered_sum', fromLayer: 0 }]),
    expect: {
      verdict: 'agree',
      firstDivergentLayer: null,
      note: 'Every ratio stays below k = 10: different bits, same accuracy.',
    },
    variants: [
      {
        label: 'fp16 accumulation instead',
        spec: spec(LIGHT, [{ id: 'fp16_accumulation', fromLayer: 1 }]),
        expect: {
          verdict: 'diverged',
          firstDivergentLayer: 1,
          kernel: 'linear_gelu',
          note: 'The MLP up-projection sums in fp16 from layer 1: the ratio there is well above the floor.',
        },
      },
    ],
  },
  {
    id: 'misaligned-tile',
    title: 'The misaligned tile load and the intermittent race',
    report: 2,
    story:
      'Field report 002: a FlashAttention kernel wrote its cp.async tiles 2 bytes off their alignment (450 ' +
      'errors), and its baseline configuration, which had "worked", failed on the next validation run. An ' +
      'offset tile gives plausible but wrong numbers; a race gives numbers that change from run to run.',
    steps: [
      'Run the offset tile load (GEMM, from layer 2): layers 0 and 1 agree, layer 2 jumps.',
      'The values stay finite and plausible in size: only the comparison shows they are built from the wrong products.',
      'Bisection points at the tiled GEMM.',
      'Open the race variant and look at the determinism badge: the fused path run twice does not give the same bits.',
      'A kernel that only sometimes fails is broken: never call it validated on one good run.',
    ],
    spec: spec(GENESIS, [{ id: 'tile_offset', fromLayer: 2 }]),
    expect: {
      verdict: 'diverged',
      firstDivergentLayer: 2,
      kernel: 'gemm',
      note: 'Wrong from layer 2 on, with every value still finite.',
    },
    variants: [
      {
        label: 'The intermittent race',
        spec: spec(LIGHT, [{ id: 'missing_barrier', fromLayer: 1 }]),
        expect: {
          verdict: 'diverged',
          firstDivergentLayer: 1,
          kernel: 'flash_attention',
          deterministic: false,
          note:
            'The determinism badge turns red: another run or tile shape gives other bits. What the race reads ' +
            'depends on scheduling, so the badge, not the chart, is the reliable sign.',
        },
      },
    ],
  },
  {
    id: 'no-rescale',
    title: 'The online-softmax rescale bug that only shows on longer prompts',
    report: 3,
    story:
      'Field report 003: a persistent kernel passed its first tests, then fell apart as soon as the tuning ' +
      '(its tile shapes) changed. A bug that lives on a code path the tests never take looks like a good ' +
      'kernel until the inputs grow.',
    steps: [
      'Run the 8-byte prompt: it fits one key tile of flash attention, and every layer agrees.',
      'Open the longer-prompt variant: same kernels, same fault, only the prompt is longer.',
      'Now the first layer diverges: a later key tile raises the running maximum and the sums are not rescaled.',
      'Bisection blames flash attention. Test with inputs that cross every tile boundary.',
    ],
    spec: spec(ONE_TILE, [{ id: 'no_rescale', fromLayer: 0 }], 0),
    expect: {
      verdict: 'agree',
      firstDivergentLayer: null,
      note: 'One key tile: the missing rescale never matters, the run agrees.',
    },
    variants: [
      {
        label: 'A longer prompt',
        spec: spec(GENESIS, [{ id: 'no_rescale', fromLayer: 0 }], 0),
        expect: {
          verdict: 'diverged',
          firstDivergentLayer: 0,
          kernel: 'flash_attention',
          note: 'Five key tiles: wrong from layer 0.',
        },
      },
    ],
  },
  {
    id: 'fast-but-wrong',
    title: 'Fast but wrong vs slow but right',
    report: 4,
    story:
      'Field report 004: a fused Linear+ReLU was rebuilt as the wrong module (0.31 error), and its naive GEMM ' +
      'made the "fused" path 7.67× slower than eager. Speed and correctness are separate questions; both need ' +
      'measuring.',
    steps: [
      'Read the error chart and the timing panel side by side.',
      'The fused path applies ReLU where the model was trained with GELU: wrong from layer 0, and bisection blames Linear + GELU.',
      'The timing panel shows what the fused path costs against the reference: being fast says nothing about being right.',
      'Open the fixed variant: the same fused kernels without the fault agree with the reference; compare the time again.',
      'Timings depend on the viewer’s GPU: compare with the sharer’s summary, not with a number in a report.',
    ],
    spec: spec(LIGHT, [{ id: 'gelu_relu', fromLayer: 0 }]),
    expect: {
      verdict: 'diverged',
      firstDivergentLayer: 0,
      kernel: 'linear_gelu',
      note: 'Diverged from layer 0; read the timing panel for the speed the wrong answer was bought with.',
    },
    variants: [
      {
        label: 'Fixed: fused and right',
        spec: spec(LIGHT, []),
        expect: {
          verdict: 'agree',
          firstDivergentLayer: null,
          note: 'Every layer agrees: look at the timing panel for what fusion buys when it is right.',
        },
      },
    ],
  },
  {
    id: 'decode-only',
    title: 'Fine on the prompt, wrong in the generated text',
    report: 0,
    story:
      'Field report 000 began with "the generated tokens were completely different" while the checks it ran ' +
      'looked fine. Generation runs a decode path the prompt never takes: one new row per step, reading a KV ' +
      'cache, with kernels of its own.',
    steps: [
      'Run it: the layer chart shows every layer of the prompt under the floor, yet the verdict is not green.',
      'Look at the generated texts: the fused path parts from the reference at the second token.',
      'Read why beside the texts: the fused path’s cached decode chose a token its own full forward over the same tokens would not, so the error is in the decode path.',
      'The decode check started by itself and names where it is born: the fused path’s decode step 1, layer 1, the QKV projection and attention core (the fused kernel that rotates).',
      'The planted bug: the single-row decode step rotates its query and key as position 0 (layer 1 on). cli check exits 1 on it.',
    ],
    spec: spec(GENESIS, [{ id: 'decode_rotary', fromLayer: 1 }], 4),
    expect: {
      verdict: 'generation-diverged',
      firstDivergentLayer: null,
      decode: { path: 'fused', step: 1, layer: 1 },
      note: 'The prompt agrees at every layer; the texts part at the second generated token, in the decode path.',
    },
  },
  {
    id: 'same-params-other-path',
    title: 'Same parameters, another code path',
    report: 1,
    story:
      'Field report 001: two builds of FlashAttention printed identical parameters, yet ran different ' +
      'instructions and took different times. Agreeing on every printed setting does not mean running the ' +
      'same code.',
    steps: [
      'Every setting of the fused QKV + rotary kernel matches the model, but it pairs rotary dimensions the GPT-J way.',
      'The layer chart diverges from layer 0: attention scores are wrong wherever positions differ.',
      'Bisection blames QKV + rotary: compare what the kernel computes, not what it prints.',
    ],
    spec: spec(GENESIS, [{ id: 'gptj_rotary', fromLayer: 0 }]),
    expect: {
      verdict: 'diverged',
      firstDivergentLayer: 0,
      kernel: 'qkv_rotary',
      note: 'Wrong from the first layer, although every parameter matches.',
    },
  },
];

export function scenarioById(id: string): Scenario | undefined {
  return SCENARIOS.find((s) => s.id === id);
}

/** The classroom's stories in words: how many, from how many field reports (the picker's and the mode's line). */
export function scenariosWords(): string {
  const reports = new Set(SCENARIOS.map((s) => s.report)).size;
  return `${SCENARIOS.length} stories from ${reports} field reports, retold as runs of the embedded model`;
}
