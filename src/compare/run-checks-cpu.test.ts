// The CPU oracle's exact op over a row range (the rows from..T−1, a decode check's rows) equals the same op over
// every row at those rows, exactly (the same fp64 operations): every check of both residual styles, on random
// recorded inputs, T and `from` drawn per case. Set ROWS_SEEDS to draw more cases (KERNEL_SEED replays one).
import { describe, expect, it } from 'vitest';
import { freshSeed } from '../kernels/testing';
import { parseConfigText } from '../model/config';
import { type RandomModelSpec, randomModelFiles } from '../model/random-model';
import { loadWeights } from '../model/weights';
import { mulberry32, randn } from '../numeric/random';
import { runChecks } from './run-checks';
import { exactOnCpu } from './run-checks-cpu';

const specs: [string, RandomModelSpec][] = [
  ['parallel', { vocab: 97, d: 36, layers: 2, heads: 3, ff: 50, rotaryPct: 0.5, parallel: true }],
  ['sequential', { vocab: 61, d: 20, layers: 1, heads: 2, ff: 44, rotaryPct: 1, parallel: false }],
];

describe('exactOnCpu over a row range', () => {
  it.each(specs)('%s: every check, rows from..T−1 equal the whole op’s exactly', (name, spec) => {
    const seed = freshSeed();
    const files = randomModelFiles(spec, seed);
    const cfg = parseConfigText(files.config);
    const w = loadWeights(cfg, files.weights);
    const { checks } = runChecks(cfg, () => true, 'embed_out', new Set([0]));
    expect(checks.some((c) => c.op === 'layer') && checks.some((c) => c.op === 'attention')).toBe(true);
    const cases = Number(process.env.ROWS_SEEDS ?? 5);
    for (let n = 0; n < cases; n++) {
      const rng = mulberry32(seed + n * 31337);
      const T = 2 + Math.floor(rng() * 40);
      const from = 1 + Math.floor(rng() * (T - 1));
      const tokens = Array.from({ length: T }, () => Math.floor(rng() * spec.vocab));
      const widths: Record<string, number> = {};
      const slots = new Map<string, Float32Array>();
      const get = (slot: string) => {
        let x = slots.get(slot);
        if (!x) {
          const width = /\.qkv$/.test(slot)
            ? 3 * cfg.hiddenSize
            : /\.(fc1|gelu)$/.test(slot)
              ? cfg.intermediateSize
              : cfg.hiddenSize;
          widths[slot] = width;
          x = randn(rng, T * width);
          slots.set(slot, x);
        }
        return x;
      };
      for (const c of checks) {
        const all = exactOnCpu(c, cfg, w, tokens, get, 'hf-fp32');
        const some = exactOnCpu(c, cfg, w, tokens, get, 'hf-fp32', from);
        const ctx = `${name}, seed ${seed} case ${n}: T = ${T}, from ${from}, ${c.id}`;
        expect(some.length, ctx).toBe((all.length / T) * (T - from));
        const want = all.subarray((all.length / T) * from);
        const at = some.findIndex((v, i) => !Object.is(v, want[i]));
        expect(at, `${ctx}: differs at ${at}`).toBe(-1);
      }
    }
  });
});
