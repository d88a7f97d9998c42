// The page's copy of the WGSL a custom kernel starts from or is compared with: the shipped fused files and
// the exercises (Vite bundles them as strings; the worker has its own copy of every shader).
import { type Exercise, exerciseById } from './exercises';
import { type CustomSlotId, customSlot } from './slots';

const files = import.meta.glob(['../../../shaders/fused/*.wgsl', '../../../shaders/exercises/*.wgsl'], {
  query: '?raw',
  import: 'default',
  eager: true,
}) as Record<string, string>;

function file(path: string): string {
  const text = files[`../../../shaders/${path}`];
  if (text === undefined) throw new Error(`shader not bundled: ${path}`);
  return text;
}

/** The shipped WGSL of a slot's file. */
export function shippedSource(slot: CustomSlotId): string {
  return file(customSlot(slot).kernel.file);
}

/** An exercise and its buggy starting source. */
export function exerciseSource(id: string): { exercise: Exercise; source: string } | null {
  const exercise = exerciseById(id);
  return exercise ? { exercise, source: file(exercise.file) } : null;
}
