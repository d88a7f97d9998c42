// Positions of a dispatch's rows when keys and values live in a KV cache (greedy decoding, src/engine/decode.ts).
// A whole forward over T tokens is { p0: 0, rows: T }: the defaults of every position-aware launcher, which then
// behave exactly as before positions existed.

/** Where the T query rows of a dispatch sit, and how the k/v buffers it reads or writes are laid out. */
export interface KvPositions {
  /** Position of the first row: the dispatch's tokens are at positions p0 .. p0 + T − 1. */
  p0: number;
  /** Rows per head of the k and v buffers, [H, rows, hd] (the cache's capacity): p0 + T <= rows. */
  rows: number;
}

/** The positions of a launch over T rows (a whole forward when `at` is absent), checked. */
export function kvPositions(label: string, T: number, at?: KvPositions): KvPositions {
  const p = at ?? { p0: 0, rows: T };
  if (!Number.isInteger(p.p0) || p.p0 < 0 || !Number.isInteger(p.rows) || p.p0 + T > p.rows) {
    throw new Error(
      `${label}: rows at positions ${p.p0}..${p.p0 + T - 1} do not fit a cache of ${p.rows} rows`,
    );
  }
  return p;
}
