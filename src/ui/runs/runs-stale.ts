// What changed since the runs report shown was made: the files picked on either side, or the model loaded. A
// report is never shown under other files without saying so (as the explore mode's report is never shown under
// other settings).
import type { RunsReport } from '../../compare/runs-report';

export interface PickedNames {
  A: string | null;
  B: string | null;
}

/**
 * The changes in words ('' when the files picked and the model still describe the report): each side whose file
 * is not the one analysed, and the model where another is loaded. With no file picked on either side (a stored
 * analysis or a link opened) the files are not compared.
 */
export function runsChangedSince(report: RunsReport, picked: PickedNames, modelName: string | null): string {
  const out: string[] = [];
  if (picked.A !== null || picked.B !== null)
    for (const side of ['A', 'B'] as const) {
      const was = report.runs.find((r) => r.id === side)?.file ?? null;
      const now = picked[side];
      if (was === now) continue;
      if (now === null) out.push(`run ${side} (removed)`);
      else if (was === null) out.push(`run ${side} (${now} added)`);
      else out.push(`run ${side} (${now} in place of ${was})`);
    }
  if (modelName !== null && modelName !== report.model.name)
    out.push(`the model (${modelName} in place of ${report.model.name})`);
  return out.join(', ');
}
