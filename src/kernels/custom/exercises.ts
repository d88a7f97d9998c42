// Classroom exercises on custom kernels: a buggy kernel handed to the student (a WGSL file under
// shaders/exercises/), its slot, the goal in plain words and a hint. The explorer says "fixed" once the
// edited kernel passes its isolated test and a run with it agrees with the reference path within the floor.
import type { CustomSlotId } from './slots';

export type ExerciseId = 'layernorm-barrier' | 'gelu-tanh';

export interface Exercise {
  id: ExerciseId;
  slot: CustomSlotId;
  /** The buggy kernel, under shaders/. */
  file: string;
  title: string;
  /** What is wrong, as the student first sees it (symptom, not cause). */
  story: string;
  goal: string;
  hint: string;
}

export const EXERCISES: readonly Exercise[] = [
  {
    id: 'layernorm-barrier',
    slot: 'layernorm2',
    file: 'exercises/layernorm2_barrier.wgsl',
    title: 'A LayerNorm that reads too early',
    story:
      'A simple dual LayerNorm: the row is cached in workgroup memory, thread 0 computes the mean and the ' +
      'variance, every thread normalizes its slice. Its outputs are wrong.',
    goal: 'Make the isolated test pass, then Run: the model must agree with the reference path within the noise floor.',
    hint: 'Thread 0 reads row[c] for every c. Who wrote those elements, and what guarantees they are written?',
  },
  {
    id: 'gelu-tanh',
    slot: 'linear_gelu',
    file: 'exercises/linear_gelu_tanh.wgsl',
    title: 'The other GELU',
    story:
      'The MLP up-projection with its activation fused into the GEMM epilogue. The generated text still ' +
      'reads well, yet its isolated test fails: every output is off by several times its tolerance.',
    goal: 'Make the isolated test pass, then Run: the model must agree with the reference path within the noise floor.',
    hint: 'GPT-NeoX\'s hidden_act "gelu" is the exact erf form; tanh(…) is the approximation of "gelu_new".',
  },
];

export function exerciseById(id: string): Exercise | undefined {
  return EXERCISES.find((e) => e.id === id);
}
