// The kernel editor's state: the slot being edited, the source, where it started from (the shipped file, an
// exercise, a link), the compiler's verdict on the source as typed, and the isolated tests run so far (by the
// identity of the source they ran, so a report can say whether the kernel it used had passed). Survives a
// worker restart (device lost): the edited source is kept.
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { ExerciseId } from '../kernels/custom/exercises';
import type { CustomSlotId } from '../kernels/custom/slots';
import { consentKey } from '../run/custom-kernel';
import type { IsolatedResult, KernelCheck } from '../worker/api';

export interface CheckState {
  status: 'idle' | 'checking' | 'done' | 'error';
  /** The source the result (or the check in flight) is for. */
  source: string;
  result: KernelCheck | null;
  /** Why the check could not run (no GPU yet, worker lost), or null. */
  message: string | null;
}

export interface TestState {
  status: 'idle' | 'running' | 'done' | 'error';
  /** consentKey of the slot + source tested. */
  key: string | null;
  result: IsolatedResult | null;
  message: string | null;
}

export interface KernelEditorState {
  slot: CustomSlotId;
  source: string;
  startedFrom: 'shipped' | 'exercise' | 'link';
  exercise: ExerciseId | null;
  check: CheckState;
  test: TestState;
  /** Isolated results by consentKey (the most recent few). */
  tested: Record<string, IsolatedResult>;
}

export interface KernelEditorActions {
  load(
    slot: CustomSlotId,
    source: string,
    from: KernelEditorState['startedFrom'],
    exercise?: ExerciseId,
  ): void;
  setSource(source: string): void;
  checkStarted(source: string): void;
  checkDone(source: string, result: KernelCheck): void;
  checkFailed(source: string, message: string): void;
  testStarted(key: string): void;
  testDone(key: string, result: IsolatedResult): void;
  testFailed(key: string, message: string): void;
}

export type KernelEditorStore = StoreApi<KernelEditorState & KernelEditorActions>;

const KEEP_TESTS = 8;

export function createKernelEditorStore(slot: CustomSlotId, source: string): KernelEditorStore {
  return createStore<KernelEditorState & KernelEditorActions>()((set) => ({
    slot,
    source,
    startedFrom: 'shipped',
    exercise: null,
    check: { status: 'idle', source, result: null, message: null },
    test: { status: 'idle', key: null, result: null, message: null },
    tested: {},
    load: (slot, source, startedFrom, exercise) =>
      set({
        slot,
        source,
        startedFrom,
        exercise: exercise ?? null,
        check: { status: 'idle', source, result: null, message: null },
        test: { status: 'idle', key: null, result: null, message: null },
      }),
    setSource: (source) => set({ source }),
    checkStarted: (source) =>
      set((s) => ({ check: { ...s.check, status: 'checking', source, message: null } })),
    checkDone: (source, result) =>
      set((s) => (s.source === source ? { check: { status: 'done', source, result, message: null } } : {})),
    checkFailed: (source, message) =>
      set((s) => (s.source === source ? { check: { status: 'error', source, result: null, message } } : {})),
    testStarted: (key) => set({ test: { status: 'running', key, result: null, message: null } }),
    testDone: (key, result) =>
      set((s) => {
        const tested = { ...s.tested, [key]: result };
        const keys = Object.keys(tested);
        for (const k of keys.slice(0, Math.max(0, keys.length - KEEP_TESTS))) delete tested[k];
        return { tested, test: s.test.key === key ? { status: 'done', key, result, message: null } : s.test };
      }),
    testFailed: (key, message) =>
      set((s) => (s.test.key === key ? { test: { status: 'error', key, result: null, message } } : {})),
  }));
}

/** The isolated result of exactly this slot + source, if it was tested. */
export function isolatedFor(
  st: KernelEditorState,
  custom: { slot: CustomSlotId; source: string },
): IsolatedResult | null {
  return st.tested[consentKey(custom)] ?? null;
}

/** The editor's source compiles and fits its slot (as last checked). */
export function sourceReady(st: KernelEditorState): boolean {
  return st.check.status === 'done' && st.check.source === st.source && st.check.result?.ok === true;
}
