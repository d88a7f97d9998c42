// `cli compare-runs --model DIR --a A.safetensors [--b B.safetensors] [--out report.json]`: the analysis of one or
// two runs made elsewhere (docs/RUNS.md). Prints the verdict in one line; exit 0 when every run agrees with the
// exact forward, 1 when one diverges, 2 on bad input (found before the GPU is touched), 3 when the GPU fails.
import { parseArgs } from 'node:util';
import { analyzeRuns } from '../compare/analyze-runs';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { checkSameTokens } from '../model/run-file';
import { METRICS, type Metric } from '../run/runspec';
import { writeJson } from './compare';
import { CliInputError, checkOutPath, quoteUser } from './files';
import { prepareModel } from './prepare';
import { readRuns, withSha256 } from './run-read';

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
  // Both files at once, each hashed on a worker thread meanwhile (run-read.ts): one's disk reads overlap the other's
  // decoding, the hashes come in during the analysis.
  const reads = await readRuns(
    values.b
      ? [
          [values.a, '--a'],
          [values.b, '--b'],
        ]
      : [[values.a, '--a']],
    m.config,
  );
  const [a, b] = reads;
  try {
    if (b) checkSameTokens(a.run.file, b.run.file);
    const engine = await Engine.create(nodeGpu(), nodeShaderSource());
    try {
      await engine.loadModel(m.files);
      const analysis = await analyzeRuns(engine, a.run, b?.run ?? null, {
        k,
        metric,
        onProgress: (p) => log(`${p}…`),
      });
      const report = await withSha256(analysis, reads);
      if (values.out) writeJson(report, values.out);
      process.stdout.write(`${report.sentence}\n`);
      return report.verdict === 'agree' ? 0 : 1;
    } finally {
      engine.dispose();
    }
  } finally {
    for (const r of reads) r.stop();
  }
}
