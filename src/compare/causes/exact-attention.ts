// The attention core as a variant of the exact op (exact-op.ts's descriptor for 'attention' and 'attn_block'):
// rotary, scores, softmax and values from the fp64 oracle's functions with the variant's parameters, on the heads the
// asked columns cover; the flash-style online softmax that never rescales, dealt to one or several partial states;
// and the KV cache as a decode kernel reads it (rounded, another layer's, positions dropped or moved), for the query
// rows a fault lives in (Variant.rows), the keys of the rows before as the prefill wrote them.
import {
  attentionScoresF64,
  attentionValuesF64,
  lastKey,
  softmaxCausalF64,
} from '../../kernels/cpu/attention';
import { type RotaryVariant, splitHeadsRotaryF64 } from '../../kernels/cpu/rotary';
import type { NumFormat } from '../../numeric/round';
import { roundTo } from '../../numeric/round';
import { gather } from './arrays';
import type { OpData, Variant } from './types';

/** The variant keys that change how q, k or v of a row are made (mixed row by row under `rows`). */
const PER_ROW: readonly (keyof Variant)[] = ['rotary', 'rotaryBase', 'rotaryNdims', 'rotaryOff'];

/** The attention core on the heads `cols` covers (whole heads), rotary to values. */
export function attention(
  d: OpData,
  v: Variant,
  cols: Int32Array | null,
  qkv: ArrayLike<number> = d.inputs[0],
): Float64Array {
  const { cfg } = d;
  const T = d.tokens.length;
  const H = cfg.numHeads;
  const hd = cfg.headDim;
  const split = (src: ArrayLike<number>, ndims: number, base: number, rv?: RotaryVariant) =>
    splitHeadsRotaryF64(src, T, H, hd, ndims, base, d.angles, rv);
  const ndims = v.rotaryNdims ?? cfg.rotaryNdims;
  const base = v.rotaryBase ?? cfg.rotaryBase;
  let { q, k, v: vals } = split(qkv, ndims, base, v.rotary);
  if (v.rotaryOff) {
    const plain = split(qkv, 0, base, v.rotary);
    if (v.rotaryOff === 'q') q = plain.q;
    else k = plain.k;
  }
  // Under `rows`, q, k and v of the other rows are the exact ones: the keys a decode step reads from the cache the
  // prefill wrote.
  if (v.rows && PER_ROW.some((key) => v[key] !== undefined)) {
    const ex = split(qkv, cfg.rotaryNdims, cfg.rotaryBase);
    mixRows([q, k], [ex.q, ex.k], H, T, hd, v.rows);
  }
  // The cache as a kernel reads it: another layer's, keys moved, rounded to a narrower format (every position).
  if (v.kvFrom) {
    const other = split(v.kvFrom, cfg.rotaryNdims, cfg.rotaryBase);
    k = other.k;
    vals = other.v;
  }
  if (v.keysMoved) [k, vals] = [moveKeys(k, H, T, hd, v.keysMoved), moveKeys(vals, H, T, hd, v.keysMoved)];
  if (v.kvFormat) [k, vals] = [roundAll(v.kvFormat, k), roundAll(v.kvFormat, vals)];
  // An attention kernel on half inputs: q, k (after rotary) and v rounded.
  if (v.qkvFormat)
    [q, k, vals] = [roundAll(v.qkvFormat, q), roundAll(v.qkvFormat, k), roundAll(v.qkvFormat, vals)];
  if (v.keysZeroed) [k, vals] = [zeroRows(k, H, T, hd, v.keysZeroed), zeroRows(vals, H, T, hd, v.keysZeroed)];
  const heads = cols ? [...new Set(Array.from(cols, (c) => Math.floor(c / hd)))].sort((a, b) => a - b) : null;
  const pick = (a: Float64Array) => {
    if (!heads) return a;
    const out = new Float64Array(heads.length * T * hd);
    heads.forEach((h, i) => {
      out.set(a.subarray(h * T * hd, (h + 1) * T * hd), i * T * hd);
    });
    return out;
  };
  const Hs = heads ? heads.length : H;
  const [qs, ks, vs] = [pick(q), pick(k), pick(vals)];
  let ctx: Float64Array;
  if (v.noRescale) ctx = onlineNoRescale(qs, ks, vs, Hs, T, hd, v.noRescale, v);
  else if ((v.rows || v.keysDropped) && !v.probsFormat) ctx = attendRows(qs, ks, vs, Hs, T, hd, v);
  else {
    const scores = attentionScoresF64(qs, ks, Hs, T, hd, v.scores);
    if (v.scoresFormat)
      for (let i = 0; i < scores.length; i++) scores[i] = roundTo(v.scoresFormat, scores[i]);
    const probs = softmaxCausalF64(scores, Hs, T, v.scores);
    const p = v.probsFormat
      ? roundedToFit(
          d,
          v.probsFormat,
          probs,
          { q: qs, k: ks, v: vs },
          heads ?? null,
          v.scores?.scale ?? 1 / Math.sqrt(hd),
        )
      : probs;
    ctx = attentionValuesF64(p, vs, Hs, T, hd, v.scores);
  }
  if (!heads) return gather(ctx, T, H * hd, cols);
  // ctx is [T, Hs·hd] over the picked heads: map the asked columns into it.
  const at = new Map(heads.map((h, i) => [h, i]));
  const out = new Float64Array(T * cols!.length);
  for (let t = 0; t < T; t++)
    for (let j = 0; j < cols!.length; j++) {
      const c = cols![j];
      out[t * cols!.length + j] = ctx[t * Hs * hd + at.get(Math.floor(c / hd))! * hd + (c % hd)];
    }
  return out;
}

