// `cli compare` and `cli check`: run the analysis of a RunSpec and write the report / exit by verdict.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { analyze, type Report } from '../compare/analyze';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { parseRunSpec, type RunSpec } from '../run/runspec';
import { CliInputError, readModelDir } from './model-dir';

export function readSpec(file: string): RunSpec {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new CliInputError(`--spec ${file}: cannot read the file`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new CliInputError(`--spec ${file}: not valid JSON (${(e as Error).message})`);
  }
  try {
    return parseRunSpec(json);
  } catch (e) {
    throw new CliInputError(`--spec ${file}: ${(e as Error).message}`);
  }
}

/** The model folder a spec names: embedded ids live in public/models; file/url models need --model DIR. */
export function modelDirFor(spec: RunSpec, override?: string): string {
  if (override) return override;
  if (spec.model.kind === 'embedded') return resolve('public/models', spec.model.id);
  throw new CliInputError(`the spec's model is a ${spec.model.kind} model: download it and pass --model DIR`);
}

export async function runAnalysis(
  spec: RunSpec,
  modelDir: string,
  log: (s: string) => void,
): Promise<Report> {
  const files = readModelDir(modelDir);
  if (spec.model.kind !== 'embedded') {
    const sha = createHash('sha256').update(files.weights).digest('hex');
    if (sha !== spec.model.sha256) {
      throw new CliInputError(`model.safetensors has sha256 ${sha}, the spec expects ${spec.model.sha256}`);
    }
  }
  const engine = await Engine.create(nodeGpu(), nodeShaderSource());
  try {
    const info = await engine.loadModel(files);
    let tokens: number[];
    if ('tokens' in spec.prompt) {
      tokens = spec.prompt.tokens;
      const bad = tokens.find((t) => t >= info.config.vocabSize);
      if (bad !== undefined)
        throw new CliInputError(`prompt token ${bad} is outside the vocabulary (${info.config.vocabSize})`);
    } else {
      if (!engine.tokenizer) throw new CliInputError(`${info.name} has no tokenizer: give prompt.tokens`);
      tokens = engine.tokenizer.encode(spec.prompt.text);
    }
    return await analyze(engine, spec, tokens, { onProgress: (phase) => log(`${phase}…`) });
  } finally {
    engine.dispose();
  }
}

/** One line per layer: the verdict a kernel author reads in their CI log. */
export function formatVerdict(r: Report): string {
  const lines = r.layers.map(
    (l) =>
      `layer ${l.layer}: ${r.metric} ${fmt(l.propagated, r.metric)} vs floor ${fmt(l.floor, r.metric)} (×${l.ratio.toPrecision(3)})` +
      `${l.diverged ? '  DIVERGED' : ''}${l.born ? ' (born here)' : ''}`,
  );
  if (r.verdict === 'agree') lines.push(`agree: no layer exceeds ${r.k} × the noise floor`);
  else {
    const blamed = r.bisection?.filter((b) => b.reproduces) ?? [];
    const who = blamed.length
      ? blamed.map((b) => `${b.kernel} from layer ${b.firstLayer}`).join(', ')
      : 'no single fused kernel';
    lines.push(
      `diverged: first divergent layer ${r.firstDivergentLayer ?? '(logits)'}; reproduced by ${who}`,
    );
  }
  if (!r.determinism.identical)
    lines.push(
      `nondeterministic: ${r.determinism.differences.map((d) => `${d.tensor} (${d.schedule})`).join(', ')}`,
    );
  return lines.join('\n');
}

function fmt(m: Report['layers'][number]['floor'], metric: Report['metric']): string {
  return Number(m[metric]).toExponential(2);
}

export function writeReport(r: Report, out: string) {
  writeFileSync(
    out,
    JSON.stringify(r, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v), 2),
  );
}
