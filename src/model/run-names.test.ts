// A run's tensor names that are Object's own property names (`constructor`, `toString`, `__proto__`) are names the
// contract does not use: skipped like any other unknown name, never read as a slot (they were: a lookup in a plain
// object found Object.prototype's functions, and `constructor` threw).
import { describe, expect, it } from 'vitest';
import { LLAMA_FAMILY, NEOX_PARALLEL } from '../ops/families';
import { layerIndexIn, slotOfFamilyName, slotOfName } from './run-names';

const PROTO = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'];

describe('run names that are Object property names', () => {
  it.each(PROTO)("'%s' lands in no slot, at the top, in a layer module or a TransformerLens block", (p) => {
    for (const name of [p, `${p}:out`, `gpt_neox.layers.0.${p}:in`, `blocks.1.${p}`])
      expect(slotOfName(name, 3), name).toBeNull();
    for (const spec of [LLAMA_FAMILY, NEOX_PARALLEL])
      for (const name of [p, `${spec.layerPrefix}.0.${p}:out`])
        expect(slotOfFamilyName(spec, name, 3), name).toBeNull();
  });

  it('still maps the names around them', () => {
    expect(slotOfName('embed_out:out', 3)).toEqual({ slot: 'logits', layer: null, kind: 'vocab' });
    expect(slotOfName('gpt_neox.layers.2.mlp.act:in', 3)).toEqual({
      slot: 'layers.2.fc1',
      layer: 2,
      kind: 'ff',
      heads: false,
    });
    expect(slotOfName('blocks.1.hook_resid_pre', 3)).toEqual({
      slot: 'layers.0.out',
      layer: 0,
      kind: 'hidden',
      heads: false,
    });
    expect(slotOfFamilyName(LLAMA_FAMILY, 'model.norm:out', 3)).toEqual({
      slot: 'final_norm',
      layer: null,
      width: 'hidden',
    });
    expect(layerIndexIn('gpt_neox.layers.7.attention:out')).toBe(7);
  });
});
