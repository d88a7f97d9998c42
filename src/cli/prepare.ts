// Everything the CLI can check before the GPU is touched: the model folder's files parsed and validated, the
// prompt encoded, and every limit of the run that the config decides.
import type { ModelFiles } from '../engine/engine';
import { sharedDims } from '../engine/family-llama';
import { checkRunLimits, type RunShape } from '../model/limits';
import { parseModelConfigText } from '../model/model-config';
import { parseTokenizerText, type Tokenizer } from '../model/tokenizer';
import type { ModelConfig, NeoXConfig } from '../numeric/types';
import { CliInputError, quoteUser } from './files';
import { readModelDir } from './model-dir';

export interface PreparedModel {
  files: ModelFiles;
  /** GPT-NeoX's config, or the dimensions a Llama-family model shares with it (engine/family-llama.ts). */
  config: NeoXConfig;
  /** The config as read, of either family. */
  modelConfig: ModelConfig;
  tokenizer: Tokenizer | null;
}

/** Reads and parses a model folder (config and tokenizer; the weights are checked by the engine's loader). */
export function prepareModel(dir: string): PreparedModel {
  const files = readModelDir(dir);
  const modelConfig = parseModelConfigText(files.config);
  const config = modelConfig.family === 'llama' ? sharedDims(modelConfig) : modelConfig;
  const tokenizer = files.tokenizer === undefined ? null : parseTokenizerText(files.tokenizer);
  return { files, config, modelConfig, tokenizer };
}

/** The prompt's token ids from text (needs the tokenizer) or given ids. */
export function promptTokens(m: PreparedModel, prompt: { text: string } | { tokens: number[] }): number[] {
  if ('tokens' in prompt) return prompt.tokens;
  if (!m.tokenizer)
    throw new CliInputError(`${quoteUser(m.files.name ?? 'model')} has no tokenizer.json: give token ids`);
  return m.tokenizer.encode(prompt.text);
}

/** Refuses a run that does not fit the model, before any GPU work (InputError, exit 2). */
export function checkLimits(m: PreparedModel, run: RunShape): void {
  checkRunLimits(m.config, run);
}
