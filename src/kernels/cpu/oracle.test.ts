import { describe, expect, it } from 'vitest';
import { mulberry32, randn } from '../../numeric/random';
import type { LayerWeights, ModelWeights, NeoXConfig, Tensor } from '../../numeric/types';
import { attentionScoresF64, attentionValuesF64, softmaxCausalF64 } from './attention';
import { embeddingF64 } from './embedding';
import { argmaxRow, oracleForward, oracleGreedy } from './forward';
import { erf, erfc, gelu, geluF64 } from './gelu';
import { layerNormF64 } from './layernorm';
import { linearF64 } from './linear';
import { add3F64, addF64 } from './residual';
import { rotaryInvFreq, splitHeadsRotaryF64 } from './rotary';

/** |a - b| <= tol * max(1, |b|) elementwise; returns the first failing index or -1. */
function firstMismatch(a: ArrayLike<number>, b: ArrayLike<number>, tol: number): number {
  if (a.length !== b.length) return -2;
  for (let i = 0; i < a.length; i++) {
    if (!(Math.abs(a[i] - b[i]) <= tol * Math.max(1, Math.abs(b[i])))) return i;
  }
  return -1;
}

function expectClose(a: ArrayLike<number>, b: ArrayLike<number>, tol: number, msg = ''): void {
  const i = firstMismatch(a, b, tol);
  expect(i, `${msg} mismatch at ${i}: ${a[i]} vs ${b[i]} (lengths ${a.length}, ${b.length})`).toBe(-1);
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

describe('random', () => {
  it('mulberry32 is deterministic, seed-dependent and in [0, 1)', () => {
    const a = mulberry32(42);
    const b = mulberry32(42);
    const c = mulberry32(43);
    const xa = Array.from({ length: 1000 }, a);
    const xb = Array.from({ length: 1000 }, b);
    const xc = Array.from({ length: 1000 }, c);
    expect(xa).toEqual(xb);
    expect(xa).not.toEqual(xc);
    expect(xa.every((x) => x >= 0 && x < 1)).toBe(true);
    const mean = xa.reduce((s, x) => s + x, 0) / xa.length;
    expect(Math.abs(mean - 0.5)).toBeLessThan(0.05);
  });

  it('randn has roughly the requested mean and std, odd n fills every slot', () => {
    const seed = 7;
    const x = randn(mulberry32(seed), 20001, 2);
    expect(x.length).toBe(20001);
    let s = 0;
    let sq = 0;
    for (const v of x) {
      s += v;
      sq += v * v;
    }
    const mean = s / x.length;
    const std = Math.sqrt(sq / x.length - mean * mean);
    expect(Math.abs(mean), `seed=${seed}`).toBeLessThan(0.05);
    expect(Math.abs(std - 2), `seed=${seed}`).toBeLessThan(0.05);
    expect(x.every(Number.isFinite), `seed=${seed}`).toBe(true);
    expect(randn(mulberry32(seed), 5)).toEqual(randn(mulberry32(seed), 5));
  });
});

describe('embeddingF64', () => {
  it('gathers rows of [V, d] into [T, d]', () => {
    const table = new Float32Array([0, 1, 10, 11, 20, 21]); // [3, 2]
    expect(Array.from(embeddingF64(table, 2, [2, 0, 2]))).toEqual([20, 21, 0, 1, 20, 21]);
  });

  it('throws on out-of-range or non-integer ids', () => {
    const table = new Float32Array(6);
    expect(() => embeddingF64(table, 2, [3])).toThrow(/outside/);
    expect(() => embeddingF64(table, 2, [-1])).toThrow(/outside/);
    expect(() => embeddingF64(table, 2, [0.5])).toThrow(/outside/);
  });
});

describe('layerNormF64', () => {
  it('matches a 2x3 case computed by hand (biased variance, eps inside the sqrt)', () => {
    // Row 0 [0, 0, 3]: mean 1, deviations [-1, -1, 2], biased var 2, + eps 2 -> sqrt 2 -> [-0.5, -0.5, 1].
    // Row 1 [1, 4, 1]: mean 2, deviations [-1, 2, -1], biased var 2 -> [-0.5, 1, -0.5].
    // Then * [1, 2, 3] + [0.5, 0, -1].
    const y = layerNormF64([0, 0, 3, 1, 4, 1], 2, 3, [1, 2, 3], [0.5, 0, -1], 2);
    expectClose(y, [0, -1, 2, 0, 2, -2.5], 1e-15);
  });

  it('is exactly the bias on a constant row and normalises to mean 0, var 1 without affine', () => {
    expectClose(layerNormF64([4, 4, 4], 1, 3, [1, 1, 1], [0.1, 0.2, 0.3], 1e-5), [0.1, 0.2, 0.3], 0);
    const x = randn(mulberry32(3), 64);
    const y = layerNormF64(x, 1, 64, new Float64Array(64).fill(1), new Float64Array(64), 0);
    const mean = y.reduce((s, v) => s + v, 0) / 64;
    const v = y.reduce((s, t) => s + (t - mean) ** 2, 0) / 64;
    expect(Math.abs(mean), 'seed=3').toBeLessThan(1e-14);
    expect(Math.abs(v - 1), 'seed=3').toBeLessThan(1e-13);
  });
});

describe('linearF64', () => {
  it('computes x W^T + b with W in [N, K] layout', () => {
    const x = [1, 2, 3, 4]; // [2, 2]
    const w = [1, 0, 0, 1, 1, 1]; // [3, 2]
    expect(Array.from(linearF64(x, 2, 2, w, [10, 20, 30], 3))).toEqual([11, 22, 33, 13, 24, 37]);
    expect(Array.from(linearF64(x, 2, 2, w, null, 3))).toEqual([1, 2, 3, 3, 4, 7]);
  });

  it('takes the transpose, not W itself (non-square)', () => {
    // x [1, 3], W [2, 3]: y = [1*1 + 2*2 + 3*3, 1*4 + 2*5 + 3*6] = [14, 32].
    expect(Array.from(linearF64(new Float32Array([1, 2, 3]), 1, 3, [1, 2, 3, 4, 5, 6], null, 2))).toEqual([
      14, 32,
    ]);
  });

  it('matches a naive triple loop for M = 1..9 (the 4-row blocking and its tail)', () => {
    const seed = 21;
    const rng = mulberry32(seed);
    const K = 13;
    const N = 7;
    const w = randn(rng, N * K);
    const b = randn(rng, N);
    for (let M = 1; M <= 9; M++) {
      const x = randn(rng, M * K);
      const want = new Float64Array(M * N);
      for (let m = 0; m < M; m++) {
        for (let n = 0; n < N; n++) {
          let acc = 0;
          for (let k = 0; k < K; k++) acc += x[m * K + k] * w[n * K + k];
          want[m * N + n] = acc + b[n];
        }
      }
      expectClose(linearF64(x, M, K, w, b, N), want, 0, `seed=${seed} M=${M}`);
    }
  });

  it('rejects short inputs', () => {
    expect(() => linearF64([1, 2], 1, 3, [1, 2, 3], null, 1)).toThrow(/x has/);
    expect(() => linearF64([1, 2, 3], 1, 3, [1, 2, 3], null, 2)).toThrow(/weight has/);
  });
});

describe('rotary', () => {
  it('inv_freq = 1 / base^(2i / r)', () => {
    expectClose(rotaryInvFreq(4, 10000), [1, 0.01], 1e-16);
    expectClose(rotaryInvFreq(8, 10000), [1, 0.1, 0.01, 0.001], 1e-15);
    expect(rotaryInvFreq(0, 10000).length).toBe(0);
  });

  it('hd=4, r=2: position 0 is the identity, position 1 rotates dims (0, 1) by exactly inv_freq[0] = 1 rad', () => {
    // T=2, H=1: qkv [2, 1, 3, 4].
    const q0 = [1, 2, 3, 4];
    const k0 = [5, 6, 7, 8];
    const v0 = [9, 10, 11, 12];
    const qkv = [...q0, ...k0, ...v0, ...q0, ...k0, ...v0];
    const { q, k, v } = splitHeadsRotaryF64(qkv, 2, 1, 4, 2, 10000);
    const c = Math.cos(1);
    const s = Math.sin(1);
    expectClose(q.subarray(0, 4), q0, 0);
    expectClose(k.subarray(0, 4), k0, 0);
    expectClose(q.subarray(4, 8), [1 * c - 2 * s, 2 * c + 1 * s, 3, 4], 1e-15);
    expectClose(k.subarray(4, 8), [5 * c - 6 * s, 6 * c + 5 * s, 7, 8], 1e-15);
    expectClose(v, [...v0, ...v0], 0, 'v is never rotated');
    expect(c).toBeCloseTo(0.5403023058681398, 15);
    expect(s).toBeCloseTo(0.8414709848078965, 15);
  });

  it('uses rotate-half pairs (i, i + r/2), detectably not GPT-J (2i, 2i + 1), at r=4', () => {
    const qkv = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]; // T=2, q[t=1] = e0
    const { q } = splitHeadsRotaryF64(qkv, 2, 1, 4, 4, 10000);
    const rotated = q.subarray(4, 8); // [hd] at t = 1
    // rotate-half: e0 at angle 1 -> cos(1) e0 + sin(1) e2. GPT-J would give cos(1) e0 + sin(1) e1.
    expectClose(rotated, [Math.cos(1), 0, Math.sin(1), 0], 1e-16);
    // the second frequency (inv_freq 0.01) pairs dims 1 and 3
    const { q: q2 } = splitHeadsRotaryF64(
      [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, ...Array(8).fill(0)],
      2,
      1,
      4,
      4,
      1e4,
    );
    expectClose(q2.subarray(4, 8), [0, Math.cos(0.01), 0, Math.sin(0.01)], 1e-16);
  });

  it('reads the fused layout [T, H, 3, hd] and writes [H, T, hd]', () => {
    const T = 2;
    const H = 2;
    const hd = 2;
    const qkv = Array.from({ length: T * H * 3 * hd }, (_, i) => i); // qkv[t,h,j,e] = ((t*H + h)*3 + j)*hd + e
    const { q, k, v } = splitHeadsRotaryF64(qkv, T, H, hd, 0, 10000); // no rotation
    for (let h = 0; h < H; h++) {
      for (let t = 0; t < T; t++) {
        for (let e = 0; e < hd; e++) {
          const at = (h * T + t) * hd + e;
          const src = ((t * H + h) * 3 + 0) * hd + e;
          expect(q[at]).toBe(src);
          expect(k[at]).toBe(src + hd);
          expect(v[at]).toBe(src + 2 * hd);
        }
      }
    }
  });

  it('q.k after rotary depends only on the position difference', () => {
    const seed = 11;
    const rng = mulberry32(seed);
    const hd = 8;
    const qv = Array.from(randn(rng, hd));
    const kv = Array.from(randn(rng, hd));
    const T = 6;
    const qkv: number[] = [];
    for (let t = 0; t < T; t++) qkv.push(...qv, ...kv, ...Array(hd).fill(0));
    const { q, k } = splitHeadsRotaryF64(qkv, T, 1, hd, 6, 10000);
    const dot = (i: number, j: number) => {
      let s = 0;
      for (let e = 0; e < hd; e++) s += q[i * hd + e] * k[j * hd + e];
      return s;
    };
    expect(Math.abs(dot(3, 1) - dot(5, 3)), `seed=${seed}`).toBeLessThan(1e-12);
    expect(Math.abs(dot(2, 2) - dot(0, 0)), `seed=${seed}`).toBeLessThan(1e-12);
    expect(Math.abs(dot(3, 1) - dot(3, 2)), `seed=${seed}`).toBeGreaterThan(1e-6);
  });

  it('rejects an odd or oversized rotaryNdims', () => {
    expect(() => splitHeadsRotaryF64(new Float64Array(12), 1, 1, 4, 3, 10000)).toThrow(/rotaryNdims/);
    expect(() => splitHeadsRotaryF64(new Float64Array(12), 1, 1, 4, 6, 10000)).toThrow(/rotaryNdims/);
  });
});

