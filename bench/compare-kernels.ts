// The kernels part of bench/compare-speed.ts (--kernels): the reference linear layer's kernels at a model's shapes
// (T rows and one row) and the oracle's df linear under each register tile (T rows): GPU time per dispatch (timed by
// repetition) and whether each kernel's bits equal the first variant's on this adapter.
import { decideOracle } from '../src/compare/oracle-source';
import type { Engine } from '../src/engine/engine';
import type { PipelineCache } from '../src/gpu/pipelines';
import { type DispatchSpec, Program } from '../src/gpu/program';
import { readBuffer, uploadBuffer } from '../src/gpu/readback';
import { GpuTimer } from '../src/gpu/timestamps';
import * as lin from '../src/kernels/linear';
import * as dfl from '../src/kernels/oracle/linear';

const r2 = (x: number) => Math.round(x * 100) / 100;

/**
 * Runs `spec` once and reads its output `y` (`bytes`: its bits), then times it: `warm` repetitions, then `n`, each
 * set a timed pass; the last pass's GPU ns (null without timestamps).
 */
async function runAndTime(
  device: GPUDevice,
  pipelines: PipelineCache,
  spec: DispatchSpec,
  y: GPUBuffer,
  bytes: number,
  warm: number,
  n: number,
): Promise<{ bits: Uint32Array; ns: number | null }> {
  const program = new Program(device, pipelines);
  program.add(spec);
  let enc = device.createCommandEncoder();
  program.encode(enc);
  device.queue.submit([enc.finish()]);
  const bits = new Uint32Array((await readBuffer(device, y, bytes)).buffer);
  const timer = new GpuTimer(device, 4);
  enc = device.createCommandEncoder();
  program.encodeRepeated(enc, timer, () => warm);
  program.encodeRepeated(enc, timer, () => n);
  timer.resolve(enc);
  device.queue.submit([enc.finish()]);
  await device.queue.onSubmittedWorkDone();
  const t = await timer.read();
  timer.destroy();
  program.dispose();
  return { bits, ns: t ? t[t.length - 1].ns : null };
}

/** The reference linear's kernels at one shape: GPU ms per dispatch (timed by repetition) and equal bits. */
async function linearKernels(engine: Engine, M: number, N: number, K: number) {
  const { device, pipelines } = engine.gpuParts();
  const rand = (n: number, s: number) => {
    const a = new Float32Array(n);
    let u = 12345 + s;
    for (let i = 0; i < n; i++) {
      u = (Math.imul(u, 1103515245) + 12345) >>> 0;
      a[i] = (u / 2 ** 32 - 0.5) * 2;
    }
    return a;
  };
  const made: GPUBuffer[] = [];
  const up = (a: Float32Array) => {
    const b = uploadBuffer(device, a, 'bench');
    made.push(b);
    return b;
  };
  const x = up(rand(M * K, 1));
  const w = up(rand(N * K, 2).map((v) => v / Math.sqrt(K)));
  const bias = up(rand(N, 3));
  const dummy = up(new Float32Array(4));
  const variants: [string, (y: GPUBuffer) => DispatchSpec][] = [
    ['tiled16', (y) => lin.linearTiled('k', { x, w, b: bias, y, dummy }, M, N, K)],
    ['chosen', (y) => lin.linear('k', { x, w, b: bias, y, dummy }, M, N, K)],
  ];
  if (M > lin.ROWS_MAX) {
    for (const t of [
      { TX: 16, TY: 16 },
      { TX: 16, TY: 8 },
      { TX: 8, TY: 8 },
      { TX: 8, TY: 16 },
    ])
      variants.push([
        `blocked${t.TX}x${t.TY}`,
        (y) => lin.linearBlocked('k', { x, w, b: bias, y, dummy }, M, N, K, t),
      ]);
  } else {
    for (const s of [
      { WG: 256, NR: 16, KC: 112 },
      { WG: 128, NR: 16, KC: 112 },
      { WG: 64, NR: 16, KC: 112 },
      { WG: 256, NR: 8, KC: 224 },
      { WG: 128, NR: 8, KC: 224 },
      { WG: 256, NR: 32, KC: 48 },
      { WG: 128, NR: 32, KC: 48 },
    ])
      variants.push([
        `rows${s.WG}/${s.NR}/${s.KC}`,
        (y) => lin.linearRows('k', { x, w, b: bias, y, dummy }, M, N, K, s),
      ]);
  }
  const res: Record<string, { ms: number; equal: boolean }> = {};
  let ref: Uint32Array | null = null;
  for (const [name, make] of variants) {
    const y = up(new Float32Array(M * N).fill(Number.NaN));
    const n = 20;
    const { bits, ns } = await runAndTime(device, pipelines, make(y), y, M * N * 4, n, n);
    ref ??= bits;
    const equal = bits.every((u, i) => u === ref![i]);
    res[name] = { ms: ns !== null ? r2((ns / n / 1e6) * 1000) / 1000 : Number.NaN, equal };
  }
  for (const b of made) b.destroy();
  return res;
}

