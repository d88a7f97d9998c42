// The Llama family's single-op fp64 oracles (RMSNorm, SiLU / SwiGLU, RoPE scaling and the per-head rotary, GQA and
// the sliding window) against hand-computable cases and against a second, naive formulation of each, over 50 seeds
// (a failure names its seed). Both formulations are fp64; where they differ in the order of operations the bound is
// a few ulps of fp64 relative to the terms' magnitude (1e-13 with margin), else they must agree bit for bit.
import { describe, expect, it } from 'vitest';
import { mulberry32, randn } from '../../numeric/random';
import { rmsNormF64 } from '../ops/rmsnorm';
import { silu, siluF64, swigluF64 } from '../ops/swiglu';
import {
  attentionScoresF64,
  attentionValuesF64,
  firstKey,
  kvHeadMap,
  lastKey,
  softmaxCausalF64,
} from './attention';
import { layerNormF64 } from './layernorm';
import { ropeHeadsF64, splitHeadsRotaryF64 } from './rotary';
import { type RopeScaling, rotaryAngleTable, rotaryInvFreq } from './rotary-angles';

const SEEDS = Array.from({ length: 50 }, (_, i) => 1000 + 7 * i);

function maxRelDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const diff = Math.abs(a[i] - b[i]);
    if (!(diff <= Number.MAX_VALUE)) return Number.POSITIVE_INFINITY; // NaN or Inf is never agreement
    m = Math.max(m, diff / Math.max(1, Math.abs(b[i])));
  }
  return m;
}

function randInt(rng: () => number, lo: number, hi: number): number {
  return lo + Math.floor(rng() * (hi - lo + 1));
}

describe('rmsNormF64', () => {
  it('a hand case: [3, 4] with w = [1, 2], eps 0 → [3, 8] / sqrt(12.5); eps inside the root', () => {
    const y = rmsNormF64([3, 4], 1, 2, [1, 2], 0);
    expect(y[0]).toBeCloseTo(3 / Math.sqrt(12.5), 15);
    expect(y[1]).toBeCloseTo(8 / Math.sqrt(12.5), 15);
    const z = rmsNormF64([0, 0, 0, 0], 1, 4, [1, 1, 1, 1], 0.25);
    expect(Array.from(z)).toEqual([0, 0, 0, 0]);
    const e = rmsNormF64([1, 1], 1, 2, [1, 1], 3); // 1 / sqrt(1 + 3) = 0.5
    expect(Array.from(e)).toEqual([0.5, 0.5]);
    const eo = rmsNormF64([1, 1], 1, 2, [1, 1], 3, { epsOutside: true }); // 1 / (1 + 3)
    expect(Array.from(eo)).toEqual([0.25, 0.25]);
  });

  it('random rows match y = x · w · (mean(x²) + eps)^(-1/2) computed by a second loop order (50 seeds)', () => {
    for (const seed of SEEDS) {
      const rng = mulberry32(seed);
      const rows = randInt(rng, 1, 9);
      const d = randInt(rng, 1, 70);
      const x = randn(rng, rows * d, 3);
      const w = randn(rng, d, 1);
      const eps = 10 ** -randInt(rng, 1, 6);
      const got = rmsNormF64(x, rows, d, w, eps);
      // naive: column-major sums of squares, then pow(-1/2)
      const ms = new Float64Array(rows);
      for (let e = 0; e < d; e++) for (let r = 0; r < rows; r++) ms[r] += (x[r * d + e] * x[r * d + e]) / d;
      const want = Array.from(x, (xv, i) => xv * w[i % d] * (ms[Math.floor(i / d)] + eps) ** -0.5);
      expect(maxRelDiff(got, want), `seed=${seed} rows=${rows} d=${d}`).toBeLessThan(1e-13);
      // eps = 0: invariant to a positive scale of the row
      const a = rmsNormF64(x, rows, d, w, 0);
      const b = rmsNormF64(
        Array.from(x, (v) => v * 4),
        rows,
        d,
        w,
        0,
      );
      expect(maxRelDiff(a, b), `seed=${seed}`).toBe(0); // × 4 is exact and the ratio comes out the same
    }
  });

  it('the centered variant is a LayerNorm without bias; noWeight leaves the weight out (50 seeds)', () => {
    for (const seed of SEEDS) {
      const rng = mulberry32(seed);
      const rows = randInt(rng, 1, 5);
      const d = randInt(rng, 2, 40);
      const x = randn(rng, rows * d, 2);
      const w = randn(rng, d, 1);
      const zero = new Float64Array(d);
      const ln = layerNormF64(x, rows, d, w, zero, 1e-5);
      expect(
        maxRelDiff(rmsNormF64(x, rows, d, w, 1e-5, { centered: true }), ln),
        `seed=${seed}`,
      ).toBeLessThan(1e-13);
      const ones = new Float64Array(d).fill(1);
      expect(Array.from(rmsNormF64(x, rows, d, w, 1e-5, { noWeight: true })), `seed=${seed}`).toEqual(
        Array.from(rmsNormF64(x, rows, d, ones, 1e-5)),
      );
    }
  });

  it('per head (Qwen3 q/k norm): rows = T·heads, d = head_dim, each head normalised alone', () => {
    const rng = mulberry32(5);
    const T = 3;
    const heads = 4;
    const hd = 6;
    const x = randn(rng, T * heads * hd, 2);
    const w = randn(rng, hd);
    const all = rmsNormF64(x, T * heads, hd, w, 1e-6);
    for (let r = 0; r < T * heads; r++) {
      const one = rmsNormF64(x.subarray(r * hd, (r + 1) * hd), 1, hd, w, 1e-6);
      expect(Array.from(all.subarray(r * hd, (r + 1) * hd))).toEqual(Array.from(one));
    }
  });

  it('says what is short', () => {
    expect(() => rmsNormF64([1, 2, 3], 2, 2, [1, 1], 0)).toThrow(/x has 3 values/);
    expect(() => rmsNormF64([1, 2], 1, 2, [1], 0)).toThrow(/weight has 1/);
  });
});