describe('attention', () => {
  it('scores are q.k / sqrt(hd) on and below the diagonal, -Infinity above', () => {
    // H=1, T=3, hd=4: q_i = k_i = (i+1) * [1, 1, 1, 1] -> q_i.k_j = 4 (i+1)(j+1), / 2.
    const qk = [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3];
    const s = attentionScoresF64(qk, qk, 1, 3, 4);
    const inf = Number.NEGATIVE_INFINITY;
    expect(Array.from(s)).toEqual([2, inf, inf, 4, 8, inf, 6, 12, 18]);
  });

  it('softmax: known values, rows sum to 1, exact zeros above the diagonal, max-subtracted', () => {
    const inf = Number.NEGATIVE_INFINITY;
    // H=2, T=2. Head 0 row 1: [0, ln 3] -> [1/4, 3/4]. Head 1: huge scores (no overflow).
    const s = [5, inf, 0, Math.log(3), 1000, inf, 1000, 1000];
    const p = softmaxCausalF64(s, 2, 2);
    expectClose(p, [1, 0, 0.25, 0.75, 1, 0, 0.5, 0.5], 1e-15);
    const seed = 5;
    const H = 3;
    const T = 7;
    const rng = mulberry32(seed);
    const q = randn(rng, H * T * 4, 3);
    const k = randn(rng, H * T * 4, 3);
    const probs = softmaxCausalF64(attentionScoresF64(q, k, H, T, 4), H, T);
    for (let r = 0; r < H * T; r++) {
      const i = r % T;
      let sum = 0;
      for (let j = 0; j < T; j++) {
        const v = probs[r * T + j];
        if (j > i) expect(v, `seed=${seed} row ${r} col ${j}`).toBe(0);
        else expect(v, `seed=${seed}`).toBeGreaterThan(0);
        sum += v;
      }
      expect(Math.abs(sum - 1), `seed=${seed} row ${r}`).toBeLessThan(1e-15);
    }
  });

  it('values merge heads back to [T, H*hd] with column h*hd + e', () => {
    // H=2, T=2, hd=2. probs per head: row 0 = [1, 0], row 1 = [0.5, 0.5].
    const probs = [1, 0, 0.5, 0.5, 1, 0, 0.5, 0.5];
    // v[h, t, e]: head 0 rows [1, 2], [3, 4]; head 1 rows [10, 20], [30, 40].
    const v = [1, 2, 3, 4, 10, 20, 30, 40];
    const ctx = attentionValuesF64(probs, v, 2, 2, 2);
    expect(Array.from(ctx)).toEqual([1, 2, 10, 20, 2, 3, 20, 30]);
  });
});

