// Test harness for GPU kernels in Node (Dawn on SwiftShader): one device per test file, inputs uploaded,
// outputs poisoned with NaN before the kernel runs, results read back and compared with a tolerance.
import { acquireGpu, type GpuContext } from '../gpu/device';
import { nodeGpu } from '../gpu/node';
import { PipelineCache } from '../gpu/pipelines';
import { type DispatchSpec, Program } from '../gpu/program';
import { readBuffer, uploadBuffer } from '../gpu/readback';
import { nodeShaderSource } from './shaders-node';

export interface Harness {
  ctx: GpuContext;
  device: GPUDevice;
  pipelines: PipelineCache;
  upload(data: Float32Array | Uint32Array): GPUBuffer;
  /** A buffer of n f32 filled with NaN (an unwritten element then fails every comparison). */
  poisoned(n: number): GPUBuffer;
  run(specs: DispatchSpec[]): Promise<void>;
  read(buf: GPUBuffer, n: number): Promise<Float32Array>;
  destroy(): void;
}

export async function createHarness(): Promise<Harness> {
  const ctx = await acquireGpu(nodeGpu());
  const device = ctx.device;
  const pipelines = new PipelineCache(device, nodeShaderSource());
  const made: GPUBuffer[] = [];
  const keep = (b: GPUBuffer) => {
    made.push(b);
    return b;
  };
  return {
    ctx,
    device,
    pipelines,
    upload: (data) => keep(uploadBuffer(device, data, 'input')),
    poisoned: (n) => keep(uploadBuffer(device, new Float32Array(Math.max(n, 1)).fill(Number.NaN), 'output')),
    async run(specs) {
      device.pushErrorScope('validation');
      const program = new Program(device, pipelines);
      for (const s of specs) program.add(s);
      const enc = device.createCommandEncoder();
      program.encode(enc);
      device.queue.submit([enc.finish()]);
      await device.queue.onSubmittedWorkDone();
      program.dispose();
      const err = await device.popErrorScope();
      if (err) throw new Error(`WebGPU validation error: ${err.message}`);
    },
    read: (buf, n) => readBuffer(device, buf, n * 4),
    destroy() {
      for (const b of made) b.destroy();
      device.destroy();
    },
  };
}

export interface CompareResult {
  ok: boolean;
  maxAbs: number;
  maxRatio: number; // max |got - ref| / tol (<= 1 passes)
  report: string;
}

/**
 * Elementwise check |got - ref| <= tol(i) (llm.c validate_result style): NaN/Inf in `got` fail, the first
 * ten mismatches and the worst ratio are reported. `tol` may be a number or a per-element function.
 */
export function compare(
  what: string,
  got: Float32Array,
  ref: ArrayLike<number>,
  tol: number | ((i: number) => number),
  seed?: number,
): CompareResult {
  const lines: string[] = [];
  let bad = 0;
  let maxAbs = 0;
  let maxRatio = 0;
  if (got.length < ref.length) lines.push(`length ${got.length} < ${ref.length}`);
  for (let i = 0; i < ref.length; i++) {
    const g = got[i];
    const r = ref[i];
    const t = typeof tol === 'number' ? tol : tol(i);
    const err = Math.abs(g - r);
    const ratio = Number.isFinite(g) ? err / t : Number.POSITIVE_INFINITY;
    if (Number.isFinite(err)) maxAbs = Math.max(maxAbs, err);
    maxRatio = Math.max(maxRatio, Number.isNaN(ratio) ? Number.POSITIVE_INFINITY : ratio);
    if (!(err <= t) || !Number.isFinite(g)) {
      if (bad < 10)
        lines.push(`  [${i}] got ${g} ref ${r} |err| ${err.toExponential(3)} tol ${t.toExponential(3)}`);
      bad++;
    }
  }
  const ok = bad === 0 && got.length >= ref.length;
  const head = `${what}${seed === undefined ? '' : ` (seed ${seed})`}: ${bad} of ${ref.length} outside tolerance, max |err| ${maxAbs.toExponential(3)}, worst err/tol ${maxRatio.toFixed(3)}`;
  return { ok, maxAbs, maxRatio, report: ok ? head : [head, ...lines].join('\n') };
}

/** Unit roundoff of f32 (2^-24). */
export const U32 = 2 ** -24;

/** Worst-case bound of an n-term f32 dot product: γ_n · Σ|a_i b_i| with γ_n = n·u / (1 − n·u). */
export function dotBound(n: number, sumAbs: number): number {
  const g = (n * U32) / (1 - n * U32);
  return g * sumAbs;
}

/** A fresh random seed for a test run (printed on failure; set KERNEL_SEED to replay). */
export function freshSeed(): number {
  const fixed = process.env.KERNEL_SEED;
  return fixed ? Number(fixed) : (Math.random() * 2 ** 31) >>> 0;
}
