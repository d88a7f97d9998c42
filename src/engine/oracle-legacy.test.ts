// One-off: the GPU oracle on the registry's steps (oracle-gpu.ts) against the route it replaces (GPT-NeoX's layer
// recorded op by op, legacy-oracle-*.ts; the Llama family's own loop, legacy-llama-oracle-gpu.ts): every tap of every
// call bit for bit (hi and lo words), the same tap names, the same dispatch count. Random models of both families.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PoisonPool } from '../gpu/poison-pool.testdata';
import { recordReadback, uploadBuffer } from '../gpu/readback';
import { createHarness, freshSeed, type Harness } from '../kernels/testing';
import { parseConfigText } from '../model/config';
import { randomModelFiles } from '../model/random-model';
import { loadWeights } from '../model/weights';
import { mulberry32, randn } from '../numeric/random';
import { uploadModel } from './gpu-model';
import { LegacyFamilyGpuOracle } from './legacy-llama-oracle-gpu';
import { LegacyGpuOracle } from './legacy-oracle-gpu';
import { randomLlamaModel } from './llama-models.testdata';
import { FamilyGpuOracle } from './llama-oracle-gpu';
import { LlamaReference } from './llama-reference';
import { DF_BYTES, type DfBuffer, type OracleRun } from './oracle-df';
import { GpuOracle, type OracleOp } from './oracle-gpu';

const MODELS = Number(process.env.LEGACY_MODELS ?? 60);
let h: Harness;
let pool: PoisonPool;
beforeAll(async () => {
  h = await createHarness();
  pool = new PoisonPool(h.device);
});
afterAll(() => {
  pool?.destroyAll();
  h?.destroy();
});

/** Every buffer of a df tap with its byte count (a tap split by columns: each part's). */
function pieces(t: DfBuffer): { src: GPUBuffer; bytes: number }[] {
  if (!t.parts) return [{ src: t.buffer, bytes: t.n * DF_BYTES }];
  const cols = t.parts.reduce((s, p) => s + p.cols, 0);
  return t.parts.map((p) => ({ src: p.buffer, bytes: (t.n / cols) * p.cols * DF_BYTES }));
}

/** What, the old route's run, the new one's; `out`: an op on recorded inputs, whose result is its tap 'out' (the old
 * whole layer left its `layers.{i}.out` beside it). */
type Pair = [string, OracleRun, OracleRun, 'out'?];

/** Submits the encoder, reads every tap of both runs of each pair and compares them word for word. */
async function expectSame(tag: string, enc: GPUCommandEncoder, pairs: Pair[]): Promise<number> {
  const reqs: { src: GPUBuffer; bytes: number }[] = [];
  const plan: { what: string; a: number; b: number; k: number }[] = [];
  for (const [what, a, b, only] of pairs) {
    const names = only ? [only] : [...a.taps.keys()].sort();
    expect(only ? [...b.taps.keys()] : [...b.taps.keys()].sort(), `${tag} ${what}: tap names`).toEqual(names);
    expect(b.dispatches, `${tag} ${what}: dispatches`).toBe(a.dispatches);
    for (const name of names) {
      const ta = a.taps.get(name)!;
      const tb = b.taps.get(name)!;
      expect(tb.n, `${tag} ${what} ${name}: size`).toBe(ta.n);
      expect(
        tb.parts?.map((p) => [p.col0, p.cols]),
        `${tag} ${what} ${name}: parts`,
      ).toEqual(ta.parts?.map((p) => [p.col0, p.cols]));
      const pa = pieces(ta);
      plan.push({ what: `${what} ${name}`, a: reqs.length, b: reqs.length + pa.length, k: pa.length });
      reqs.push(...pa, ...pieces(tb));
    }
  }
  const read = recordReadback(h.device, enc, reqs);
  h.device.queue.submit([enc.finish()]);
  const got = await read();
  for (const p of plan)
    for (let k = 0; k < p.k; k++) {
      const x = Buffer.from(got[p.a + k].buffer, got[p.a + k].byteOffset, got[p.a + k].byteLength);
      const y = Buffer.from(got[p.b + k].buffer, got[p.b + k].byteOffset, got[p.b + k].byteLength);
      expect(y.equals(x), `${tag} ${p.what} (piece ${k})`).toBe(true);
    }
  for (const [, a, b] of pairs) {
    a.release();
    b.release();
  }
  return plan.length;
}