describe('siluF64 / swigluF64', () => {
  it('hand values: silu(0) = 0, silu(1) = 1 / (1 + 1/e), the tails go to x and to -0', () => {
    expect(silu(0)).toBe(0);
    expect(silu(1)).toBeCloseTo(1 / (1 + Math.exp(-1)), 16);
    expect(silu(50)).toBe(50 / (1 + Math.exp(-50)));
    expect(Math.abs(silu(50) - 50)).toBeLessThan(1e-18 * 50 + 1e-15);
    expect(Object.is(silu(-800), -0)).toBe(true);
  });

  it('matches x (1 + tanh(x/2)) / 2 and the identity silu(x) - silu(-x) = x (50 seeds)', () => {
    for (const seed of SEEDS) {
      const rng = mulberry32(seed);
      const n = randInt(rng, 1, 300);
      const x = randn(rng, n, 6);
      const got = siluF64(x);
      const want = Array.from(x, (v) => (v * (1 + Math.tanh(v / 2))) / 2);
      expect(maxRelDiff(got, want), `seed=${seed}`).toBeLessThan(1e-13);
      const odd = Array.from(x, (v) => silu(v) - silu(-v));
      expect(maxRelDiff(odd, x), `seed=${seed}`).toBeLessThan(1e-13);
      const up = randn(rng, n, 2);
      const sw = swigluF64(x, up);
      for (let i = 0; i < n; i++) expect(sw[i], `seed=${seed} i=${i}`).toBe(got[i] * up[i]);
    }
  });

  it("takes its causes' variants: gate and up swapped, GELU (erf or tanh) or ReLU on the gate (50 seeds)", () => {
    for (const seed of SEEDS) {
      const rng = mulberry32(seed);
      const n = randInt(rng, 1, 300);
      const [g, u] = [randn(rng, n, 4), randn(rng, n, 2)];
      const swapped = swigluF64(g, u, { swap: true });
      const gelu = swigluF64(g, u, { act: 'gelu' });
      const tanh = swigluF64(g, u, { act: 'gelu-tanh' });
      const relu = swigluF64(g, u, { act: 'relu' });
      const both = swigluF64(g, u, { swap: true, act: 'relu' });
      for (let i = 0; i < n; i++) {
        const at = `seed=${seed} i=${i}`;
        expect(swapped[i], at).toBe(silu(u[i]) * g[i]);
        // GELU's erf form against its tanh form (within 1e-3 of x), and the tanh form written out
        expect(Math.abs(gelu[i] - tanh[i]), at).toBeLessThan(1e-3 * Math.abs(u[i]) + 1e-300);
        const c = Math.sqrt(2 / Math.PI);
        const x = g[i];
        expect(tanh[i], at).toBe(0.5 * x * (1 + Math.tanh(c * (x + 0.044715 * x * x * x))) * u[i]);
        expect(relu[i], at).toBe(Math.max(0, x) * u[i]);
        expect(both[i], at).toBe(Math.max(0, u[i]) * x);
      }
    }
  });

  it('gate and up of different lengths are refused', () => {
    expect(() => swigluF64([1, 2], [1])).toThrow(/gate has 2 values and up 1/);
  });
});

