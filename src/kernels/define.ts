// How a launcher states its kernel and its dispatch (STYLE.md 3): the kernel's bindings once, as a table of names
// and kinds after the 'params' uniform a launched kernel starts with, and a dispatch from the launcher's constants,
// buffers, params and grid. A kernel's name is its WGSL file under shaders/ without '.wgsl'.
import type { BindingKind, KernelDef, OverrideConstants } from '../gpu/pipelines';
import { type DispatchSpec, paramsBytes } from '../gpu/program';
import { grid1d, type KernelOpts } from './grid';

/** The values of a params struct, as paramsBytes packs them. */
export type DispatchParams = Parameters<typeof paramsBytes>[0];

/** The kernel of shaders/<name>.wgsl (after `includes`): binding 'params' (uniform), then `bindings` in order. */
export function kernelOf(
  name: string,
  includes: readonly string[] | null,
  bindings: Record<string, Exclude<BindingKind, 'uniform'>>,
): KernelDef {
  return {
    name,
    file: `${name}.wgsl`,
    ...(includes ? { includes } : {}),
    bindings: [
      { name: 'params', kind: 'uniform' },
      ...Object.entries(bindings).map(([binding, kind]) => ({ name: binding, kind })),
    ],
  };
}

/** One dispatch of `kernel`: its override constants, buffers by binding name, params struct (packed) and grid. */
export function dispatchOf(
  label: string,
  kernel: KernelDef,
  constants: OverrideConstants,
  buffers: DispatchSpec['buffers'],
  params: DispatchParams,
  workgroups: DispatchSpec['workgroups'],
): DispatchSpec {
  return { label, kernel, constants, buffers, params: paramsBytes(params), workgroups };
}

/** A 1-D dispatch of `kernel`: n threads in workgroups of WG (its WG override), then the caller's constants. */
export function dispatch1d(
  label: string,
  kernel: KernelDef,
  WG: number,
  n: number,
  opts: KernelOpts,
  buffers: DispatchSpec['buffers'],
  params: DispatchParams,
): DispatchSpec {
  return dispatchOf(label, kernel, { WG, ...opts.constants }, buffers, params, grid1d(n, WG));
}

/** A launcher over heads: buffers `B`, H heads, T rows, head size hd, the caller's options, then `More`. */
export type HeadsLauncher<B, More extends unknown[] = []> = (
  label: string,
  b: B,
  H: number,
  T: number,
  hd: number,
  opts?: KernelOpts,
  ...more: More
) => DispatchSpec;

/** The launcher of an elementwise kernel over n elements: params [n], one thread an element. */
export function elementwise<B extends DispatchSpec['buffers']>(kernel: KernelDef, WG: number) {
  return (label: string, b: B, n: number, opts: KernelOpts = {}): DispatchSpec =>
    dispatch1d(label, kernel, WG, n, opts, b, [n]);
}
