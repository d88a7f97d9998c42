// The "your runs" mode's state: the run files picked for A and B, the analysis of them in the worker (progress,
// Cancel, the report), and every message beside the control it is about (a bad file beside its picker, a refused
// analysis beside Analyze). Its own small store: nothing here touches the comparison of the two paths.
import { create } from 'zustand';
import type { RunsReport } from '../compare/runs-report';
import { LinkError } from '../run/link-bytes';
import { listAnalyses, type StoredAnalysis, saveAnalysis } from '../run/runs-history';
import { decodeRunsLink, type RunsLinkPayload } from '../run/runs-link';
import type { ModelRef } from '../run/runspec';
import type { RunsWarmupStatus } from '../worker/api';
import type { EngineClient } from '../worker/client';
import { asWorkerError } from '../worker/client';

export type RunSide = 'A' | 'B';

export interface PickedRun {
  file: File;
  /** The sha256 a shared link names for this run (checked when the file is read). */
  expectedSha256?: string;
}

export interface RunsMessage {
  at: RunSide | 'analyze';
  text: string;
  /** A note (what was done with the files dropped), not a refusal. */
  note?: boolean;
  /** About the loaded model (the runs are of another, or none is loaded): gone once the model changes. */
  aboutModel?: boolean;
}

export interface RunsImportState {
  picked: Record<RunSide, PickedRun | null>;
  status: 'idle' | 'reading' | 'analyzing' | 'done' | 'failed' | 'cancelled';
  /** Bytes read per file while reading, then the analysis phase. */
  read: Record<string, { loaded: number; total: number | null }>;
  phase: string | null;
  report: RunsReport | null;
  /** One message at a time, beside what it is about. */
  message: RunsMessage | null;
  /** A shared analysis being reproduced: the files it names are asked for and checked by their sha256. */
  link: RunsLinkPayload | null;
  /** Opens a '#u1=' link (false, with the message beside Analyze, when it is malformed). */
  openLink(fragment: string): boolean;
  /** Earlier analyses kept in this browser (newest first). */
  history: StoredAnalysis<RunsReport>[];
  loadHistory(): Promise<void>;
  /** Shows a stored analysis (its report; the files are not kept). */
  openStored(a: StoredAnalysis<RunsReport>): void;
  pick(side: RunSide, file: File | null, expectedSha256?: string): void;
  /**
   * Files dropped or picked together on one side: one is that side's run; two are runs A and B, in their order
   * (what dropping a pair means), said in a note; more are refused with a line, nothing picked.
   */
  pickMany(side: RunSide, files: readonly File[]): void;
  /** The loaded model's identity (name and weights' sha256), as last told by modelLoaded. */
  modelKey: string | null;
  /** Tells which model is loaded: when it changed, a message about the model it replaced goes. */
  modelLoaded(key: string | null): void;
  /** `model`: the loaded model's reference, kept with the analysis in the history. */
  analyze(client: EngineClient, model?: ModelRef | null): Promise<void>;
  cancel(client: EngineClient): void;
  /** The worker's runs warm-up: null until asked; `warming` while it runs. */
  warmup: RunsWarmupStatus | null;
  warming: boolean;
  /** Asks the worker for its warm-up (it runs once per worker; asked when the runs panel opens on a loaded model). */
  warm(client: EngineClient): Promise<void>;
}

/** Which run a worker message is about: the one it names, else the analysis as a whole. */
function whereOf(message: string, picked: Record<RunSide, PickedRun | null>): RunSide | 'analyze' {
  for (const side of ['B', 'A'] as const) {
    const name = picked[side]?.file.name;
    if (name && (message.startsWith(`${name}:`) || message.startsWith(`${name} `))) return side;
  }
  return 'analyze';
}

/** Warm-up asks made (RunsImportState.warm). */
let asks = 0;