/** HF `_compute_llama3_parameters` written out as HF writes it, on whole arrays (torch.where as a map), in fp64. */
function llama3Naive(inv: Float64Array, s: Extract<RopeScaling, { type: 'llama3' }>): number[] {
  const lowWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
  const highWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
  const wavelen = Array.from(inv, (v) => (2 * Math.PI) / v);
  const invLlama = wavelen.map((w, i) => (w > lowWavelen ? inv[i] / s.factor : inv[i]));
  const smooth = wavelen.map(
    (w) => (s.originalMaxPositionEmbeddings / w - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor),
  );
  const smoothed = invLlama.map((v, i) => ((1 - smooth[i]) * v) / s.factor + smooth[i] * v);
  const medium = wavelen.map((w) => !(w < highWavelen) && !(w > lowWavelen));
  return invLlama.map((v, i) => (medium[i] ? smoothed[i] : v));
}

describe('rotaryInvFreq with rope_scaling', () => {
  const llama31: RopeScaling = {
    type: 'llama3',
    factor: 8,
    lowFreqFactor: 1,
    highFreqFactor: 4,
    originalMaxPositionEmbeddings: 8192,
  };

  it("no scaling keeps the GPT-NeoX table bit for bit (null, undefined, 'default', both angle modes)", () => {
    for (const r of [0, 2, 16, 24, 64, 128]) {
      for (const angles of ['exact', 'hf-fp32'] as const) {
        const plain = rotaryInvFreq(r, 10000, angles);
        expect(Array.from(rotaryInvFreq(r, 10000, angles, null))).toEqual(Array.from(plain));
        expect(Array.from(rotaryInvFreq(r, 10000, angles, { type: 'default' }))).toEqual(Array.from(plain));
        for (let i = 0; i < r / 2; i++) {
          const f = Math.fround;
          const want = angles === 'exact' ? 1 / 10000 ** ((2 * i) / r) : f(1 / f(f(10000) ** f((2 * i) / r)));
          expect(plain[i]).toBe(want);
        }
      }
    }
  });

  it('linear divides every frequency by the factor', () => {
    const plain = rotaryInvFreq(64, 1e6);
    const lin = rotaryInvFreq(64, 1e6, 'exact', { type: 'linear', factor: 4 });
    for (let i = 0; i < 32; i++) expect(lin[i]).toBe(plain[i] / 4);
    const linHf = rotaryInvFreq(64, 1e6, 'hf-fp32', { type: 'linear', factor: 3 });
    const plainHf = rotaryInvFreq(64, 1e6, 'hf-fp32');
    for (let i = 0; i < 32; i++) expect(linHf[i]).toBe(Math.fround(plainHf[i] / 3));
  });

  it("llama3 at Llama 3.1's parameters: high frequencies kept, low ones / 8, the band between interpolated", () => {
    const plain = rotaryInvFreq(128, 500000);
    const got = rotaryInvFreq(128, 500000, 'exact', llama31);
    let kept = 0;
    let divided = 0;
    let between = 0;
    for (let i = 0; i < 64; i++) {
      const wavelen = (2 * Math.PI) / plain[i];
      if (wavelen < 8192 / 4) {
        expect(got[i], `i=${i}`).toBe(plain[i]);
        kept++;
      } else if (wavelen > 8192) {
        expect(got[i], `i=${i}`).toBe(plain[i] / 8);
        divided++;
      } else {
        expect(got[i], `i=${i}`).toBeLessThan(plain[i]);
        expect(got[i], `i=${i}`).toBeGreaterThan(plain[i] / 8);
        between++;
      }
    }
    expect([kept > 0, divided > 0, between > 0]).toEqual([true, true, true]);
  });

  it('llama3 matches a direct transcription of HF on random parameters; hf-fp32 within fp32 rounding (50 seeds)', () => {
    for (const seed of SEEDS) {
      const rng = mulberry32(seed);
      const r = 2 * randInt(rng, 1, 80);
      const base = 10 ** (3 + 4 * rng());
      const low = 0.5 + rng();
      const s: RopeScaling = {
        type: 'llama3',
        factor: 1 + 31 * rng(),
        lowFreqFactor: low,
        highFreqFactor: low + 0.5 + 4 * rng(),
        originalMaxPositionEmbeddings: randInt(rng, 16, 16384),
      };
      const got = rotaryInvFreq(r, base, 'exact', s);
      const want = llama3Naive(rotaryInvFreq(r, base), s);
      expect(maxRelDiff(got, want), `seed=${seed}`).toBe(0); // the same operations in the same order
      // hf-fp32: the scaling's own fp32 steps, from HF's fp32 unscaled table. Each step rounds by 2^-24 relative;
      // the smooth factor s = (orig / wavelen - low) / (high - low) can lose to cancellation an absolute
      // ~4 · 2^-24 · high / (high - low), which the interpolation (1 + s (factor - 1)) / factor carries into the
      // result times up to (factor - 1): bound (8 + 4 · factor · high / (high - low)) · 2^-24, skipped where fp32
      // rounding moves a wavelength across a band edge (a jump HF's model has too).
      const hfPlain = rotaryInvFreq(r, base, 'hf-fp32');
      const hf = rotaryInvFreq(r, base, 'hf-fp32', s);
      const exactOfHf = llama3Naive(hfPlain, s);
      const bound = (8 + (4 * s.factor * s.highFreqFactor) / (s.highFreqFactor - s.lowFreqFactor)) * 2 ** -24;
      const edges = [
        s.originalMaxPositionEmbeddings / s.lowFreqFactor,
        s.originalMaxPositionEmbeddings / s.highFreqFactor,
      ];
      for (let i = 0; i < r / 2; i++) {
        const wavelen = (2 * Math.PI) / hfPlain[i];
        if (edges.some((edge) => Math.abs(wavelen - edge) / edge < 1e-5)) continue;
        expect(Math.abs(hf[i] - exactOfHf[i]) / exactOfHf[i], `seed=${seed} i=${i}`).toBeLessThan(bound);
      }
    }
  });

  it('refuses parameters it cannot use, naming them', () => {
    expect(() => rotaryInvFreq(8, 1e4, 'exact', { type: 'linear', factor: 0 })).toThrow(/factor 0/);
    expect(() =>
      rotaryInvFreq(8, 1e4, 'exact', { ...llama31, lowFreqFactor: 4, highFreqFactor: 1 } as RopeScaling),
    ).toThrow(/low_freq_factor/);
  });

  it('rotaryAngleTable takes the scaling: angle = t · scaled inv_freq', () => {
    const inv = rotaryInvFreq(16, 1e4, 'exact', llama31);
    const table = rotaryAngleTable(5, 16, 1e4, 'exact', undefined, llama31);
    for (let t = 0; t < 5; t++) for (let i = 0; i < 8; i++) expect(table[t * 8 + i]).toBe(t * inv[i]);
  });
});

