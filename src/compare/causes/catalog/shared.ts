// What more than one cause reads from an op's data: each LayerNorm row's scale (both eps causes solve for eps from
// it), the recorded tensors an op might have read by mistake and a slot in words (the wrong-tensor causes).
import { widthOf } from '../exact-op';
import type { OpData } from '../types';

/** Per row: the scale s the recorded output applies to (x - mean), and the row's biased variance. */
export function rowScales(d: OpData): { s: number; variance: number }[] {
  const T = d.tokens.length;
  const w = widthOf(d);
  const n = d.weights.norm!;
  const g = n.weight.data;
  const b = n.bias.data;
  let gMax = 0;
  for (let c = 0; c < w; c++) gMax = Math.max(gMax, Math.abs(g[c]));
  const x = d.inputs[0];
  const rows = [];
  for (let t = 0; t < T; t++) {
    let mean = 0;
    for (let c = 0; c < w; c++) mean += x[t * w + c] / w;
    let zz = 0;
    let yz = 0;
    let sq = 0;
    for (let c = 0; c < w; c++) {
      const z = x[t * w + c] - mean;
      sq += z * z;
      if (Math.abs(g[c]) <= 1e-3 * gMax) continue;
      const y = (d.recorded[t * w + c] - b[c]) / g[c];
      yz += y * z;
      zz += z * z;
    }
    rows.push({ s: zz > 0 ? yz / zz : Number.NaN, variance: sq / w });
  }
  return rows;
}

/** Recorded tensors of the input's size other than the op's own inputs and output. */
export function othersLike(d: OpData, n: number) {
  const own = new Set(d.inputSlots);
  return d.others.filter((o) => o.data.length === n && !own.has(o.slot));
}

/** A slot in words: 'layers.2.attn_out' → 'the attention output (layers.2.attn_out)'. */
export function slotWords(slot: string, layer: number | null): string {
  const m = /^layers\.(\d+)\.(.+)$/.exec(slot);
  const own = m && layer !== null && Number(m[1]) === layer;
  const prev = m && layer !== null && Number(m[1]) === layer - 1;
  const part = m ? m[2] : slot;
  const names: Record<string, string> = {
    attn_out: 'the attention output',
    mlp_out: 'the MLP output',
    ln2_in: 'the attention residual (x + attention)',
    ln1: 'the input_layernorm output',
    ln2: 'the post_attention_layernorm output',
    ctx: 'the attention context',
    gelu: 'the GELU output',
    fc1: 'the dense_h_to_4h output',
    qkv: 'the QKV projection',
  };
  if (slot === 'embed' || (prev && part === 'out')) return `the layer's input (${slot})`;
  const what = names[part] ?? slot;
  return own ? `${what}` : `${what} of layer ${m ? m[1] : '?'}`;
}
