// A decode check on the decode steps' rows only (the runs analysis's `rows`, as the two-path analysis runs it) finds
// the first divergence where checking every row finds it: a decode-only fault (decode_rotary, the single-row step
// rotated as position 0) planted from a random layer is named at the same check, layer, op, decode step and row
// either way; a clean decode agrees either way; the row-range report says which rows it left to whom. Set
// ROWS_SEEDS to draw more cases per run (KERNEL_SEED replays one).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Engine } from '../engine/engine';
import { ALL_FUSED } from '../engine/fused-kernels';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { freshSeed } from '../kernels/testing';
import { randomModelFiles } from '../model/random-model';
import { rowStep, rowWords } from '../model/run-generation';
import { mulberry32 } from '../numeric/random';
import { faultHooks, placeFaults } from '../run/faults';
import { analyzeRuns } from './analyze-runs';
import { decodeCheckOf, decodeRows } from './decode-run-file';
import { checkDecode, decodeChecker } from './decode-runs';
import type { RunsReport } from './runs-report';

const seed = freshSeed();
const shape = { vocab: 83, d: 48, layers: 3, heads: 4, ff: 96, rotaryPct: 0.5, parallel: true };
let engine: Engine;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
  await engine.loadModel(randomModelFiles(shape, seed));
});
afterAll(() => engine?.dispose());

/** The first divergence of run A: its check, layer, op, row (and the last of the stretch past) and decode step. */
function firstOf(r: RunsReport, prefill: number) {
  const f = r.findings[0];
  const c = r.checks.find((x) => x.run === 'A' && x.id === f.check);
  const row = c?.firstRow ?? null;
  return {
    diverged: f.diverged,
    check: f.check,
    layer: f.layer,
    op: c?.op ?? null,
    row,
    to: c?.pastTo ?? null,
    step: row === null ? null : rowStep(row, prefill).step,
  };
}

describe('the decode check on the decode steps’ rows only', () => {
  it('finds a planted decode fault where checking every row does: same check, layer, op, step and row', async () => {
    const cases = Number(process.env.ROWS_SEEDS ?? 2);
    for (let n = 0; n < cases; n++) {
      const rng = mulberry32(seed + n * 104729);
      const P = 3 + Math.floor(rng() * 6);
      const prompt = Array.from({ length: P }, () => Math.floor(rng() * shape.vocab));
      const steps = 3 + Math.floor(rng() * 3);
      const fromLayer = Math.floor(rng() * shape.layers);
      const planted = placeFaults([{ id: 'decode_rotary', fromLayer }], seed, shape.layers);
      const [fused] = await checkDecode(engine, prompt, steps, [
        { name: 'fused', opts: { path: new Set(ALL_FUSED), hooks: faultHooks(planted) } },
      ]);
      const file = { file: fused.file, sha256: null };
      for (const oracle of ['gpu', 'cpu'] as const) {
        const every = await analyzeRuns(engine, file, null, { oracle });
        const rows = await analyzeRuns(engine, file, null, { oracle, rows: decodeRows(P) });
        expect(rows.oracle.kind).toBe(oracle);
        const all = firstOf(every, P);
        const some = firstOf(rows, P);
        const ctx = `seed ${seed} case ${n} (${oracle} oracle): prompt ${P}, ${steps} steps, layer ${fromLayer}: every row: ${every.sentence} / decode rows: ${rows.sentence}`;
        expect(all.diverged, ctx).toBe(true);
        expect(all.layer, ctx).toBe(fromLayer);
        expect(all.step, ctx).toBe(1);
        expect(some, ctx).toEqual(all);
        // Checked rows only, said so; every check ran on both.
        expect(every.rows, ctx).toBeUndefined();
        expect(rows.rows, ctx).toEqual({ from: P, note: decodeRows(P).note });
        expect(rows.checks.map((c) => c.id)).toEqual(every.checks.map((c) => c.id));
        // from decode step 1: that step, or every row from it on (the stretch of rows past said whole)
        const at = rowWords(P, P, some.to!, fused.file.tokens.length);
        expect(at, ctx).toContain(`decode step 1 (position ${P})`);
        expect(rows.findings[0].sentence, ctx).toContain(`${at}, layer ${fromLayer}: `);
        expect(rows.findings[0].sentence, ctx).toContain(
          `only decode steps 1–${steps - 1} (positions ${P}–${P + steps - 2}) checked here; positions 0–${P - 1}: the prompt`,
        );
        // Two paths over the same tokens are checked in one analysis (runs A and B): each as when checked alone.
        const opts = {
          k: 10,
          metric: 'relL2' as const,
          oracle,
          metrics: rows.metricsOn,
          rows: decodeRows(P),
        };
        const pair = await decodeChecker(engine)(file, opts, file);
        const alone = decodeCheckOf('fused', rows, P);
        for (const run of ['A', 'B']) {
          const got = decodeCheckOf('fused', pair, P, run);
          expect({ ...got, sentence: '' }, `${ctx}: run ${run}`).toEqual({ ...alone, sentence: '' });
          expect(got.sentence).toBe(alone.sentence.replace(/^run A/, `run ${run}`));
          expect(got.checkedFrom).toBe(P);
        }
      }
    }
  }, 600_000); // SwiftShader: four runs analyses and a pair per case, two of them on the GPU oracle

  it('a clean decode agrees either way, on either oracle', async () => {
    const rng = mulberry32(seed ^ 0x5bd1e995);
    const prompt = Array.from({ length: 5 }, () => Math.floor(rng() * shape.vocab));
    const [ref] = await checkDecode(engine, prompt, 3, [{ name: 'reference', opts: { path: 'reference' } }]);
    expect(ref.report.verdict, `seed ${seed}: ${ref.report.sentence}`).toBe('agree');
    for (const oracle of ['gpu', 'cpu'] as const) {
      const rows = await analyzeRuns(engine, { file: ref.file, sha256: null }, null, {
        oracle,
        rows: decodeRows(5),
      });
      expect(rows.verdict, `seed ${seed}, ${oracle}: ${rows.sentence}`).toBe('agree');
      expect(rows.checks.every((c) => c.firstRow === null)).toBe(true);
    }
  });
});
