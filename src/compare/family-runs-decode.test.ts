// The Llama family's decode checked op by op (family-runs-decode.ts) on the committed HF fixtures, in Node on
// SwiftShader: each path's greedy generation with its KV cache, every forward's taps kept, as a run of a generation
// over all positions. A clean decode agrees on both paths; the recorded rows of a path's decode equal, bit for bit,
// the same rows of its whole forward over the same tokens (the decode's design: a row's arithmetic does not depend on
// the rows beside it); the fused path with a teaching fault from layer 1 is born at layer 1, not before.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../engine/engine';
import { defaultRunSpec, type RunSpec } from '../run/runspec';
import { analyze } from './analyze';
import { placeLlamaFaults } from './family-compare';
import { fixtureEngine, fixtureSpec, loadFixture } from './family-fixtures.testdata';
import { checkFamilyDecode, familyDecodeRunFile } from './family-runs-decode';

let engine: Engine;
beforeAll(async () => {
  engine = await fixtureEngine();
});
afterAll(() => engine?.dispose());

async function load(name: string) {
  await loadFixture(engine, name);
  return engine.llamaModel!.cfg;
}

describe('the Llama family decode checked op by op', () => {
  it('a clean decode agrees on both paths (a Qwen3 and a Mistral fixture)', async () => {
    for (const name of ['qwen3-qknorm', 'mistral-window']) {
      await load(name);
      const prompt = [7, 3, 19, 4, 11];
      const n = 6;
      const r = await checkFamilyDecode(engine, prompt, n, [
        { name: 'reference', opts: { path: 'reference' } },
        { name: 'fused', opts: { path: 'fused' } },
      ]);
      for (const [j, c] of r.checks.entries()) {
        expect(c.verdict, `${name} ${c.path}: ${c.sentence}`).toBe('agree');
        expect(c.checks).toBeGreaterThan(10);
        // The cached decode's logits are the whole forward's bit for bit.
        expect(c.vsFull).toEqual({ relL2: 0, ratio: 0, within: true });
        expect(r.reports[j].runs[0].generation?.prefill).toBe(prompt.length);
      }
    }
  });

  it("a decode's recorded rows are its path's whole forward rows bit for bit (every fixture, both paths)", async () => {
    for (const name of [
      'llama-gqa-llama3',
      'llama-mqa-linear-tied',
      'mistral-window',
      'qwen2-bias',
      'qwen3-qknorm',
    ]) {
      await load(name);
      const model = engine.llamaModel!;
      const prompt = [2, 9, 4, 31, 8, 5, 1];
      const n = 5;
      const paths = [{ path: 'reference' as const }, { path: 'fused' as const }];
      const steps: [number, Map<string, Float32Array>][][] = [[], []];
      const ids = await model.generate(prompt, n, paths, undefined, undefined, (j, p0, taps) =>
        steps[j].push([p0, taps]),
      );
      for (const [j, opts] of paths.entries()) {
        const file = familyDecodeRunFile(model.cfg, steps[j], prompt, ids[j], opts.path);
        const whole = (await engine.forward(file.tokens, { ...opts, taps: 'all' })).taps;
        expect(file.slots.size, `${name} ${opts.path}`).toBeGreaterThan(8);
        for (const [slot, t] of file.slots) {
          const w = whole.get(slot);
          expect(w, `${name} ${opts.path} ${slot}`).toBeDefined();
          const same = bits(t.data).every((b, i) => b === bits(w!)[i]);
          expect(same, `${name} ${opts.path} ${slot}: the decode's rows are not the whole forward's`).toBe(
            true,
          );
        }
      }
    }
  });

  it("the fused path's KV mapping fault from layer 1: its decode is born at layer 1's attention, the cause named", async () => {
    const cfg = await load('llama-gqa-llama3');
    const { faults } = placeLlamaFaults(
      { ...defaultRunSpec(), faults: [{ id: 'kv_interleaved', fromLayer: 1 }] },
      cfg.numLayers,
    );
    const prompt = [5, 60, 7, 90, 3, 14];
    const r = await checkFamilyDecode(engine, prompt, 4, [
      { name: 'fused', opts: { path: 'fused', llamaFaults: faults } },
    ]);
    const c = r.checks[0];
    expect(c.verdict, c.sentence).toBe('diverged');
    expect(c.born?.layer).toBe(1);
    expect(c.born?.check).toMatch(/^layers\.1\..*ctx$/);
    expect(c.cause?.named.map((x) => x.id)).toContain('kv-interleaved');
    // Born in every row of the prompt and every decode step: said so, as GPT-NeoX's decode check says it, not as
    // the first row alone ("the prefill (position 0)" read as one wrong token).
    const check = r.reports[0].checks.find((x) => x.id === c.born?.check)!;
    expect([check.firstRow, check.pastTo], c.sentence).toEqual([0, prompt.length + 4 - 2]);
    expect(c.sentence).toMatch(
      /^every row of the prompt \(the prefill, positions 0–5\) and every decode step after it, layer 1: /,
    );
  });

  it('the two-path compare asked for the decode check: each path checked op by op in generation.decode', async () => {
    await load('llama-gqa-llama3');
    const tokens = [5, 60, 7, 90, 3, 14];
    const spec: RunSpec = {
      ...fixtureSpec(tokens, [{ id: 'kv_interleaved', fromLayer: 1 }]),
      generate: 3,
      checkDecode: true,
    };
    const report = await analyze(engine, spec, tokens);
    const g = report.generation!;
    expect(g.decodeStarted).toBe('asked');
    expect(g.decode?.map((d) => [d.path, d.verdict])).toEqual([
      ['reference', 'agree'],
      ['fused', 'diverged'],
    ]);
    expect(g.decode?.[1].born?.layer).toBe(1);
  });
});

const bits = (x: Float32Array) => new Uint32Array(x.buffer, x.byteOffset, x.length);
