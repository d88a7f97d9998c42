// Shape-aware GEMM tuning (src/kernels/gemm-configs.ts): every GEMM shape of Pythia-70m/160m/410m at T = 128
// and 512, plus 2048³, timed for each tile configuration of TUNE_CONFIGS (within the device's limits) and each
// split-K partition of K, through the fused linear launcher (linearBiasOps: the partial GEMM and the reduction
// when split). Prints every row, then the chosen table as TypeScript for gemm-configs.ts: per (N, K) the K
// partition whose best time summed over both T is least, per (M, N, K) the best tiles under that partition.
// --confirm times instead what the engine's policy picks for this adapter at every shape (the numbers of
// record for bench/RESULTS.md) and writes them as `gemmShapes` rows that bench/report.ts reads.
//
//   npx tsx bench/gemm-sweep.ts [--confirm] [--models pythia-70m,...] [--T 128,512] [--cube 2048|0] [--json FILE]
// GPU times from timestamp queries (Dawn's quantization off: src/gpu/node.ts), each configuration's dispatches
// repeated in one pass until the pass spans ≥ 2 ms, median of three passes (≥ 50 ms of warm-up before a
// shape's first configuration).
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acquireGpu } from '../src/gpu/device';
import { NODE_DAWN_TOGGLES, nodeGpu } from '../src/gpu/node';
import { PipelineCache } from '../src/gpu/pipelines';
import { type DispatchSpec, Program } from '../src/gpu/program';
import { GpuTimer } from '../src/gpu/timestamps';
import { linearBiasOps } from '../src/kernels/fused-linear';
import { type GemmTiles, gemmTilesProblem, TUNE_CONFIGS, tilesName } from '../src/kernels/gemm';
import {
  chooseGemm,
  chunkFor,
  chunkKey,
  type GemmPolicy,
  gemmPolicyFor,
  shapeKey,
} from '../src/kernels/gemm-configs';
import { filled } from './cli';
import { SHAPES } from './forward';

export interface SweepShape {
  model: string;
  op: string;
  M: number;
  N: number;
  K: number;
}

export interface SweepRow extends SweepShape {
  tiles: string;
  kChunk: number;
  split: number;
  ms: number;
  tflops: number;
}

/** Every linear of one forward of each model at each T (qkv as its plain GEMM: N = 3d), and 2048³; deduplicated. */
export function sweepShapes(models: string[], Ts: number[] = [128, 512], cube = 2048): SweepShape[] {
  const out: SweepShape[] = [];
  const seen = new Set<string>();
  const add = (s: SweepShape) => {
    const k = shapeKey(s.M, s.N, s.K);
    if (seen.has(k)) return;
    out.push(s);
    seen.add(k);
  };
  for (const model of models) {
    const { d, ff, vocab } = SHAPES[model];
    for (const T of Ts) {
      add({ model, op: 'qkv', M: T, N: 3 * d, K: d });
      add({ model, op: 'attn_out', M: T, N: d, K: d });
      add({ model, op: 'dense_h_to_4h', M: T, N: ff, K: d });
      add({ model, op: 'dense_4h_to_h', M: T, N: d, K: ff });
      add({ model, op: 'logits', M: T, N: vocab, K: d });
    }
  }
  if (cube > 0) add({ model: 'cube', op: `${cube}³`, M: cube, N: cube, K: cube });
  return out;
}

/** K partitions to try: none, and 2..16 splits of at least 128 (outputs of 4M elements and more: none only). */
function chunkCandidates(s: SweepShape): number[] {
  if (s.M * s.N >= 2 ** 22) return [s.K];
  const set = new Set<number>([s.K]);
  for (const n of [2, 3, 4, 6, 8, 12, 16]) {
    const c = chunkFor(s.K, n);
    if (c >= 128) set.add(c);
  }
  return [...set];
}