/** Rows outside `rows` of each [H, T, hd] tensor taken from its exact twin (in place). */
function mixRows(
  into: Float64Array[],
  exact: Float64Array[],
  H: number,
  T: number,
  hd: number,
  rows: { from: number; to: number },
): void {
  for (const [i, a] of into.entries())
    for (let h = 0; h < H; h++)
      for (let t = 0; t < T; t++)
        if (t < rows.from || t >= rows.to)
          a.set(exact[i].subarray((h * T + t) * hd, (h * T + t + 1) * hd), (h * T + t) * hd);
}

/** Key (or value) row j read from row j − shift from row `from` on ([H, T, hd]; the first or last row past the ends). */
function moveKeys(
  a: Float64Array,
  H: number,
  T: number,
  hd: number,
  m: { shift: number; from: number },
): Float64Array {
  const out = Float64Array.from(a);
  for (let h = 0; h < H; h++)
    for (let t = m.from; t < T; t++) {
      const src = Math.min(T - 1, Math.max(0, t - m.shift));
      out.set(a.subarray((h * T + src) * hd, (h * T + src + 1) * hd), (h * T + t) * hd);
    }
  return out;
}

/** The listed rows of a [H, T, hd] tensor read as zeros. */
function zeroRows(a: Float64Array, H: number, T: number, hd: number, rows: number[]): Float64Array {
  const out = Float64Array.from(a);
  for (let h = 0; h < H; h++) for (const t of rows) out.fill(0, (h * T + t) * hd, (h * T + t + 1) * hd);
  return out;
}

function roundAll(f: NumFormat, a: Float64Array): Float64Array {
  const out = new Float64Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = roundTo(f, a[i]);
  return out;
}

/** Whether key j is out of query row i's sight under the variant's dropped keys (never every key of a row). */
function droppedKey(i: number, j: number, kd: NonNullable<Variant['keysDropped']>): boolean {
  if (kd.positions?.includes(j) && !(i === 0 && j === 0)) return true;
  if (kd.window !== undefined && j <= i - kd.window && !(kd.sink !== undefined && j < kd.sink)) return true;
  return false;
}

/**
 * The attention core for the query rows `v.rows` covers (all without it; the other rows zero: the caller puts the
 * exact ones there), with the variant's scale, mask and dropped keys: scores, softmax and values row by row.
 */