/** The oracle's df linear at one shape under each register tile: GPU ms per dispatch and equal bits. */
async function dfLinearTiles(engine: Engine, M: number, N: number, K: number, dfFma: boolean) {
  const { device, pipelines } = engine.gpuParts();
  const made: GPUBuffer[] = [];
  const up = (a: Float32Array) => {
    const b = uploadBuffer(device, a, 'bench');
    made.push(b);
    return b;
  };
  let u = 777;
  const rnd = () => {
    u = (Math.imul(u, 1103515245) + 12345) >>> 0;
    return (u / 2 ** 32 - 0.5) * 2;
  };
  const xs = new Float32Array(2 * M * K);
  for (let i = 0; i < M * K; i++) {
    xs[2 * i] = rnd();
    xs[2 * i + 1] = Math.fround(xs[2 * i] * 2 ** -30 * rnd());
  }
  const x = up(xs);
  const w = up(Float32Array.from({ length: N * K }, () => rnd() / Math.sqrt(K)));
  const b = up(Float32Array.from({ length: N }, rnd));
  const dummy = up(new Float32Array(4));
  const tiles: dfl.DfLinearTile[] = [
    dfl.DF_LINEAR_TILE,
    { WG_X: 16, WG_Y: 16, TM: 1, TN: 1 },
    { WG_X: 16, WG_Y: 8, TM: 2, TN: 1 },
    { WG_X: 16, WG_Y: 16, TM: 1, TN: 2 },
    { WG_X: 16, WG_Y: 16, TM: 2, TN: 1 },
    { WG_X: 8, WG_Y: 8, TM: 2, TN: 2 },
    { WG_X: 32, WG_Y: 4, TM: 1, TN: 2 },
  ];
  const res: Record<string, { ms: number; equal: boolean }> = {};
  let ref: Uint32Array | null = null;
  for (const t of tiles) {
    const y = up(new Float32Array(2 * M * N).fill(Number.NaN));
    const spec = dfl.dfLinear('k', { x, w, b, y, dummy }, M, N, K, { constants: { DF_FMA: dfFma } }, t);
    const n = 5;
    const { bits, ns: tn } = await runAndTime(device, pipelines, spec, y, 2 * M * N * 4, 1, n);
    ref ??= bits;
    const equal = bits.every((v, i) => v === ref![i]);
    res[`${t.WG_X}x${t.WG_Y}/${t.TM}x${t.TN}`] = {
      ms: tn !== null ? Math.round(tn / n / 1e3) / 1e3 : Number.NaN,
      equal,
    };
  }
  for (const bb of made) bb.destroy();
  return res;
}

/** Both tables for the loaded model: linear kernels at T rows and one row, df linear tiles at T rows. */
export async function kernelTimes(
  engine: Engine,
  T0: number,
  log: (s: string) => void,
): Promise<{ linearKernels: Record<string, unknown>; dfLinearTiles: Record<string, unknown> }> {
  const c = engine.modelInfo!.config;
  const d = c.hiddenSize;
  const shapes: [string, number, number][] = [
    ['qkv', 3 * d, d],
    ['attn_out', d, d],
    ['fc1', c.intermediateSize, d],
    ['fc2', d, c.intermediateSize],
    ['lm_head', c.vocabSize, d],
  ];
  const lk: Record<string, unknown> = {};
  for (const M of [T0, 1]) {
    for (const [op, N, K] of shapes) {
      lk[`${op} M=${M}`] = await linearKernels(engine, M, N, K);
      log(`  linear ${op} M=${M} N=${N} K=${K}: ${JSON.stringify(lk[`${op} M=${M}`])}`);
    }
  }

  const info = await decideOracle(engine, 'auto');
  const dk: Record<string, unknown> = {};
  for (const [op, N, K] of shapes) {
    dk[op] = await dfLinearTiles(engine, T0, N, K, info.dfFma);
    log(`  df linear ${op} M=${T0} N=${N} K=${K}: ${JSON.stringify(dk[op])}`);
  }
  return { linearKernels: lk, dfLinearTiles: dk };
}
