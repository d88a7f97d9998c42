// `cli compare-runs --model DIR --a A.safetensors [--b B.safetensors] [--out report.json]`: the analysis of one or
// two runs made elsewhere (docs/RUNS.md). Prints the verdict in one line; exit 0 when every run agrees with the
// exact forward, 1 when one diverges, 2 on bad input (the model's found before the GPU is touched, a run's while the
// GPU comes up and said before anything of it), 3 when the GPU fails.
import { parseArgs } from 'node:util';
import { type RunsStream, streamRuns } from '../compare/analyze-runs';
import { familyRunsModel, streamFamilyRuns } from '../compare/family-runs';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { checkSameTokens } from '../model/run-file';
import { METRICS, type Metric } from '../run/runspec';
import { writeJson } from './compare';
import { CliInputError, checkOutPath, quoteUser } from './files';
import { prepareModel } from './prepare';
import { type ReadRun, readRuns, withSha256 } from './run-read';

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
  // The model is checked before anything else; then the GPU and the model come up while both runs are read, and the
  // analysis starts on the first header's tokens and takes each slot as it is read (streamRuns). Bad input in a run
  // is still what is said.
  const m = prepareModel(values.model);
  if (m.modelConfig.family === 'llama')
    return compareFamilyRuns(m, values.a, values.b, { k, metric }, values.out, log);
  const ready = engineUp(m);
  const stream = streamRuns(ready, values.b ? 2 : 1, { k, metric, onProgress: (p) => log(`${p}…`) });
  return compareStreamed(m, ready, stream, values.a, values.b, values.out);
}

/**
 * The runs of a Llama-family model (compare/family-runs.ts), as GPT-NeoX's above: the GPU and the model come up while
 * both files are read, and the analysis takes each slot as it is read (streamFamilyRuns); bad input in a run is
 * still what is said.
 */
async function compareFamilyRuns(
  m: ReturnType<typeof prepareModel>,
  a: string,
  b: string | undefined,
  opts: { k?: number; metric?: Metric },
  out: string | undefined,
  log: (s: string) => void,
): Promise<number> {
  const ready = engineUp(m);
  const stream = streamFamilyRuns(ready.then(familyRunsModel), b ? 2 : 1, {
    ...opts,
    onProgress: (p) => log(`${p}…`),
  });
  return compareStreamed(m, ready, stream, a, b, out);
}

/** The engine with the model loaded (disposed if the load fails); awaited after the runs are read. */
function engineUp(m: ReturnType<typeof prepareModel>): Promise<Engine> {
  const ready = (async () => {
    const engine = await Engine.create(nodeGpu(), nodeShaderSource());
    try {
      await engine.loadModel(m.files);
      return engine;
    } catch (e) {
      engine.dispose();
      throw e;
    }
  })();
  ready.catch(() => undefined); // awaited below, after the runs
  return ready;
}

/**
 * Either family's runs read into its stream while the engine comes up (`ready`), then the report: written to `out`
 * if asked, its sentence printed, 0 when every run agrees.
 */
async function compareStreamed(
  m: ReturnType<typeof prepareModel>,
  ready: Promise<Engine>,
  stream: Pick<RunsStream, 'reader' | 'report' | 'release'>,
  a: string,
  b: string | undefined,
  out: string | undefined,
): Promise<number> {
  // The engine goes once the analysis's buffers are back.
  const settle = () =>
    ready.then(
      async (engine) => {
        await stream.release();
        engine.dispose();
      },
      () => undefined,
    );
  let reads: ReadRun[];
  try {
    // Both files at once, each hashed on a worker thread meanwhile (run-read.ts): one's disk reads overlap the
    // other's decoding, the hashes come in during the analysis.
    reads = await readRuns(
      b
        ? [
            [a, '--a'],
            [b, '--b'],
          ]
        : [[a, '--a']],
      m.modelConfig,
      stream.reader,
    );
  } catch (e) {
    void settle();
    throw e;
  }
  const [ra, rb] = reads;
  let up = false;
  try {
    if (rb) checkSameTokens(ra.run.file, rb.run.file);
    await ready;
    up = true;
    const analysis = await stream.report(ra.run, rb?.run ?? null);
    const report = await withSha256(analysis, reads);
    if (out) writeJson(report, out);
    process.stdout.write(`${report.sentence}\n`);
    return report.verdict === 'agree' ? 0 : 1;
  } finally {
    for (const r of reads) r.stop();
    // Bad input said at once; the engine, once up, goes after the analysis's buffers.
    if (up) await settle();
    else void settle();
  }
}
