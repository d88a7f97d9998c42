// Why the two generated texts part. At the first generated token where the paths choose differently, both paths
// and the exact forward are run (uncached) over the tokens they still share, and the row whose logits made that
// choice is compared: the gap between the two contested candidates on each path against the logits' floor at that
// row. Within k × the floor on both paths, with the fused row itself within the floor of exact, the texts part on
// a near tie that rounding flipped (benign); a fused row past the floor means the step's error was born before the
// choice (a divergence); a cached decode that chose otherwise than its own path's full forward of the same tokens
// puts the error in the decode path (KV cache, decode kernels), which the prompt's checks do not see.
import { readDf } from '../engine/oracle-df';
import { GpuOracle } from '../engine/oracle-gpu';
import { oracleForward } from '../kernels/cpu/forward';
import { type Precision, storageUnitRoundoff } from '../numeric/precision';
import type { AnalysisContext } from './analysis-phases';
import type { OracleInfo } from './oracle-info';
import type { GenerationParting, PartingKind, PartingSide } from './report';

type Row = ArrayLike<number>;

function topTwo(row: Row): { id: number; logit: number }[] {
  let a = -1;
  let b = -1;
  for (let i = 0; i < row.length; i++) {
    const v = row[i];
    if (Number.isNaN(v)) continue;
    if (a < 0 || v > row[a]) {
      b = a;
      a = i;
    } else if (b < 0 || v > row[b]) b = i;
  }
  return [a, b].filter((i) => i >= 0).map((id) => ({ id, logit: row[id] }));
}

function maxAbsDiff(x: Row, y: Row): number {
  let m = 0;
  for (let i = 0; i < x.length; i++) {
    const e = Math.abs(x[i] - y[i]);
    if (!(e <= m)) m = e; // NaN propagates
  }
  return m;
}

function maxAbs(x: Row): number {
  let m = 0;
  for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i]));
  return m;
}

export interface PartingInput {
  step: number;
  promptLength: number;
  refChose: number;
  fusedChose: number;
  /** The logits row (vocabulary wide) of each path's full forward and of the exact forward. */
  refRow: Row;
  fusedRow: Row;
  exactRow: Row;
  precision: Precision;
  k: number;
  /** Decodes one id for the words (the model's tokenizer), or null. */
  tokenText?: (id: number) => string | null;
}

/** The classification of one parting from its three logits rows (pure; partingOf computes the rows). */
export function classifyParting(p: PartingInput): GenerationParting {
  const { refRow, fusedRow, exactRow, refChose: a, fusedChose: b, k } = p;
  const floor = Math.max(maxAbsDiff(refRow, exactRow), storageUnitRoundoff(p.precision) * maxAbs(exactRow));
  const side = (row: Row, own: number, other: number): PartingSide => {
    const top = topTwo(row);
    const error = maxAbsDiff(row, exactRow);
    return {
      chose: own,
      top,
      gap: top.length > 1 ? top[0].logit - top[1].logit : Number.POSITIVE_INFINITY,
      margin: row[own] - row[other],
      error,
      ratio: floor > 0 ? error / floor : error > 0 ? Number.POSITIVE_INFINITY : 0,
      fullAgrees: top[0]?.id === own,
    };
  };
  const reference = side(refRow, a, b);
  const fused = side(fusedRow, b, a);
  const within = (x: number) => Math.abs(x) <= k * floor;
  const nearTie = within(reference.margin) && within(fused.margin) && fused.ratio <= k;
  const kind: PartingKind = nearTie
    ? 'near-tie'
    : !reference.fullAgrees || !fused.fullAgrees
      ? 'decode'
      : 'divergence';
  const step = p.step;
  const row = p.promptLength + step - 1;
  const parting: GenerationParting = {
    step,
    row,
    chosenIn: step === 0 ? 'prefill' : 'decode',
    kind,
    floor,
    k,
    reference,
    fused,
    exact: [a, b].map((id) => ({ id, logit: exactRow[id] })),
    words: '',
  };
  parting.words = partingWords(parting, p.tokenText);
  return parting;
}

const e2 = (x: number) =>
  !Number.isFinite(x)
    ? String(x)
    : Math.abs(x) >= 0.01 && Math.abs(x) < 1e4
      ? x.toPrecision(3)
      : x.toExponential(1);
const times = (x: number) =>
  Number.isFinite(x) ? (x < 100 ? x.toPrecision(2) : x.toExponential(1)) : String(x);

