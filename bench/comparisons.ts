// `npx tsx bench/comparisons.ts`: where the comparisons phase of a full compare spends its time, per seeded
// Pythia-shaped model (issue 40 item 1). For each model: the full compare (bisection skipped, 8 tokens; first of a
// prompt and repeated), its phases with comparisons.record / .gpu / .read; then the phases run by hand with the
// reductions captured: the wait for the batch's GPU work before the reductions, the reductions' CPU time (planning,
// packing, encoding), their GPU time per kernel (timestamps, one timed pass per dispatch) and submit-to-done alone,
// the bytes the reductions read against the distinct bytes of the taps they compare (the physical floor: those
// bytes once at the card's bandwidth), and the same jobs with every operand copied into three arenas (what one
// dispatch per pair of arenas costs: the reductions without a dispatch per tap). --report DIR writes each model's report numbers (layers, logits, taps) for a
// comparison between trees (bench/compare-reports.ts).
// Flags: --models pythia-410m,pythia-1.4b --T 128 --reps 3 --out FILE --report DIR.
import { mkdirSync, writeFileSync } from 'node:fs';
import { type AnalysisContext, comparisons, local, oracle, sources } from '../src/compare/analysis-phases';
import { analyze } from '../src/compare/analyze';
import {
  type BitDiffJob,
  type CompareJob,
  GpuMetrics,
  type PendingMetrics,
  type RecordStats,
} from '../src/compare/gpu-metrics';
import type { Report } from '../src/compare/report';
import type { Engine } from '../src/engine/engine';
import type { FusedKernelId } from '../src/engine/fused-kernels';
import { GpuTimer } from '../src/gpu/timestamps';
import { faultHooks, placeFaults } from '../src/run/faults';
import { defaultRunSpec } from '../src/run/runspec';
import { benchEngine, log, median, printOut, runMain, saveOut, value } from './cli';
import { SHAPES } from './forward';

const T0 = Number(value('--T') ?? 128);

/** The reductions of one comparisons phase, captured as they are recorded (then recorded as usual). */
class Capture {
  jobs: CompareJob[] = [];
  bits: BitDiffJob[] = [];
  stats = {} as RecordStats;
  constructor(private readonly gm: GpuMetrics) {}
  record(encoder: GPUCommandEncoder, jobs: CompareJob[], bits: BitDiffJob[] = []): PendingMetrics {
    this.jobs = jobs;
    this.bits = bits;
    return this.gm.record(encoder, jobs, bits, { stats: this.stats });
  }
}

/** Distinct bytes of the operands the jobs read (each buffer range counted once): what one pass must read. */
function distinctBytes(jobs: CompareJob[]): number {
  const seen = new Map<GPUBuffer, Map<number, number>>();
  const add = (buf: GPUBuffer, off: number, bytes: number) => {
    let m = seen.get(buf);
    if (!m) seen.set(buf, (m = new Map()));
    m.set(off, Math.max(m.get(off) ?? 0, bytes));
  };
  for (const j of jobs)
    for (const s of j.segments ?? [j]) {
      add(s.a.buffer, s.a.offset ?? 0, s.n * 4);
      add(s.b.buffer, s.b.offset ?? 0, s.n * (s.b.kind === 'df' ? 8 : 4));
    }
  let total = 0;
  for (const m of seen.values()) for (const b of m.values()) total += b;
  return total;
}

/** The report's numbers that the comparisons make (for a comparison between trees). */
function reportNumbers(r: Report) {
  return {
    layers: r.layers.map((l) => ({
      floor: l.floor,
      propagated: l.propagated,
      fusedVsOracle: l.fusedVsOracle,
      local: l.local,
      localFloor: l.localFloor,
      perToken: l.perToken,
    })),
    logits: r.logits,
    taps: r.taps.map((t) => ({
      name: t.name,
      vsReference: t.vsReference,
      refVsOracle: t.refVsOracle,
      histogram: t.histogram,
    })),
    verdict: r.verdict,
    firstDivergentLayer: r.firstDivergentLayer,
    firstBornLayer: r.firstBornLayer,
  };
}

