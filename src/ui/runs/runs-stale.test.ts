import { describe, expect, it } from 'vitest';
import type { RunsReport } from '../../compare/runs-report';
import { runsChangedSince } from './runs-stale';

// Only the fields runsChangedSince reads: the runs' files and the model's name.
const report = {
  model: { name: 'qwen3-qknorm' },
  runs: [
    { id: 'A', file: 'clean.safetensors' },
    { id: 'B', file: 'qk-norm-skipped.safetensors' },
  ],
} as unknown as RunsReport;

describe('runsChangedSince', () => {
  it('is empty while the files picked and the model are the report’s', () => {
    expect(
      runsChangedSince(report, { A: 'clean.safetensors', B: 'qk-norm-skipped.safetensors' }, 'qwen3-qknorm'),
    ).toBe('');
  });
  it('names a side whose file is not the one analysed, one removed, and another model', () => {
    expect(
      runsChangedSince(
        report,
        { A: 'clean.safetensors', B: 'decode-kv-dropped.safetensors' },
        'qwen3-qknorm',
      ),
    ).toBe('run B (decode-kv-dropped.safetensors in place of qk-norm-skipped.safetensors)');
    expect(runsChangedSince(report, { A: 'clean.safetensors', B: null }, 'other')).toBe(
      'run B (removed), the model (other in place of qwen3-qknorm)',
    );
  });
  it('names a run B added to a report of run A alone', () => {
    const one = { ...report, runs: [report.runs[0]] } as RunsReport;
    expect(runsChangedSince(one, { A: 'clean.safetensors', B: 'b.safetensors' }, null)).toBe(
      'run B (b.safetensors added)',
    );
  });
  it('does not compare files where none is picked (a stored analysis opened)', () => {
    expect(runsChangedSince(report, { A: null, B: null }, 'qwen3-qknorm')).toBe('');
  });
});