/** "The texts part at generated token 3 (position 22, chosen in decode step 3): …" */
export function partingWords(g: GenerationParting, tokenText?: (id: number) => string | null): string {
  const tok = (id: number) => {
    const t = tokenText?.(id);
    return t == null ? `id ${id}` : `${JSON.stringify(t)} (id ${id})`;
  };
  const where = `generated token ${g.step + 1} (position ${g.row + 1}, chosen ${g.chosenIn === 'prefill' ? "by the prompt's forward" : `in decode step ${g.step}`})`;
  const pick = `the reference picks ${tok(g.reference.chose)}, the fused path ${tok(g.fused.chose)}`;
  const head = `The texts part at ${where}: ${pick}`;
  const f = g.floor;
  if (g.kind === 'near-tie')
    return (
      `${head}. A near tie flipped by rounding (benign): the two candidates are ${e2(Math.abs(g.reference.margin))} apart ` +
      `on the reference path and ${e2(Math.abs(g.fused.margin))} on the fused path, within ${g.k} × the logits' floor ` +
      `(${e2(f)}), and the fused logits there are ${times(g.fused.ratio)} × the floor from exact.`
    );
  if (g.kind === 'decode') {
    const bad = !g.fused.fullAgrees ? g.fused : g.reference;
    const name = bad === g.fused ? 'fused path' : 'reference path';
    return (
      `${head}. The ${name}'s cached decode chose ${tok(bad.chose)} where its own full forward over the same tokens ` +
      `chooses ${tok(bad.top[0]?.id ?? -1)} (by ${e2(bad.gap)}, ${times(bad.gap / f)} × the logits' floor): the error ` +
      'is in the decode path (KV cache, decode kernels), which the checks of the prompt do not see.'
    );
  }
  return (
    `${head}. A divergence: the fused logits there are ${times(g.fused.ratio)} × the logits' floor (${e2(f)}) from ` +
    `exact and the reference's pick leads by ${e2(g.reference.margin)} (${times(g.reference.margin / f)} × the floor): ` +
    "the step's error is born before it (the prompt's checks say where)."
  );
}

/** The logits rows that chose the first new token (the prompt's last row), where the analysis has them. */
export interface PartingRows {
  ref(): Promise<ArrayLike<number>>;
  fused(): Promise<ArrayLike<number>>;
  exact(): Promise<ArrayLike<number>>;
}

/**
 * The parting of two generations that differ first at new token `step`: both paths' full forwards and the
 * oracle's over prompt + the ids they share, in one batch, their last rows read back and classified. At step 0
 * that is the prompt's forward: its rows are taken from `promptRows` when given.
 */
export async function partingOf(
  c: AnalysisContext,
  oracle: Pick<OracleInfo, 'kind'> & { dfFma: boolean },
  refIds: number[],
  fusedIds: number[],
  step: number,
  promptRows?: PartingRows,
): Promise<GenerationParting> {
  const { engine, spec } = c;
  const classify = (refRow: Row, fusedRow: Row, exactRow: Row) =>
    classifyParting({
      step,
      promptLength: c.tokens.length,
      refChose: refIds[step],
      fusedChose: fusedIds[step],
      refRow,
      fusedRow,
      exactRow,
      precision: spec.precision,
      k: spec.k,
      tokenText: engine.tokenizer ? (id) => engine.tokenizer!.decode([id]) : undefined,
    });
  if (step === 0 && promptRows)
    return classify(await promptRows.ref(), await promptRows.fused(), await promptRows.exact());
  const seq = [...c.tokens, ...refIds.slice(0, step)];
  const T = seq.length;
  const V = engine.modelInfo!.config.vocabSize;
  const b = c.newBatch();
  const ref = b.forward(seq, { path: 'reference', precision: spec.precision, taps: 'dump' });
  const fused = b.forward(seq, { path: c.fusedSet, precision: spec.precision, hooks: c.hooks, taps: 'dump' });
  let exactRow: Row;
  let readExact: (() => Promise<Float64Array>) | null = null;
  if (oracle.kind === 'gpu') {
    const { device, pipelines, pool, model } = engine.gpuParts();
    const o = new GpuOracle(device, pipelines, pool, model, {
      dfFma: oracle.dfFma,
      maxBindingBytes: engine.maxBindingBytes,
    });
    const run = o.forward(b.encoder, seq, 'dump');
    b.onRelease(() => run.release());
    readExact = async () => (await readDf(device, run.taps.get('logits')!, T)).slice((T - 1) * V, T * V);
  }
  await b.submit();
  const last = async (run: typeof ref) =>
    (await b.read(run.taps.get('logits')!, T)).slice((T - 1) * V, T * V);
  const refRow = await last(ref);
  const fusedRow = await last(fused);
  if (readExact) exactRow = await readExact();
  else {
    await engine.loadCpuWeights();
    const dump = oracleForward(engine.modelInfo!.config, engine.weights!, seq);
    exactRow = dump.logits.slice((T - 1) * V, T * V);
  }
  return classify(refRow, fusedRow, exactRow);
}