async function profile(engine: Engine, gm: GpuMetrics, tokens: number[], reps: number) {
  const spec = { ...defaultRunSpec(), generate: 0 };
  const planted = placeFaults(spec.faults, spec.seed, engine.modelInfo!.config.numLayers);
  const capture = new Capture(gm);
  const batches: ReturnType<Engine['batch']>[] = [];
  const c: AnalysisContext = {
    engine,
    spec,
    tokens,
    fusedSet: new Set<FusedKernelId>(spec.fused),
    planted,
    hooks: faultHooks(planted),
    metrics: capture,
    metricsOn: 'gpu',
    taps: 'all',
    skipLocal: false,
    durations: {},
    newBatch: () => {
      const b = engine.batch();
      batches.push(b);
      return b;
    },
  };
  const device = engine.gpuParts().device;
  try {
    const t0 = performance.now();
    const runs = sources(c);
    const o = await oracle(c, runs, 'gpu');
    const locals = local(c, runs, o.tensors);
    const tRecorded = performance.now();
    await device.queue.onSubmittedWorkDone(); // everything before the reductions, done
    const tBefore = performance.now();
    await comparisons(c, runs, o.tensors, locals);
    const phase = { ...c.durations };
    const row: Record<string, unknown> = {
      recordBeforeReductionsMs: tRecorded - t0,
      gpuWaitBeforeReductionsMs: tBefore - tRecorded,
      reductionsAloneMs: {
        record: phase['comparisons.record'],
        gpu: phase['comparisons.gpu'],
        read: phase['comparisons.read'],
      },
      recordStats: { ...capture.stats },
      jobs: capture.jobs.length,
      bitDiffs: capture.bits.length,
      operandBytes: capture.stats.operandBytes,
      distinctBytes: distinctBytes(capture.jobs),
    };
    // The captured reductions again, on the same buffers: submit to done (untimed), then one timed pass each.
    const walls: number[] = [];
    const cpu: number[] = [];
    for (let r = 0; r < reps; r++) {
      const enc = device.createCommandEncoder();
      const tc = performance.now();
      const p = gm.record(enc, capture.jobs, capture.bits);
      cpu.push(performance.now() - tc);
      const tw = performance.now();
      device.queue.submit([enc.finish()]);
      await p.read();
      walls.push(performance.now() - tw);
      p.release();
    }
    row.reductionsRecordMs = median(cpu);
    row.reductionsSubmitToReadMs = median(walls);
    const byKernel: Record<string, number[]> = {};
    const stats = {} as RecordStats;
    for (let r = 0; r < reps; r++) {
      const enc = device.createCommandEncoder();
      const timer = new GpuTimer(device, 2048); // 4096 queries at most;
      const p = gm.record(enc, capture.jobs, capture.bits, { timer, stats });
      timer.resolve(enc);
      device.queue.submit([enc.finish()]);
      await p.read();
      p.release();
      const t = await timer.read();
      const sums: Record<string, { ms: number; n: number }> = {};
      for (const x of t ?? []) {
        const s = (sums[x.label] ??= { ms: 0, n: 0 });
        s.ms += x.ns / 1e6;
        s.n++;
      }
      for (const [k, v] of Object.entries(sums)) {
        (byKernel[`${k} ms`] ??= []).push(v.ms);
        byKernel[`${k} dispatches`] = [v.n];
      }
    }
    row.gpuByKernel = Object.fromEntries(Object.entries(byKernel).map(([k, v]) => [k, median(v)]));
    // --targets 512,128,…: the same jobs cut into about that many tiles a job (GpuMetrics' targetTiles).
    const targets = (value('--targets') ?? '').split(',').filter(Boolean).map(Number);
    if (targets.length) row.byTarget = await byTarget(device, engine, capture.jobs, targets, reps);
    row.arenas = await arenaRun(device, gm, capture.jobs, reps);
    log(`arenas: ${JSON.stringify(row.arenas)}`);
    return row;
  } finally {
    for (const b of batches) b.release();
  }
}

