// Device check of GpuMetrics (not a test; run by hand on a real adapter): every field against the CPU
// metrics on fresh seeded inputs (sizes 1 … 300007, both baselines, every precision, planted values, special
// tensors), then GPU time per record from timestamps around it (logits [128][50304] with a double-float
// baseline in several variants; 288 layer taps [128][1024] in shared buffers) beside the CPU metrics' time.
// Bundle: npx esbuild src/compare/gpu-metrics.bench.ts --bundle --platform=node --format=esm --target=node20
//   --outfile=dist-bench/gm-check-metrics.mjs --external:webgpu   (then run it with the devpack's node,
//   SHADERS_DIR pointing at shaders/; OUT=<dir> also writes gm-check.json there).
import { writeFileSync } from 'node:fs';
import { acquireGpu } from '../gpu/device';
import { nodeGpu } from '../gpu/node';
import { PipelineCache } from '../gpu/pipelines';
import { uploadBuffer } from '../gpu/readback';
import { nodeShaderSource } from '../kernels/shaders-node';
import { f32FromBits } from '../numeric/bits';
import { PRECISIONS, type Precision } from '../numeric/precision';
import { mulberry32 } from '../numeric/random';
import { type CompareJob, type CompareOut, GpuMetrics } from './gpu-metrics';
import { type Case, dfPairs, EXACT_FIELDS, finishCase, randomCase, reduceJobs } from './gpu-metrics.testdata';
import { errorHistogram, fullMetrics, perTokenRelL2 } from './metrics';

const ctx = await acquireGpu(nodeGpu());
const device = ctx.device;
const gm = new GpuMetrics(device, new PipelineCache(device, nodeShaderSource()));
const out: Record<string, unknown> = { adapter: ctx.adapter.description || ctx.adapter.vendor };
const worst: Record<string, number> = {};
const failures: string[] = [];
const rel = (g: number, c: number) =>
  g === c
    ? 0
    : !Number.isFinite(g) || !Number.isFinite(c) || c === 0
      ? Infinity
      : Math.abs(g - c) / Math.abs(c);
const where: Record<string, string> = {};
const note = (what: string, field: string, r: number, ok: boolean) => {
  if (r > (worst[field] ?? 0)) where[field] = what;
  worst[field] = Math.max(worst[field] ?? 0, r);
  if (!ok && failures.length < 30) failures.push(`${what}: ${field} ${r}`);
};
const up = (d: Float32Array) => uploadBuffer(device, d, 'x');
const ops = (c: Case) => ({
  a: { kind: 'f32' as const, buffer: up(c.a) },
  b: c.lo
    ? { kind: 'df' as const, buffer: up(dfPairs(c.hi, c.lo)) }
    : { kind: 'f32' as const, buffer: up(c.hi) },
});
const run = (jobs: CompareJob[]) => reduceJobs(device, gm, jobs);
function check(what: string, g: CompareOut, c: Case, precision: Precision, rows?: number, hist?: boolean) {
  const cpu = fullMetrics(c.a, c.b64, precision);
  for (const k of EXACT_FIELDS) note(what, k, rel(g.metrics[k], cpu[k]), g.metrics[k] === cpu[k]);
  for (const k of ['meanAbs', 'relL2', 'sqnrDb'] as const) {
    const r = rel(g.metrics[k], cpu[k]);
    note(what, k, r, r <= 1e-6);
  }
  let e = 0,
    sa = 0,
    sb = 0;
  for (let i = 0; i < c.a.length; i++) {
    const x = c.a[i],
      y = c.b64[i];
    if (Number.isFinite(x) && Number.isFinite(y)) {
      e += (x - y) ** 2;
      sa += x * x;
      sb += y * y;
    }
  }
  const scale = sa > 0 && sb > 0 ? (e + Math.abs(sa - sb)) / (2 * Math.sqrt(sa * sb)) : 0;
  const gc = g.metrics.cosineDistance,
    cc = cpu.cosineDistance;
  const rc =
    gc === cc ? 0 : Number.isFinite(gc - cc) ? Math.abs(gc - cc) / Math.max(Math.abs(cc), scale) : Infinity;
  note(what, 'cosineDistance (rel. to terms)', rc, rc <= 1e-6);
  if (rows) {
    const ref = perTokenRelL2(c.a, c.b64, rows, c.a.length / rows);
    ref.forEach((r, i) => {
      const d = rel(g.perRow![i], r);
      note(`${what} row ${i}`, 'perRow', d, d <= 1e-6);
    });
  }
  if (hist) {
    const ref = errorHistogram(c.a, c.b64);
    const same = JSON.stringify(ref) === JSON.stringify(g.histogram);
    note(what, 'histogram (0 same, 1 differs)', same ? 0 : 1, same);
  }
}

