// Command-line entry (Node, Dawn's WebGPU): `forward` writes the hidden-state dump of a model folder,
// `generate` greedy-decodes a prompt, `compare` writes the divergence report of a RunSpec, `check` exits by
// its verdict. Exit 0 on success (check: no layer diverges), 1 when check finds a divergence, 2 with a
// one-line reason on bad input, 3 when the GPU fails.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { PRECISIONS, type Precision } from '../kernels/precision';
import { nodeShaderSource } from '../kernels/shaders-node';
import { ModelLoadError } from '../model/errors';
import { parseTokenIds } from '../model/tokenizer';
import { formatVerdict, modelDirFor, readSpec, runAnalysis, writeReport } from './compare';
import { dumpToJson } from './dump-json';
import { CliInputError, readModelDir } from './model-dir';

const USAGE = `usage:
  cli forward  --model DIR (--tokens 3,14,15 | --prompt TEXT) --out out.json [--path reference|fused] [--precision fp32|fp16|fp16acc|bf16]
  cli generate --model DIR (--tokens 3,14,15 | --prompt TEXT) [--n 20] [--json] [--path ...] [--precision ...]
  cli compare  --spec spec.json --out report.json [--model DIR]
  cli check    --spec spec.json [--model DIR]`;

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === 'compare' || cmd === 'check') return compareCommand(cmd, rest);
  if (cmd !== 'forward' && cmd !== 'generate')
    throw new CliInputError(cmd ? `unknown command '${cmd}'\n${USAGE}` : USAGE);
  const { values } = parseArgs({
    args: rest,
    options: {
      model: { type: 'string' },
      tokens: { type: 'string' },
      prompt: { type: 'string' },
      out: { type: 'string' },
      n: { type: 'string' },
      json: { type: 'boolean' },
      path: { type: 'string' },
      precision: { type: 'string' },
    },
    strict: true,
  });
  if (!values.model) throw new CliInputError('--model DIR is required');
  const path = values.path ?? 'reference';
  if (path !== 'reference' && path !== 'fused')
    throw new CliInputError(`--path ${path}: expected reference or fused`);
  const precision = values.precision ?? 'fp32';
  if (!(PRECISIONS as readonly string[]).includes(precision)) {
    throw new CliInputError(`--precision ${precision}: expected one of ${PRECISIONS.join(', ')}`);
  }
  const run = { path, precision: precision as Precision } as const;
  const files = readModelDir(values.model);
  const engine = await Engine.create(nodeGpu(), nodeShaderSource());
  try {
    const info = await engine.loadModel(files);
    let ids: number[];
    if (values.tokens !== undefined && values.prompt !== undefined)
      throw new CliInputError('give --tokens or --prompt, not both');
    if (values.tokens !== undefined) {
      try {
        ids = parseTokenIds(values.tokens, info.config.vocabSize);
      } catch (e) {
        throw new CliInputError(`--tokens: ${(e as Error).message}`);
      }
    } else if (values.prompt !== undefined) {
      const tok = engine.tokenizer;
      if (!tok) throw new CliInputError(`${info.name} has no tokenizer: use --tokens`);
      ids = tok.encode(values.prompt);
    } else throw new CliInputError('--tokens or --prompt is required');
    if (cmd === 'forward') {
      if (!values.out) throw new CliInputError('--out FILE is required');
      const { dump } = await engine.forward(ids, run);
      writeFileSync(values.out, JSON.stringify(dumpToJson(dump)));
      return 0;
    }
    const n = values.n === undefined ? 20 : Number(values.n);
    if (!Number.isInteger(n) || n < 0 || n > 4096)
      throw new CliInputError(`--n ${values.n}: expected an integer 0..4096`);
    const newIds = await engine.generate(ids, n, undefined, undefined, run);
    const text = engine.tokenizer ? engine.tokenizer.decode(newIds) : newIds.join(',');
    if (values.json) process.stdout.write(`${JSON.stringify({ promptIds: ids, newIds, text })}\n`);
    else process.stdout.write(`${values.prompt ?? ''}${text}\n`);
    return 0;
  } finally {
    engine.dispose();
  }
}

async function compareCommand(cmd: 'compare' | 'check', rest: string[]): Promise<number> {
  const { values } = parseArgs({
    args: rest,
    options: { spec: { type: 'string' }, out: { type: 'string' }, model: { type: 'string' } },
    strict: true,
  });
  if (!values.spec) throw new CliInputError('--spec FILE is required');
  if (cmd === 'compare' && !values.out) throw new CliInputError('--out FILE is required');
  const spec = readSpec(values.spec);
  const report = await runAnalysis(spec, modelDirFor(spec, values.model), (s) =>
    process.stderr.write(`${s}\n`),
  );
  if (values.out) writeReport(report, values.out);
  process.stdout.write(`${formatVerdict(report)}\n`);
  return cmd === 'check' && report.verdict === 'diverged' ? 1 : 0;
}

function isInputError(e: unknown): boolean {
  if (e instanceof CliInputError || e instanceof ModelLoadError) return true;
  if (e instanceof Error && e.name === 'EngineError' && /token|prompt|exceed|length/.test(e.message))
    return true;
  // node:util parseArgs errors
  return (
    e instanceof TypeError &&
    'code' in e &&
    String((e as { code: unknown }).code).startsWith('ERR_PARSE_ARGS')
  );
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    const msg = e instanceof Error ? e.message : String(e);
    process.stderr.write(`error: ${msg.split('\n')[0]}\n`);
    if (msg.includes('\n') && e instanceof CliInputError)
      process.stderr.write(`${msg.split('\n').slice(1).join('\n')}\n`);
    process.exit(isInputError(e) ? 2 : 3);
  },
);
