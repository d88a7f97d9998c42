// The analyses of runs from elsewhere kept in this browser (IndexedDB, idb-keyval): the report and the model it
// was made with, newest first, the newest RUNS_CAP kept. The run files themselves are never stored (they are
// large and the user's); a stored analysis re-opens its report and its link.
import { createStore, del, entries, get, set, type UseStore } from 'idb-keyval';
import type { RunsReport } from '../compare/runs-report';
import type { ModelRef } from './runspec';

export const RUNS_CAP = 50;

export interface StoredAnalysis {
  id: string;
  createdAt: string;
  /** One line for the list: the runs' labels or files, and the verdict. */
  title: string;
  verdict: 'agree' | 'diverged';
  model: ModelRef | null;
  report: RunsReport;
}

let store: UseStore | null = null;
// Created on first use, so importing this module never touches indexedDB (Node, tests).
const db = () => (store ??= createStore('divergence-explorer-runs', 'analyses'));

export async function saveAnalysis(report: RunsReport, model: ModelRef | null): Promise<StoredAnalysis> {
  const title = report.runs.map((r) => r.label ?? r.file).join(' vs ');
  const a: StoredAnalysis = {
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
export async function listAnalyses(): Promise<StoredAnalysis[]> {
  const all = (await entries<string, StoredAnalysis>(db())).map(([, v]) => v);
  return all.sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));
}

export async function getAnalysis(id: string): Promise<StoredAnalysis | undefined> {
  return get<StoredAnalysis>(id, db());
}

export async function deleteAnalysis(id: string): Promise<void> {
  await del(id, db());
}