describe('erf / erfc / gelu', () => {
  const erfTable: [number, number][] = [
    [0.1, 0.1124629160182849],
    [0.5, 0.5204998778130465],
    [0.9, 0.7969082124228321],
    [1, 0.8427007929497149],
    [1.1, 0.8802050695740817],
    [2, 0.9953222650189527],
    [3, 0.9999779095030014],
    [4, 0.9999999845827421],
    [1e-8, 1.1283791670955126e-8],
  ];

  it('matches high-precision erf values to 1e-14 relative, and is odd', () => {
    for (const [x, want] of erfTable) {
      expect(Math.abs(erf(x) - want) / want, `erf(${x}) = ${erf(x)}`).toBeLessThan(1e-14);
      expect(erf(-x), `erf(-${x})`).toBe(-erf(x));
    }
    expect(erf(0)).toBe(0);
    expect(erf(30)).toBe(1);
    expect(erf(Number.NEGATIVE_INFINITY)).toBe(-1);
    expect(Number.isNaN(erf(Number.NaN))).toBe(true);
  });

  it('erfc keeps relative precision in the tail', () => {
    const table: [number, number][] = [
      [0.5, 0.4795001221869535],
      [5, 1.5374597944280349e-12],
      [10, 2.088487583762545e-45],
      [-2, 1.9953222650189526],
    ];
    for (const [x, want] of table) {
      expect(Math.abs(erfc(x) - want) / want, `erfc(${x}) = ${erfc(x)}`).toBeLessThan(1e-14);
    }
  });

  it('erf + erfc = 1 and erf is monotone on a grid', () => {
    let prev = -1;
    for (let i = -600; i <= 600; i++) {
      const x = i / 100;
      expect(Math.abs(erf(x) + erfc(x) - 1), `x=${x}`).toBeLessThan(4.5e-16);
      expect(erf(x), `x=${x}`).toBeGreaterThanOrEqual(prev);
      prev = erf(x);
    }
  });

  it('gelu is the exact erf form (not the tanh one), including the left tail', () => {
    const table: [number, number][] = [
      [1, 0.8413447460685429],
      [-1, -0.15865525393145705],
      [3, 2.99595030590511],
      [0.5, 0.34573123063700656],
      [-10, -7.619853024160526e-23],
    ];
    for (const [x, want] of table) {
      expect(Math.abs(gelu(x) - want) / Math.abs(want), `gelu(${x}) = ${gelu(x)}`).toBeLessThan(1e-14);
    }
    const tanhGelu = (x: number) =>
      0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
    expect(Math.abs(gelu(1) - tanhGelu(1))).toBeGreaterThan(1e-5);
    expect(Array.from(geluF64([0, 1, -1]))).toEqual([0, gelu(1), gelu(-1)]);
  });
});

