// Where an error is born in a Llama-family model (family-compare.ts's local phase) on the committed HF fixtures, in
// Node on SwiftShader: every fused layer re-run on the reference path's input to it (LlamaModel.forwardLayers, each
// path's layers in one submit), against the reference layer on the same input and its exact fp64 layer (the local
// floor). The local entry is checked against the whole forwards bit for bit where they must agree; each teaching
// fault planted from layer 1 is born at layer 1 and not at 0; a clean compare has no born layer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../engine/engine';
import type { FaultId } from '../run/faults';
import { analyze } from './analyze';
import { fixtureEngine, fixtureSpec, fixtureTokens, loadFixture } from './family-fixtures.testdata';

let engine: Engine;
beforeAll(async () => {
  engine = await fixtureEngine();
});
afterAll(() => engine?.dispose());

async function load(name: string) {
  await loadFixture(engine, name);
  return fixtureTokens(name);
}

const spec = fixtureSpec;

const bits = (x: Float32Array) => new Uint32Array(x.buffer, x.byteOffset, x.length);

describe('the local error of a Llama-family model', () => {
  it('the local entry: each path from given layer inputs is its whole forward where the inputs are its own', async () => {
    const tokens = await load('qwen3-qknorm');
    const model = engine.llamaModel;
    if (!model) throw new Error('no Llama model');
    const ref = (await engine.forward(tokens, { path: 'reference' })).dump;
    const fused = (await engine.forward(tokens, { path: 'fused' })).dump;
    const refIn = ref.layers.map((_, i) => (i === 0 ? ref.embeddings : ref.layers[i - 1]));
    const fusedIn = fused.layers.map((_, i) => (i === 0 ? fused.embeddings : fused.layers[i - 1]));
    // The reference layers on the reference's own inputs: its whole forward, every layer, bit for bit.
    const refLocal = await model.forwardLayers(tokens, refIn, { path: 'reference' });
    for (const [i, l] of refLocal.entries())
      expect(bits(l), `reference layer ${i}`).toEqual(bits(ref.layers[i]));
    // The fused layers on the fused path's own inputs: its layer 0 bit for bit (the same norm kernel on the same
    // embeddings); later layers within fp32 rounding of it (their input norm is the RMSNorm alone, not the add +
    // RMSNorm pass, so the last bits may differ), and both within 1e-5 of the reference.
    const fusedLocal = await model.forwardLayers(tokens, fusedIn, { path: 'fused' });
    expect(bits(fusedLocal[0])).toEqual(bits(fused.layers[0]));
    fusedLocal.forEach((l, i) => {
      let num = 0;
      let den = 0;
      for (let j = 0; j < l.length; j++) {
        num += (l[j] - fused.layers[i][j]) ** 2;
        den += fused.layers[i][j] ** 2;
      }
      expect(Math.sqrt(num / den), `fused layer ${i}`).toBeLessThan(1e-6);
    });
    // A wrong count of inputs is one line, before any work.
    const e = await model.forwardLayers(tokens, refIn.slice(1), { path: 'fused' }).catch((x: Error) => x);
    expect((e as Error).message).toMatch(/^Llama fused: 1 layer inputs for numLayers 2$/);
  });

  it.each(['llama-gqa-llama3', 'llama-mqa-linear-tied', 'qwen2-bias', 'qwen3-qknorm', 'mistral-window'])(
    '%s: a clean compare has no born layer; its local error is measured, not the propagated one',
    async (name) => {
      const tokens = await load(name);
      const r = await analyze(engine, spec(tokens), tokens);
      expect(r.firstBornLayer).toBeNull();
      for (const l of r.layers) {
        expect(l.born, `layer ${l.layer} ×${l.localRatio}`).toBe(false);
        expect(l.localRatio).toBeLessThanOrEqual(r.k);
        // The local floor: the fp32 reference layer against its exact fp64 layer on the same input, at fp32 rounding
        // (above 0: an fp32 layer cannot be exact; below 1e-5, the family's target).
        expect(l.localFloor.relL2).toBeGreaterThan(0);
        expect(l.localFloor.relL2).toBeLessThan(1e-5);
      }
      // Layer 0's input is the same on both paths, so its local error is its propagated one; after it, not the same
      // object as the propagated (they were copies of it before the local phase existed).
      expect(r.layers[0].local).toEqual(r.layers[0].propagated);
      expect(r.layers[1].local).not.toBe(r.layers[1].propagated);
    },
  );

  it.each(['bf16', 'fp16', 'fp16acc'] as const)(
    'in %s a clean compare is born nowhere (the local floor that format’s); a fault from layer 1 is born at 1, its why named',
    async (p) => {
      const tokens = await load('qwen2-bias');
      const clean = await analyze(engine, { ...spec(tokens), precision: p }, tokens);
      const line = clean.layers.map((l) => `L${l.layer} local ×${l.localRatio.toPrecision(3)}`).join(', ');
      expect(clean.firstBornLayer, line).toBeNull();
      // fp32's local floor is about 1e-7 here; a 16-bit storage's is far above it
      for (const l of clean.layers) expect(l.localFloor.relL2, line).toBeGreaterThan(1e-4);
      const r = await analyze(
        engine,
        { ...spec(tokens, [{ id: 'swap_gate_up', fromLayer: 1 }]), precision: p },
        tokens,
      );
      expect(r.firstBornLayer).toBe(1);
      // and the why finds it in that mode too: the SwiGLU GEMM, its operands swapped
      expect(r.why?.born).toBe('layers.1.gate+up+swiglu');
      expect(r.why?.cause?.named.map((c) => c.id)).toEqual(['swiglu-swapped']);
    },
  );

  // [fault, a fixture where it acts (grouped-query heads for the KV mapping)]
  const faults: [FaultId, string][] = [
    ['rms_eps_outside', 'mistral-window'],
    ['swap_gate_up', 'llama-gqa-llama3'],
    ['kv_interleaved', 'qwen2-bias'],
  ];
  it.each(faults)('%s on %s planted from layer 1 is born at layer 1, not at 0', async (id, name) => {
    const tokens = await load(name);
    const r = await analyze(engine, spec(tokens, [{ id, fromLayer: 1 }]), tokens);
    const line = r.layers.map((l) => `L${l.layer} local ×${l.localRatio.toPrecision(3)}`).join(', ');
    expect(r.layers[0].born, line).toBe(false);
    expect(r.layers[1].born, line).toBe(true);
    expect(r.firstBornLayer).toBe(1);
    expect(r.layers[1].localRatio).toBeGreaterThan(100 * r.k);
    // layer 0 agrees on both counts: its local error within k × its local floor
    expect(r.layers[0].localRatio, line).toBeLessThanOrEqual(r.k);
  });
});
