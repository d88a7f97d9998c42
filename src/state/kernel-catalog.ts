// What the page shows of the kernels, as plain data: the fused kernels a run can switch on, the precision modes,
// the custom-kernel slots (the fused kernel each belongs to and the WGSL file it replaces), the shipped WGSL of
// each slot and the classroom exercises. The UI reads these here (and results through the worker's typed API);
// it imports no kernel module.
import {
  FUSED_KERNELS as FUSED_TABLE,
  type FusedKernelId,
  type FusedKernelInfo,
} from '../engine/fused-kernels';
import { EXERCISES, type Exercise, type ExerciseId, exerciseById } from '../kernels/custom/exercises';
import { CUSTOM_SLOTS, type CustomSlotId, customSlot, isCustomSlotId } from '../kernels/custom/slots';
import { shippedSource } from '../kernels/custom/sources-browser';
import { PRECISIONS, type Precision } from '../numeric/precision';

export type { CustomSlotId, Exercise, ExerciseId, FusedKernelId, FusedKernelInfo, Precision };

/** The fused kernels, in the order the page lists them. */
export const FUSED_KERNELS: readonly FusedKernelInfo[] = FUSED_TABLE;

/** The precision modes a run can pick. */
export const PRECISION_MODES: readonly Precision[] = PRECISIONS;

/** A custom-kernel slot as the page shows it. */
export interface SlotView {
  id: CustomSlotId;
  /** The fused kernel (a RunSpec's `fused` entry) whose ops run this file. */
  fused: FusedKernelId;
  title: string;
  /** Which models run it. */
  note: string;
  /** The shipped WGSL file a custom source replaces, under shaders/. */
  file: string;
}

function view(id: CustomSlotId): SlotView {
  const s = customSlot(id);
  return { id: s.id, fused: s.fused, title: s.title, note: s.note, file: s.kernel.file };
}

export const SLOTS: readonly SlotView[] = CUSTOM_SLOTS.map((s) => view(s.id));

export function slotView(id: CustomSlotId): SlotView {
  return view(id);
}

export function isSlotId(s: string): s is CustomSlotId {
  return isCustomSlotId(s);
}

/** The shipped WGSL of a slot's file (the page's bundled copy). */
export function shippedWgsl(id: CustomSlotId): string {
  return shippedSource(id);
}

/** The classroom exercises. */
export const EXERCISE_LIST: readonly Exercise[] = EXERCISES;

export function exerciseOf(id: string): Exercise | undefined {
  return exerciseById(id);
}
