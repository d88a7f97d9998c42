// What the analysis of runs (analyze-runs.ts) takes: its runs and its options — apart, so that the modules that
// hand it runs (our own decode: decode-run-file.ts) name them without importing the analysis.
import type { GpuTap } from '../engine/batch';
import type { DfBuffer } from '../engine/oracle-df';
import type { RotaryAngles } from '../kernels/cpu/rotary-angles';
import type { RunFile } from '../model/run-file';
import type { Metric } from '../run/runspec';
import type { OracleChoice } from './oracle-source';
import type { CheckedRows } from './run-rows';

export interface RunInput {
  file: RunFile;
  /** sha256 of the file's bytes (hex), when the caller hashed it. */
  sha256: string | null;
  /**
   * The file's slots already on the GPU, every row ([T, width] f32, by slot): our own recorded decode. The GPU
   * oracle's route reads them there; the file's data is empty until load() reads them back, which the analysis
   * calls where it needs them on the CPU (the CPU oracle; the why of a born op).
   */
  resident?: { slots: ReadonlyMap<string, GpuTap>; load(): Promise<void> };
}

export interface AnalyzeRunsOptions {
  k?: number;
  metric?: Metric;
  oracle?: OracleChoice;
  metrics?: 'auto' | 'gpu' | 'cpu';
  signal?: AbortSignal;
  onProgress?: (phase: string, done: number, total: number) => void;
  /** Check only the rows from..T−1 (default: every row); `note` says who checked the rows before. */
  rows?: CheckedRows;
  /** The rotary angles the runs were made with (default Hugging Face's fp32 ones; 'exact' for our own decode). */
  angles?: RotaryAngles;
  /**
   * With `rows` from the same row: each layer's exact QKV projection of the rows before ([≥ from, 3d] df, from
   * the GPU oracle's forward over tokens[0..from) with the same angles: a two-path compare's own), so that the
   * exact forward runs on the checked rows only (GpuOracle.forwardFrom).
   */
  prefix?: { from: number; qkv: (layer: number) => DfBuffer };
}
