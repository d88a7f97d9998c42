// The same comparison jobs as GpuMetrics, computed on the CPU by src/compare/metrics.ts after reading the operands
// back. For CPU adapters (SwiftShader), where "reading back" is a memory copy and the reduction kernels, emulated,
// cost more than the loops they replace; on a GPU the analysis uses GpuMetrics. Both give the same answers (counts
// and maxUlp exactly, sums to 1e-6: src/compare/gpu-metrics.test.ts and analyze-oracle.test.ts).
import { readBuffer } from '../gpu/readback';
import type { BitDiffJob, BitDiffOut, CompareJob, CompareOut, Operand, PendingMetrics } from './gpu-metrics';
import { errorHistogram, fullMetrics, perTokenRelL2 } from './metrics';

export class CpuMetrics {
  constructor(private readonly device: GPUDevice) {}

  /** Nothing is recorded: the operands are read after the caller's submit, when read() is called. */
  record(_encoder: GPUCommandEncoder, jobs: CompareJob[], bitDiffs: BitDiffJob[] = []): PendingMetrics {
    const device = this.device;
    const whole = new Map<GPUBuffer, Promise<ArrayBuffer>>();
    const bytesOf = (b: GPUBuffer) => {
      let p = whole.get(b);
      if (!p) {
        p = readBuffer(device, b, b.size).then((f) => f.buffer as ArrayBuffer);
        whole.set(b, p);
      }
      return p;
    };
    const values = async (o: Operand, n: number): Promise<Float32Array | Float64Array> => {
      const buf = await bytesOf(o.buffer);
      const at = o.offset ?? 0;
      if (o.kind === 'f32') return new Float32Array(buf, at * 4, n);
      const pairs = new Float32Array(buf, at * 8, 2 * n);
      const out = new Float64Array(n);
      for (let i = 0; i < n; i++) out[i] = pairs[2 * i] + pairs[2 * i + 1];
      return out;
    };
    const operands = async (j: CompareJob) => {
      if (!j.segments) return { a: await values(j.a, j.n), b: await values(j.b, j.n) };
      const a = new Float64Array(j.n);
      const b = new Float64Array(j.n);
      let at = 0;
      for (const s of j.segments) {
        a.set(await values(s.a, s.n), at);
        b.set(await values(s.b, s.n), at);
        at += s.n;
      }
      return { a, b };
    };
    return {
      async read() {
        const compare: CompareOut[] = [];
        for (const j of jobs) {
          const { a, b } = await operands(j);
          compare.push({
            metrics: fullMetrics(a, b, j.precision),
            perRow: j.rows && !j.segments ? perTokenRelL2(a, b, j.rows, j.n / j.rows) : null,
            histogram: j.histogram ? errorHistogram(a, b) : null,
          });
        }
        const bitDiff: BitDiffOut[] = [];
        for (const d of bitDiffs) {
          const ua = new Uint32Array(await bytesOf(d.a), 0, d.n);
          const ub = new Uint32Array(await bytesOf(d.b), 0, d.n);
          let count = 0;
          let firstIndex = -1;
          for (let i = 0; i < d.n; i++) {
            if (ua[i] !== ub[i]) {
              if (firstIndex < 0) firstIndex = i;
              count++;
            }
          }
          bitDiff.push({ count, firstIndex });
        }
        return { compare, bitDiff };
      },
      release: () => whole.clear(),
    };
  }
}