describe('the GPU oracle on the registry steps and the route it replaces', () => {
  it(`GPT-NeoX: every call's taps bit for bit (${MODELS} random models, f16 and split bindings among them)`, async () => {
    const first = freshSeed();
    let compared = 0;
    for (let s = 0; s < MODELS; s++) {
      const seed = (first + s) >>> 0;
      const r = mulberry32(seed);
      const heads = 2 + Math.floor(r() * 3);
      const small = r() < 0.3; // 64 KiB bindings: the embedding and the LM head split
      const f16 = r() < 0.4;
      const spec = {
        vocab: small ? 600 + Math.floor(r() * 600) : 37 + Math.floor(r() * 40),
        d: heads * 4 * (1 + Math.floor(r() * 4)),
        layers: 1 + Math.floor(r() * 2),
        heads,
        ff: 20 + Math.floor(r() * 30),
        rotaryPct: r() < 0.5 ? 0.5 : 1,
        parallel: r() < 0.5,
        ...(f16 ? { dtype: 'F16' as const } : {}),
      };
      const cap = small ? 64 * 1024 : 1 << 30;
      const files = randomModelFiles(spec, seed);
      const cfg = parseConfigText(files.config);
      const gm = uploadModel(h.device, cfg, loadWeights(cfg, files.weights), cap, f16);
      const T = 2 + Math.floor(r() * 16);
      const from = 1 + Math.floor(r() * (T - 1));
      const tokens = Array.from({ length: T }, () => Math.floor(r() * spec.vocab));
      const tag = `seed ${seed} (${JSON.stringify(spec)}, cap ${cap}, T ${T}, from ${from})`;
      const d = cfg.hiddenSize;
      const made: GPUBuffer[] = [];
      const up = (x: Float32Array) => {
        const b = uploadBuffer(h.device, x, 'input');
        made.push(b);
        return { buffer: b, n: x.length };
      };
      try {
        const opts = { dfFma: false, maxBindingBytes: cap };
        const old = new LegacyGpuOracle(h.device, h.pipelines, pool, gm, opts);
        const neu = new GpuOracle(h.device, h.pipelines, pool, gm, opts);
        const enc = h.device.createCommandEncoder();
        const layer = Math.floor(r() * cfg.numLayers);
        const x = up(randn(r, T * d)).buffer;
        const pairs: Pair[] = [
          ['forward all', old.forward(enc, tokens, 'all'), neu.forward(enc, tokens, 'all')],
          ['forward dump', old.forward(enc, tokens, 'dump'), neu.forward(enc, tokens, 'dump')],
          [
            'layer all',
            old.layer(enc, layer, { f32: x }, T, 'all'),
            neu.layer(enc, layer, { f32: x }, T, 'all'),
          ],
          [
            'layer dump',
            old.layer(enc, layer, { f32: x }, T, 'dump'),
            neu.layer(enc, layer, { f32: x }, T, 'dump'),
          ],
        ];
        const pa = old.forward(enc, tokens.slice(0, from), 'all');
        const pb = neu.forward(enc, tokens.slice(0, from), 'all');
        pairs.push(['prompt all', pa, pb]);
        pairs.push([
          'forwardFrom',
          old.forwardFrom(enc, tokens, from, (i) => pa.taps.get(`layers.${i}.qkv`)!),
          neu.forwardFrom(enc, tokens, from, (i) => pb.taps.get(`layers.${i}.qkv`)!),
        ]);
        const ff = cfg.intermediateSize;
        const ops: [OracleOp, number | null, number[]][] = [
          ['embed', null, []],
          ['ln1', layer, [d]],
          ['qkv', layer, [d]],
          ['attention', layer, [3 * d]],
          ['dense', layer, [d]],
          ['ln2', layer, [d]],
          ['fc1', layer, [d]],
          ['act', layer, [ff]],
          ['fc2', layer, [ff]],
          ['residual', layer, cfg.useParallelResidual ? [d, d, d] : [d, d]],
          ['layer', layer, [d]],
          ['final_norm', null, [d]],
          ['lm_head', null, [d]],
        ];
        for (const [op, l, widths] of ops) {
          const inputs = widths.map((w) => up(randn(r, T * w)));
          const rows = widths.map((w) => up(randn(r, (T - from) * w)));
          for (const r0 of [0, from]) {
            const c = { op, layer: l, inputs, label: op };
            pairs.push([
              `${op} from ${r0}`,
              old.opOn(enc, c, tokens, r0),
              neu.opOn(enc, c, tokens, r0),
              'out',
            ]);
          }
          if (op !== 'attention' && op !== 'layer') {
            const c = { op, layer: l, inputs: rows, label: op };
            pairs.push([
              `${op} rows only`,
              old.opOn(enc, c, tokens, from),
              neu.opOn(enc, c, tokens, from),
              'out',
            ]);
          }
        }
        compared += await expectSame(tag, enc, pairs);
      } finally {
        for (const b of made) b.destroy();
        gm.destroy();
      }
    }
    expect(pool.stats().bytesInUse).toBe(0);
    console.log(`GPT-NeoX: ${compared} taps compared over ${MODELS} models`);
  }, 1_800_000);

  it(`the Llama family: forwards and layers on given inputs bit for bit (${MODELS} random models)`, async () => {
    const first = freshSeed();
    let compared = 0;
    for (let s = 0; s < MODELS; s++) {
      const seed = (first + s) >>> 0;
      const { cfg, w, tokens } = randomLlamaModel(seed);
      const r = mulberry32(seed ^ 0x5bd1e995);
      const small = r() < 0.3;
      const T = tokens.length;
      // Small: bindings of 64-row multiples of the LM head's [T, rows] df output that still hold every other tensor.
      const widest = Math.max(
        cfg.hiddenSize,
        cfg.numHeads * cfg.headDim,
        cfg.intermediateSize,
        cfg.numHeads * T,
      );
      const cap = small ? 8 * T * 64 * Math.ceil(widest / 64) : h.device.limits.maxStorageBufferBindingSize;
      const ref = LlamaReference.create(h, cfg, w);
      const made: GPUBuffer[] = [];
      try {
        const opts = { dfFma: false, maxBindingBytes: cap };
        const wb = (t: Parameters<typeof ref.weightBuffer>[0]) => ref.weightBuffer(t);
        const old = new LegacyFamilyGpuOracle(h.device, h.pipelines, pool, cfg, w, wb, opts);
        const neu = new FamilyGpuOracle(h.device, h.pipelines, pool, cfg, w, wb, opts);
        const inputs = Array.from({ length: cfg.numLayers }, () => {
          const b = uploadBuffer(h.device, randn(r, T * cfg.hiddenSize), 'input');
          made.push(b);
          return b;
        });
        const enc = h.device.createCommandEncoder();
        const pairs: Pair[] = [];
        if (!small) {
          pairs.push(['forward all', old.forward(enc, tokens, 'all'), neu.forward(enc, tokens, 'all')]);
          pairs.push([
            'layersOn all',
            old.layersOn(enc, tokens, inputs, 'all'),
            neu.layersOn(enc, tokens, inputs, 'all'),
          ]);
        }
        pairs.push(['forward dump', old.forward(enc, tokens, 'dump'), neu.forward(enc, tokens, 'dump')]);
        pairs.push(['layersOn dump', old.layersOn(enc, tokens, inputs), neu.layersOn(enc, tokens, inputs)]);
        compared += await expectSame(`seed ${seed} (${cfg.flavour}, T ${T}, cap ${cap})`, enc, pairs);
      } finally {
        for (const b of made) b.destroy();
        ref.destroy();
      }
    }
    expect(pool.stats().bytesInUse).toBe(0);
    console.log(`Llama family: ${compared} taps compared over ${MODELS} models`);
  }, 1_800_000);
});
