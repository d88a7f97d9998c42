// The analyses of runs from elsewhere kept in this browser (IndexedDB, idb-keyval): the report and the model it
// was made with, newest first, the newest RUNS_CAP kept. The run files themselves are never stored (they are
// large and the user's); a stored analysis re-opens its report and its link.
import { createStore, del, entries, get, set, type UseStore } from 'idb-keyval';
import type { ModelRef } from './runspec';

export const RUNS_CAP = 50;

/** What the history reads of a report (src/compare/runs-report.ts; the rest is kept as it is). */
export interface AnalysisLike {
  createdAt: string;
  verdict: 'agree' | 'diverged';
  runs: { file: string; label: string | null }[];
}

export interface StoredAnalysis<R extends AnalysisLike = AnalysisLike> {
  id: string;
  createdAt: string;
  /** One line for the list: the runs' labels or files, and the verdict. */
  title: string;
  verdict: 'agree' | 'diverged';
  model: ModelRef | null;
  report: R;
}

let store: UseStore | null = null;
// Created on first use, so importing this module never touches indexedDB (Node, tests).
const db = () => (store ??= createStore('divergence-explorer-runs', 'analyses'));

export async function saveAnalysis<R extends AnalysisLike>(
  report: R,
  model: ModelRef | null,
): Promise<StoredAnalysis<R>> {
  const title = report.runs.map((r) => r.label ?? r.file).join(' vs ');
  const a: StoredAnalysis<R> = {
    id: `${report.createdAt}-${Math.random().toString(36).slice(2, 8)}`,
    createdAt: report.createdAt,
    title,
    verdict: report.verdict,
    model,
    report,
  };
  await set(a.id, a, db());
  const all = await listAnalyses();
  for (const old of all.slice(RUNS_CAP)) await del(old.id, db());
  return a;
}

/** Newest first. */
export async function listAnalyses<R extends AnalysisLike = AnalysisLike>(): Promise<StoredAnalysis<R>[]> {
  const all = (await entries<string, StoredAnalysis<R>>(db())).map(([, v]) => v);
  return all.sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
}

export async function getAnalysis<R extends AnalysisLike = AnalysisLike>(
  id: string,
): Promise<StoredAnalysis<R> | undefined> {
  return get<StoredAnalysis<R>>(id, db());
}

export async function deleteAnalysis(id: string): Promise<void> {
  await del(id, db());
}
