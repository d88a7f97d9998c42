// Our own decode steps as runs (issue: generation under the microscope): a greedy generation on each path with
// every op's rows of the prefill and of each decode step recorded (src/engine/decode-record.ts), turned into run
// files of all positions and checked by the runs analysis (analyze-runs.ts) — each step's ops re-run exactly from
// their recorded inputs, a finding named by decode step and position. The exact forward of the whole sequence is
// what a correct cached decode computes, so every check of the prompt applies to every step unchanged.
import type { RecordedDecode } from '../engine/decode-record';
import type { Engine } from '../engine/engine';
import type { GenerateOptions } from '../engine/types';
import type { RunFile } from '../model/run-file';
import { type AnalyzeRunsOptions, analyzeRuns } from './analyze-runs';
import { type DecodeChecker, decodeRunFile } from './decode-run-file';
import type { RunsReport } from './runs-report';

export interface DecodeRun {
  path: string;
  ids: number[];
  file: RunFile;
  report: RunsReport;
}

/**
 * Generates `n` ids after `prompt` on each path with its decode recorded, and checks each path's decode as a run
 * (each against the exact forward of its own tokens: the paths' texts may part).
 */
export async function checkDecode(
  engine: Engine,
  prompt: number[],
  n: number,
  paths: { name: string; opts: GenerateOptions }[],
  opts: AnalyzeRunsOptions = {},
): Promise<DecodeRun[]> {
  const recorded: RecordedDecode[] = [];
  try {
    const ids = await engine.generatePaths(
      prompt,
      n,
      paths.map((p) => p.opts),
      undefined,
      opts.signal,
      { recorded },
    );
    const out: DecodeRun[] = [];
    for (const [i, p] of paths.entries()) {
      const file = decodeRunFile(await recorded[i].read(), prompt, ids[i], `${p.name} decode`);
      const report = await analyzeRuns(engine, { file, sha256: null }, null, opts);
      out.push({ path: p.name, ids: ids[i], file, report });
    }
    return out;
  } finally {
    for (const r of recorded) r.release();
  }
}

/** The runs analysis as the two-path analysis's decode checker (AnalyzeOptions.checkDecode). */
export function decodeChecker(engine: Engine): DecodeChecker {
  return (run, opts, other) => analyzeRuns(engine, run, other ?? null, opts);
}
