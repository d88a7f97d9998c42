// Attention benchmark: the flash-attention kernel at several tile shapes against the three reference kernels
// (scores, softmax, weighted values) on the same q, k, v — for choosing the defaults on a real GPU. GPU time
// per call from timestamp queries (wall clock when absent). Each flash configuration is also checked: its
// max |ctx − reference ctx| and a hash of its ctx bits (equal hashes for equal BK: bit-identical for any BQ).
// On the H200 (Dawn/Vulkan) a pass's timestamps come in steps of ~65.5 µs, so at 20 reps the per-call times
// move in steps of ~3.3 µs: differences of one step are noise.
//
// Standalone: bundle with esbuild to a file named attention.mjs (or `npx tsx bench/attention.ts`), then
//   node attention.mjs [--reps R] [--json FILE]
// On a machine without a GPU: VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json (tiny shapes; a
// sanity check, never a claim).
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acquireGpu } from '../src/gpu/device';
import { nodeGpu } from '../src/gpu/node';
import { type OverrideConstants, PipelineCache } from '../src/gpu/pipelines';
import type { DispatchSpec } from '../src/gpu/program';
import { readBuffer } from '../src/gpu/readback';
import { attnScores, attnValues, softmaxCausal } from '../src/kernels/attention';
import {
  FLASH_KEY_CHUNK,
  flashAttention,
  flashPasses,
  flashTiles,
  flashWorkgroupBytes,
} from '../src/kernels/flash-attention';
import { nodeShaderSource } from '../src/kernels/shaders-node';
import { timeDispatch } from './gemm';

export interface AttentionRow {
  H: number;
  T: number;
  hd: number;
  kernel: string;
  ms: number;
  /** Flash only: max |ctx − the reference kernels' ctx|. */
  maxAbsDiff?: number;
  /** Flash only: FNV-1a hash of the ctx bits. */
  bits?: string;
  skipped?: string;
}

/** Tile configurations timed besides the defaults: [BQ, BK] and extra override constants. */
export const CONFIGS: Array<{ BQ: number; BK: number; extra?: OverrideConstants }> = [
  { BQ: 32, BK: 32, extra: { PREFETCH: false } },
  { BQ: 24, BK: 32 },
  { BQ: 16, BK: 32 },
  { BQ: 16, BK: 32, extra: { PREFETCH: false } },
  { BQ: 8, BK: 32 },
  { BQ: 32, BK: 24 },
  { BQ: 48, BK: 16 },
  { BQ: 32, BK: 16 },
  { BQ: 16, BK: 16 },
  { BQ: 32, BK: 8 },
  { BQ: 64, BK: 8 },
  { BQ: 128, BK: 8 },
];

function configName(c: { BQ: number; BK: number; extra?: OverrideConstants }): string {
  const extra = Object.entries(c.extra ?? {}).map(([k, v]) => ` ${k}=${v}`);
  return `flash BQ=${c.BQ} BK=${c.BK}${extra.join('')}`;
}