// ---- correctness ---------------------------------------------------------------------------------------
const seed = (Math.random() * 2 ** 31) >>> 0;
out.seed = seed;
const rng = mulberry32(seed);
let t0 = performance.now();
for (let rep = 0; rep < 3; rep++) {
  const specs: Array<{ c: Case; p: Precision; rows?: number }> = [];
  for (const [n, rows] of [
    [1, 1],
    [7, 7],
    [1000, 8],
    [65541, 3],
    [300_007, 1],
  ] as const)
    for (const df of [false, true])
      for (const p of PRECISIONS)
        specs.push({
          c: randomCase(rng, n, df, (['none', 'agree', 'mismatch'] as const)[specs.length % 3]),
          p,
          rows,
        });
  const got = await run(
    specs.map((s) => ({ ...ops(s.c), n: s.c.a.length, rows: s.rows, precision: s.p, histogram: true })),
  );
  for (const [j, s] of specs.entries()) {
    const what = `rep ${rep} job ${j} n ${s.c.a.length} ${s.c.lo ? 'df' : 'f32'} ${s.p} ${['none', 'agree', 'mismatch'][j % 3]}`;
    check(what, got[j], s.c, s.p, s.rows, true);
  }
}
// Special tensors (subnormals matter on adapters that flush them).
{
  const n = 4099;
  const fill = (f: (i: number) => number) => Float32Array.from({ length: n }, (_, i) => f(i));
  const rand = (s: number) => fill(() => (rng() * 2 - 1) * s);
  const cases: Case[] = [
    finishCase(
      fill(() => f32FromBits((rng() * 0x7fffff) | 1)),
      rand(1e-39),
      null,
    ),
    finishCase(
      fill(() => f32FromBits((rng() * 0x7fffff) | 1)),
      rand(1e-39),
      new Float32Array(n),
    ), // lo 0: normalized
    finishCase(
      fill((i) => 1e-30 + (i % 3) * 1e-44),
      fill(() => 1e-30),
      null,
    ),
    finishCase(rand(3.4e38), rand(3.4e38), null),
    finishCase(rand(1e-36), rand(1e-36), rand(1e-44)),
  ];
  const got = await run(cases.map((c) => ({ ...ops(c), n, rows: 1, precision: 'fp16', histogram: true })));
  for (const [j, c] of cases.entries()) check(`special ${j}`, got[j], c, 'fp16', 1, true);
}
out.correctnessSeconds = (performance.now() - t0) / 1000;
out.worst = worst;
out.failures = failures;
console.log(JSON.stringify({ worst, where, failures }, null, 1));
out.where = where;