describe('ropeHeadsF64', () => {
  it('equals the GPT-NeoX split + rotary on the same q and k, bit for bit, at rotary_pct < 1 and 1 (50 seeds)', () => {
    for (const seed of SEEDS) {
      const rng = mulberry32(seed);
      const T = randInt(rng, 1, 9);
      const H = randInt(rng, 1, 4);
      const hd = 2 * randInt(rng, 1, 12);
      const r = 2 * randInt(rng, 0, hd / 2);
      const angles = rng() < 0.5 ? 'exact' : 'hf-fp32';
      const gptj = rng() < 0.3;
      const qkv = randn(rng, T * H * 3 * hd, 1); // [T, H, 3, hd]
      const neox = splitHeadsRotaryF64(qkv, T, H, hd, r, 10000, angles, { gptj });
      const qIn = new Float64Array(T * H * hd); // [T, H, hd]
      const kIn = new Float64Array(T * H * hd);
      for (let t = 0; t < T; t++)
        for (let h = 0; h < H; h++)
          for (let e = 0; e < hd; e++) {
            qIn[(t * H + h) * hd + e] = qkv[((t * H + h) * 3 + 0) * hd + e];
            kIn[(t * H + h) * hd + e] = qkv[((t * H + h) * 3 + 1) * hd + e];
          }
      const inv = rotaryInvFreq(r, 10000, angles);
      const tag = `seed=${seed} T=${T} H=${H} hd=${hd} r=${r} ${angles} gptj=${gptj}`;
      expect(Array.from(ropeHeadsF64(qIn, T, H, hd, inv, angles, { gptj })), tag).toEqual(Array.from(neox.q));
      expect(Array.from(ropeHeadsF64(kIn, T, H, hd, inv, angles, { gptj })), tag).toEqual(Array.from(neox.k));
    }
  });

  it('keeps each vector norm (a rotation) and position 0 unchanged', () => {
    const rng = mulberry32(9);
    const T = 7;
    const heads = 3;
    const hd = 10;
    const x = randn(rng, T * heads * hd);
    const y = ropeHeadsF64(
      x,
      T,
      heads,
      hd,
      rotaryInvFreq(hd, 500000, 'exact', { type: 'linear', factor: 2 }),
    );
    for (let t = 0; t < T; t++)
      for (let h = 0; h < heads; h++) {
        let nx = 0;
        let ny = 0;
        for (let e = 0; e < hd; e++) {
          nx += x[(t * heads + h) * hd + e] ** 2;
          ny += y[(h * T + t) * hd + e] ** 2;
          if (t === 0) expect(y[h * T * hd + e]).toBe(x[h * hd + e]);
        }
        expect(Math.abs(nx - ny) / nx).toBeLessThan(1e-14);
      }
  });

  it('refuses a table wider than the head', () => {
    expect(() => ropeHeadsF64(new Float64Array(8), 1, 1, 8, new Float64Array(5))).toThrow(/10 rotary dims/);
  });
});

