// The cause library: every candidate explanation, one file per cause in this folder (causes one factory makes, such
// as output-bf16 and output-fp16, share a file). A cause file holds its descriptor: the op kinds it applies to, its
// family, its words, the variants to score and how a parameter is estimated (solved for, searched or enumerated).
// Beside it, `<file>.plant.ts` plants it in ops of random shapes, and ../catalog.test.ts requires the search to name
// it first with its parameters. Adding a cause: its file, its plants, and its import and entry here (docs/CAUSES.md,
// "Adding a cause"). The order below is the order causes are tried in, and the tie-break between causes that
// explain equally well.
import type { Cause } from '../types';
import { accFp16 } from './acc-fp16';
import { attentionBf16, attentionFp16 } from './attention-half';
import { autocastBf16, autocastFp16 } from './autocast';
import { biasDoubled, biasDropped } from './bias';
import { causalMissing } from './causal-missing';
import { causalOffByOne } from './causal-off-by-one';
import { dropout } from './dropout';
import { elementsShifted } from './elements-shifted';
import { geluSigmoid, geluTanh, relu, silu } from './gelu-replaced';
import { headsPermuted } from './heads-permuted';
import { inputBf16, inputFp16 } from './input-rounded';
import { inputShifted } from './input-shifted';
import { inputWrongTensor } from './input-wrong-tensor';
import { kvCacheBf16, kvCacheFp16 } from './kv-cache';
import { kvOtherLayer } from './kv-other-layer';
import { kvPositionsDropped, kvPositionsMoved } from './kv-positions';
import { lnEps } from './ln-eps';
import { lnEpsOutside } from './ln-eps-outside';
import { lnBiasDropped, lnWeightDropped } from './ln-param-dropped';
import { lnUnbiasedVar } from './ln-unbiased-var';
import { partsBf16, partsFp16 } from './narrower-parts';
import { outputBf16, outputFp16 } from './output-rounded';
import { qkvLayout } from './qkv-layout';
import { residualSumHalf, residualTermRounded } from './residual-narrower';
import { residualTermDoubled, residualTermDropped } from './residual-term';
import { residualWrongTensor } from './residual-wrong-tensor';
import { rotaryBase } from './rotary-base';
import { rotaryGptj } from './rotary-gptj';
import { rotaryOffK, rotaryOffQ } from './rotary-off';
import { rotaryOffset } from './rotary-offset';
import { rotaryWidth } from './rotary-width';
import { rowBroadcast } from './row-broadcast';
import { rowsShifted } from './rows-shifted';
import { softmaxBf16, softmaxFp16 } from './softmax-half';
import { softmaxNoRescale } from './softmax-no-rescale';
import { softmaxScale } from './softmax-scale';
import { tf32 } from './tf32';
import { weightBf16, weightFp16 } from './weight-rounded';
import { weightTransposed } from './weight-transposed';

export const CAUSES: readonly Cause[] = [
  // narrower arithmetic
  outputBf16,
  outputFp16,
  inputBf16,
  inputFp16,
  weightBf16,
  weightFp16,
  tf32,
  autocastBf16,
  autocastFp16,
  accFp16,
  partsBf16,
  partsFp16,
  residualTermRounded,
  residualSumHalf,
  attentionFp16,
  attentionBf16,
  kvCacheFp16,
  kvCacheBf16,
  // operands
  biasDropped,
  biasDoubled,
  lnWeightDropped,
  lnBiasDropped,
  residualTermDropped,
  residualTermDoubled,
  residualWrongTensor,
  inputWrongTensor,
  rowBroadcast,
  kvOtherLayer,
  // constants
  lnEps,
  lnEpsOutside,
  lnUnbiasedVar,
  softmaxScale,
  rotaryBase,
  rotaryWidth,
  // layout
  rowsShifted,
  elementsShifted,
  inputShifted,
  weightTransposed,
  qkvLayout,
  headsPermuted,
  causalMissing,
  causalOffByOne,
  rotaryGptj,
  rotaryOffset,
  rotaryOffQ,
  rotaryOffK,
  kvPositionsDropped,
  kvPositionsMoved,
  // functions
  geluTanh,
  geluSigmoid,
  relu,
  silu,
  softmaxFp16,
  softmaxBf16,
  softmaxNoRescale,
  // randomness
  dropout,
];
