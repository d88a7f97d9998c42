// GEMM throughput: the fused linear core (linearBias without bias, shaders/common/gemm_core.wgsl) vs the
// reference linear (shaders/reference/linear.wgsl, 16×16 tiles, one output per thread), y = x·W^T.
// The fused row runs the tiles the engine picks on this adapter (gemmPolicyFor: a measured table, or the
// heuristic), as one dispatch. Each measurement records `reps` dispatches into one compute pass after a
// warm-up; with 'timestamp-query' the pass's GPU duration / reps is reported (one pass, so timestamp
// quantization is spread over all reps), otherwise wall-clock from submit to onSubmittedWorkDone / reps.
//
// Standalone: npx tsx bench/gemm.ts [--size N] [--model] [--tune] [--reps R] [--json FILE]
//   --size N   cube size M = N = K (default 2048 on a GPU, 256 on SwiftShader)
//   --model    also Pythia-1.4B-like shapes (d 2048, ff 8192, vocab 50304) at T = 128 and T = 16
//   --shapes S also these GEMMs, S = MxNxK,MxNxK,... (e.g. Pythia-410m's at T = 512: 512x4096x1024)
//   --tune     time every tile configuration of TUNE_CONFIGS at the cube size (tuneGemm); with --model, at
//              the model shapes too
//   --match RE time only the tile configurations whose name matches the regular expression RE
//   --groups G,… with --tune, each configuration again with its workgroups in that order (GEMM_GROUP_M row blocks
//              per column block; 1 = the grid's own order; the same bits)
//   --fma      a probe: the core's accumulate step written as fma(a, b, sum) instead of sum + a·b (shows
//              whether the driver already contracts it into one FFMA)
//   --toggles T  extra Dawn toggles for this process (e.g. enable-dawn-features=disable_robustness, to
//              measure what the bounds clamps cost; never the engine's setting)
// On a machine without a GPU: VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json (numbers are only
// a sanity check there, never a claim).
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acquireGpu } from '../src/gpu/device';
import { PipelineCache } from '../src/gpu/pipelines';
import type { DispatchSpec } from '../src/gpu/program';
import { GpuTimer } from '../src/gpu/timestamps';
import { linearBias } from '../src/kernels/fused-linear';
import { type GemmTiles, gemmTilesProblem, TUNE_CONFIGS, tilesName } from '../src/kernels/gemm';
import { type GemmPolicy, gemmPolicyFor } from '../src/kernels/gemm-configs';
import { linear } from '../src/kernels/linear';
import { nodeShaderSource } from '../src/kernels/shaders-node';
import { filled, togglesGpu } from './cli';

export interface GemmSize {
  label: string;
  M: number; // tokens
  N: number; // output features
  K: number; // input features
}

export interface GemmTiming {
  label: string;
  kernel: string; // 'fused' | 'reference' | a tile configuration
  M: number;
  N: number;
  K: number;
  ms: number; // per dispatch
  gflops: number; // 2·M·N·K / time
  timing: 'timestamp' | 'wall';
}

export interface BenchOpts {
  reps?: number; // timed dispatches (default 20)
  warmup?: number; // untimed dispatches before (default 3)
  kernels?: Array<'fused' | 'reference'>;
  /** benchGemm: how the fused row picks its tiles (default: the heuristic of an unknown adapter). */
  policy?: GemmPolicy;
  /** tuneGemm: GEMM_GROUP_M, the workgroup order (row blocks per column block; 1: the grid's own). */
  group?: number;
}

export function cube(n: number): GemmSize {
  return { label: `${n}³`, M: n, N: n, K: n };
}

/** Pythia-1.4B-like projections (d 2048, 16 heads, ff 8192, vocab 50304) at T tokens. */
export function modelSizes(T: number): GemmSize[] {
  return [
    { label: `qkv T=${T}`, M: T, N: 6144, K: 2048 },
    { label: `attn.dense T=${T}`, M: T, N: 2048, K: 2048 },
    { label: `mlp.up T=${T}`, M: T, N: 8192, K: 2048 },
    { label: `mlp.down T=${T}`, M: T, N: 2048, K: 8192 },
    { label: `lm_head T=${T}`, M: T, N: 50304, K: 2048 },
  ];
}

