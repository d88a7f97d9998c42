// `cli compare-runs --model DIR --a A.safetensors [--b B.safetensors] [--out report.json]`: the analysis of one or
// two runs made elsewhere (docs/RUNS.md). Prints the verdict in one line; exit 0 when every run agrees with the
// exact forward, 1 when one diverges, 2 on bad input (found before the GPU is touched), 3 when the GPU fails.
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import { analyzeRuns, type RunInput } from '../compare/analyze-runs';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { checkSameTokens, readRunFile } from '../model/run-file';
import { nodeFileStream } from '../model/stream-node';
import type { NeoXConfig } from '../numeric/types';
import { METRICS, type Metric } from '../run/runspec';
import { writeJson } from './compare';
import { CliInputError, checkOutPath, fsReason, quoteUser } from './files';
import { prepareModel } from './prepare';

/** Streams a run file from disk (hashing it on the way), after checking it is a regular file. */
async function readRun(path: string, flag: string, cfg: NeoXConfig): Promise<RunInput> {
  const what = `${flag} ${quoteUser(path)}`;
  let size: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new CliInputError(`${what}: is not a regular file`);
    size = st.size;
  } catch (e) {
    if (e instanceof CliInputError) throw e;
    throw new CliInputError(`${what}: ${fsReason(e)}`);
  }
  const hash = createHash('sha256');
  async function* hashed() {
    for await (const chunk of nodeFileStream(path)) {
      hash.update(chunk);
      yield chunk;
    }
  }
  try {
    const file = await readRunFile(hashed(), size, cfg, { file: basename(path) });
    return { file, sha256: hash.digest('hex') };
  } catch (e) {
    if (typeof (e as { kind?: unknown })?.kind === 'string') throw e;
    throw new CliInputError(`${what}: ${fsReason(e)}`);
  }
}

export async function compareRunsCommand(rest: string[], log: (s: string) => void): Promise<number> {
  const { values } = parseArgs({
    args: rest,
    options: {
      model: { type: 'string' },
      a: { type: 'string' },
      b: { type: 'string' },
      out: { type: 'string' },
      k: { type: 'string' },
      metric: { type: 'string' },
    },
    strict: true,
  });
  if (!values.model) throw new CliInputError('--model DIR is required');
  if (!values.a) throw new CliInputError('--a RUN.safetensors is required');
  if (values.out) checkOutPath(values.out);
  const k = values.k === undefined ? undefined : Number(values.k);
  if (k !== undefined && !(Number.isFinite(k) && k >= 1))
    throw new CliInputError(`--k ${quoteUser(values.k!)}: expected a number ≥ 1`);
  const metric = values.metric as Metric | undefined;
  if (metric !== undefined && !(METRICS as readonly string[]).includes(metric))
    throw new CliInputError(`--metric ${quoteUser(metric)}: expected one of ${METRICS.join(', ')}`);
  // Everything up to Engine.create runs without the GPU: the model, both runs, their tokens.
  const m = prepareModel(values.model);
  // Both files at once: one's disk reads overlap the other's parsing and hashing.
  const [a, b] = await Promise.all([
    readRun(values.a, '--a', m.config),
    values.b ? readRun(values.b, '--b', m.config) : null,
  ]);
  if (b) checkSameTokens(a.file, b.file);
  const engine = await Engine.create(nodeGpu(), nodeShaderSource());
  try {
    await engine.loadModel(m.files);
    const report = await analyzeRuns(engine, a, b, { k, metric, onProgress: (p) => log(`${p}…`) });
    if (values.out) writeJson(report, values.out);
    process.stdout.write(`${report.sentence}\n`);
    return report.verdict === 'agree' ? 0 : 1;
  } finally {
    engine.dispose();
  }
}