/** The captured jobs' pass-1 and pass-2 GPU time (timestamps, median of `reps`) at each tiles-a-job target. */
async function byTarget(
  device: GPUDevice,
  engine: Engine,
  jobs: CompareJob[],
  targets: number[],
  reps: number,
) {
  const { pipelines } = engine.devicePipelines();
  const out: Record<string, unknown> = {};
  for (const target of targets) {
    const m = new GpuMetrics(device, pipelines, target);
    const ms: number[] = [];
    const stats = {} as RecordStats;
    for (let r = 0; r <= reps; r++) {
      const enc = device.createCommandEncoder();
      const timer = new GpuTimer(device, 2048);
      const p = m.record(enc, jobs, [], { timer, stats });
      timer.resolve(enc);
      device.queue.submit([enc.finish()]);
      await p.read();
      p.release();
      const t = ((await timer.read()) ?? []).reduce((s, q) => s + q.ns / 1e6, 0);
      if (r > 0) ms.push(t); // the first pass builds nothing new, but is left out as a warm-up
    }
    m.destroy();
    out[target] = { gpuMs: median(ms), dispatches: stats.dispatches, entries: stats.tiles };
    log(`target ${target}: ${JSON.stringify(out[target])}`);
  }
  return out;
}

/**
 * What one pass over shared buffers would cost: every operand of the jobs copied into three arenas (the results
 * under test, f32 baselines, double-float baselines), the same jobs on them (the same tiles, so the same results bit
 * for bit: checked), timed as the taps' jobs are. Null where an arena would pass the adapter's buffer size.
 */
async function arenaRun(device: GPUDevice, gm: GpuMetrics, jobs: CompareJob[], reps: number) {
  const size = { a: 0, f: 0, d: 0 };
  const place = (kind: 'a' | 'f' | 'd', words: number) => {
    const at = size[kind];
    size[kind] = Math.ceil((at + words) / 64) * 64;
    return at;
  };
  type Copy = { src: GPUBuffer; srcByte: number; dst: 'a' | 'f' | 'd'; dstWord: number; words: number };
  const copies: Copy[] = [];
  // An operand read by several jobs is copied once (so jobs that read the same operands stay one job, as on the taps).
  const placed = new Map<GPUBuffer, Map<string, CompareJob['a']>>();
  const move = (op: CompareJob['a'], n: number, under: boolean): CompareJob['a'] => {
    const df = op.kind === 'df';
    const kind = under ? 'a' : df ? 'd' : 'f';
    const key = `${kind}:${op.offset ?? 0}:${n}`;
    let byKey = placed.get(op.buffer);
    if (!byKey) placed.set(op.buffer, (byKey = new Map()));
    const seen = byKey.get(key);
    if (seen) return seen;
    const words = n * (df ? 2 : 1);
    const at = place(kind, words);
    copies.push({ src: op.buffer, srcByte: (op.offset ?? 0) * (df ? 8 : 4), dst: kind, dstWord: at, words });
    const out = { kind: op.kind, buffer: kind as unknown as GPUBuffer, offset: df ? at / 2 : at };
    byKey.set(key, out);
    return out;
  };
  const moved = jobs.map((j) => ({
    ...j,
    a: move(j.a, j.segments ? 0 : j.n, true),
    b: move(j.b, j.segments ? 0 : j.n, false),
    segments: j.segments?.map((s) => ({ a: move(s.a, s.n, true), b: move(s.b, s.n, false), n: s.n })),
  }));
  const max = device.limits.maxBufferSize;
  if (Math.max(size.a, size.f, size.d) * 4 > max)
    return { skipped: `an arena passes maxBufferSize ${max}`, size };
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
  const arenas = {
    a: device.createBuffer({ size: Math.max(16, size.a * 4), usage, label: 'arena.a' }),
    f: device.createBuffer({ size: Math.max(16, size.f * 4), usage, label: 'arena.f' }),
    d: device.createBuffer({ size: Math.max(16, size.d * 4), usage, label: 'arena.d' }),
  };
  try {
    const enc = device.createCommandEncoder();
    for (const c of copies)
      if (c.words > 0) enc.copyBufferToBuffer(c.src, c.srcByte, arenas[c.dst], c.dstWord * 4, c.words * 4);
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    const fix = (op: CompareJob['a']) => ({ ...op, buffer: arenas[op.buffer as unknown as 'a' | 'f' | 'd'] });
    const onArenas: CompareJob[] = moved.map((j) => ({
      ...j,
      a: fix(j.a),
      b: fix(j.b),
      segments: j.segments?.map((s) => ({ a: fix(s.a), b: fix(s.b), n: s.n })),
    }));
    const results = async (js: CompareJob[], timer?: GpuTimer) => {
      const e = device.createCommandEncoder();
      const stats = {} as RecordStats;
      const p = gm.record(e, js, [], { timer, stats });
      timer?.resolve(e);
      const t0 = performance.now();
      device.queue.submit([e.finish()]);
      const r = await p.read();
      const ms = performance.now() - t0;
      p.release();
      return { r, ms, stats };
    };
    const taps = await results(jobs);
    const walls: number[] = [];
    const gpu: number[] = [];
    let same = true;
    let dispatches = 0;
    for (let i = 0; i < reps; i++) {
      const timer = new GpuTimer(device, 2048);
      const x = await results(onArenas, timer);
      walls.push(x.ms);
      dispatches = x.stats.dispatches;
      gpu.push(((await timer.read()) ?? []).reduce((t, q) => t + q.ns / 1e6, 0));
      same &&= JSON.stringify(x.r.compare) === JSON.stringify(taps.r.compare);
    }
    return {
      arenaBytes: (size.a + size.f + size.d) * 4,
      dispatches,
      gpuMs: median(gpu),
      submitToReadMs: median(walls),
      sameResultsAsTaps: same,
    };
  } finally {
    for (const b of Object.values(arenas)) b.destroy();
  }
}

