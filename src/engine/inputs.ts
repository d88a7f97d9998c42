// A run's input limits, checked before any GPU work: token ids and their count against the model's config,
// and a generation's length. Each failure is one EngineError line naming what is wrong.
import type { NeoXConfig } from '../numeric/types';
import { EngineError } from './types';

export function checkTokens(cfg: NeoXConfig, tokens: number[]): void {
  if (tokens.length === 0) throw new EngineError('no tokens: the prompt is empty', 'input');
  if (tokens.length > cfg.maxPositionEmbeddings) {
    throw new EngineError(
      `${tokens.length} tokens exceed max_position_embeddings ${cfg.maxPositionEmbeddings}`,
      'input',
    );
  }
  tokens.forEach((t, i) => {
    if (!Number.isInteger(t) || t < 0 || t >= cfg.vocabSize) {
      throw new EngineError(`token ${i} is ${t}: ids must be integers in [0, ${cfg.vocabSize})`, 'input');
    }
  });
}

/** Generation limits: `n` new tokens after `prompt`. */
export function checkGenerate(cfg: NeoXConfig, prompt: number[], n: number): void {
  if (!Number.isInteger(n) || n < 0)
    throw new EngineError(`generation length must be a non-negative integer, got ${n}`, 'input');
  checkTokens(cfg, prompt);
  if (prompt.length + n > cfg.maxPositionEmbeddings) {
    throw new EngineError(
      `prompt (${prompt.length}) + ${n} new tokens exceeds max_position_embeddings ${cfg.maxPositionEmbeddings}`,
      'input',
    );
  }
}

/** Generation on several paths: the prompt and count as checkGenerate, at least one path, a whole chunk size. */
export function checkGeneratePaths(
  cfg: NeoXConfig,
  prompt: number[],
  n: number,
  paths: number,
  chunk: number,
): void {
  checkGenerate(cfg, prompt, n);
  if (paths === 0) throw new EngineError('generation needs at least one path');
  if (!Number.isInteger(chunk) || chunk < 1)
    throw new EngineError(`generation chunk must be a positive integer, got ${chunk}`, 'input');
}
