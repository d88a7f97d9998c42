// A Llama-family runs analysis fed as its run files are read (docs/RUNS.md), as GPT-NeoX's is (runs-feed.ts): each
// run's checks planned from its checked header (family-runs-ops.ts familyRunChecks); at the first header the oracle
// is chosen (family-selftest.ts familyOracle: the GPU double-float route where the family's self-test passed, the CPU
// fp64 forms elsewhere) and the reference path's forward (the floors' run) and, on the GPU, the exact forward
// started; each check is re-run exactly from the run's own recorded inputs as soon as they have all arrived — on the
// CPU between the reader's reads, on the GPU in batches handed over while the rest of the file is read
// (family-runs-gpu.ts). The floors (the same checks on the reference path's taps) follow once every header is in.
//
// A feed never throws into the reader that feeds it: its first failure is kept and thrown by done().
import { EngineError } from '../engine/engine';
import { llamaForward } from '../kernels/cpu/llama-forward';
import type { RunHeader, RunTensor } from '../model/run-file';
import type { Precision } from '../numeric/precision';
import type { DType } from '../numeric/types';
import { exactDumpOnGpu, type FamilyGpuRerun, fitsGpu, type RerunItem, rerunOnGpu } from './family-runs-gpu';
import { computeCheck, type FamilyRun, familyRunChecks, type GroupContext } from './family-runs-ops';
import type { OracleInfo } from './oracle-info';

const PRECISION: Record<DType, Precision> = { F32: 'fp32', F16: 'fp16', BF16: 'bf16' };
const RANK: Record<DType, number> = { F32: 2, F16: 1, BF16: 0 };

/** Ready checks handed to the GPU together (one submit each batch, a chunk of the reader's time). */
const GPU_BATCH = 8;

/** The oracle a feed runs on: its words for the report, and the GPU route where it was chosen. */
export interface FeedOracle {
  info: Pick<OracleInfo, 'kind' | 'reason' | 'selfTest'>;
  gpu: FamilyGpuRerun | null;
  /** Its GPU buffers back (the analysis calls it at its end). */
  release(): void;
}

/** What a feed is started from: the model's context and its reference path's taps at a precision. */
export interface FeedModel {
  ctx: (tokens: readonly number[]) => GroupContext;
  reference(tokens: readonly number[], precision: Precision): Promise<Map<string, Float32Array>>;
  oracle(): Promise<FeedOracle>;
}

/** What the analysis reads once every run is fed. */
export interface FedAnalysis {
  runs: FamilyRun[];
  refs: Map<Precision, Map<string, Float32Array>>;
  oracle: FeedOracle;
  ctx: GroupContext;
  /** Each run's each check's exact output on its own inputs, and its floor's (the reference's), in fp64. */
  own: Float64Array[][];
  floor: Float64Array[][];
  /** The model's own step outputs of each check's group (CPU route only; empty on the GPU's). */
  kept: Map<string, Float64Array>[][];
  exactTaps: Map<string, Float64Array>;
  /** Milliseconds: sources (feeding), oracle (the re-runs and the exact forward), and how many checks ran where. */
  ms: { sources: number; oracle: number };
  gpuChecks: number;
  cpuChecks: number;
}

interface Fed {
  run: FamilyRun;
  slots: Map<string, RunTensor>;
  waiting: number[];
  readers: Map<string, number[]>;
  own: (Float64Array | null)[];
  kept: Map<string, Float64Array>[];
}

export class FamilyRunsFeed {
  private readonly fed: (Fed | null)[];
  private failed: unknown = null;
  private tokens: readonly number[] | null = null;
  private start: Promise<{ oracle: FeedOracle; exact: Promise<Map<string, Float64Array>> | null }> | null =
    null;
  private readonly refs = new Map<Precision, Promise<Map<string, Float32Array>>>();
  /** Ready checks waiting for the GPU (a batch), and the batches under way in order. */
  private pending: { f: Fed; i: number }[] = [];
  private gpuWork: Promise<void> = Promise.resolve();
  /** Checks whose inputs are all in, not yet routed (the oracle is chosen after the first header). */
  private arrived: { f: Fed; i: number }[] = [];
  private cpuQueue: { f: Fed; i: number }[] = [];
  private ctx: GroupContext | null = null;
  readonly ms = { sources: 0, oracle: 0 };
  private counts = { gpu: 0, cpu: 0 };

  constructor(
    private readonly model: FeedModel,
    count: number,
    private readonly signal?: AbortSignal,
  ) {
    this.fed = Array.from({ length: count }, () => null);
  }