describe('residual', () => {
  it('addF64 adds elementwise', () => {
    expect(Array.from(addF64([1, 2], [10, 20]))).toEqual([11, 22]);
    expect(() => addF64([1], [1, 2])).toThrow(/differ/);
  });

  it('add3F64 sums in HF order (mlp + attn) + x, which is observable in rounding', () => {
    const tiny = 2 ** -53;
    // (tiny + tiny) + 1 = 1 + 2^-52 exactly; tiny + (tiny + 1) rounds to 1.
    expect(add3F64([1], [tiny], [tiny])[0]).toBe(1 + 2 ** -52);
    expect(Array.from(add3F64([1, 2], [10, 20], [100, 200]))).toEqual([111, 222]);
  });
});

// ---- whole-model properties on a seeded random tiny model ----

function tensor(shape: number[], data: Float32Array): Tensor {
  return { shape, data };
}

function tinyConfig(over: Partial<NeoXConfig> = {}): NeoXConfig {
  return {
    vocabSize: 17,
    hiddenSize: 12,
    numLayers: 2,
    numHeads: 3,
    headDim: 4,
    intermediateSize: 20,
    rotaryNdims: 2,
    rotaryBase: 10000,
    layerNormEps: 1e-5,
    useParallelResidual: true,
    maxPositionEmbeddings: 64,
    attentionBias: true,
    tieWordEmbeddings: false,
    ...over,
  };
}

