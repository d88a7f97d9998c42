// A custom kernel in the engine: equal to the shipped source it is bit-identical (every tap, both residual
// wirings); changed, it changes the fused path and never the reference path; removed, the shipped kernel is
// back bit for bit. A source that does not compile or fit its slot is refused before any GPU work.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installCustomKernel } from '../../engine/custom-kernel';
import { Engine } from '../../engine/engine';
import { nodeGpu } from '../../gpu/node';
import { InputError } from '../../model/errors';
import { type RandomModelSpec, randomModelFiles } from '../../model/random-model';
import { mulberry32 } from '../../numeric/random';
import { nodeShaderSource } from '../shaders-node';
import { freshSeed } from '../testing';
import { CUSTOM_SLOTS } from './slots';

const shaders = nodeShaderSource();
let engine: Engine;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), shaders);
});
afterAll(() => engine?.dispose());

const base = { vocab: 97, d: 45, heads: 3, ff: 70, rotaryPct: 0.4, layers: 2 };
const MODELS: [string, RandomModelSpec][] = [
  ['parallel', { ...base, parallel: true }],
  ['sequential', { ...base, parallel: false }],
];

function sameBits(a: Float32Array, b: Float32Array): boolean {
  const ua = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const ub = new Uint32Array(b.buffer, b.byteOffset, b.length);
  return ua.length === ub.length && ua.every((v, i) => v === ub[i]);
}

async function taps(tokens: number[], path: 'fused' | 'reference') {
  return (await engine.forward(tokens, { path, taps: 'all' })).taps;
}

describe('custom kernels in the engine', () => {
  it.each(MODELS)(
    '%s: each slot with its shipped source is bit-identical; a changed one changes only the fused path',
    async (_n, spec) => {
      const seed = freshSeed();
      await engine.loadModel(randomModelFiles(spec, seed));
      const rng = mulberry32(seed);
      const tokens = Array.from({ length: 11 }, () => Math.floor(rng() * spec.vocab));
      const shippedFused = await taps(tokens, 'fused');
      const shippedRef = await taps(tokens, 'reference');
      for (const slot of CUSTOM_SLOTS) {
        const restore = await installCustomKernel(engine, {
          slot: slot.id,
          source: shaders(slot.kernel.file),
        });
        const again = await taps(tokens, 'fused');
        restore();
        for (const [name, data] of shippedFused)
          expect(sameBits(again.get(name)!, data), `${slot.id} ${name} (seed ${seed})`).toBe(true);
      }
      // A visible change: the dual LayerNorm's outputs scaled by 2 (parallel), the GEMM + bias output + 1.
      const changed = spec.parallel
        ? {
            slot: 'layernorm2' as const,
            from: 'y1[base + c] = st(xhat * w1[c] + b1[c]);',
            to: 'y1[base + c] = st(2.0 * (xhat * w1[c] + b1[c]));',
            tap: 'layers.0.ln1',
          }
        : {
            slot: 'add_layernorm' as const,
            from: 'y[base + c] = st(',
            to: 'y[base + c] = 1.0 + st(',
            tap: 'layers.0.ln2',
          };
      const src = shaders(CUSTOM_SLOTS.find((s) => s.id === changed.slot)!.kernel.file);
      expect(src).toContain(changed.from);
      const restore = await installCustomKernel(engine, {
        slot: changed.slot,
        source: src.replace(changed.from, changed.to),
      });
      const custom = await taps(tokens, 'fused');
      const ref = await taps(tokens, 'reference');
      restore();
      expect(sameBits(custom.get(changed.tap)!, shippedFused.get(changed.tap)!)).toBe(false);
      for (const [name, data] of shippedRef)
        expect(sameBits(ref.get(name)!, data), `reference ${name}`).toBe(true);
      const back = await taps(tokens, 'fused');
      for (const [name, data] of shippedFused)
        expect(sameBits(back.get(name)!, data), `restored ${name}`).toBe(true);
    },
  );

  it('a source that does not compile or does not fit its slot is refused with the line or the binding', async () => {
    const src = shaders('fused/flash_attention.wgsl');
    await expect(
      installCustomKernel(engine, { slot: 'flash_attention', source: `${src}\nfn broken( {` }),
    ).rejects.toThrow(/does not compile: line \d+/);
    const writable = src.replace(
      'var<storage, read> q: array<f32>;',
      'var<storage, read_write> q: array<f32>;',
    );
    expect(writable).not.toBe(src);
    const err = await installCustomKernel(engine, { slot: 'flash_attention', source: writable }).catch(
      (e) => e,
    );
    expect(err).toBeInstanceOf(InputError);
    expect(String(err.message)).toMatch(/does not fit its slot: binding 1 'q' is var<storage, read_write>/);
  });
});
