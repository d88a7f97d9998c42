// The runs analysis's sources, fed as the run files are read (analyze-runs.ts): each run's checks planned from its
// header, each slot uploaded as it arrives, and on the GPU oracle each check's exact re-run recorded and handed to
// the GPU as soon as the run's inputs for it are all in — the early layers' checks run on the GPU while the later
// layers are still being read. The floors' run (the engine's reference path, whose taps are on the GPU from the
// start) is planned and re-run once every run's header is in: its whole-layer checks follow theirs.
//
// A feed never throws into the reader that feeds it: its first failure is kept and thrown by done().
import type { BatchForward, GpuTap } from '../engine/batch';
import type { DfBuffer } from '../engine/oracle-df';
import type { RunHeader } from '../model/run-file';
import type { Precision } from '../numeric/precision';
import type { DType, NeoXConfig } from '../numeric/types';
import { neoxSlotOfTap } from '../ops/families';
import { type MissingCheck, type OpCheck, runChecks } from './run-checks';
import { tapRows, uploadSlot } from './run-sources';
import type { RunsStart } from './runs-start';

const PRECISION: Record<DType, Precision> = { F32: 'fp32', F16: 'fp16', BF16: 'bf16' };
const RANK: Record<DType, number> = { F32: 2, F16: 1, BF16: 0 };

/** Ops recorded between two hand-overs to the GPU (each a submit: a few dozen µs of the reading thread). */
const FLUSH_EVERY = 8;

/** A run as the comparisons see it: its slots as f32 tensors on the GPU. */
export interface GpuRun {
  id: string;
  /** The checked rows of each slot. */
  slots: Map<string, GpuTap>;
  /** Every row of the slots an op reads whole (attention, the whole layer), or of all. */
  full: Map<string, GpuTap>;
  precision: Precision;
  checks: OpCheck[];
  missing: MissingCheck[];
  names: (slot: string) => string;
  /** The slots on the CPU (the CPU oracle's route only; set by the analysis once the files are whole). */
  cpu: Map<string, Float32Array> | null;
}

/** A slot's tensor as it arrives: its data, or (our own recorded decode) every row of it already on the GPU. */
export type SlotSource = { name: string; data: Float32Array } | { onGpu: GpuTap };

/** The engine's taps under the run-file slots (resid_mid is the sequential style's ln2_in). */
export function engineSlots(run: BatchForward): Map<string, GpuTap> {
  const slots = new Map<string, GpuTap>();
  for (const [name, tap] of run.taps) slots.set(neoxSlotOfTap(name), tap);
  return slots;
}

/** A feed's progress (RunsFeed.progress). */
export interface FeedProgress {
  slots: number;
  reruns: number[];
  floors: number;
}

interface FedRun {
  run: GpuRun;
  lmHead: 'lm_head' | 'embed_out';
  /** The slots an op reads whole (every row uploaded). */
  whole: Set<string>;
  /** Each check's exact output once recorded (GPU oracle). */
  exact: (DfBuffer | null)[];
  /** Each check's inputs not yet arrived. */
  waiting: number[];
  /** Slot → the checks that read it. */
  readers: Map<string, number[]>;
  expected: Set<string>;
}

export class RunsFeed {
  private readonly fed: (FedRun | null)[];
  private ref: { run: GpuRun; exact: DfBuffer[] } | null = null;
  private failed: unknown = null;
  private sinceFlush = 0;
  private readonly cfg: NeoXConfig;
  private readonly layerOuts: string[];
  /** Milliseconds of the feeding thread spent uploading slots and recording re-runs. */
  readonly ms = { sources: 0, oracle: 0 };

  constructor(
    cfg: NeoXConfig,
    private readonly s: RunsStart,
    count: number,
    private readonly signal?: AbortSignal,
  ) {
    this.cfg = cfg;
    this.fed = Array.from({ length: count }, () => null);
    this.layerOuts = Array.from({ length: cfg.numLayers }, (_, i) => `layers.${i}.out`);
  }

  /** Run j's checked header: its checks planned (and, once every run's is in, the floors' run re-run). */
  header(j: number, h: RunHeader): void {
    this.guard(() => {
      if (this.fed[j]) throw new Error(`run ${j}: a second header`);
      const T = this.s.tokens.length;
      if (h.tokens.length !== T || h.tokens.some((t, i) => t !== this.s.tokens[i]))
        throw new Error(`run ${j} is of other tokens than the analysis was started on`);
      const logits = h.slots.get('logits');
      const lmHead = logits?.name.startsWith('lm_head') ? 'lm_head' : 'embed_out';
      const { checks, missing } = runChecks(this.cfg, (slot) => h.slots.has(slot), lmHead);
      let storage: DType = 'BF16';
      for (const t of h.slots.values()) if (RANK[t.dtype] > RANK[storage]) storage = t.dtype;
      const slots = new Map<string, GpuTap>();
      const readers = new Map<string, number[]>();
      checks.forEach((c, i) => {
        for (const input of new Set(c.inputs)) readers.set(input, [...(readers.get(input) ?? []), i]);
      });
      const f: FedRun = {
        lmHead,
        run: {
          id: j === 0 ? 'A' : 'B',
          slots,
          full: new Map(),
          precision: PRECISION[storage],
          checks,
          missing,
          names: (slot) => slots.get(slot)?.name ?? slot,
          cpu: null,
        },
        whole: new Set(
          checks.filter((c) => c.op === 'attention' || c.op === 'layer').flatMap((c) => c.inputs),
        ),
        exact: checks.map(() => null),
        waiting: checks.map((c) => new Set(c.inputs).size),
        readers,
        expected: new Set(h.slots.keys()),
      };
      this.fed[j] = f;
      // Checks that read nothing of the run (the embedding) are ready now.
      this.record(
        f,
        checks.flatMap((_, i) => (f.waiting[i] === 0 ? [i] : [])),
      );
      if (this.fed.every((x) => x !== null)) this.planFloors();
    });
  }