function tinyWeights(cfg: NeoXConfig, seed: number): ModelWeights {
  const rng = mulberry32(seed);
  const d = cfg.hiddenSize;
  const ff = cfg.intermediateSize;
  const V = cfg.vocabSize;
  const lin = (out: number, inp: number, std: number) => ({
    weight: tensor([out, inp], randn(rng, out * inp, std)),
    bias: cfg.attentionBias ? tensor([out], randn(rng, out, 0.1)) : null,
  });
  const norm = () => {
    const w = randn(rng, d, 0.1);
    for (let i = 0; i < d; i++) w[i] += 1;
    return { weight: tensor([d], w), bias: tensor([d], randn(rng, d, 0.1)) };
  };
  const layers: LayerWeights[] = [];
  for (let i = 0; i < cfg.numLayers; i++) {
    layers.push({
      inputLayernorm: norm(),
      postAttentionLayernorm: norm(),
      qkv: lin(3 * d, d, 0.5),
      dense: lin(d, d, 0.3),
      fc1: { ...lin(ff, d, 0.5), bias: tensor([ff], randn(rng, ff, 0.1)) },
      fc2: { ...lin(d, ff, 0.3), bias: tensor([d], randn(rng, d, 0.1)) },
    });
  }
  return {
    embedIn: tensor([V, d], randn(rng, V * d, 1)),
    layers,
    finalLayerNorm: norm(),
    lmHead: tensor([V, d], randn(rng, V * d, 0.5)),
  };
}

