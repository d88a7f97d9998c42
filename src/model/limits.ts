// Every limit of a run that the model's config decides, checked before the GPU is touched: a run that cannot
// finish is refused in its first millisecond, not after minutes of analysis.

import type { NeoXConfig } from '../numeric/types';
import { InputError } from './errors';

export interface RunShape {
  /** The prompt's token ids. */
  tokens: readonly number[];
  /** Greedy tokens to generate after the prompt (0 = none). */
  generate: number;
  /** Faults with the first layer they are asked for (undefined = drawn from the seed, always in range). */
  faults?: readonly { id: string; fromLayer?: number }[];
}

/** Refuses (InputError, one line) a run that does not fit the model: positions, token ids, fault layers. */
export function checkRunLimits(cfg: NeoXConfig, run: RunShape): void {
  const { tokens, generate } = run;
  if (tokens.length === 0) throw new InputError('the prompt has no tokens');
  const positions = tokens.length + generate;
  // The last generated token is never fed back, but the engine's window holds prompt + generate positions.
  if (positions > cfg.maxPositionEmbeddings) {
    throw new InputError(
      `the prompt (${tokens.length} tokens) plus ${generate} generated tokens needs ${positions} positions, ` +
        `more than the model's max_position_embeddings ${cfg.maxPositionEmbeddings}`,
    );
  }
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (!Number.isInteger(t) || t < 0 || t >= cfg.vocabSize) {
      throw new InputError(
        `prompt token ${i} is ${t}, outside the model's vocabulary (ids 0..${cfg.vocabSize - 1})`,
      );
    }
  }
  for (const f of run.faults ?? []) checkFaultLayer(f, cfg.numLayers);
}

/** Refuses a fault whose first layer is not one of the model's layers (never moved to the last one silently). */
export function checkFaultLayer(f: { id: string; fromLayer?: number }, numLayers: number): void {
  if (f.fromLayer === undefined) return;
  if (!Number.isInteger(f.fromLayer) || f.fromLayer < 0 || f.fromLayer >= numLayers) {
    throw new InputError(
      `fault '${f.id}' starts at layer ${f.fromLayer} but the model has ${numLayers} layers (0..${numLayers - 1})`,
    );
  }
}
