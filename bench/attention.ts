// Attention benchmark: the flash-attention kernel at several query/key tile shapes against the three
// reference kernels (scores, softmax, weighted values) on the same q, k, v — for choosing the defaults on a
// real GPU. GPU time per call from timestamp queries (wall clock when absent).
import type { PipelineCache } from '../src/gpu/pipelines';
import { attnScores, attnValues, softmaxCausal } from '../src/kernels/attention';
import { flashAttention, flashWorkgroupBytes } from '../src/kernels/flash-attention';
import { timeDispatch } from './gemm';

export interface AttentionRow {
  H: number;
  T: number;
  hd: number;
  kernel: string;
  ms: number;
  skipped?: string;
}

const CONFIGS: [number, number][] = [
  [16, 8],
  [32, 8],
  [8, 16],
  [16, 16],
  [32, 4],
  [64, 4],
  [8, 32],
];

export async function benchAttention(
  device: GPUDevice,
  pipelines: PipelineCache,
  shapes: { H: number; T: number; hd: number }[],
  reps = 20,
): Promise<AttentionRow[]> {
  const rows: AttentionRow[] = [];
  for (const { H, T, hd } of shapes) {
    const mk = (floats: number) =>
      device.createBuffer({ size: floats * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    const fill = (b: GPUBuffer, n: number) =>
      device.queue.writeBuffer(
        b,
        0,
        Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37)),
      );
    const [q, k, v] = [mk(H * T * hd), mk(H * T * hd), mk(H * T * hd)];
    for (const b of [q, k, v]) fill(b, H * T * hd);
    const ctx = mk(T * H * hd);
    const s = mk(H * T * T);
    const p = mk(H * T * T);
    try {
      let ref = 0;
      for (const spec of [
        attnScores('scores', { q, k, s }, H, T, hd),
        softmaxCausal('probs', { s, p }, H, T),
        attnValues('ctx', { p, v, ctx }, H, T, hd),
      ]) {
        ref += (await timeDispatch(device, pipelines, spec, reps)).seconds * 1e3;
      }
      rows.push({ H, T, hd, kernel: 'reference (3 kernels)', ms: ref });
      for (const [BQ, BK] of CONFIGS) {
        const kernel = `flash BQ=${BQ} BK=${BK}`;
        const bytes = flashWorkgroupBytes(BQ, BK, hd);
        if (
          BQ * BK > device.limits.maxComputeInvocationsPerWorkgroup ||
          bytes > device.limits.maxComputeWorkgroupStorageSize
        ) {
          rows.push({ H, T, hd, kernel, ms: Number.NaN, skipped: 'over the device limits' });
          continue;
        }
        try {
          const spec = flashAttention('flash', { q, k, v, ctx }, H, T, hd, { constants: { BQ, BK } });
          rows.push({
            H,
            T,
            hd,
            kernel,
            ms: (await timeDispatch(device, pipelines, spec, reps)).seconds * 1e3,
          });
        } catch (e) {
          rows.push({ H, T, hd, kernel, ms: Number.NaN, skipped: (e as Error).message.slice(0, 80) });
        }
      }
    } finally {
      for (const b of [q, k, v, ctx, s, p]) b.destroy();
    }
  }
  return rows;
}
