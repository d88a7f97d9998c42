// The sweep and the dispatch floor of bench/llama.ts (see its header): every GEMM shape of the Llama forwards over each
// tile configuration and K partition, warm (bench/gemm-sweep.ts's timing) or cold (each launch on weights not in the L2,
// as in the forward), the table chosen from it; and the floor of a chain of trivial dispatches.
import type { PipelineCache } from '../src/gpu/pipelines';
import { type DispatchSpec, Program } from '../src/gpu/program';
import { GpuTimer } from '../src/gpu/timestamps';
import { linearBiasOps } from '../src/kernels/fused-linear';
import { type GemmTiles, gemmTilesProblem, TUNE_CONFIGS, tilesName } from '../src/kernels/gemm';
import {
  CAP_WIDE_N,
  chunkFor,
  type GemmConfigTable,
  type GemmPolicy,
  groupMFor,
  shapeKey,
} from '../src/kernels/gemm-configs';
import { filled, log, median } from './cli';
import { chooseTable, gemmOperands, type SweepRow, type SweepShape, timeLaunch } from './gemm-sweep';

/** K partitions to try: none, and 2..16 splits of at least 128, none longer than the policy's cap (below CAP_WIDE_N). */
function partitions(s: SweepShape, cap: number | undefined): number[] {
  if (s.M * s.N >= 2 ** 22) return [s.K];
  const set = new Set<number>();
  for (const n of [1, 2, 3, 4, 5, 6, 8, 12, 16]) {
    const c = chunkFor(s.K, n);
    if ((n === 1 || c >= 128) && (!cap || s.N >= CAP_WIDE_N || c <= cap)) set.add(c);
  }
  return [...set];
}

/**
 * Cold timing, as a GEMM runs inside the forward: `copies` launches, each on its own copy of the weights (together
 * past the L2, so each reads its W from memory, not from the cache the launch before filled), each dispatch in a timed
 * pass of its own (as the forward's per-op profile); GPU ms per launch, median of three after one untimed round.
 */
async function timeCold(
  device: GPUDevice,
  pipelines: PipelineCache,
  specsOf: (copy: number) => DispatchSpec[],
  copies: number,
): Promise<number> {
  const program = new Program(device, pipelines);
  device.pushErrorScope('validation');
  try {
    let n = 0;
    for (let c = 0; c < copies; c++)
      for (const spec of specsOf(c)) {
        program.add(spec);
        n++;
      }
    const run = async () => {
      const timer = new GpuTimer(device, n);
      try {
        const enc = device.createCommandEncoder();
        program.encode(enc, timer);
        timer.resolve(enc);
        device.queue.submit([enc.finish()]);
        const passes = (await timer.read()) ?? [];
        return passes.reduce((a, p) => a + p.ns, 0) / copies / 1e6;
      } finally {
        timer.destroy();
      }
    };
    await run();
    const err = await device.popErrorScope();
    if (err) throw new Error(`cold timing: ${err.message}`);
    const t = [await run(), await run(), await run()].sort((a, b) => a - b);
    return t[1];
  } finally {
    program.dispose();
  }
}

/** Bytes of weights a cold timing spreads its launches over (twice the H100's 50 MB L2). */
const COLD_BYTES = 100e6;

/**
 * The sweep: every shape × tile configuration × partition, GPU ms; stops starting shapes after `budgetS`. `cold`:
 * timed by timeCold, and the o and down projections (attn_out, mlp_out) by their partial GEMM alone where split,
 * their reduction being folded into the next add + RMSNorm in the forward.
 */