  /** Run j's checked header: its checks planned; the first starts the oracle and the references. */
  header(j: number, h: RunHeader): void {
    this.guard(() => {
      if (this.fed[j]) throw new Error(`run ${j}: a second header`);
      if (!this.tokens) {
        this.tokens = h.tokens;
        this.ctx = this.model.ctx(h.tokens);
        const ctx = this.ctx;
        this.start = this.model.oracle().then((oracle) => {
          const exact = oracle.gpu ? exactDumpOnGpu(oracle.gpu, ctx) : null;
          exact?.catch(() => undefined); // thrown by done()
          return { oracle, exact };
        });
        this.start.catch(() => undefined); // thrown by done()
        this.reference('fp32');
      } else if (h.tokens.length !== this.tokens.length || h.tokens.some((t, i) => t !== this.tokens![i]))
        throw new Error(`run ${j} is of other tokens than the analysis was started on`);
      const ctx = this.ctx!;
      const { checks, missing } = familyRunChecks(ctx.cfg, (s) => h.slots.has(s));
      let storage: DType = 'BF16';
      for (const t of h.slots.values()) if (RANK[t.dtype] > RANK[storage]) storage = t.dtype;
      const precision = PRECISION[storage];
      this.reference(precision);
      const slots = new Map<string, RunTensor>();
      const readers = new Map<string, number[]>();
      checks.forEach((c, i) => {
        for (const s of new Set(c.inputs)) readers.set(s, [...(readers.get(s) ?? []), i]);
      });
      const f: Fed = {
        run: {
          id: j === 0 ? 'A' : 'B',
          input: null as never, // set by done(): the whole file
          precision,
          checks,
          missing,
          slot: (s) => slots.get(s)?.data ?? null,
          name: (s) => slots.get(s)?.name ?? h.slots.get(s)?.name ?? s,
        },
        slots,
        waiting: checks.map((c) => new Set(c.inputs).size),
        readers,
        own: checks.map(() => null),
        kept: checks.map(() => new Map()),
      };
      this.fed[j] = f;
      this.ready(
        f,
        checks.flatMap((_, i) => (f.waiting[i] === 0 ? [i] : [])),
      );
    });
  }

  /** Run j's slot as it arrives: kept (the file holds it anyway), and the checks it completes queued. */
  tensor(j: number, slot: string, t: RunTensor): void {
    this.guard(() => {
      const f = this.fed[j];
      if (!f) throw new Error(`run ${j}: a tensor before its header`);
      const t0 = performance.now();
      f.slots.set(slot, t);
      this.ms.sources += performance.now() - t0;
      this.ready(
        f,
        (f.readers.get(slot) ?? []).filter((i) => --f.waiting[i] === 0),
      );
    });
  }

  /** The checks' work done so far, between reads: the CPU's queue run, a GPU batch handed over. */
  async work(): Promise<void> {
    if (this.failed || !this.start) return;
    try {
      const { oracle } = await this.start;
      const q = this.arrived;
      this.arrived = [];
      for (const { f, i } of q) this.route(oracle, f, i);
      if (this.pending.length >= GPU_BATCH) this.flushGpu(oracle);
      await this.runCpu();
    } catch (e) {
      this.failed ??= e;
    }
  }

  /** Every run's checks re-run, the floors and the exact forward: what the analysis reads (runs: the whole files). */
  async done(inputs: FamilyRun['input'][]): Promise<FedAnalysis> {
    if (this.failed) throw this.failed;
    if (!this.start || !this.ctx || !this.tokens) throw new Error('no run was fed');
    const fed = this.fed.map((f, j) => {
      if (!f) throw new Error(`run ${j}: never fed`);
      return f;
    });
    const { oracle, exact } = await this.start;
    await this.work();
    if (this.signal?.aborted) throw new EngineError('run analysis cancelled', 'cancelled');
    if (this.failed) throw this.failed;
    this.flushGpu(oracle);
    await this.gpuWork;
    if (this.failed) throw this.failed;
    const ctx = this.ctx;
    const t0 = performance.now();
    for (const [j, f] of fed.entries()) {
      f.run.input = inputs[j];
      f.run.checks.forEach((_, i) => {
        if (!f.own[i]) throw new Error(`run ${f.run.id}: ${f.run.checks[i].id} never got its inputs`);
      });
    }
    const refs = new Map<Precision, Map<string, Float32Array>>();
    for (const [p, r] of this.refs) refs.set(p, await r);
    // The floors: each run's checks on the reference path's taps at its precision.
    const floor = await Promise.all(
      fed.map(async (f) => {
        const ref = refs.get(f.run.precision)!;
        const recorded = (s: string) => ref.get(s) ?? null;
        return this.computeAll(
          oracle,
          f.run.checks.map((check) => ({ check, recorded })),
        );
      }),
    );
    const exactTaps = exact ? await exact : cpuExactTaps(ctx);
    this.ms.oracle += performance.now() - t0;
    return {
      runs: fed.map((f) => f.run),
      refs,
      oracle,
      ctx,
      own: fed.map((f) => f.own as Float64Array[]),
      floor,
      kept: fed.map((f) => f.kept),
      exactTaps,
      ms: this.ms,
      gpuChecks: this.counts.gpu,
      cpuChecks: this.counts.cpu,
    };
  }

