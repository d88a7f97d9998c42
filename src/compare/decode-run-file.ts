// Our own decode recorded (src/engine/decode-record.ts) as a run file of a generation, and the two-path report's
// summary of its analysis (decode-runs.ts checks it; so does the analysis with AnalyzeOptions.checkDecode).

import type { RecordedDecode } from '../engine/decode-record';
import type { RunFile, RunTensor } from '../model/run-file';
import { rowStep } from '../model/run-generation';
import { PRECISION_FORMATS, type Precision } from '../numeric/precision';
import { neoxSlotOfTap } from '../ops/families';
import type { Metric } from '../run/runspec';
import type { Anatomy } from './causes/anatomy';
import type { CauseVerdict } from './causes/types';
import type { CheckedRows } from './run-rows';
import type { AnalyzeRunsOptions, RunInput } from './runs-input';
import type { RunsReport } from './runs-report';

/** A recorded decode (engine tap name → [positions, width]) as a run file of a generation. */
export function decodeRunFile(
  taps: Map<string, Float32Array>,
  prompt: number[],
  generated: number[],
  label: string,
  precision: Precision = 'fp32',
): RunFile {
  // The values are f32 rounded to the path's storage: its floor is never below one rounding of that.
  const storage = PRECISION_FORMATS[precision].dtype;
  const tokens = [...prompt, ...generated.slice(0, -1)];
  const slots = new Map<string, RunTensor>();
  let bytes = 0;
  for (const [name, data] of taps) {
    slots.set(slotOf(name), { name, dtype: storage, data });
    bytes += data.byteLength;
  }
  return {
    file: label,
    tokens,
    label,
    device: 'this adapter (our decode path)',
    dtype: precision,
    slots,
    ignored: [],
    handoffs: [],
    storage,
    bytes,
    generation: { prefill: prompt.length, generated },
  };
}

/** The run-file slot of an engine tap (resid_mid is the run's ln2_in: the op registry's names). */
const slotOf = neoxSlotOfTap;

/**
 * A recorded decode as the runs analysis's input. `onGpu` (the analysis's oracle is the GPU one): its taps stay
 * where they are, the file's data empty until the analysis loads it (RunInput.resident: only where it reads them
 * on the CPU); else read back now.
 */
export async function decodeRunInput(
  rec: RecordedDecode,
  prompt: number[],
  generated: number[],
  label: string,
  precision: Precision,
  onGpu: boolean,
): Promise<RunInput> {
  if (!onGpu)
    return { file: decodeRunFile(await rec.read(), prompt, generated, label, precision), sha256: null };
  const empty = new Map([...rec.taps.keys()].map((name) => [name, new Float32Array(0)]));
  const file = decodeRunFile(empty, prompt, generated, label, precision);
  file.bytes = [...rec.taps.values()].reduce((n, t) => n + rec.rows * t.width * 4, 0);
  const slots = new Map(
    [...rec.taps].map(([name, t]) => [slotOf(name), { name, buffer: t.buffer, floats: rec.rows * t.width }]),
  );
  let loaded: Promise<void> | null = null;
  const load = () =>
    (loaded ??= rec.read().then((data) => {
      for (const [name, d] of data) file.slots.get(slotOf(name))!.data = d;
    }));
  return { file, sha256: null, resident: { slots, load } };
}

/**
 * Checks one run (the runs analysis, analyze-runs.ts, given by the caller: it imports the analysis); with
 * `other`, a second path's decode over the same tokens, both in one analysis as runs A and B.
 */
export type DecodeChecker = (
  run: RunInput,
  opts: Pick<AnalyzeRunsOptions, 'angles' | 'prefix'> & {
    k: number;
    metric: Metric;
    oracle: 'gpu' | 'cpu';
    metrics: 'gpu' | 'cpu';
    rows?: CheckedRows;
  },
  other?: RunInput,
) => Promise<RunsReport>;

/** The rows a two-path analysis's decode check checks: the decode steps' (the prompt's are the compare's own). */
export function decodeRows(prefill: number): CheckedRows {
  return { from: prefill, note: 'the prompt, checked by the two-path compare' };
}