/** GPU ms of one launch (its dispatches run `reps` times each, one timed pass per dispatch): median of three. */
export async function timeLaunch(
  device: GPUDevice,
  pipelines: PipelineCache,
  specs: DispatchSpec[],
  warmMs = 0,
): Promise<number> {
  const program = new Program(device, pipelines);
  device.pushErrorScope('validation');
  try {
    for (const s of specs) program.add(s);
    const run = async (reps: number) => {
      const timer = new GpuTimer(device, specs.length);
      try {
        const enc = device.createCommandEncoder();
        // encode() writes the ops' uniform params (encodeRepeated replays what a forward has written; without
        // this every dispatch would read M = N = K = 0 and time nothing) and runs each op once, untimed.
        program.encode(enc);
        program.encodeRepeated(enc, timer, () => reps);
        timer.resolve(enc);
        device.queue.submit([enc.finish()]);
        const passes = (await timer.read()) ?? [];
        return passes.reduce((a, p) => a + p.ns, 0) / reps / 1e6;
      } finally {
        timer.destroy();
      }
    };
    const first = await run(3); // warm-up and estimate
    const err = await device.popErrorScope();
    if (err) throw new Error(`${specs[0].label}: ${err.message}`);
    const reps = Math.max(3, Math.min(400, Math.ceil(2 / Math.max(first, 1e-4))));
    // warmMs of GPU work before timing (GPU clocks ramp down between short launches: the --confirm pass of
    // 2026-11-25, one configuration per shape, read its last two shapes 2.5× slow after 3 warm-ups).
    for (let warm = 3 * first, i = 0; warm < warmMs && i < 50; i++) warm += reps * (await run(reps));
    const t = [await run(reps), await run(reps), await run(reps)].sort((a, b) => a - b);
    return t[1];
  } finally {
    program.dispose();
  }
}

interface Ctx {
  device: GPUDevice;
  pipelines: PipelineCache;
}

/** A shape's operands for linearBiasOps (no bias): x [M, K], W [N, K], y [M, N], a dummy and a split-K workspace. */
export function gemmOperands(device: GPUDevice, s: { M: number; N: number; K: number }, prefix: string) {
  const x = filled(device, s.M * s.K, 1, prefix); // [M, K]
  const w = filled(device, s.N * s.K, 2, prefix); // [N, K]
  const y = device.createBuffer({ size: 4 * s.M * s.N, usage: GPUBufferUsage.STORAGE }); // [M, N]
  const dummy = filled(device, 4, 3, prefix);
  let ws: GPUBuffer | null = null;
  const workspace = (floats: number) => {
    if (!ws || ws.size < floats * 4) {
      ws?.destroy();
      ws = device.createBuffer({ size: floats * 4, usage: GPUBufferUsage.STORAGE });
    }
    return ws;
  };
  const destroy = () => {
    for (const b of [x, w, y, dummy, ws as GPUBuffer | null]) b?.destroy();
  };
  return { x, w, y, dummy, workspace, destroy };
}

async function timeShape(
  c: Ctx,
  s: SweepShape,
  configs: { tiles: GemmTiles; kChunk: number }[],
  log: (row: SweepRow) => void,
): Promise<SweepRow[]> {
  const { device } = c;
  const { x, w, y, dummy, workspace, destroy } = gemmOperands(device, s, 'sweep');
  const rows: SweepRow[] = [];
  try {
    for (const { tiles, kChunk } of configs) {
      const specs = linearBiasOps(
        `sweep ${shapeKey(s.M, s.N, s.K)}`,
        { x, w, b: null, y, dummy },
        s.M,
        s.N,
        s.K,
        {
          constants: { ...tiles },
          workspace,
          kChunk,
        },
      );
      const ms = await timeLaunch(device, c.pipelines, specs, rows.length === 0 ? 50 : 0); // warm per shape
      const row = {
        ...s,
        tiles: tilesName(tiles),
        kChunk,
        split: Math.ceil(s.K / kChunk),
        ms,
        tflops: (2 * s.M * s.N * s.K) / (ms * 1e-3) / 1e12,
      };
      rows.push(row);
      log(row);
    }
  } finally {
    destroy();
  }
  return rows;
}

/** Per (N, K) the partition with the least summed best time over M; per (M, N, K) the best tiles under it. */
export function chooseTable(rows: SweepRow[]): {
  tiles: Record<string, string>;
  kChunks: Record<string, number>;
} {
  const byNK = new Map<string, SweepRow[]>();
  for (const r of rows) {
    const k = chunkKey(r.N, r.K);
    byNK.set(k, [...(byNK.get(k) ?? []), r]);
  }
  const tiles: Record<string, string> = {};
  const kChunks: Record<string, number> = {};
  for (const [nk, rs] of byNK) {
    const Ms = [...new Set(rs.map((r) => r.M))];
    const chunks = [...new Set(rs.map((r) => r.kChunk))];
    const best = (M: number, c: number) =>
      rs.filter((r) => r.M === M && r.kChunk === c).sort((a, b) => a.ms - b.ms)[0];
    const score = (c: number) => Ms.reduce((a, M) => a + (best(M, c)?.ms ?? Number.POSITIVE_INFINITY), 0);
    const chunk = chunks.sort((a, b) => score(a) - score(b))[0];
    kChunks[nk] = chunk;
    for (const M of Ms) tiles[shapeKey(M, rs[0].N, rs[0].K)] = best(M, chunk).tiles;
  }
  return { tiles, kChunks };
}