/** Seconds per dispatch of `spec`: `reps` dispatches in one pass (median of three) after a warm-up. */
export async function timeDispatch(
  device: GPUDevice,
  pipelines: PipelineCache,
  spec: DispatchSpec,
  reps = 20,
  warmup = 3,
): Promise<{ seconds: number; timing: 'timestamp' | 'wall' }> {
  device.pushErrorScope('validation');
  const { pipeline, layout } = pipelines.get(spec.kernel, spec.constants);
  const made: GPUBuffer[] = [];
  const buffers = { ...spec.buffers };
  if (spec.params) {
    const u = device.createBuffer({
      size: spec.params.byteLength,
      usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST,
    });
    device.queue.writeBuffer(u, 0, spec.params);
    buffers.params = u;
    made.push(u);
  }
  const bindGroup = pipelines.bindGroup(spec.kernel, layout, buffers, spec.label);
  const [gx, gy = 1, gz = 1] = spec.workgroups;
  const record = (n: number, timer: GpuTimer | null) => {
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass(timer ? timer.pass(spec.label) : { label: spec.label });
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    for (let i = 0; i < n; i++) pass.dispatchWorkgroups(gx, gy, gz);
    pass.end();
    timer?.resolve(enc);
    return enc.finish();
  };
  try {
    // Warm-up: at least `warmup` dispatches and ~50 ms of work (GPU clocks ramp up from idle).
    const w0 = performance.now();
    for (let i = 0; i < 50 && (i === 0 || performance.now() - w0 < 50); i++) {
      device.queue.submit([record(warmup, null)]);
      await device.queue.onSubmittedWorkDone();
    }
    const err = await device.popErrorScope();
    if (err) throw new Error(`${spec.label}: ${err.message}`);
    // Three timed batches of `reps`; the median batch is reported.
    const timer = new GpuTimer(device, 1);
    const samples: Array<{ seconds: number; timing: 'timestamp' | 'wall' }> = [];
    try {
      for (let round = 0; round < 3; round++) {
        const cmd = record(reps, timer.available ? timer : null);
        const t0 = performance.now();
        device.queue.submit([cmd]);
        await device.queue.onSubmittedWorkDone();
        const wall = (performance.now() - t0) / 1000 / reps;
        const passes = await timer.read();
        if (passes && passes[0].ns > 0)
          samples.push({ seconds: passes[0].ns / 1e9 / reps, timing: 'timestamp' });
        else samples.push({ seconds: wall, timing: 'wall' });
      }
    } finally {
      timer.destroy();
    }
    samples.sort((a, b) => a.seconds - b.seconds);
    return samples[1];
  } finally {
    for (const b of made) b.destroy();
  }
}

interface GemmBuffers {
  x: GPUBuffer;
  w: GPUBuffer;
  y: GPUBuffer;
  dummy: GPUBuffer;
  destroy(): void;
}

function gemmBuffers(device: GPUDevice, s: GemmSize): GemmBuffers {
  const bufs = {
    x: filled(device, s.M * s.K, 1), // [M, K]
    w: filled(device, s.N * s.K, 2), // [N, K]
    y: device.createBuffer({ size: 4 * s.M * s.N, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC }), // [M, N]
    dummy: filled(device, 4, 3),
  };
  return {
    ...bufs,
    destroy: () => {
      for (const b of Object.values(bufs)) b.destroy();
    },
  };
}

function row(s: GemmSize, kernel: string, t: { seconds: number; timing: 'timestamp' | 'wall' }): GemmTiming {
  const gflops = (2 * s.M * s.N * s.K) / t.seconds / 1e9;
  return { label: s.label, kernel, M: s.M, N: s.N, K: s.K, ms: t.seconds * 1e3, gflops, timing: t.timing };
}

/** GFLOP/s of the fused linear core (linearBias, no bias) and of the reference linear at each size. */
export async function benchGemm(
  device: GPUDevice,
  pipelines: PipelineCache,
  sizes: GemmSize[] = [cube(2048), ...modelSizes(128)],
  opts: BenchOpts = {},
): Promise<GemmTiming[]> {
  const out: GemmTiming[] = [];
  const kernels = opts.kernels ?? ['fused', 'reference'];
  for (const s of sizes) {
    const b = gemmBuffers(device, s);
    try {
      for (const kernel of kernels) {
        const spec =
          kernel === 'fused'
            ? linearBias(`gemm.fused ${s.label}`, { ...b, b: null }, s.M, s.N, s.K, { policy: opts.policy })
            : linear(`gemm.reference ${s.label}`, { ...b, b: null }, s.M, s.N, s.K);
        out.push(row(s, kernel, await timeDispatch(device, pipelines, spec, opts.reps, opts.warmup)));
      }
    } finally {
      b.destroy();
    }
  }
  return out;
}

/**
 * Times linearBias (no bias) at n³ (or another size) for each tile configuration (WGSL override constants) the device's
 * limits allow; the others are reported as skipped. For picking the defaults on a real GPU.
 */
