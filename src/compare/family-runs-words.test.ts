// The Llama family's check grid columns and their headings (family-runs-words.ts), read off the registry's steps:
// each slot's words, a group's last step's with its count or its own group words, forward order of first sight.
import { describe, expect, it } from 'vitest';
import { familyColumns, familyColumnWords } from './family-runs-words';

describe("the Llama family's check grid words", () => {
  it("heads each column with its step's words, a group with its last step's (or the group's own)", () => {
    const words = (cols: string) => cols.split(' ').map(familyColumnWords);
    expect(words('ln1 q k v q_norm k_norm attn_out ln2_in ln2 gate up swiglu mlp_out out layer')).toEqual([
      'ln1',
      'q',
      'k',
      'v',
      'q norm',
      'k norm',
      'o_proj',
      'add (attn)',
      'ln2',
      'gate',
      'up',
      'SwiGLU',
      'down',
      'add (mlp)',
      'whole layer',
    ]);
    expect(words('q_rot+k_rot+ctx v+q_rot+k_rot+ctx gate+up+swiglu swiglu+mlp_out ctx')).toEqual([
      'rotary + attention',
      'rotary + attention',
      'SwiGLU (+2)',
      'down (+1)',
      'attention core',
    ]);
  });

  it('lists the layer columns in the order first met, top checks left out', () => {
    const c = (id: string, layer: number | null) => ({ id, layer });
    const checks = [
      c('embed', null),
      c('layers.0.ln1', 0),
      c('layers.0.q_rot+k_rot+ctx', 0),
      c('layers.1.ln1', 1),
    ];
    expect(familyColumns([...checks, c('layers.1.out', 1), c('lm_head', null)])).toEqual([
      'ln1',
      'q_rot+k_rot+ctx',
      'out',
    ]);
  });
});