function rows(a: Float64Array, from: number, to: number, width: number): Float64Array {
  return a.subarray(from * width, to * width);
}

describe('oracleForward (seeded random tiny model)', () => {
  const seed = 1234;
  const cfg = tinyConfig();
  const w = tinyWeights(cfg, seed);
  const tokens = [3, 16, 0, 7, 7];

  it('returns the dump shapes', () => {
    const dump = oracleForward(cfg, w, tokens);
    expect([dump.T, dump.d, dump.V]).toEqual([5, 12, 17]);
    expect(dump.embeddings.length).toBe(5 * 12);
    expect(dump.layers.map((l) => l.length)).toEqual([60, 60]);
    expect(dump.finalNorm.length).toBe(60);
    expect(dump.logits.length).toBe(5 * 17);
    expect(dump.logits.every(Number.isFinite), `seed=${seed}`).toBe(true);
  });

  it('is causal: T=1 equals row 0 of T=5, and changing token 4 leaves rows 0..3 unchanged', () => {
    const full = oracleForward(cfg, w, tokens);
    const one = oracleForward(cfg, w, tokens.slice(0, 1));
    expectClose(one.logits, rows(full.logits, 0, 1, 17), 1e-12, `seed=${seed} logits`);
    for (let l = 0; l < cfg.numLayers; l++) expectClose(one.layers[l], rows(full.layers[l], 0, 1, 12), 1e-12);
    const changed = oracleForward(cfg, w, [3, 16, 0, 7, 11]);
    expectClose(rows(changed.logits, 0, 4, 17), rows(full.logits, 0, 4, 17), 1e-12, `seed=${seed}`);
    for (let l = 0; l < cfg.numLayers; l++) {
      expectClose(rows(changed.layers[l], 0, 4, 12), rows(full.layers[l], 0, 4, 12), 1e-12, `seed=${seed}`);
    }
    expect(
      maxAbsDiff(rows(changed.logits, 4, 5, 17), rows(full.logits, 4, 5, 17)),
      `seed=${seed}`,
    ).toBeGreaterThan(1e-6);
  });

  it('later positions see earlier tokens (attention mixes positions)', () => {
    const a = oracleForward(cfg, w, [3, 16, 0, 7, 7]);
    const b = oracleForward(cfg, w, [5, 16, 0, 7, 7]);
    expect(maxAbsDiff(rows(a.logits, 4, 5, 17), rows(b.logits, 4, 5, 17)), `seed=${seed}`).toBeGreaterThan(
      1e-6,
    );
  });

  it('parallel and sequential residual differ; the sequential one matches its definition', () => {
    const par = oracleForward(cfg, w, tokens);
    const seqCfg = tinyConfig({ useParallelResidual: false });
    const taps = new Map<string, Float64Array>();
    const seq = oracleForward(seqCfg, w, tokens, taps);
    expect(maxAbsDiff(par.layers[0], seq.layers[0]), `seed=${seed}`).toBeGreaterThan(1e-6);
    expect(maxAbsDiff(par.logits, seq.logits), `seed=${seed}`).toBeGreaterThan(1e-6);
    // sequential: resid_mid = attn_out + x, ln2 = LN(resid_mid), out = mlp_out + resid_mid
    const x0 = taps.get('embed')!;
    const l0 = w.layers[0];
    expectClose(taps.get('layers.0.resid_mid')!, addF64(taps.get('layers.0.attn_out')!, x0), 0);
    const ln2 = layerNormF64(
      taps.get('layers.0.resid_mid')!,
      5,
      12,
      l0.postAttentionLayernorm.weight.data,
      l0.postAttentionLayernorm.bias.data,
      cfg.layerNormEps,
    );
    expectClose(taps.get('layers.0.ln2')!, ln2, 0);
    expectClose(
      taps.get('layers.0.out')!,
      addF64(taps.get('layers.0.mlp_out')!, taps.get('layers.0.resid_mid')!),
      0,
    );
  });

  it('parallel residual: ln2 reads x, out = (mlp_out + attn_out) + x', () => {
    const taps = new Map<string, Float64Array>();
    oracleForward(cfg, w, tokens, taps);
    const x1 = taps.get('layers.0.out')!;
    const l1 = w.layers[1];
    const ln2 = layerNormF64(
      x1,
      5,
      12,
      l1.postAttentionLayernorm.weight.data,
      l1.postAttentionLayernorm.bias.data,
      cfg.layerNormEps,
    );
    expectClose(taps.get('layers.1.ln2')!, ln2, 0);
    expectClose(
      taps.get('layers.1.out')!,
      add3F64(x1, taps.get('layers.1.attn_out')!, taps.get('layers.1.mlp_out')!),
      0,
    );
    expect(taps.has('layers.1.resid_mid')).toBe(false);
  });

  it('taps: exact names and shapes, and they agree with the dump', () => {
    const taps = new Map<string, Float64Array>();
    const dump = oracleForward(cfg, w, tokens, taps);
    const T = 5;
    const d = 12;
    const H = 3;
    const hd = 4;
    const ff = 20;
    const want: [string, number][] = [['embed', T * d]];
    for (let i = 0; i < 2; i++) {
      const p = `layers.${i}.`;
      want.push(
        [p + 'ln1', T * d],
        [p + 'qkv', T * 3 * d],
        [p + 'q', H * T * hd],
        [p + 'k', H * T * hd],
        [p + 'v', H * T * hd],
        [p + 'scores', H * T * T],
        [p + 'probs', H * T * T],
        [p + 'ctx', T * d],
        [p + 'attn_out', T * d],
        [p + 'ln2', T * d],
        [p + 'fc1', T * ff],
        [p + 'gelu', T * ff],
        [p + 'mlp_out', T * d],
        [p + 'out', T * d],
      );
    }
    want.push(['final_norm', T * d], ['logits', T * 17]);
    expect([...taps.keys()].sort()).toEqual(want.map(([n]) => n).sort());
    for (const [name, len] of want) expect(taps.get(name)!.length, name).toBe(len);
    expectClose(taps.get('embed')!, dump.embeddings, 0);
    expectClose(taps.get('layers.0.out')!, dump.layers[0], 0);
    expectClose(taps.get('layers.1.out')!, dump.layers[1], 0);
    expectClose(taps.get('final_norm')!, dump.finalNorm, 0);
    expectClose(taps.get('logits')!, dump.logits, 0);
    // scores tap: finite, 0 above the diagonal; probs rows sum to 1
    const scores = taps.get('layers.1.scores')!;
    const probs = taps.get('layers.1.probs')!;
    expect(scores.every(Number.isFinite)).toBe(true);
    for (let r = 0; r < H * T; r++) {
      const i = r % T;
      let sum = 0;
      for (let j = 0; j < T; j++) {
        if (j > i) expect(scores[r * T + j]).toBe(0);
        sum += probs[r * T + j];
      }
      expect(Math.abs(sum - 1), `seed=${seed} row ${r}`).toBeLessThan(1e-14);
    }
    // the taps chain: gelu = geluF64(fc1), ln1 of layer 1 reads layer 0's out
    expectClose(taps.get('layers.0.gelu')!, geluF64(taps.get('layers.0.fc1')!), 0);
    const l1 = w.layers[1].inputLayernorm;
    expectClose(
      taps.get('layers.1.ln1')!,
      layerNormF64(dump.layers[0], T, d, l1.weight.data, l1.bias.data, cfg.layerNormEps),
      0,
    );
  });

  it('identical tokens give layer-0 scores that depend only on i - j (rotary is relative)', () => {
    const taps = new Map<string, Float64Array>();
    const T = 5;
    oracleForward(cfg, w, [9, 9, 9, 9, 9], taps);
    const s = taps.get('layers.0.scores')!;
    for (let h = 0; h < 3; h++) {
      for (let i = 0; i + 1 < T; i++) {
        for (let j = 0; j <= i; j++) {
          const a = s[(h * T + i) * T + j];
          const b = s[(h * T + i + 1) * T + j + 1];
          expect(Math.abs(a - b), `seed=${seed} h=${h} i=${i} j=${j}`).toBeLessThan(1e-12);
        }
      }
    }
    // and rotary does something: without it, all scores of a row are equal
    const noRot = new Map<string, Float64Array>();
    oracleForward(tinyConfig({ rotaryNdims: 0 }), w, [9, 9, 9, 9, 9], noRot);
    const s0 = noRot.get('layers.0.scores')!;
    expect(Math.abs(s0[4 * T + 0] - s0[4 * T + 3])).toBeLessThan(1e-12);
    expect(Math.abs(s[4 * T + 0] - s[4 * T + 3]), `seed=${seed}`).toBeGreaterThan(1e-9);
  });

  it('works without biases (attentionBias false) and with no layers', () => {
    const nb = tinyConfig({ attentionBias: false });
    const wn = tinyWeights(nb, seed);
    expect(wn.layers[0].qkv.bias).toBeNull();
    const dump = oracleForward(nb, wn, tokens);
    expect(dump.logits.every(Number.isFinite), `seed=${seed}`).toBe(true);
    // L = 0: logits = LN_final(embed) @ lmHead^T
    const c0 = tinyConfig({ numLayers: 0 });
    const w0 = { ...w, layers: [] };
    const d0 = oracleForward(c0, w0, [2, 5]);
    const fn = layerNormF64(
      embeddingF64(w.embedIn.data, 12, [2, 5]),
      2,
      12,
      w.finalLayerNorm.weight.data,
      w.finalLayerNorm.bias.data,
      1e-5,
    );
    expectClose(d0.finalNorm, fn, 0);
    expectClose(d0.logits, linearF64(fn, 2, 12, w.lmHead.data, null, 17), 0);
    expect(d0.layers).toEqual([]);
  });

  it('rejects inconsistent inputs', () => {
    expect(() => oracleForward(cfg, w, [])).toThrow(/empty/);
    expect(() => oracleForward(tinyConfig({ numLayers: 3 }), w, [1])).toThrow(/layer weights/);
    expect(() => oracleForward(tinyConfig({ headDim: 5 }), w, [1])).toThrow(/headDim/);
    expect(() => oracleForward(cfg, w, [17])).toThrow(/outside/);
  });
});

describe('oracleGreedy', () => {
  const seed = 99;
  const cfg = tinyConfig();
  const w = tinyWeights(cfg, seed);

  it('argmaxRow takes the lowest index on ties', () => {
    expect(argmaxRow([0, 3, 3, 1, 5, 5, 5, 2], 0, 4)).toBe(1);
    expect(argmaxRow([0, 3, 3, 1, 5, 5, 5, 2], 1, 4)).toBe(0);
  });

  it('appends argmax ids step by step, equal to a manual loop', () => {
    const prompt = [1, 2, 3];
    const got = oracleGreedy(cfg, w, prompt, 4);
    expect(got.length).toBe(4);
    const ids = prompt.slice();
    for (let s = 0; s < 4; s++) {
      const dump = oracleForward(cfg, w, ids);
      const row = Array.from(rows(dump.logits, dump.T - 1, dump.T, 17));
      ids.push(row.indexOf(Math.max(...row)));
    }
    expect(got, `seed=${seed}`).toEqual(ids.slice(3));
    expect(oracleGreedy(cfg, w, prompt, 0)).toEqual([]);
    expect(prompt).toEqual([1, 2, 3]);
  });
});
