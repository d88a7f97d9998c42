// The committed HF fixtures of the Llama family (src/model/testdata/llama, made by tools/llama_fixtures.py) as the
// compare's GPU tests use them: an engine in Node on SwiftShader, a fixture loaded into it, the fixture's prompt, and
// a compare's RunSpec with every fused kernel on.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Engine } from '../engine/engine';
import { ALL_FUSED } from '../engine/fused-kernels';
import type { ModelInfo } from '../engine/types';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { defaultRunSpec, type RunSpec } from '../run/runspec';

export const LLAMA_FIXTURES = 'src/model/testdata/llama';

/** An engine on the Node GPU (SwiftShader in the tests) with the shipped shaders. */
export const fixtureEngine = (): Promise<Engine> => Engine.create(nodeGpu(), nodeShaderSource());

/** The fixture's prompt, as its hf_outputs.json records it. */
export const fixtureTokens = (name: string): number[] =>
  (JSON.parse(readFileSync(join(LLAMA_FIXTURES, name, 'hf_outputs.json'), 'utf8')) as { tokens: number[] })
    .tokens;

/** Loads the fixture's config.json and model.safetensors into the engine. */
export function loadFixture(engine: Engine, name: string): Promise<ModelInfo> {
  const dir = join(LLAMA_FIXTURES, name);
  return engine.loadModel({
    config: readFileSync(join(dir, 'config.json'), 'utf8'),
    weights: new Uint8Array(readFileSync(join(dir, 'model.safetensors'))),
    name,
  });
}

/** A compare of the prompt with every fused kernel on, the faults given, seed 1 and no generation. */
export function fixtureSpec(tokens: number[], faults: RunSpec['faults'] = []): RunSpec {
  return {
    ...defaultRunSpec(),
    model: { kind: 'embedded', id: 'test' },
    prompt: { tokens },
    fused: [...ALL_FUSED],
    faults,
    seed: 1,
    generate: 0,
  };
}