function attendRows(
  q: Float64Array,
  k: Float64Array,
  vals: Float64Array,
  H: number,
  T: number,
  hd: number,
  v: Variant,
): Float64Array {
  const scale = v.scores?.scale ?? 1 / Math.sqrt(hd);
  const from = v.rows?.from ?? 0;
  const to = v.rows?.to ?? T;
  const out = new Float64Array(T * H * hd);
  const s = new Float64Array(T);
  for (let h = 0; h < H; h++)
    for (let i = from; i < to; i++) {
      const last = lastKey(i, T, v.scores);
      let max = Number.NEGATIVE_INFINITY;
      for (let j = 0; j <= last; j++) {
        if (v.keysDropped && droppedKey(i, j, v.keysDropped)) {
          s[j] = Number.NEGATIVE_INFINITY;
          continue;
        }
        let dot = 0;
        for (let e = 0; e < hd; e++) dot += q[(h * T + i) * hd + e] * k[(h * T + j) * hd + e];
        s[j] = v.scoresFormat ? roundTo(v.scoresFormat, dot * scale) : dot * scale;
        if (s[j] > max) max = s[j];
      }
      if (max === Number.NEGATIVE_INFINITY) continue;
      let sum = 0;
      for (let j = 0; j <= last; j++) {
        s[j] = Math.exp(s[j] - max);
        sum += s[j];
      }
      const o = i * H * hd + h * hd;
      for (let j = 0; j <= last; j++) {
        const p = s[j] / sum;
        if (p === 0) continue;
        for (let e = 0; e < hd; e++) out[o + e] += p * vals[(h * T + j) * hd + e];
      }
    }
  return out;
}

/** Flash-style attention over key blocks whose running sums and accumulators are never rescaled (Variant.noRescale). */
function onlineNoRescale(
  q: Float64Array,
  k: Float64Array,
  vals: Float64Array,
  H: number,
  T: number,
  hd: number,
  nr: { block: number; threads: number },
  v: Variant,
): Float64Array {
  const scale = v.scores?.scale ?? 1 / Math.sqrt(hd);
  const { block, threads } = nr;
  const out = new Float64Array(T * H * hd);
  const m = new Float64Array(threads);
  const l = new Float64Array(threads);
  const o = Array.from({ length: threads }, () => new Float64Array(hd));
  for (let h = 0; h < H; h++)
    for (let i = 0; i < T; i++) {
      m.fill(Number.NEGATIVE_INFINITY);
      l.fill(0);
      for (const a of o) a.fill(0);
      for (let j0 = 0; j0 <= i; j0 += block * threads)
        for (let g = 0; g < threads; g++) {
          const jc = j0 + g * block;
          if (jc > i) break;
          const j1 = Math.min(i, jc + block - 1);
          const s: number[] = [];
          for (let j = jc; j <= j1; j++) {
            let dot = 0;
            for (let e = 0; e < hd; e++) dot += q[(h * T + i) * hd + e] * k[(h * T + j) * hd + e];
            s.push(dot * scale);
          }
          const mNew = Math.max(m[g], ...s);
          for (let j = jc; j <= j1; j++) {
            const p = Math.exp(s[j - jc] - mNew);
            l[g] += p;
            for (let e = 0; e < hd; e++) o[g][e] += p * vals[(h * T + j) * hd + e];
          }
          m[g] = mNew;
        }
      // The partial states merged into the first, in order: each partial scaled to the new maximum.
      for (let g = 1; g < threads; g++) {
        if (!(l[g] > 0)) continue;
        const mNew = Math.max(m[0], m[g]);
        const beta = Math.exp(m[g] - mNew);
        l[0] += l[g] * beta;
        for (let e = 0; e < hd; e++) o[0][e] += o[g][e] * beta;
        m[0] = mNew;
      }
      for (let e = 0; e < hd; e++) out[i * H * hd + h * hd + e] = o[0][e] / l[0];
    }
  return out;
}