/** One path's decode checked as a run, in the two-path report (generation.decode). */
export interface DecodeCheck {
  path: string;
  verdict: 'agree' | 'diverged';
  /** Checks run, each over the decode steps' rows (the prompt's rows are the two-path compare's: checkedFrom). */
  checks: number;
  /** The first row checked (the prompt's length) where the prompt's rows were left to the two-path compare. */
  checkedFrom?: number;
  /** The first op whose error is born, with the row where it first passes k × its floor; null when it agrees. */
  born: {
    check: string;
    module: string;
    /** The op in words ("the attention core (rotary, scores, softmax, values)"); absent in older reports. */
    what?: string;
    layer: number | null;
    ratio: number;
    row: number | null;
    /** 0: the prefill; s: decode step s. */
    step: number | null;
  } | null;
  sentence: string;
  /**
   * The cached decode against the same path's whole forward (no cache) over the same tokens: relative L2 of the
   * logits over the checked rows (the decode steps', checkedFrom on; the prefill is an uncached forward of the
   * prompt), its ratio to the logits' floor, and `within` (ratio ≤ k). A correct cached path equals the uncached
   * one to within the floor (ours: bit for bit, ratio 0).
   */
  vsFull?: { relL2: number; ratio: number; within: boolean };
  /**
   * Where the runs analysis could check the born layer only whole (a fused path writes no tap between the ops its
   * kernels join): that layer's ops checked one by one on the decode rows, fused groups whole (decode-ops.ts), and
   * `born` names the op found there. Absent otherwise and in older reports.
   */
  ops?: {
    layer: number;
    checks: { id: string; op: string; what: string; ratio: number; nonFinite: number }[];
  };
  /**
   * At the born op (`born`): the cause that explains its error, scored on the rows from the first decode step on
   * (the variant there, the exact op elsewhere), or that no known cause does; null where the op writes NaN/Inf or
   * nothing is born. The sentence ends with "probable cause: <words>". Absent in older reports.
   */
  cause?: CauseVerdict | null;
  /** Where in the born op's output its error lives (rows, columns, the largest elements); absent as `cause`. */
  anatomy?: Anatomy | null;
}

/** The two-path report's summary of a decode run's analysis (of its run `run`: 'A', or 'B' of a pair). */
export function decodeCheckOf(path: string, report: RunsReport, prefill: number, run = 'A'): DecodeCheck {
  const f = report.findings.find((x) => x.run === run)!;
  const mine = report.checks.filter((x) => x.run === run);
  const c = f.check === null ? null : (mine.find((x) => x.id === f.check) ?? null);
  const row = c?.firstRow ?? null;
  return {
    path,
    verdict: f.diverged ? 'diverged' : 'agree',
    checks: mine.length,
    ...(report.rows ? { checkedFrom: report.rows.from } : {}),
    born: c
      ? {
          check: c.id,
          module: c.module,
          what: c.what,
          layer: c.layer,
          ratio: c.ratio,
          row,
          step: row === null ? null : rowStep(row, prefill).step,
        }
      : null,
    // The runs analysis names its run ("run A (fused path decode), …"); here the path is said beside it.
    sentence: f.sentence.replace(/^run [AB] \([^)]*\),? /, ''),
    // The cause the runs analysis found at its born op; none from a layer checked whole (no op's cause: the two-path
    // analysis checks that layer's ops one by one and asks at the op it finds, decode-ops.ts).
    ...(c && c.op !== 'layer' && f.cause !== undefined
      ? { cause: f.cause ?? null, anatomy: f.anatomy ?? null }
      : {}),
  };
}

/** The cached decode's logits against the whole forward's, over the same rows of each (DecodeCheck.vsFull). */
export function vsFullOf(
  decode: ArrayLike<number>,
  full: ArrayLike<number>,
  floor: number,
  k: number,
): { relL2: number; ratio: number; within: boolean } {
  let num = 0;
  let den = 0;
  for (let i = 0; i < full.length; i++) {
    const e = decode[i] - full[i];
    num += e * e;
    den += full[i] * full[i];
  }
  const relL2 = num === 0 ? 0 : den === 0 ? Number.POSITIVE_INFINITY : Math.sqrt(num / den);
  const ratio = relL2 === 0 ? 0 : floor > 0 ? relL2 / floor : Number.POSITIVE_INFINITY;
  // NaN (a non-finite logit in either) is never within.
  return { relL2, ratio, within: ratio <= k && decode.length === full.length };
}