  /** Run j's slot as it arrives: uploaded, and the checks it completes re-run. */
  tensor(j: number, slot: string, src: SlotSource): void {
    this.guard(() => {
      const f = this.fed[j];
      if (!f) throw new Error(`run ${j}: a tensor before its header`);
      if (!f.expected.delete(slot)) throw new Error(`run ${j}: slot ${slot} twice or not in its header`);
      const { batch, from } = this.s;
      const t0 = performance.now();
      const parts = this.s.forward?.get('logits')?.parts;
      const up = uploadSlot(batch, this.s.tokens.length, slot, src, parts, from, f.whole.has(slot));
      f.run.slots.set(slot, up.rows);
      if (up.full) f.run.full.set(slot, up.full);
      this.ms.sources += performance.now() - t0;
      const ready = (f.readers.get(slot) ?? []).filter((i) => --f.waiting[i] === 0);
      this.record(f, ready);
    });
  }

  /** What is in so far: slots uploaded, each run's checks re-run, the floors' run's checks re-run. */
  progress(): FeedProgress {
    return {
      slots: this.fed.reduce((n, f) => n + (f ? f.run.slots.size : 0), 0),
      reruns: this.fed.map((f) => (f ? f.exact.filter((e) => e !== null).length : 0)),
      floors: this.ref && this.s.gpuOracle ? this.ref.exact.length : 0,
    };
  }

  /** The runs and each check's exact output (GPU oracle; empty lists on the CPU oracle's), every slot fed. */
  done(): { ref: GpuRun; files: GpuRun[]; exact: DfBuffer[][] } {
    if (this.failed) throw this.failed;
    const files = this.fed.map((f, j) => {
      if (!f) throw new Error(`run ${j}: never fed`);
      if (f.expected.size > 0) throw new Error(`run ${j}: ${f.expected.size} slots never arrived`);
      return f;
    });
    const ref = this.ref!;
    const gpu = this.s.gpuOracle !== null;
    return {
      ref: ref.run,
      files: files.map((f) => f.run),
      exact: gpu ? [ref.exact, ...files.map((f) => f.exact.map((e) => e!))] : [],
    };
  }

  private guard(f: () => void): void {
    if (this.failed || this.signal?.aborted) return;
    try {
      f();
    } catch (e) {
      this.failed = e;
    }
  }

  /** The checks `ids` of a run re-run exactly on the GPU oracle (the CPU oracle's wait for the whole files). */
  private record(f: { run: GpuRun; exact: (DfBuffer | null)[] }, ids: number[]): void {
    const { gpuOracle, batch, from } = this.s;
    if (!gpuOracle || ids.length === 0) return;
    const tokens = this.s.tokens as number[];
    const t0 = performance.now();
    const run = f.run;
    for (const i of ids) {
      const c = run.checks[i];
      // Every row where the run has it (opOn takes either), else the checked rows.
      const inputs = c.inputs.map((s) => {
        const t = run.full.get(s) ?? run.slots.get(s)!;
        return { buffer: t.buffer, n: t.floats };
      });
      const one = gpuOracle.opOn(
        batch.encoder,
        { op: c.op, layer: c.layer, inputs, label: `${run.id}:${c.id}` },
        tokens,
        from,
      );
      batch.onRelease(() => one.release());
      f.exact[i] = one.taps.get('out')!;
    }
    this.sinceFlush += ids.length;
    if (this.sinceFlush >= FLUSH_EVERY) {
      batch.flush(); // the GPU takes these while the reader goes on
      this.sinceFlush = 0;
    }
    this.ms.oracle += performance.now() - t0;
  }

  /** The floors' run: every op the files' runs check, whole layers included, on the engine's reference taps. */
  private planFloors(): void {
    const { batch, from, ref } = this.s;
    const T = this.s.tokens.length;
    const wholeLayers = new Set(
      this.fed.flatMap((f) => f!.run.checks.filter((c) => c.op === 'layer').map((c) => c.layer!)),
    );
    const full = engineSlots(ref);
    const lmHead = this.fed[0]!.lmHead;
    const { checks, missing } = runChecks(this.cfg, (s) => full.has(s), lmHead, wholeLayers);
    // The checked rows of what is compared: the checks' outputs and the curves' slots.
    const used = new Set([
      'embed',
      ...this.layerOuts,
      'final_norm',
      'logits',
      ...checks.map((c) => c.output),
    ]);
    const slots = new Map(
      [...full].filter(([s]) => used.has(s)).map(([s, t]) => [s, tapRows(batch, t, T, from)]),
    );
    const run: GpuRun = {
      id: 'reference',
      slots,
      full,
      precision: 'fp32',
      checks,
      missing,
      names: (s) => full.get(s)?.name ?? s,
      cpu: null,
    };
    const r = { run, exact: checks.map((): DfBuffer | null => null) };
    this.record(
      r,
      checks.map((_, i) => i),
    );
    this.ref = { run, exact: r.exact.map((e) => e!) };
  }
}