/** Naive attention: repeat_kv copies each KV head to its g query heads, an explicit boolean mask, softmax via exp
 * with -Infinity → 0, the value product over all keys. */
function naiveAttention(
  q: Float32Array,
  k: Float32Array,
  v: Float32Array,
  H: number,
  Hkv: number,
  T: number,
  hd: number,
  window: number | null,
): number[] {
  const g = H / Hkv;
  const out = new Array<number>(T * H * hd).fill(0);
  for (let h = 0; h < H; h++) {
    const kv = Math.floor(h / g);
    for (let i = 0; i < T; i++) {
      const s: number[] = [];
      for (let j = 0; j < T; j++) {
        const visible = j <= i && (window === null || j > i - window);
        let dot = 0;
        for (let e = 0; e < hd; e++) dot += q[(h * T + i) * hd + e] * k[(kv * T + j) * hd + e];
        s.push(visible ? dot / Math.sqrt(hd) : Number.NEGATIVE_INFINITY);
      }
      const m = Math.max(...s);
      const ex = s.map((x) => Math.exp(x - m));
      const sum = ex.reduce((a, b) => a + b, 0);
      for (let e = 0; e < hd; e++) {
        let acc = 0;
        for (let j = 0; j < T; j++) acc += (ex[j] / sum) * v[(kv * T + j) * hd + e];
        out[i * H * hd + h * hd + e] = acc;
      }
    }
  }
  return out;
}

