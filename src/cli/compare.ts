// `cli compare` and `cli check`: run the analysis of a RunSpec and write the report / exit by verdict.

import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { analyze, type Report } from '../compare/analyze';
import { decodeChecker } from '../compare/decode-runs';
import { headlineWords } from '../compare/generation-verdict';
import { describeNonFinite, firstNonFinite } from '../compare/nonfinite';
import { Engine, type EngineOptions, type ModelFiles } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { manifestSha256 } from '../model/shard-index';
import { isShardedSource } from '../model/shard-stream';
import { parseRunSpec, type RunSpec } from '../run/runspec';
import { CliInputError, fsReason, quoteUser, readTextFile } from './files';
import { cliHubUrl, type HubDownloadOptions, hubSnapshot, specHubRef } from './hub-download';
import { checkLimits, prepareModel, promptTokens } from './prepare';

export function readSpec(file: string): RunSpec {
  const what = `--spec ${quoteUser(file)}`;
  const text = readTextFile(file, what);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new CliInputError(`${what}: not valid JSON (${(e as Error).message})`);
  }
  try {
    return parseRunSpec(json);
  } catch (e) {
    throw new CliInputError(`${what}: ${(e as Error).message}`);
  }
}

/** The model folder a spec names: embedded ids live in public/models; file/url models need --model DIR. */
export function modelDirFor(spec: RunSpec, override?: string): string {
  if (override) return override;
  if (spec.model.kind === 'embedded') return resolve('public/models', spec.model.id);
  throw new CliInputError(`the spec's model is a ${spec.model.kind} model: download it and pass --model DIR`);
}

/**
 * The model folder of a spec: --model, the embedded model's folder, or for a Hub URL model (a link made in the
 * page) its commit fetched into the Hugging Face cache from the URL's own host.
 */
export async function specModelDir(
  spec: RunSpec,
  override: string | undefined,
  o: HubDownloadOptions,
): Promise<string> {
  if (override || spec.model.kind !== 'url') return modelDirFor(spec, override);
  // Only from the Hub this CLI uses: a spec file never chooses the host (specHubRef says how to choose it).
  const ref = specHubRef(spec.model.url, o.hubUrl ?? cliHubUrl());
  if (!ref) return modelDirFor(spec, override);
  return hubSnapshot(ref, o);
}

/**
 * Runs a spec's analysis. Everything knowable without the GPU is checked first: the files, the sha256 a
 * file/url spec names, the prompt's tokens, prompt + generate against max_position_embeddings, fault layers.
 */
export async function runAnalysis(
  spec: RunSpec,
  modelDir: string,
  log: (s: string) => void,
  engineOpts: EngineOptions = {},
  o: { checkDecode?: boolean } = {},
): Promise<Report> {
  const m = prepareModel(modelDir);
  if (spec.model.kind !== 'embedded') {
    const sha = await sha256Of(m.files.weights);
    if (sha !== spec.model.sha256) {
      throw new CliInputError(`the weights have sha256 ${sha}, the spec expects ${spec.model.sha256}`);
    }
  }
  const tokens = promptTokens(m, spec.prompt);
  checkLimits(m, { tokens, generate: spec.generate, faults: spec.faults });
  const engine = await Engine.create(nodeGpu(), nodeShaderSource(), engineOpts);
  try {
    await engine.loadModel(m.files);
    return await analyze(engine, spec, tokens, {
      onProgress: (phase) => log(`${phase}…`),
      // Asked for, the decode check runs whatever the text does; otherwise by itself where the generation diverges.
      checkDecode: o.checkDecode || spec.checkDecode ? decodeChecker(engine) : undefined,
      decodeChecker: decodeChecker(engine),
    });
  } finally {
    engine.dispose();
  }
}

/** sha256 (hex) of a stream, read in chunks (the file is never held whole). */
async function sha256OfStream(source: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>, file: string) {
  const h = createHash('sha256');
  try {
    for await (const chunk of source as AsyncIterable<Uint8Array>) h.update(chunk);
  } catch (e) {
    throw new CliInputError(`${file}: ${fsReason(e)}`);
  }
  return h.digest('hex');
}

/** The sha256 a model is known by: of model.safetensors, or of the manifest of its shards (sharded). */
async function sha256Of(weights: ModelFiles['weights']): Promise<string> {
  if (weights instanceof Uint8Array) return createHash('sha256').update(weights).digest('hex');
  if (isShardedSource(weights)) {
    const shas = new Map<string, string>();
    for (const s of weights.shards) shas.set(s.file, await sha256OfStream(s.open(), s.file));
    return manifestSha256(shas);
  }
  return sha256OfStream(weights.open(), 'model.safetensors');
}

/**
 * One line per layer, then the verdict a kernel author reads in their CI log: "agree: …", "diverged: …" or
 * "generation diverged: the prompt agrees …; generation diverges at decode step 1: born at …".
 */
export function formatVerdict(r: Report): string {
  const lines = r.layers.map(
    (l) =>
      `layer ${l.layer}: ${r.metric} ${fmt(l.propagated, r.metric)} vs floor ${fmt(l.floor, r.metric)} (×${l.ratio.toPrecision(3)})` +
      `${l.diverged ? '  DIVERGED' : ''}${l.born ? ' (born here)' : ''}`,
  );
  const nonFinite = firstNonFinite(r);
  if (nonFinite) lines.push(`non-finite: ${describeNonFinite(nonFinite)}`);
  if (r.verdict !== 'diverged') lines.push(headlineWords(r));
  else {
    const blamed = r.bisection?.filter((b) => b.reproduces) ?? [];
    const who = blamed.length
      ? blamed.map((b) => `${b.kernel} from layer ${b.firstLayer}`).join(', ')
      : 'no single fused kernel';
    lines.push(
      `diverged: first divergent layer ${r.firstDivergentLayer ?? '(logits)'}; reproduced by ${who}`,
    );
  }
  if (r.why) lines.push(`why: ${r.why.sentence}`);
  const parting = r.generation?.parting;
  if (parting)
    lines.push(
      `generation: ${parting.kind === 'near-tie' ? 'near tie' : parting.kind} at generated token ${parting.step + 1} — ${parting.words}`,
    );
  else if (r.generation && r.generation.firstDifference === null)
    lines.push(`generation: both paths generate the same ${r.generation.reference.ids.length} tokens`);
  for (const d of r.generation?.decode ?? []) lines.push(`decode (${d.path} path): ${d.sentence}`);
  if (!r.determinism.identical)
    lines.push(
      `nondeterministic: ${r.determinism.differences.map((d) => `${d.tensor} (${d.schedule})`).join(', ')}`,
    );
  return lines.join('\n');
}

function fmt(m: Report['layers'][number]['floor'], metric: Report['metric']): string {
  return Number(m[metric]).toExponential(2);
}

/** Writes the report; non-finite numbers become the strings "NaN", "Infinity", "-Infinity" (never null). */
export function writeReport(r: Report, out: string) {
  writeJson(r, out);
}

/** Writes a report as JSON, non-finite numbers as strings (never null). */
export function writeJson(r: object, out: string) {
  const text = JSON.stringify(
    r,
    (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v),
    2,
  );
  try {
    writeFileSync(out, text);
  } catch (e) {
    throw new CliInputError(`--out ${quoteUser(out)}: ${fsReason(e)}`);
  }
}
