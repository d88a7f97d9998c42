// The analyses of runs kept in IndexedDB (fake-indexeddb): saved with their model, listed newest first, capped.
import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import type { RunsReport } from '../compare/runs-report';
import { deleteAnalysis, getAnalysis, listAnalyses, RUNS_CAP, saveAnalysis } from './runs-history';

const report = (createdAt: string, verdict: 'agree' | 'diverged' = 'diverged') =>
  ({
    createdAt,
    verdict,
    runs: [
      { file: 'a.safetensors', label: 'clean' },
      { file: 'b.safetensors', label: null },
    ],
  }) as unknown as RunsReport;

describe('runs history', () => {
  it('keeps analyses newest first with their model, at most RUNS_CAP', async () => {
    const a = await saveAnalysis(report('2026-11-24T10:00:00.000Z'), { kind: 'embedded', id: 'm' });
    expect(a.title).toBe('clean vs b.safetensors');
    expect((await getAnalysis(a.id))?.model).toEqual({ kind: 'embedded', id: 'm' });
    for (let i = 0; i < RUNS_CAP + 3; i++)
      await saveAnalysis(report(`2026-11-25T10:00:${String(i).padStart(2, '0')}.000Z`), null);
    const all = await listAnalyses();
    expect(all).toHaveLength(RUNS_CAP);
    expect(all[0].createdAt > all[1].createdAt).toBe(true);
    expect(all.some((x) => x.id === a.id)).toBe(false);
    await deleteAnalysis(all[0].id);
    expect(await listAnalyses()).toHaveLength(RUNS_CAP - 1);
  });
});