export async function tuneGemm(
  device: GPUDevice,
  pipelines: PipelineCache,
  size: number | GemmSize = 2048,
  configs: readonly GemmTiles[] = TUNE_CONFIGS,
  opts: BenchOpts = {},
): Promise<Array<GemmTiming & { skipped?: string }>> {
  const s = typeof size === 'number' ? cube(size) : size;
  const b = gemmBuffers(device, s);
  const out: Array<GemmTiming & { skipped?: string }> = [];
  try {
    for (const t of configs) {
      const name = tilesName(t);
      const problem = gemmTilesProblem(t, device.limits);
      if (problem) {
        out.push({ ...row(s, name, { seconds: Number.NaN, timing: 'wall' }), skipped: problem });
        continue;
      }
      const spec = linearBias(`gemm.tune ${name}`, { ...b, b: null }, s.M, s.N, s.K, {
        constants: { ...t, ...(opts.group && opts.group > 1 ? { GEMM_GROUP_M: opts.group } : {}) },
      });
      out.push(
        row(
          s,
          opts.group && opts.group > 1 ? `${name} G${opts.group}` : name,
          await timeDispatch(device, pipelines, spec, opts.reps, opts.warmup),
        ),
      );
    }
  } finally {
    b.destroy();
  }
  return out;
}

export function formatTimings(rows: Array<GemmTiming & { skipped?: string }>): string {
  const head = ['shape', 'M', 'N', 'K', 'kernel', 'ms', 'GFLOP/s', 'timing'];
  const body = rows.map((r) => [
    r.label,
    String(r.M),
    String(r.N),
    String(r.K),
    r.kernel,
    r.skipped ? '-' : r.ms.toFixed(3),
    r.skipped ? `skipped: ${r.skipped}` : r.gflops.toFixed(1),
    r.skipped ? '' : r.timing,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  return [head, ...body].map((cells) => cells.map((c, i) => c.padEnd(widths[i])).join('  ')).join('\n');
}

/** The standalone command line (see the header); exported so a bundled entry can call it. */
export async function gemmBenchMain(argv: string[]): Promise<void> {
  const flag = (name: string) => argv.includes(name);
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const toggles = value('--toggles');
  const ctx = await acquireGpu(togglesGpu(toggles));
  const { device, adapter } = ctx;
  const soft = /swiftshader/i.test(`${adapter.vendor} ${adapter.architecture} ${adapter.description}`);
  const n = Number(value('--size') ?? (soft ? 256 : 2048));
  const reps = Number(value('--reps') ?? (soft ? 5 : 20));
  const source = nodeShaderSource();
  const pipelines = new PipelineCache(device, source);
  if (flag('--fma')) {
    const core = source('common/gemm_core.wgsl');
    const step = 'let t = s + a * b;';
    if (!core.includes(step)) throw new Error('--fma: the accumulate step is not where the probe expects it');
    pipelines.setOverride('common/gemm_core.wgsl', core.replace(step, 'let t = fma(vec4f(a), b, s);'));
  }
  console.log(`adapter: ${adapter.vendor} ${adapter.architecture} ${adapter.description}`.trim());
  console.log(
    `timestamp-query: ${ctx.features.timestampQuery}, reps ${reps}; toggles: ${toggles ?? 'default'}; fma probe: ${flag('--fma')}`,
  );
  console.log(`limits: ${JSON.stringify(ctx.adapter.limits)}`);
  const shapes = (value('--shapes') ?? '')
    .split(',')
    .filter(Boolean)
    .map((x) => {
      const [M, N, K] = x.split('x').map(Number);
      if (![M, N, K].every((v) => Number.isInteger(v) && v > 0)) throw new Error(`--shapes: bad GEMM '${x}'`);
      return { label: x, M, N, K };
    });
  const sizes = [cube(n), ...(flag('--model') ? [...modelSizes(128), ...modelSizes(16)] : []), ...shapes];
  // The fused row runs what the engine picks on this adapter (its measured table, or the heuristic), unsplit.
  const policy = gemmPolicyFor(adapter, device.limits);
  console.log(`policy: ${policy.name}`);
  const rows: Array<GemmTiming & { skipped?: string }> = await benchGemm(device, pipelines, sizes, {
    reps,
    policy,
  });
  console.log(formatTimings(rows));
  if (flag('--tune')) {
    for (const size of sizes) {
      const match = new RegExp(value('--match') ?? '.');
      const configs = TUNE_CONFIGS.filter((t) => match.test(tilesName(t)));
      for (const group of (value('--groups') ?? '1').split(',').map(Number)) {
        const tuned = await tuneGemm(device, pipelines, size, configs, { reps, group });
        console.log(`\ntile configurations at ${size.label}, GEMM_GROUP_M ${group}:`);
        console.log(formatTimings(tuned));
        rows.push(...tuned);
      }
    }
  }
  const json = value('--json');
  if (json)
    writeFileSync(json, JSON.stringify({ date: new Date().toISOString(), adapter, toggles, rows }, null, 2));
  device.destroy();
}

const self = fileURLToPath(import.meta.url);
// Standalone only (`npx tsx bench/gemm.ts`), not when bundled into the bench runner.
if (process.argv[1] && resolve(process.argv[1]) === self && /gemm\.ts$/.test(self)) {
  gemmBenchMain(process.argv.slice(2)).then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