// ---- timing --------------------------------------------------------------------------------------------
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
/** GPU time of one record: timestamps written by empty passes before and after it (median of 7). */
async function perRecord(jobs: CompareJob[]) {
  if (!device.features.has('timestamp-query')) return -1;
  const qs = device.createQuerySet({ type: 'timestamp', count: 2 });
  const res = device.createBuffer({
    size: 16,
    usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
  });
  const rd = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const ts: number[] = [];
  for (let r = 0; r < 8; r++) {
    const enc = device.createCommandEncoder();
    enc.beginComputePass({ timestampWrites: { querySet: qs, beginningOfPassWriteIndex: 0 } }).end();
    const p = gm.record(enc, jobs);
    enc.beginComputePass({ timestampWrites: { querySet: qs, beginningOfPassWriteIndex: 1 } }).end();
    enc.resolveQuerySet(qs, 0, 2, res, 0);
    enc.copyBufferToBuffer(res, 0, rd, 0, 16);
    device.queue.submit([enc.finish()]);
    await p.read();
    p.release();
    await rd.mapAsync(GPUMapMode.READ);
    const t = new BigUint64Array(rd.getMappedRange().slice(0));
    rd.unmap();
    if (r > 0) ts.push(Number(t[1] - t[0]) / 1e6);
  }
  qs.destroy();
  res.destroy();
  rd.destroy();
  return median(ts);
}
async function timeGpu(jobs: CompareJob[], reps: number) {
  await run(jobs); // warm (pipelines)
  const ts: number[] = [];
  for (let r = 0; r < reps; r++) {
    const t = performance.now();
    await run(jobs);
    ts.push(performance.now() - t);
  }
  return median(ts);
}
{
  const T = 128,
    V = 50304,
    n = T * V;
  const c = randomCase(rng, n, true, 'agree');
  const job = { ...ops(c), n, rows: T, precision: 'fp32' as const, histogram: true };
  const gpuMs = await timeGpu([job], 10);
  const gpuOnlyMs = await perRecord([job]);
  const [g] = await run([job]);
  check('logits', g, c, 'fp32', T, true);
  t0 = performance.now();
  fullMetrics(c.a, c.b64, 'fp32');
  perTokenRelL2(c.a, c.b64, T, V);
  errorHistogram(c.a, c.b64);
  const cpuMs = performance.now() - t0;
  const cf = finishCase(c.a, c.hi, null);
  const of = ops(cf);
  out.logitsVariants = {
    dfRowsHist: gpuOnlyMs,
    dfRows: await perRecord([{ ...job, histogram: false }]),
    dfHist: await perRecord([{ ...job, rows: undefined }]),
    df: await perRecord([{ ...job, rows: undefined, histogram: false }]),
    f32: await perRecord([{ ...of, n, precision: 'fp32' }]),
    f32RowsHist: await perRecord([{ ...of, n, rows: T, histogram: true, precision: 'fp32' }]),
  };
  const parts = 49; // 49 jobs of 131328 elements (32 tiles each, ~4 M1 elements less per job than the whole)
  const per = 131328;
  const split: CompareJob[] = Array.from({ length: parts }, (_, j) => ({
    a: { ...of.a, offset: j * per },
    b: { ...of.b, offset: j * per },
    n: per,
    precision: 'fp32',
  }));
  out.splitVsWhole = {
    whole49: await perRecord([{ ...of, n: parts * per, precision: 'fp32' }]),
    split49: await perRecord(split),
  };
  out.logits = {
    T,
    V,
    baseline: 'df',
    gpuMsRecordSubmitRead: gpuMs,
    gpuMsTimestamps: gpuOnlyMs,
    cpuMsFullPerTokenHistogram: cpuMs,
    bytes: n * 12,
  };
}
{
  // 24 layers × 3 comparisons × 4 taps of [128][1024] in shared buffers (a: f32, b: f32 or df).
  const T = 128,
    d = 1024,
    per = T * d,
    J = 24 * 3 * 4;
  const a = new Float32Array(J * per),
    bf = new Float32Array(J * per),
    bd = new Float32Array(2 * J * per);
  const cases: Case[] = [];
  for (let j = 0; j < J; j++) {
    const c = randomCase(rng, per, j % 3 === 1, 'none');
    cases.push(c);
    a.set(c.a, j * per);
    if (c.lo) bd.set(dfPairs(c.hi, c.lo), 2 * j * per);
    else bf.set(c.hi, j * per);
  }
  const [A, BF, BD] = [up(a), up(bf), up(bd)];
  const jobs: CompareJob[] = cases.map((c, j) => ({
    a: { kind: 'f32', buffer: A, offset: j * per },
    b: c.lo ? { kind: 'df', buffer: BD, offset: j * per } : { kind: 'f32', buffer: BF, offset: j * per },
    n: per,
    rows: T,
    precision: 'fp32',
    histogram: j % 3 === 0,
  }));
  const gpuMs = await timeGpu(jobs, 5);
  const gpuOnlyMs = await perRecord(jobs);
  const got = await run(jobs);
  got.forEach((g, j) => {
    if (j % 37 === 0) check(`batch ${j}`, g, cases[j], 'fp32', T, j % 3 === 0);
  });
  t0 = performance.now();
  for (const [j, c] of cases.entries()) {
    fullMetrics(c.a, c.b64, 'fp32');
    perTokenRelL2(c.a, c.b64, T, d);
    if (j % 3 === 0) errorHistogram(c.a, c.b64);
  }
  const cpuMs = performance.now() - t0;
  out.batch = {
    jobs: J,
    elementsPerJob: per,
    gpuMsRecordSubmitRead: gpuMs,
    gpuMsTimestamps: gpuOnlyMs,
    cpuMs,
  };
}
out.failuresAfterTiming = failures;
console.log(JSON.stringify(out, null, 1));
if (process.env.OUT) writeFileSync(`${process.env.OUT}/gm-check.json`, JSON.stringify(out, null, 1));
process.exit(0);