async function perModel(engine: Engine, gm: GpuMetrics, model: string, reps: number) {
  const shape = SHAPES[model];
  await engine.loadSeededModel({ ...shape, maxPos: 4096 }, 4321, model);
  const prompt = (salt: number) =>
    Array.from({ length: T0 }, (_, i) => (i * 7919 + salt * 104729) % shape.vocab);
  const spec = { ...defaultRunSpec(), model: { kind: 'embedded' as const, id: model }, generate: 8 };
  const skip = { bisection: true };
  await analyze(engine, spec, prompt(7), { skip });
  const t1 = performance.now();
  const first = await analyze(engine, spec, prompt(8), { skip });
  const firstMs = performance.now() - t1;
  const again: number[] = [];
  const phases: Record<string, number[]> = {};
  let last = first;
  for (let r = 0; r < reps; r++) {
    const t2 = performance.now();
    last = await analyze(engine, spec, prompt(8), { skip });
    again.push(performance.now() - t2);
    for (const [k, v] of Object.entries(last.durations)) (phases[k] ??= []).push(v);
  }
  const row: Record<string, unknown> = {
    model,
    T: T0,
    compare: {
      firstMs,
      repeatedMs: median(again),
      phasesFirst: first.durations,
      phasesRepeatedMedian: Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, median(v)])),
    },
  };
  log(`${model} compare: first ${firstMs.toFixed(1)} ms, repeated ${median(again).toFixed(1)} ms`);
  log(`${model} phases (repeated, median): ${JSON.stringify(row.compare)}`);
  const dir = value('--report');
  if (dir) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/report-${model}.json`, JSON.stringify(reportNumbers(last)));
  }
  row.profile = await profile(engine, gm, prompt(8), reps);
  log(`${model} profile: ${JSON.stringify(row.profile)}`);
  engine.unloadModel();
  return row;
}

async function main() {
  const engine = await benchEngine();
  const { device, pipelines } = engine.devicePipelines();
  const gm = new GpuMetrics(device, pipelines);
  const models = (value('--models') ?? 'pythia-410m').split(',');
  const reps = Number(value('--reps') ?? 3);
  const out: Record<string, unknown> = { date: new Date().toISOString(), adapter: engine.adapter, rows: [] };
  for (const m of models) {
    if (!SHAPES[m]) throw new Error(`unknown model shape ${m}`);
    (out.rows as unknown[]).push(await perModel(engine, gm, m, reps));
    saveOut(out);
  }
  printOut(out);
  gm.destroy();
  engine.dispose();
}

runMain(main);