  /** Each run's checks re-run so far (by the order they were fed in). */
  progress(): number[] {
    return this.fed.map((f) => (f ? f.own.filter((o) => o !== null).length : 0));
  }

  /** Stops taking work; waits for what is under way, and gives the oracle's buffers back. */
  async abandon(): Promise<void> {
    this.failed ??= new Error('the analysis was let go');
    await this.gpuWork;
    const s = await this.start?.catch(() => null);
    s?.oracle.release();
  }

  private reference(p: Precision): void {
    if (this.refs.has(p) || !this.tokens) return;
    const r = this.model.reference(this.tokens, p);
    r.catch(() => undefined); // thrown by done()
    this.refs.set(p, r);
  }

  private guard(f: () => void): void {
    if (this.failed || this.signal?.aborted) return;
    try {
      f();
    } catch (e) {
      this.failed = e;
    }
  }

  private ready(f: Fed, ids: number[]): void {
    for (const i of ids) this.arrived.push({ f, i });
  }

  /** A ready check to its route: the GPU's batch where it fits, else the CPU's (run by runCpu). */
  private route(oracle: FeedOracle, f: Fed, i: number): void {
    if (oracle.gpu && fitsGpu(f.run.checks[i], this.ctx!, oracle.gpu.maxBindingBytes))
      this.pending.push({ f, i });
    else this.cpuQueue.push({ f, i });
  }

  private async runCpu(): Promise<void> {
    while (this.cpuQueue.length > 0) {
      const { f, i } = this.cpuQueue.shift()!;
      const t0 = performance.now();
      f.own[i] = computeCheck(f.run.checks[i], this.ctx!, f.run.slot, null, f.kept[i]);
      this.counts.cpu++;
      this.ms.oracle += performance.now() - t0;
      await this.tick();
    }
  }

  /** A turn of the event loop every 50 ms of synchronous work: a cancel (and the page's progress) gets through. */
  private async tick(): Promise<void> {
    if (performance.now() - this.lastTick < 50) return;
    await new Promise((r) => setTimeout(r, 0));
    this.lastTick = performance.now();
    if (this.signal?.aborted) throw new EngineError('run analysis cancelled', 'cancelled');
  }

  private lastTick = performance.now();

  private flushGpu(oracle: FeedOracle): void {
    const g = oracle.gpu;
    if (!g || this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    const ctx = this.ctx!;
    this.gpuWork = this.gpuWork.then(async () => {
      if (this.failed) return;
      const t0 = performance.now();
      try {
        const got = await rerunOnGpu(
          g,
          ctx,
          batch.map(({ f, i }) => ({ check: f.run.checks[i], recorded: f.run.slot })),
          this.signal,
        );
        batch.forEach(({ f, i }, k) => {
          f.own[i] = got[k];
        });
        this.counts.gpu += batch.length;
      } catch (e) {
        this.failed ??= e;
      }
      this.ms.oracle += performance.now() - t0;
    });
  }

  /** Checks on given slots (the floors): on the GPU where they fit, the rest on the CPU, in their order. */
  private async computeAll(oracle: FeedOracle, items: RerunItem[]): Promise<Float64Array[]> {
    const out: Float64Array[] = [];
    const ctx = this.ctx!;
    const g = oracle.gpu;
    const onGpu = items.flatMap((it, k) => (g && fitsGpu(it.check, ctx, g.maxBindingBytes) ? [k] : []));
    if (g && onGpu.length > 0) {
      const got = await rerunOnGpu(
        g,
        ctx,
        onGpu.map((k) => items[k]),
        this.signal,
      );
      onGpu.forEach((k, n) => {
        out[k] = got[n];
      });
    }
    for (const [k, it] of items.entries()) {
      out[k] ??= computeCheck(it.check, ctx, it.recorded);
      await this.tick();
    }
    return out;
  }
}

/** The exact forward's taps in fp64 on the CPU (the registry's fp64 forward, the context's angles). */
function cpuExactTaps(ctx: GroupContext): Map<string, Float64Array> {
  const taps = new Map<string, Float64Array>();
  llamaForward(ctx.cfg, ctx.weights, ctx.tokens, taps, { angles: ctx.angles });
  return taps;
}
