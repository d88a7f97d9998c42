// The kernel editor's effects: load a slot's shipped source or an exercise, check the source as it is typed
// (compiler messages and the binding interface, shortly after typing stops), run the slot's isolated test,
// use the kernel in Run (settings.custom), and take or set aside a custom kernel a link or a stored run
// brought (consent). Before a run with a custom kernel, its isolated test runs first if it has not yet.
import type { ExerciseId } from '../../kernels/custom/exercises';
import type { CustomSlotId } from '../../kernels/custom/slots';
import { exerciseSource, shippedSource } from '../../kernels/custom/sources-browser';
import { consentKey } from '../../run/custom-kernel';
import { asWorkerError } from '../../worker/client';
import { createKernelEditorStore, type KernelEditorStore } from '../kernel-editor';
import type { Ctx } from './context';

/** Quiet time after the last keystroke before the source is compiled (the messages follow within a second). */
export const CHECK_DELAY_MS = 250;

export interface KernelDesk {
  editor: KernelEditorStore;
  /** Starts editing a slot from its shipped source (drops what was being edited). */
  selectSlot(slot: CustomSlotId): void;
  /** Starts from an exercise's buggy kernel. */
  loadExercise(id: ExerciseId): void;
  /** The editor's text changed. */
  edit(source: string): void;
  /** Use the edited kernel in Run (or go back to the shipped kernels). */
  setUse(on: boolean): void;
  /** Runs the isolated test of the edited source in the worker. */
  test(): Promise<void>;
  /** The viewer agreed to run the pending custom kernel: it goes into the editor and into Run. */
  acceptPending(): void;
  /** The viewer set the pending kernel aside: Run uses the shipped kernels. */
  declinePending(): void;
  /** Before a run: the custom kernel in the settings gets its isolated test if it has none yet. */
  beforeRun(): Promise<void>;
  /** The settings name a custom kernel whose isolated test has not run. */
  untested(): boolean;
  /** Checks the edited source again now (the panel opened, the worker was restarted). */
  recheck(): void;
}

export function createKernelDesk(ctx: Ctx): KernelDesk {
  const { s } = ctx;
  const first: CustomSlotId = 'layernorm2';
  const editor = createKernelEditorStore(first, shippedSource(first));
  const e = () => editor.getState();
  let timer: ReturnType<typeof setTimeout> | null = null;

  async function check(source: string): Promise<void> {
    const client = ctx.client();
    const { slot } = e();
    if (!client.checkKernel) return;
    e().checkStarted(source);
    try {
      const result = await client.checkKernel(slot, source);
      if (e().slot === slot) e().checkDone(source, result);
    } catch (err) {
      e().checkFailed(source, asWorkerError(err).message);
    }
  }

  function scheduleCheck(source: string, delay = CHECK_DELAY_MS): void {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      void check(source);
    }, delay);
  }

  /** Keeps Run's custom kernel the edited one while it is in use. */
  function follow(): void {
    const cur = s().settings.custom;
    if (cur) s().setSettings({ custom: { slot: e().slot, source: e().source } });
  }

  async function testSource(slot: CustomSlotId, source: string): Promise<void> {
    const client = ctx.client();
    const key = consentKey({ slot, source });
    if (!client.testKernel) return;
    e().testStarted(key);
    // Run waits for the test (the worker is busy with it, and a run with this kernel needs its result).
    s().setWaitingFor("your kernel's isolated test");
    try {
      const seed = Math.floor(Math.random() * 2 ** 31);
      const test = client.testKernel.bind(client);
      e().testDone(key, await ctx.watch("the kernel's isolated test", () => test(slot, source, seed)));
    } catch (err) {
      e().testFailed(key, asWorkerError(err).message);
    } finally {
      s().setWaitingFor(null);
    }
  }

  const desk: KernelDesk = {
    editor,
    selectSlot(slot) {
      e().load(slot, shippedSource(slot), 'shipped');
      follow();
      scheduleCheck(e().source, 0);
    },
    loadExercise(id) {
      const ex = exerciseSource(id);
      if (!ex) return;
      e().load(ex.exercise.slot, ex.source, 'exercise', ex.exercise.id);
      follow();
      scheduleCheck(ex.source, 0);
    },
    edit(source) {
      if (source === e().source) return;
      e().setSource(source);
      follow();
      scheduleCheck(source);
    },
    setUse(on) {
      s().setSettings({ custom: on ? { slot: e().slot, source: e().source } : null });
    },
    test: () => testSource(e().slot, e().source),
    acceptPending() {
      const p = s().customPending;
      if (!p) return;
      e().load(p.slot, p.source, 'link');
      s().setSettings({ custom: { ...p } });
      ctx.store.setState({ customPending: null });
      scheduleCheck(p.source, 0);
    },
    declinePending() {
      ctx.store.setState({ customPending: null });
      s().setSettings({ custom: null });
    },
    recheck() {
      scheduleCheck(e().source, 0);
    },
    untested() {
      const c = s().settings.custom;
      return c !== null && !e().tested[consentKey(c)];
    },
    async beforeRun() {
      const c = s().settings.custom;
      if (!c || e().tested[consentKey(c)]) return;
      await testSource(c.slot, c.source);
    },
  };
  return desk;
}