/**
 * The probabilities rounded to `f`, where the rounding is the one the recorded output shows. A correct fp32 softmax
 * lands within τ of the exact probability (relative; below), so a probability that close to a rounding boundary of
 * `f` may be rounded either way by the kernel being explained — as the scorer lets a rounded output land on either
 * side. Each query row of each head takes, among its ambiguous probabilities, the roundings that bring its output
 * row nearest the recorded one (the toggle that helps most first, until none helps); every other probability is rounded to nearest.
 *
 * τ for row i: the scores' fp32 error is at most γ_{hd+2}·Σ_e |q_e k_e|·scale ≤ (hd + 2)·u·‖q_i‖‖k_j‖·scale
 * (u = 2^-24); a probability's relative error is at most its own score's, the maximum's and the sum's share
 * (3× the largest score error) plus the exp, the sum of T terms and the division ((T + 4)·u); τ is twice that.
 */
function roundedToFit(
  d: OpData,
  f: NumFormat,
  probs: Float64Array,
  t: { q: Float64Array; k: Float64Array; v: Float64Array },
  heads: number[] | null,
  scale: number,
): Float64Array {
  const T = d.tokens.length;
  const hd = d.cfg.headDim;
  const Hs = probs.length / (T * T);
  const width = d.recorded.length / T;
  const u = 2 ** -24;
  const out = new Float64Array(probs.length);
  for (let i = 0; i < probs.length; i++) out[i] = roundTo(f, probs[i]);
  const norm = (a: Float64Array, r: number) => {
    let s = 0;
    for (let e = 0; e < hd; e++) s += a[r * hd + e] * a[r * hd + e];
    return Math.sqrt(s);
  };
  const res = new Float64Array(hd);
  for (let h = 0; h < Hs; h++) {
    const hg = heads ? heads[h] : h;
    let kMax = 0;
    for (let j = 0; j < T; j++) kMax = Math.max(kMax, norm(t.k, h * T + j));
    for (let i = 0; i < T; i++) {
      const row = (h * T + i) * T;
      const tau = 2 * (3 * (hd + 2) * u * norm(t.q, h * T + i) * kMax * scale + (T + 4) * u);
      const ambiguous: number[] = [];
      for (let j = 0; j < T; j++) {
        const p = probs[row + j];
        if (p > 0 && roundTo(f, p * (1 - tau)) !== roundTo(f, p * (1 + tau))) ambiguous.push(j);
      }
      if (ambiguous.length === 0) continue;
      // The recorded row minus the row of rounded-to-nearest probabilities.
      for (let e = 0; e < hd; e++) {
        let o = 0;
        for (let j = 0; j < T; j++) o += out[row + j] * t.v[(h * T + j) * hd + e];
        res[e] = d.recorded[i * width + hg * hd + e] - o;
      }
      // The other rounding is taken where it brings the row nearer, the toggle that helps most first, until none
      // helps (steepest descent over the ambiguous probabilities: order does not decide what is taken).
      const moves = ambiguous.map((j) => {
        const p = probs[row + j];
        const near = out[row + j];
        const lo = roundTo(f, p * (1 - tau));
        return { j, near, alt: lo !== near ? lo : roundTo(f, p * (1 + tau)), taken: false };
      });
      for (let step = 0; step < 4 * moves.length; step++) {
        let best = -1;
        let bestGain = 0;
        moves.forEach((m, x) => {
          // |res|² − |res − δv|² = 2 res·δv − |δv|²
          const delta = m.taken ? m.near - m.alt : m.alt - m.near;
          let dot = 0;
          let sq = 0;
          for (let e = 0; e < hd; e++) {
            const dv = delta * t.v[(h * T + m.j) * hd + e];
            dot += res[e] * dv;
            sq += dv * dv;
          }
          if (2 * dot - sq > bestGain) {
            bestGain = 2 * dot - sq;
            best = x;
          }
        });
        if (best < 0) break;
        const m = moves[best];
        const delta = m.taken ? m.near - m.alt : m.alt - m.near;
        m.taken = !m.taken;
        out[row + m.j] = m.taken ? m.alt : m.near;
        for (let e = 0; e < hd; e++) res[e] -= delta * t.v[(h * T + m.j) * hd + e];
      }
    }
  }
  return out;
}
