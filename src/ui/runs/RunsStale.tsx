// The note over a runs report that no longer answers the files picked or the model loaded (runs-stale.ts).
import type { RunsReport } from '../../compare/runs-report';
import { useRunsImport } from '../../state/runs-import';
import { runsChangedSince } from './runs-stale';

export function RunsStale({ report, modelName }: { report: RunsReport; modelName: string | null }) {
  const a = useRunsImport((s) => s.picked.A?.file.name ?? null);
  const b = useRunsImport((s) => s.picked.B?.file.name ?? null);
  const busy = useRunsImport((s) => s.status === 'reading' || s.status === 'analyzing');
  const changed = busy ? '' : runsChangedSince(report, { A: a, B: b }, modelName);
  if (!changed) return null;
  return (
    <p className="note warn stale-note" role="note" data-testid="runs-stale" data-changed={changed}>
      <strong>Previous analysis.</strong> This report answers the runs analysed before; since then you changed{' '}
      {changed}. Press Analyze to see the answer to the files picked.
    </p>
  );
}
