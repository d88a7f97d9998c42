// Test helpers shared by the model-file tests.
import { ModelLoadError } from './errors';

/** Runs fn and returns the ModelLoadError it throws; fails the test if it throws nothing or something else. */
export function expectLoadError(fn: () => unknown): ModelLoadError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ModelLoadError) return e;
    throw e;
  }
  throw new Error('expected a ModelLoadError, nothing was thrown');
}