describe('attention: GQA, MQA and a sliding window', () => {
  it('kvHeadMap is repeat_kv: H = 8 over 2 KV heads → 0,0,0,0,1,1,1,1; MQA all 0; a kvMap overrides it', () => {
    expect(Array.from(kvHeadMap(8, { kvHeads: 2 }))).toEqual([0, 0, 0, 0, 1, 1, 1, 1]);
    expect(Array.from(kvHeadMap(3, { kvHeads: 1 }))).toEqual([0, 0, 0]);
    expect(Array.from(kvHeadMap(4))).toEqual([0, 1, 2, 3]);
    expect(Array.from(kvHeadMap(4, { kvHeads: 2, kvMap: [1, 1, 0, 0] }))).toEqual([1, 1, 0, 0]);
    expect(() => kvHeadMap(6, { kvHeads: 4 })).toThrow(/6 query heads cannot be grouped over 4/);
    expect(() => kvHeadMap(4, { kvHeads: 2, kvMap: [0, 1, 2, 0] })).toThrow(/maps to KV head 2/);
    expect(() => kvHeadMap(4, { window: 0 })).toThrow(/sliding window 0/);
  });

  it('window: key j visible to query i iff j <= i and i - j < window', () => {
    for (let i = 0; i < 10; i++) {
      expect(firstKey(i, { window: 3 })).toBe(Math.max(0, i - 2));
      expect(lastKey(i, 10, { window: 3 })).toBe(i);
      expect(firstKey(i, {})).toBe(0);
    }
  });

  it('window 1: every row attends to itself alone, so ctx = its own v', () => {
    const rng = mulberry32(3);
    const T = 5;
    const hd = 3;
    const q = randn(rng, T * hd);
    const k = randn(rng, T * hd);
    const v = randn(rng, T * hd);
    const s = attentionScoresF64(q, k, 1, T, hd, { window: 1 });
    const p = softmaxCausalF64(s, 1, T, { window: 1 });
    const c = attentionValuesF64(p, v, 1, T, hd, { window: 1 });
    expect(Array.from(c)).toEqual(Array.from(v));
  });

  it('matches repeat_kv + an explicit mask on random GQA / MQA / MHA shapes with and without a window (50 seeds)', () => {
    for (const seed of SEEDS) {
      const rng = mulberry32(seed);
      const Hkv = randInt(rng, 1, 3);
      const H = Hkv * randInt(rng, 1, 4);
      const T = randInt(rng, 1, 13);
      const hd = randInt(rng, 1, 9);
      const window = rng() < 0.6 ? randInt(rng, 1, T + 2) : null;
      const q = randn(rng, H * T * hd, 1.5);
      const k = randn(rng, Hkv * T * hd, 1.5);
      const v = randn(rng, Hkv * T * hd, 1);
      const opts = { kvHeads: Hkv, window };
      const s = attentionScoresF64(q, k, H, T, hd, opts);
      const p = softmaxCausalF64(s, H, T, opts);
      const got = attentionValuesF64(p, v, H, T, hd, opts);
      const want = naiveAttention(q, k, v, H, Hkv, T, hd, window);
      const tag = `seed=${seed} H=${H} Hkv=${Hkv} T=${T} hd=${hd} window=${window}`;
      expect(maxRelDiff(got, want), tag).toBeLessThan(1e-13);
      // the masked entries: -Infinity in the scores, exactly 0 in the probabilities
      for (let h = 0; h < H; h++)
        for (let i = 0; i < T; i++)
          for (let j = 0; j < T; j++) {
            const visible = j <= i && (window === null || i - j < window);
            const at = (h * T + i) * T + j;
            if (!visible) {
              expect(s[at], tag).toBe(Number.NEGATIVE_INFINITY);
              expect(p[at], tag).toBe(0);
            } else expect(Number.isFinite(s[at]), tag).toBe(true);
          }
    }
  });

  it('GQA equals MHA on the repeated keys and values, bit for bit; no options is GPT-NeoX as before', () => {
    const rng = mulberry32(77);
    const H = 6;
    const Hkv = 2;
    const T = 7;
    const hd = 5;
    const q = randn(rng, H * T * hd);
    const k = randn(rng, Hkv * T * hd);
    const v = randn(rng, Hkv * T * hd);
    const rep = (x: Float32Array) => {
      const out = new Float32Array(H * T * hd);
      for (let h = 0; h < H; h++)
        out.set(x.subarray((h / 3) | 0 ? T * hd : 0, ((h / 3) | 0 ? 2 : 1) * T * hd), h * T * hd);
      return out;
    };
    const sG = attentionScoresF64(q, k, H, T, hd, { kvHeads: Hkv });
    const sM = attentionScoresF64(q, rep(k), H, T, hd);
    expect(Array.from(sG)).toEqual(Array.from(sM));
    const p = softmaxCausalF64(sM, H, T);
    expect(Array.from(attentionValuesF64(p, v, H, T, hd, { kvHeads: Hkv }))).toEqual(
      Array.from(attentionValuesF64(p, rep(v), H, T, hd)),
    );
  });
});
