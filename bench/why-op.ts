// Where the CPU time of one op's why goes (its anatomy and its cause search), the products left out: an op of a
// Pythia shape (mlp_up by default: dense_h_to_4h + GELU, T = 128) with a cause planted (ReLU for GELU by default),
// every product the search asks for computed beforehand and held as the GPU oracle's would be (its time not counted),
// the exact product held first as the two-path why's checks hold it. No GPU needed: this is what remains on the CPU
// once the products are on the GPU. Usage: node --import tsx bench/why-op.ts [--d 1024] [--ff 4096] [--T 128]
// [--plant relu|bf16-out|input-bf16] [--reps 3]
import { anatomy } from '../src/compare/causes/anatomy';
import { core, evalVariant, ProductCache } from '../src/compare/causes/exact-op';
import { explainWith } from '../src/compare/causes/explain';
import { forgetProducts, holdProduct } from '../src/compare/causes/search-products';
import type { OpData, Variant } from '../src/compare/causes/types';
import { fullMetrics } from '../src/compare/metrics';
import { mulberry32 } from '../src/numeric/random';
import { roundTo } from '../src/numeric/round';

const argv = process.argv.slice(2);
const value = (name: string, d: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : d);
const D = Number(value('--d', '1024'));
const FF = Number(value('--ff', '4096'));
const T = Number(value('--T', '128'));
const reps = Number(value('--reps', '3'));
const plant = value('--plant', 'relu');
const PLANTS: Record<string, Variant> = {
  relu: { act: 'relu' },
  'bf16-out': { outFormat: 'bf16' },
  'input-bf16': { inputFormat: 'bf16' },
};

const rng = mulberry32(4321);
const randn = (n: number, s = 1) =>
  Float32Array.from(
    { length: n },
    () => s * Math.sqrt(-2 * Math.log(1 - rng())) * Math.cos(2 * Math.PI * rng()),
  );
const noisy = (v: Float64Array) => {
  let ss = 0;
  for (const x of v) ss += x * x;
  const sigma = 2 * 2 ** -24 * Math.sqrt(ss / v.length);
  const e = randn(v.length, sigma);
  return Float32Array.from(v, (x, i) => x + e[i]);
};

function opData(): OpData {
  const x = randn(T * D);
  const d: OpData = {
    op: 'mlp_up',
    layer: 1,
    cfg: {
      vocabSize: 50304,
      hiddenSize: D,
      numLayers: 24,
      numHeads: D / 64,
      headDim: 64,
      intermediateSize: FF,
      rotaryNdims: 16,
      rotaryBase: 10000,
      layerNormEps: 1e-5,
      useParallelResidual: true,
      maxPositionEmbeddings: 2048,
      attentionBias: true,
      tieWordEmbeddings: false,
    },
    tokens: Array.from({ length: T }, (_, t) => t),
    inputs: [x],
    inputSlots: ['layers.1.ln2'],
    recorded: new Float32Array(T * FF),
    exact: new Float64Array(T * FF),
    weights: {
      linear: {
        weight: { data: randn(FF * D, 1 / Math.sqrt(D)), shape: [FF, D] },
        bias: { data: randn(FF, 0.1), shape: [FF] },
      },
    },
    angles: 'exact',
    others: ['layers.1.ln1', 'layers.0.out'].map((slot) => ({ slot, name: slot, data: randn(T * D) })),
    floor: fullMetrics([0], [1], 'fp32'),
    metric: 'relL2',
    k: 10,
    precision: 'fp32',
    scale: 0,
  };
  return d;
}

async function main() {
  const d = opData();
  const t0 = performance.now();
  const product = core({ ...d, op: 'fc1' }, {}, null);
  console.error(`exact product on the CPU (not counted below): ${(performance.now() - t0).toFixed(0)} ms`);
  holdProduct(d, {}, d.inputs[0], FF, null, product);
  d.exact = core(d, {}, null);
  d.floor = fullMetrics(noisy(d.exact), d.exact, 'fp32');
  const v = PLANTS[plant];
  const out = noisy(evalVariant(d, v, null));
  d.recorded = v.outFormat ? Float32Array.from(out, (y) => roundTo(v.outFormat!, y)) : out;
  d.scale = d.recorded.reduce((m, y) => Math.max(m, Math.abs(y)), 0);
  for (let r = 0; r < reps; r++) {
    forgetProducts(...d.others.map((o) => o.data));
    holdProduct(d, {}, d.inputs[0], FF, null, product);
    const data = { ...d };
    let productsMs = 0;
    let asked = 0;
    const cache = new ProductCache();
    const a0 = performance.now();
    const anat = anatomy(data);
    const a1 = performance.now();
    const verdict = await explainWith(data, cache, async (requests) => {
      const p0 = performance.now();
      for (const q of requests) {
        const x0 = q.v.input ?? data.inputs[0];
        holdProduct(data, q.v, x0, FF, q.cols, core({ ...data, op: 'fc1' }, q.v, q.cols));
        // (as why-gpu.ts: a fused group's output computed from the held product when it is scored)
        asked++;
      }
      productsMs += performance.now() - p0;
    });
    const a2 = performance.now();
    console.log(
      JSON.stringify({
        rep: r,
        anatomyMs: +(a1 - a0).toFixed(1),
        searchCpuMs: +(a2 - a1 - productsMs).toFixed(1),
        productsAsked: asked,
        productsCpuMsNotCounted: +productsMs.toFixed(0),
        named: verdict.named.map((c) => c.id),
        shape: anat.shape.kind,
      }),
    );
  }
}
main();
