// A softmax rounded to half precision by a real kernel rounds its own fp32 probabilities, not the exact ones: the few
// that sit within an fp32 error of a rounding boundary land on the other side, and each puts a half-precision ULP of
// error on an output row. The cause must still be named (exact-attention.ts roundedToFit). The planted kernel here
// takes the other side at every probability within a few fp32 roundings of a boundary (4 for fp16; 32 for bf16,
// whose boundaries are 8× rarer; both well inside the fit's τ ≥ 2(T + 4) roundings): flips by construction.
import { describe, expect, it } from 'vitest';
import { attentionScoresF64, attentionValuesF64, softmaxCausalF64 } from '../../kernels/cpu/attention';
import { splitHeadsRotaryF64 } from '../../kernels/cpu/rotary';
import { freshSeed } from '../../kernels/testing';
import { type NumFormat, roundTo } from '../../numeric/round';
import { explain } from './explain';
import { plantOp } from './plant.testdata';

const U = 2 ** -24;

/** An attention op whose recorded output rounded an fp32 softmax to `f`, flipped at every near-boundary probability. */
function planted(seed: number, f: NumFormat) {
  const d = plantOp(seed, 'attention', () => ({}), 10, true);
  const { cfg } = d;
  const T = d.tokens.length;
  const H = cfg.numHeads;
  const hd = cfg.headDim;
  const { q, k, v } = splitHeadsRotaryF64(d.inputs[0], T, H, hd, cfg.rotaryNdims, cfg.rotaryBase, d.angles);
  const probs = softmaxCausalF64(attentionScoresF64(q, k, H, T, hd), H, T);
  const w = (f === 'bf16' ? 32 : 4) * U;
  let flips = 0;
  const kernel = probs.map((p) => {
    const near = roundTo(f, p);
    const lo = roundTo(f, p * (1 - w));
    const hi = roundTo(f, p * (1 + w));
    if (lo === hi) return near;
    flips++;
    return lo === near ? hi : lo;
  });
  d.recorded = Float32Array.from(attentionValuesF64(kernel, v, H, T, hd));
  return { d, flips };
}

describe('a softmax rounded to half precision by a kernel', () => {
  it.each(['fp16', 'bf16'] as const)(
    'is named when its own fp32 probabilities round across boundaries (%s)',
    (f) => {
      for (let j = 0; j < 6; j++) {
        let seed = freshSeed();
        let p = planted(seed, f);
        // (a draw with too few near-boundary probabilities tests nothing: the next draw is taken)
        for (let redraw = 0; redraw < 20 && p.flips < 3; redraw++) p = planted((seed += 7919), f);
        const v = explain(p.d);
        const msg = `seed ${seed}, ${p.flips} flips: ${v.words}; error ${v.error.toPrecision(3)}×`;
        expect(p.flips, msg).toBeGreaterThanOrEqual(3);
        expect(v.error, msg).toBeGreaterThan(p.d.k);
        expect(v.named[0]?.id, msg).toBe(`softmax-${f}`);
        expect(v.named[0].residual, msg).toBeLessThanOrEqual(p.d.k);
      }
    },
  );
});
