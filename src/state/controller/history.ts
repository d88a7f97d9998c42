// The run history: listing it, keeping each finished run, deleting one.
import type { Report } from '../../compare/analyze';
import type { RunSpec } from '../../run/runspec';
import { type Ctx, errText } from './context';

export interface HistoryKeeper {
  refresh(): Promise<void>;
  /** Stores a finished run, then lists the history again. */
  keep(spec: RunSpec, report: Report): Promise<void>;
  delete(id: string): Promise<void>;
}

export function createHistoryKeeper(ctx: Ctx): HistoryKeeper {
  const { s, hist } = ctx;
  const keeper: HistoryKeeper = {
    async refresh() {
      try {
        const runs = await hist.listRuns();
        s().setHistory({ status: 'ready', runs, message: null });
      } catch (e) {
        s().setHistory({ status: 'unavailable', runs: [], message: errText(e) });
      }
    },
    async keep(spec, report) {
      try {
        await hist.saveRun({ spec, report, createdAt: report.createdAt });
      } catch (e) {
        s().setHistory({ status: 'unavailable', message: errText(e) });
        return;
      }
      await keeper.refresh();
    },
    async delete(id) {
      try {
        await hist.deleteRun(id);
      } catch (e) {
        s().setHistory({ notice: `The run could not be deleted: ${errText(e)}` });
        return;
      }
      if (s().storedRun?.id === id) s().setStoredRun(null);
      await keeper.refresh();
    },
  };
  return keeper;
}