function tilesSource(name: string): string {
  const t = TUNE_CONFIGS.find((c) => tilesName(c) === name);
  if (!t) throw new Error(`unknown tiles ${name}`);
  return `t(${t.BM}, ${t.BN}, ${t.BK}, ${t.TM}, ${t.TN}, ${t.GEMM_BUFS})`;
}

const fmt = (r: SweepRow) =>
  `${`${r.model} ${r.op}`.padEnd(26)} ${shapeKey(r.M, r.N, r.K).padEnd(16)} ${r.tiles.padEnd(26)} kChunk ${String(r.kChunk).padStart(5)} (split ${String(r.split).padStart(2)})  ${r.ms.toFixed(4)} ms  ${r.tflops.toFixed(2)} TFLOP/s`;

async function main(argv: string[]) {
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const models = (value('--models') ?? 'pythia-70m,pythia-160m,pythia-410m').split(',');
  const ctx = await acquireGpu(nodeGpu());
  const { device, adapter } = ctx;
  const pipelines = new PipelineCache(
    device,
    (await import('../src/kernels/shaders-node')).nodeShaderSource(),
  );
  console.log(`adapter: ${adapter.vendor} ${adapter.architecture} ${adapter.device} ${adapter.description}`);
  console.log(`dawn toggles: ${NODE_DAWN_TOGGLES.join(' ')}; timestamp-query ${ctx.features.timestampQuery}`);
  const Ts = (value('--T') ?? '128,512').split(',').map(Number);
  const shapes = sweepShapes(models, Ts, Number(value('--cube') ?? 2048));
  const out: Record<string, unknown> = {
    date: new Date().toISOString(),
    adapter,
    toggles: NODE_DAWN_TOGGLES,
  };
  if (argv.includes('--confirm')) {
    const policy: GemmPolicy = gemmPolicyFor(adapter, device.limits);
    console.log(`policy: ${policy.name}`);
    const rows: SweepRow[] = [];
    for (const s of shapes)
      rows.push(
        ...(await timeShape({ device, pipelines }, s, [chooseGemm(s.M, s.N, s.K, policy)], (r) =>
          console.log(fmt(r)),
        )),
      );
    out.policy = policy.name;
    out.gemmShapes = rows;
  } else {
    const configs = TUNE_CONFIGS.filter((t) => gemmTilesProblem(t, device.limits) === null);
    const rows: SweepRow[] = [];
    const t0 = performance.now();
    for (const s of shapes) {
      const cands = chunkCandidates(s).flatMap((kChunk) =>
        configs.filter((t) => kChunk % t.BK === 0).map((tiles) => ({ tiles, kChunk })),
      );
      const got = await timeShape({ device, pipelines }, s, cands, () => {});
      const best = [...got].sort((a, b) => a.ms - b.ms)[0];
      const none = got.filter((r) => r.split === 1).sort((a, b) => a.ms - b.ms)[0];
      console.log(`best ${fmt(best)}  | unsplit best ${none.ms.toFixed(4)} ms (${none.tiles})`);
      rows.push(...got);
    }
    console.log(`sweep: ${rows.length} timings in ${((performance.now() - t0) / 1e3).toFixed(1)} s`);
    const table = chooseTable(rows);
    out.rows = rows;
    out.table = table;
    console.log('\n// gemm-configs.ts HOPPER_TABLE');
    console.log('tiles: {');
    for (const [k, v] of Object.entries(table.tiles)) console.log(`  '${k}': ${tilesSource(v)},`);
    console.log('},\nkChunks: {');
    for (const [k, v] of Object.entries(table.kChunks)) console.log(`  '${k}': ${v},`);
    console.log('},');
  }
  const json = value('--json');
  if (json) writeFileSync(json, JSON.stringify(out, null, 2));
  device.destroy();
}

const self = fileURLToPath(import.meta.url);
// Standalone only (`npx tsx bench/gemm-sweep.ts` or its bundle), not when another bench imports timeLaunch.
if (process.argv[1] && resolve(process.argv[1]) === self && /gemm-sweep\.(ts|mjs)$/.test(self)) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
