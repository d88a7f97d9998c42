// A narrower type entering at some of an op's places but not all (autocast rounds them all): a product's input and
// weights in half with an fp32 output, its input and output but fp32 weights, its weights and output but an fp32
// input; a LayerNorm's or GELU's input and output in half around an fp32 computation.
import type { NumFormat } from '../../../numeric/round';
import { ACT_OPS, type Cause, NORM_OPS, PRODUCT_OPS, type Variant } from '../types';

const PARTS: { parts: string; products: boolean; v: (f: NumFormat) => Variant }[] = [
  {
    parts: 'input and weights',
    products: true,
    v: (f) => ({ inputFormat: f, weightFormat: f, biasFormat: f }),
  },
  {
    parts: 'weights and output',
    products: true,
    v: (f) => ({ weightFormat: f, biasFormat: f, outFormat: f }),
  },
  { parts: 'input and output', products: false, v: (f) => ({ inputFormat: f, outFormat: f }) },
];

const parts = (f: NumFormat): Cause => ({
  id: `parts-${f}`,
  family: 'narrower',
  ops: [...PRODUCT_OPS, ...NORM_OPS, ...ACT_OPS],
  candidates: (s) => {
    const product = PRODUCT_OPS.includes(s.data.op);
    return PARTS.filter((p) => product || !p.products).map((p) => ({
      params: { format: f, parts: p.parts },
      variant: p.v(f),
    }));
  },
  words: (p, d) =>
    `${p.format} at the ${p.parts} only (${PRODUCT_OPS.includes(d.op) ? 'an fp32 product' : 'the op in fp32'} between)`,
});

export const partsBf16 = parts('bf16');
export const partsFp16 = parts('fp16');
