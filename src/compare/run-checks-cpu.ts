// A run's local checks with the fp64 oracle in JavaScript: the fallback where double-float on the GPU failed its
// self-test or the adapter is itself a CPU, and the oracle that tests the GPU route (run-checks.test.ts).
import { attentionScoresF64, attentionValuesF64, softmaxCausalF64 } from '../kernels/cpu/attention';
import { embeddingF64 } from '../kernels/cpu/embedding';
import { oracleLayer } from '../kernels/cpu/forward';
import { geluF64 } from '../kernels/cpu/gelu';
import { layerNormF64 } from '../kernels/cpu/layernorm';
import { linearF64 } from '../kernels/cpu/linear';
import { add3F64, addF64 } from '../kernels/cpu/residual';
import { splitHeadsRotaryF64 } from '../kernels/cpu/rotary';
import type { RotaryAngles } from '../kernels/cpu/rotary-angles';
import type { LinearWeights, ModelWeights, NeoXConfig, NormWeights } from '../numeric/types';
import type { OpCheck } from './run-checks';
import { rowsOf } from './run-rows';

/**
 * The exact output of check `c` on the inputs `get` returns (the run's recorded f32 tensors, every row), in fp64:
 * its rows from..T−1 (default: every row). A row-wise op computes those rows only; attention and the whole layer
 * compute every row (the keys and values of all positions) and keep those.
 */
export function exactOnCpu(
  c: OpCheck,
  cfg: NeoXConfig,
  w: ModelWeights,
  tokens: number[],
  get: (slot: string) => Float32Array,
  angles: RotaryAngles,
  from = 0,
): Float64Array {
  if (from > 0 && (c.op === 'attention' || c.op === 'layer'))
    return rowsOf(exactOnCpu(c, cfg, w, tokens, get, angles), tokens.length, from);
  const all = tokens.length;
  const T = all - from;
  const d = cfg.hiddenSize;
  const ff = cfg.intermediateSize;
  const xs = c.inputs.map((s) => rowsOf(get(s), all, from));
  const lw = c.layer === null ? null : w.layers[c.layer];
  const norm = (n: NormWeights) => layerNormF64(xs[0], T, d, n.weight.data, n.bias.data, cfg.layerNormEps);
  const linear = (l: LinearWeights, N: number, K: number) =>
    linearF64(xs[0], T, K, l.weight.data, l.bias ? l.bias.data : null, N);
  switch (c.op) {
    case 'embed':
      return embeddingF64(w.embedIn.data, d, tokens.slice(from));
    case 'ln1':
      return norm(lw!.inputLayernorm);
    case 'ln2':
      return norm(lw!.postAttentionLayernorm);
    case 'final_norm':
      return norm(w.finalLayerNorm);
    case 'qkv':
      return linear(lw!.qkv, 3 * d, d);
    case 'dense':
      return linear(lw!.dense, d, d);
    case 'fc1':
      return linear(lw!.fc1, ff, d);
    case 'fc2':
      return linear(lw!.fc2, d, ff);
    case 'act':
      return geluF64(xs[0]);
    case 'attention': {
      const H = cfg.numHeads;
      const hd = cfg.headDim;
      const { q, k, v } = splitHeadsRotaryF64(xs[0], T, H, hd, cfg.rotaryNdims, cfg.rotaryBase, angles);
      const probs = softmaxCausalF64(attentionScoresF64(q, k, H, T, hd), H, T);
      return attentionValuesF64(probs, v, H, T, hd);
    }
    case 'residual':
      // HF's order: parallel (mlp + attn) + x, sequential mlp + (attn + x); the sum of three floats is exact in
      // fp64 up to one rounding far below any f32 floor.
      return xs.length === 3 ? add3F64(xs[2], xs[1], xs[0]) : addF64(xs[0], xs[1]);
    case 'layer':
      return oracleLayer(cfg, lw!, xs[0], T, c.layer!, undefined, { angles });
    case 'lm_head':
      return linearF64(xs[0], T, d, w.lmHead.data, null, cfg.vocabSize);
  }
}
