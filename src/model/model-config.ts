// config.json of any family the explorer reads -> ModelConfig: GPT-NeoX (config.ts) or the Llama family
// (llama-config.ts), chosen by `model_type`. An unknown model_type gets one line naming it and the ones read.

import type { LlamaFlavour, ModelConfig } from '../numeric/types';
import { CONFIG_MAX_DEPTH, isObject, parseConfig } from './config';
import { describeJson, ModelLoadError, quoteName } from './errors';
import { checkJsonDepth, stripBom } from './json-text';
import { LLAMA_FLAVOURS, parseLlamaConfig } from './llama-config';

/** The model_type values read, in the order messages list them. */
export const MODEL_TYPES = ['gpt_neox', ...LLAMA_FLAVOURS] as const;

/** Validates a parsed config.json of any supported family; throws ModelLoadError naming the key at fault. */
export function parseModelConfig(json: unknown, file = 'config.json'): ModelConfig {
  if (!isObject(json)) throw new ModelLoadError(file, `expected a JSON object, found ${describeJson(json)}`);
  const mt = Object.hasOwn(json, 'model_type') ? json.model_type : undefined;
  // No model_type: the GPT-NeoX configs this explorer always read (the classic embedded model's style).
  if (mt === undefined) return { family: 'gpt_neox', ...parseConfig(json, file) };
  if (typeof mt !== 'string') {
    throw new ModelLoadError(file, `'model_type' must be a string, found ${describeJson(mt)}`, 'model_type');
  }
  if (mt === 'gpt_neox') return { family: 'gpt_neox', ...parseConfig(json, file) };
  if ((LLAMA_FLAVOURS as readonly string[]).includes(mt))
    return parseLlamaConfig(json, mt as LlamaFlavour, file);
  throw new ModelLoadError(
    file,
    `model_type ${quoteName(mt)} is not supported (only ${MODEL_TYPES.map((t) => `'${t}'`).join(', ')})`,
    'model_type',
  );
}

/** Parses config.json text of any supported family; malformed JSON becomes a ModelLoadError. */
export function parseModelConfigText(text: string, file = 'config.json'): ModelConfig {
  const body = stripBom(text);
  checkJsonDepth(body, CONFIG_MAX_DEPTH, file);
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch (e) {
    throw new ModelLoadError(file, `not valid JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  return parseModelConfig(json, file);
}