function fnv1a(a: Float32Array): string {
  const u = new Uint32Array(a.buffer, a.byteOffset, a.length);
  let h = 0x811c9dc5;
  for (let i = 0; i < u.length; i++) h = Math.imul(h ^ u[i], 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

export async function benchAttention(
  device: GPUDevice,
  pipelines: PipelineCache,
  shapes: { H: number; T: number; hd: number }[],
  reps = 20,
  configs = CONFIGS,
): Promise<AttentionRow[]> {
  const rows: AttentionRow[] = [];
  for (const { H, T, hd } of shapes) {
    const mk = (floats: number) =>
      device.createBuffer({
        size: floats * 4,
        usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
      });
    const fill = (b: GPUBuffer, n: number, salt: number) =>
      device.queue.writeBuffer(
        b,
        0,
        Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37 + salt)),
      );
    const [q, k, v] = [mk(H * T * hd), mk(H * T * hd), mk(H * T * hd)];
    [q, k, v].forEach((b, i) => {
      fill(b, H * T * hd, i);
    });
    const ctx = mk(T * H * hd);
    const s = mk(H * T * T);
    const p = mk(H * T * T);
    const read = (b: GPUBuffer) => readBuffer(device, b, T * H * hd * 4);
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
      const expected = await read(ctx);
      const time = async (kernel: string, spec: DispatchSpec) => {
        device.queue.writeBuffer(ctx, 0, new Float32Array(T * H * hd).fill(Number.NaN));
        const ms = (await timeDispatch(device, pipelines, spec, reps)).seconds * 1e3;
        const got = await read(ctx);
        let maxAbsDiff = 0;
        for (let i = 0; i < got.length; i++) {
          const d = Math.abs(got[i] - expected[i]);
          maxAbsDiff = Number.isNaN(d) ? Number.POSITIVE_INFINITY : Math.max(maxAbsDiff, d);
        }
        rows.push({ H, T, hd, kernel, ms, maxAbsDiff, bits: fnv1a(got) });
      };
      const def = flashTiles(hd);
      await time(
        `flash (defaults BQ=${def.BQ} BK=${def.BK})`,
        flashAttention('flash', { q, k, v, ctx }, H, T, hd),
      );
      for (const c of configs) {
        const kernel = configName(c);
        const threads = c.BQ * (c.BK / FLASH_KEY_CHUNK);
        if (
          threads > device.limits.maxComputeInvocationsPerWorkgroup ||
          flashWorkgroupBytes(c.BQ, c.BK, hd, flashPasses(hd)) > device.limits.maxComputeWorkgroupStorageSize
        ) {
          rows.push({ H, T, hd, kernel, ms: Number.NaN, skipped: 'over the device limits' });
          continue;
        }
        try {
          const constants = { BQ: c.BQ, BK: c.BK, ...c.extra };
          await time(kernel, flashAttention('flash', { q, k, v, ctx }, H, T, hd, { constants }));
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

export function formatAttention(rows: AttentionRow[]): string {
  return rows
    .map((r) => {
      const head = `attention H=${r.H} T=${r.T} hd=${r.hd} ${r.kernel}`;
      if (r.skipped) return `${head}: skipped (${r.skipped})`;
      const check = r.bits ? `  max|diff| ${r.maxAbsDiff?.toExponential(2)}  bits ${r.bits}` : '';
      return `${head}: ${r.ms.toFixed(4)} ms${check}`;
    })
    .join('\n');
}

/** The standalone command line (see the header). */
export async function attentionBenchMain(argv: string[]): Promise<void> {
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const ctx = await acquireGpu(nodeGpu());
  const { device, adapter } = ctx;
  const soft = /swiftshader/i.test(`${adapter.vendor} ${adapter.architecture} ${adapter.description}`);
  const reps = Number(value('--reps') ?? (soft ? 2 : 20));
  const pipelines = new PipelineCache(device, nodeShaderSource());
  console.log(`adapter: ${adapter.vendor} ${adapter.architecture} ${adapter.description}`.trim());
  console.log(`timestamp-query: ${ctx.features.timestampQuery}, reps ${reps}`);
  const shapes = soft
    ? [{ H: 2, T: 40, hd: 30 }]
    : [
        { H: 8, T: 128, hd: 64 },
        { H: 8, T: 512, hd: 64 },
        { H: 16, T: 512, hd: 64 },
      ];
  const rows = await benchAttention(device, pipelines, shapes, reps);
  console.log(formatAttention(rows));
  const json = value('--json');
  if (json) writeFileSync(json, JSON.stringify({ adapter, rows }, null, 2));
  device.destroy();
}

const self = fileURLToPath(import.meta.url);
// Standalone only (bench/attention.ts or a bundle named attention.mjs), not inside the bench runner's bundle.
if (process.argv[1] && resolve(process.argv[1]) === self && /attention\.(ts|mjs)$/.test(self)) {
  attentionBenchMain(process.argv.slice(2)).then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
