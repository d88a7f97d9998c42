// What a comparison asked of the worker must match before the GPU is touched: the run's model is the one loaded
// (by name, or by the file's sha256), its prompt's token ids are in the vocabulary (or its text has a tokenizer to
// encode it), and every limit the config decides holds.
import type { Engine } from '../engine/engine';
import { checkRunLimits } from '../model/limits';
import type { RunSpec } from '../run/runspec';
import type { LoadedModel } from './api';
import { workerError } from './boundary';

/** The token ids of the run `spec` on the engine's loaded model (`loaded`, as the page knows it), checked. */
export function runTokens(engine: Engine, spec: RunSpec, loaded: LoadedModel | null): number[] {
  const info = engine.modelInfo;
  if (!info || !loaded) throw workerError('model', 'no model is loaded');
  if (spec.model.kind === 'embedded' && spec.model.id !== info.name)
    throw workerError('input', `the run names model '${spec.model.id}' but '${info.name}' is loaded`);
  if (spec.model.kind !== 'embedded' && spec.model.sha256 !== loaded.sha256)
    throw workerError('input', 'the run names a model file other than the one loaded (sha256 differs)');
  let tokens: number[];
  if ('tokens' in spec.prompt) {
    tokens = spec.prompt.tokens;
    const bad = tokens.find((t) => t >= info.config.vocabSize);
    if (bad !== undefined)
      throw workerError(
        'input',
        `token id ${bad} is outside the vocabulary (0..${info.config.vocabSize - 1})`,
      );
  } else {
    if (!engine.tokenizer)
      throw workerError('input', `${info.name} has no tokenizer: give the prompt as token ids`);
    tokens = engine.tokenizer.encode(spec.prompt.text);
  }
  // Every limit the config decides (positions, token ids, fault layers), before the GPU is touched.
  checkRunLimits(info.config, { tokens, generate: spec.generate, faults: spec.faults });
  return tokens;
}