export const useRunsImport = create<RunsImportState>((set, get) => ({
  picked: { A: null, B: null },
  status: 'idle',
  read: {},
  phase: null,
  report: null,
  message: null,
  link: null,
  history: [],
  async loadHistory() {
    try {
      set({ history: await listAnalyses<RunsReport>() });
    } catch {
      // No IndexedDB (a private window): the history stays empty, nothing else changes.
    }
  },
  openStored(a) {
    set({ report: a.report, status: 'done', message: null });
  },
  openLink(fragment) {
    try {
      const link = decodeRunsLink(fragment);
      set({ link, picked: { A: null, B: null }, report: null, status: 'idle', message: null });
      return true;
    } catch (e) {
      const text = e instanceof LinkError ? e.message : 'This link could not be read.';
      set({ link: null, message: { at: 'analyze', text } });
      return false;
    }
  },
  pick(side, file, expectedSha256) {
    const fromLink = get().link?.runs[side === 'A' ? 0 : 1]?.sha256;
    const picked = {
      ...get().picked,
      [side]: file ? { file, expectedSha256: expectedSha256 ?? fromLink } : null,
    };
    const m = get().message;
    set({ picked, message: m && (m.at === side || m.at === 'analyze') ? null : m });
  },
  pickMany(side, files) {
    if (files.length <= 1) {
      get().pick(side, files[0] ?? null);
      return;
    }
    if (files.length > 2) {
      set({
        message: { at: side, text: `Drop one or two run files, not ${files.length}: nothing was picked.` },
      });
      return;
    }
    get().pick('A', files[0]);
    get().pick('B', files[1]);
    set({
      message: {
        at: side,
        note: true,
        text: `Two files: ${files[0].name} is run A, ${files[1].name} is run B (Remove one to keep a single run).`,
      },
    });
  },
  modelKey: null,
  modelLoaded(key) {
    const { modelKey, message } = get();
    if (key === modelKey) return;
    set({ modelKey: key, message: message?.aboutModel ? null : message });
  },
  async analyze(client, model = null) {
    const { picked, status } = get();
    if (status === 'reading' || status === 'analyzing') return;
    if (!picked.A) {
      set({ message: { at: 'analyze', text: 'Pick run A first (run B is optional).' } });
      return;
    }
    if (!client.compareRuns) {
      set({ message: { at: 'analyze', text: 'This engine cannot analyze run files.' } });
      return;
    }
    const files = (['A', 'B'] as const).flatMap((side) => {
      const p = picked[side];
      return p ? [{ name: p.file.name, blob: p.file as Blob, expectedSha256: p.expectedSha256 }] : [];
    });
    set({ status: 'reading', read: {}, phase: null, message: null });
    try {
      const report = await client.compareRuns(
        files,
        (p) => set({ read: { ...get().read, [p.file]: { loaded: p.loadedBytes, total: p.totalBytes } } }),
        (p) => set({ status: 'analyzing', phase: p.phase }),
      );
      set({ status: 'done', report, phase: null });
      // The warm-up's line says now that this analysis paid it (or that it ran before).
      void get().warm(client);
      try {
        await saveAnalysis(report, model);
        await get().loadHistory();
      } catch {
        // Not kept (no IndexedDB, or it is full): the report is shown all the same.
      }
    } catch (e) {
      const err = asWorkerError(e);
      if (err.kind === 'cancelled') {
        set({
          status: 'cancelled',
          phase: null,
          message: { at: 'analyze', text: 'Cancelled: nothing changed.' },
        });
        return;
      }
      const at = whereOf(err.message, picked);
      const aboutModel = at === 'analyze' && (err.kind === 'model-mismatch' || err.kind === 'model');
      set({ status: 'failed', phase: null, message: { at, text: err.message, aboutModel } });
    }
  },
  cancel(client) {
    void client.cancel();
  },
  warmup: null,
  warming: false,
  async warm(client) {
    if (!client.warmRuns) return;
    // The worker answers a second ask during a warm-up with the same run; only the latest ask's answer is kept.
    const ask = ++asks;
    set({ warming: true });
    try {
      const warmup = await client.warmRuns();
      if (ask === asks) set({ warmup });
    } catch {
      // The worker closed or lost its device: that is said where the model is; the warm-up is only speed.
    } finally {
      if (ask === asks) set({ warming: false });
    }
  },
}));
