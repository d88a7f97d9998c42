// The GPU kernel test harness on any device (Node's Dawn in the kernel tests, the page's worker for a kernel
// written in the explorer): inputs uploaded, outputs poisoned with NaN before the kernel runs, results read
// back and compared elementwise with a tolerance (llm.c validate_result style). No Node or DOM imports here.
import type { PipelineCache } from '../gpu/pipelines';
import { type DispatchSpec, Program } from '../gpu/program';
import { readBuffer, uploadBuffer } from '../gpu/readback';
import { gammaF32 } from '../numeric/round';

export interface DeviceHarness {
  device: GPUDevice;
  pipelines: PipelineCache;
  upload(data: Float32Array | Uint32Array): GPUBuffer;
  /** A buffer of n f32 filled with NaN (an unwritten element then fails every comparison). */
  poisoned(n: number): GPUBuffer;
  run(specs: DispatchSpec[]): Promise<void>;
  read(buf: GPUBuffer, n: number): Promise<Float32Array>;
  /** Destroys every buffer this harness made (the device stays). */
  release(): void;
}

/** A harness on an existing device and pipeline cache. */
export function deviceHarness(device: GPUDevice, pipelines: PipelineCache): DeviceHarness {
  const made: GPUBuffer[] = [];
  const keep = (b: GPUBuffer) => {
    made.push(b);
    return b;
  };
  return {
    device,
    pipelines,
    upload: (data) => keep(uploadBuffer(device, data, 'input')),
    poisoned: (n) => keep(uploadBuffer(device, new Float32Array(Math.max(n, 1)).fill(Number.NaN), 'output')),
    async run(specs) {
      device.pushErrorScope('validation');
      const program = new Program(device, pipelines);
      let thrown: unknown = null;
      try {
        for (const s of specs) program.add(s);
        const enc = device.createCommandEncoder();
        program.encode(enc);
        device.queue.submit([enc.finish()]);
        await device.queue.onSubmittedWorkDone();
      } catch (e) {
        thrown = e;
      } finally {
        program.dispose();
      }
      const err = await device.popErrorScope();
      if (thrown) throw thrown;
      if (err) throw new Error(`WebGPU validation error: ${err.message}`);
    },
    read: (buf, n) => readBuffer(device, buf, n * 4),
    release() {
      for (const b of made) b.destroy();
      made.length = 0;
    },
  };
}

export interface CompareResult {
  ok: boolean;
  maxAbs: number;
  maxRatio: number; // max |got - ref| / tol (<= 1 passes)
  /** Elements outside tolerance (NaN/Inf in `got` included). */
  bad: number;
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
    const ratio = !Number.isFinite(g) ? Number.POSITIVE_INFINITY : err === 0 ? 0 : err / t;
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
  return { ok, maxAbs, maxRatio, bad, report: ok ? head : [head, ...lines].join('\n') };
}

/** Unit roundoff of f32 (2^-24). */
export { U32 } from '../numeric/round';

/** Worst-case bound of an n-term f32 dot product: γ_n · Σ|a_i b_i| with γ_n = n·u / (1 − n·u). */
export function dotBound(n: number, sumAbs: number): number {
  return gammaF32(n) * sumAbs;
}
