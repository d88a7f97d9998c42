// Which fp64-class oracle an analysis ran against, and why: a leaf both report files and the oracle's chooser
// import.

/** The fp64-class oracle of a run: double-float on the GPU, or fp64 in JavaScript. */
export interface OracleInfo {
  kind: 'gpu' | 'cpu';
  /** Why this one, in words (the self-test's verdict, the adapter, or the caller's choice). */
  reason: string;
  /** The double-float self-test on this adapter, when it ran. */
  selfTest: { ok: boolean; worstRelErr: number; failures: string[]; ms: number } | null;
}
