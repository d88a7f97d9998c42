// Dispatch-size helpers shared by the launchers.

/** Max workgroups per dimension guaranteed by WebGPU. */
export const MAX_GROUPS = 65535;

/** A 1-D launch of n threads in groups of wg, folded into (x, y) when x alone would exceed the limit.
 * Kernels index with `gid.x + gid.y * num_workgroups.x * WG` and bounds-check against n. */
export function grid1d(n: number, wg: number): [number, number, number] {
  const groups = Math.ceil(n / wg);
  if (groups <= MAX_GROUPS) return [groups, 1, 1];
  const x = MAX_GROUPS;
  return [x, Math.ceil(groups / x), 1];
}

/** One workgroup a row, folded into (x, y) past the limit (kernels take row wid.x + wid.y * num_workgroups.x). */
export function rowGroups(rows: number): [number, number, number] {
  return rows <= MAX_GROUPS ? [rows, 1, 1] : [MAX_GROUPS, Math.ceil(rows / MAX_GROUPS), 1];
}

export function ceilDiv(a: number, b: number): number {
  return Math.ceil(a / b);
}

/** Per-dispatch options every launcher takes: extra override constants (precision modes, fault switches). */
export interface KernelOpts {
  constants?: Record<string, number | boolean>;
}
