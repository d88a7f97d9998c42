// Errors cross the worker boundary by their kind, never by their words: an engine failure keeps the kind the
// engine gave it whatever its message says.
import { describe, expect, it } from 'vitest';
import { EngineError } from '../engine/types';
import { ModelLoadError } from '../model/errors';
import { toWorkerError } from './boundary';

describe('toWorkerError', () => {
  it('maps engine failures by their kind, not their message', () => {
    expect(toWorkerError(new EngineError('no model is loaded (cancelled token)', 'input')).kind).toBe(
      'input',
    );
    expect(toWorkerError(new EngineError('token 3 is 99', 'internal')).kind).toBe('internal');
    expect(toWorkerError(new EngineError('uploading the weights failed', 'model')).kind).toBe('model');
    expect(toWorkerError(new EngineError('stopped', 'cancelled'))).toEqual({
      kind: 'cancelled',
      message: 'generation cancelled',
    });
    expect(toWorkerError(new EngineError('x')).kind).toBe('internal');
    expect(toWorkerError(new ModelLoadError('run.safetensors', 'bad\nline')).message).not.toContain('\n');
  });
});
