// Command-line entry (Node, Dawn's WebGPU): `forward` writes the hidden-state dump of a model folder,
// `generate` greedy-decodes a prompt, `compare` writes the divergence report of a RunSpec, `check` exits by
// its verdict. Exit 0 on success (compare, check: the paths agree, prompt and generated text), 1 when compare or
// check finds a divergence (or forward finds non-finite values), 2 with a one-line reason on bad input, 3 when
// the GPU fails. Every error is one line; everything the spec and the config decide is checked before the GPU is
// touched.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { parseTokenIds } from '../model/tokenizer';
import { PRECISIONS, type Precision } from '../numeric/precision';
import { formatVerdict, readSpec, runAnalysis, specModelDir, writeReport } from './compare';
import { compareRunsCommand } from './compare-runs';
import { dumpJsonText, firstNonFinite } from './dump-json';
import { exitCodeFor, formatError } from './exit';
import { CliInputError, checkOutPath, fsReason, quoteUser } from './files';
import { hubEnvOptions, hubSnapshot } from './hub-download';
import { checkLimits, prepareModel } from './prepare';
import { isWorker, runQuietChild, say } from './quiet';

const USAGE = `usage:
  cli forward  (--model DIR | --hub ORG/NAME[@REV]) (--tokens 3,14,15 | --prompt TEXT) --out out.json [--path reference|fused] [--precision fp32|fp16|fp16acc|bf16] [--nonfinite-as-strings]
  cli generate (--model DIR | --hub ORG/NAME[@REV]) (--tokens 3,14,15 | --prompt TEXT) [--n 20] [--json] [--path ...] [--precision ...]
  cli compare  --spec spec.json --out report.json [--model DIR | --hub ORG/NAME[@REV]] [--check-decode]
  cli check    --spec spec.json [--model DIR | --hub ORG/NAME[@REV]] [--check-decode]
  cli compare-runs --model DIR --a A.safetensors [--b B.safetensors] [--out report.json] [--k 10] [--metric relL2]
--model DIR: config.json, model.safetensors (or model.safetensors.index.json and its shards), tokenizer.json;
or a Hugging Face cache folder (models--org--name: the snapshot refs/main names, or snapshots/<commit>).
--hub ORG/NAME[@REV]: a Hub repository at a branch, tag or commit (default main), resolved to a commit and
downloaded into the Hugging Face cache ($HF_HUB_CACHE; $HF_ENDPOINT for another Hub), each file checked
against its sha256; a spec whose model is a Hub URL is fetched the same way when no --model is given.
--memory-budget GiB (any command) caps the GPU memory of the model's weights; without
it a model is refused only when the adapter's buffer limits or its allocation refuse it.
--check-decode records each path's decode steps and checks them op by op as runs (generation.decode).
--verbose (any command) also shows what the GPU driver prints (Dawn and Vulkan loader warnings).
forward refuses (exit 1, nothing written) when the dump holds NaN or Inf, unless --nonfinite-as-strings, which
writes them as the JSON strings "NaN", "Infinity" and "-Infinity".`;

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === undefined || cmd === '--help' || cmd === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return cmd === undefined ? 2 : 0;
  }
  if (cmd === 'compare' || cmd === 'check') return compareCommand(cmd, rest);
  if (cmd === 'compare-runs') return compareRunsCommand(rest, say);
  if (cmd !== 'forward' && cmd !== 'generate')
    throw new CliInputError(
      `unknown command ${quoteUser(cmd)} (expected forward, generate, compare, check or compare-runs; --help for usage)`,
    );
  const { values } = parseArgs({
    args: rest,
    options: {
      model: { type: 'string' },
      hub: { type: 'string' },
      tokens: { type: 'string' },
      prompt: { type: 'string' },
      out: { type: 'string' },
      n: { type: 'string' },
      json: { type: 'boolean' },
      path: { type: 'string' },
      precision: { type: 'string' },
      'nonfinite-as-strings': { type: 'boolean' },
      'memory-budget': { type: 'string' },
    },
    strict: true,
  });
  if (!values.model === !values.hub) throw new CliInputError('give --model DIR or --hub ORG/NAME[@REV]');
  const path = values.path ?? 'reference';
  if (path !== 'reference' && path !== 'fused')
    throw new CliInputError(`--path ${quoteUser(path)}: expected reference or fused`);
  const precision = values.precision ?? 'fp32';
  if (!(PRECISIONS as readonly string[]).includes(precision)) {
    throw new CliInputError(`--precision ${quoteUser(precision)}: expected one of ${PRECISIONS.join(', ')}`);
  }
  const run = { path, precision: precision as Precision } as const;
  if (cmd === 'forward') {
    if (!values.out) throw new CliInputError('--out FILE is required');
    checkOutPath(values.out);
  }
  const n = cmd === 'forward' ? 0 : values.n === undefined ? 20 : Number(values.n);
  if (!Number.isInteger(n) || n < 0 || n > 4096)
    throw new CliInputError(`--n ${quoteUser(values.n ?? '')}: expected an integer 0..4096`);

  const memoryBudgetBytes = parseMemoryBudget(values['memory-budget']);
  // Everything below up to Engine.create runs without the GPU.
  const m = prepareModel(values.model ?? (await hubSnapshot(values.hub!, hubOptions())));
  let ids: number[];
  if (values.tokens !== undefined && values.prompt !== undefined)
    throw new CliInputError('give --tokens or --prompt, not both');
  if (values.tokens !== undefined) {
    try {
      ids = parseTokenIds(values.tokens, m.config.vocabSize);
    } catch (e) {
      throw new CliInputError(`--tokens: ${(e as Error).message}`);
    }
  } else if (values.prompt !== undefined) {
    if (!m.tokenizer)
      throw new CliInputError(`${quoteUser(m.files.name ?? 'model')} has no tokenizer: use --tokens`);
    ids = m.tokenizer.encode(values.prompt);
  } else throw new CliInputError('--tokens or --prompt is required');
  checkLimits(m, { tokens: ids, generate: n });

  const engine = await Engine.create(nodeGpu(), nodeShaderSource(), { memoryBudgetBytes });
  try {
    await engine.loadModel(m.files);
    if (cmd === 'forward') {
      const out = values.out!;
      const { dump } = await engine.forward(ids, run);
      const bad = firstNonFinite(dump);
      if (bad !== null && !values['nonfinite-as-strings']) {
        say(
          `${formatError(`forward: the dump holds ${bad.count} non-finite values (first: ${bad.where} is ${bad.value}); nothing written (--nonfinite-as-strings writes them as strings)`)}\n`,
        );
        return 1;
      }
      try {
        writeFileSync(out, dumpJsonText(dump));
      } catch (e) {
        throw new CliInputError(`--out ${quoteUser(out)}: ${fsReason(e)}`);
      }
      return 0;
    }
    const newIds = await engine.generate(ids, n, undefined, undefined, run);
    const text = m.tokenizer ? m.tokenizer.decode(newIds) : newIds.join(',');
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
    options: {
      spec: { type: 'string' },
      out: { type: 'string' },
      model: { type: 'string' },
      hub: { type: 'string' },
      'memory-budget': { type: 'string' },
      'check-decode': { type: 'boolean' },
    },
    strict: true,
  });
  if (values.model && values.hub)
    throw new CliInputError('give --model DIR or --hub ORG/NAME[@REV], not both');
  if (!values.spec) throw new CliInputError('--spec FILE is required');
  if (cmd === 'compare' && !values.out) throw new CliInputError('--out FILE is required');
  if (values.out) checkOutPath(values.out);
  const spec = readSpec(values.spec);
  const memoryBudgetBytes = parseMemoryBudget(values['memory-budget']);
  const dir = values.hub
    ? await hubSnapshot(values.hub, hubOptions())
    : await specModelDir(spec, values.model, hubOptions());
  const report = await runAnalysis(
    spec,
    dir,
    say,
    { memoryBudgetBytes },
    { checkDecode: values['check-decode'] },
  );
  if (values.out) writeReport(report, values.out);
  process.stdout.write(`${formatVerdict(report)}\n`);
  // Any divergence, of the prompt or of the generated text, exits 1 (compare after writing its report).
  return report.verdict !== 'agree' ? 1 : 0;
}

/** How --hub reaches the Hub: $HF_ENDPOINT etc. (src/cli/hub-download.ts hubEnvOptions); progress on stderr. */
function hubOptions() {
  return hubEnvOptions(process.env, (line: string) => say(line));
}

/** --memory-budget GiB as bytes (undefined when absent); anything but a positive number is bad input. */
function parseMemoryBudget(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const gib = Number(text);
  if (text.trim() === '' || !Number.isFinite(gib) || gib <= 0)
    throw new CliInputError(`--memory-budget ${quoteUser(text)}: expected a positive number of GiB`);
  return gib * 2 ** 30;
}

const argv = process.argv.slice(2);
if (isWorker()) {
  main(argv.filter((a) => a !== '--verbose')).then(
    (code) => process.exit(code),
    (e: unknown) => {
      say(formatError(e));
      process.exit(exitCodeFor(e));
    },
  );
} else {
  void runQuietChild(argv, argv.includes('--verbose')).then((code) => process.exit(code));
}