export async function sweep(
  device: GPUDevice,
  pipelines: PipelineCache,
  shapes: SweepShape[],
  cap: number | undefined,
  budgetS: number,
  cold = false,
  policy?: GemmPolicy,
): Promise<{ rows: SweepRow[]; skipped: string[] }> {
  const configs = TUNE_CONFIGS.filter((t) => gemmTilesProblem(t, device.limits) === null);
  const rows: SweepRow[] = [];
  const skipped: string[] = [];
  const t0 = performance.now();
  for (const s of shapes) {
    if ((performance.now() - t0) / 1e3 > budgetS) {
      skipped.push(shapeKey(s.M, s.N, s.K));
      continue;
    }
    const { x, w, y, dummy, workspace, destroy } = gemmOperands(device, s, 'sweep');
    const copies = cold ? Math.min(48, Math.max(2, Math.ceil(COLD_BYTES / (4 * s.N * s.K)))) : 1;
    const ws = [
      w,
      ...Array.from({ length: copies - 1 }, (_, c) => filled(device, s.N * s.K, 10 + c, 'cold')),
    ];
    const folded = s.op === 'attn_out' || s.op === 'mlp_out';
    try {
      let best: SweepRow | null = null;
      for (const kChunk of partitions(s, cap))
        for (const tiles of configs) {
          const label = `sweep ${shapeKey(s.M, s.N, s.K)}`;
          // The policy's workgroup order where the launch has more than one row block (as gemmLaunch gives it).
          const G = groupMFor(policy, s.M, s.N, s.K, tiles.BM);
          const order: Record<string, number> = G > 1 ? { GEMM_GROUP_M: G } : {};
          const opts = { constants: { ...tiles, ...order }, workspace, kChunk };
          const launch = (wc: GPUBuffer) =>
            linearBiasOps(label, { x, w: wc, b: null, y, dummy }, s.M, s.N, s.K, opts);
          const ms = cold
            ? await timeCold(device, pipelines, (c) => launch(ws[c]).slice(0, folded ? 1 : 2), copies)
            : await timeLaunch(device, pipelines, launch(w), rows.length === 0 ? 50 : 0);
          const tflops = (2 * s.M * s.N * s.K) / (ms * 1e-3) / 1e12;
          const row = { ...s, tiles: tilesName(tiles), kChunk, split: Math.ceil(s.K / kChunk), ms, tflops };
          rows.push(row);
          if (!best || ms < best.ms) best = row;
        }
      if (best)
        log(
          `sweep ${s.model} ${s.op} ${shapeKey(s.M, s.N, s.K)}: best ${best.tiles} kChunk ${best.kChunk} ${best.ms.toFixed(4)} ms ${best.tflops.toFixed(1)} TFLOP/s`,
        );
    } finally {
      destroy();
      for (const b of ws.slice(1)) b.destroy();
    }
  }
  return { rows, skipped };
}

/** The sweep's choice as a table: tiles by name → GemmTiles. */
export function sweptTable(base: GemmConfigTable | null, rows: SweepRow[]): GemmConfigTable {
  const chosen = chooseTable(rows);
  const byName = new Map(TUNE_CONFIGS.map((t) => [tilesName(t), t] as const));
  const tiles: Record<string, GemmTiles> = {};
  for (const [k, name] of Object.entries(chosen.tiles)) tiles[k] = byName.get(name) as GemmTiles;
  return {
    measuredOn: 'this run',
    date: new Date().toISOString(),
    tiles: { ...base?.tiles, ...tiles },
    kChunks: { ...base?.kChunks, ...chosen.kChunks },
  };
}

/**
 * The floor of a chain of dispatches: `n` dispatches of a kernel that adds 1 to `floats` floats of one buffer (each
 * reads what the one before wrote, so Dawn puts a barrier between them, as between a forward's ops), in one pass,
 * submit-to-done on the wall clock, median of `reps` after a warm-up; and the GPU time of one such dispatch alone.
 */
export async function dispatchFloor(device: GPUDevice, n: number, floats: number, reps: number) {
  const module = device.createShaderModule({
    code: `@group(0) @binding(0) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3u) {
  if (g.x < arrayLength(&x)) { x[g.x] = x[g.x] + 1.0; }
}`,
  });
  const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  const buf = device.createBuffer({ size: floats * 4, usage: GPUBufferUsage.STORAGE });
  const bindGroup = device.createBindGroup({
    layout: pipeline.getBindGroupLayout(0),
    entries: [{ binding: 0, resource: { buffer: buf } }],
  });
  const once = async () => {
    const t0 = performance.now();
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    for (let i = 0; i < n; i++) pass.dispatchWorkgroups(Math.ceil(floats / 256));
    pass.end();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    return performance.now() - t0;
  };
  for (let i = 0; i < 20; i++) await once();
  const ms: number[] = [];
  for (let i = 0; i < reps; i++) ms.push(await once());
  buf.destroy();
  return { dispatches: n, floats, medianMs: median(ms), usPerDispatch: (median(ms) * 1e3) / n };
}
