// Opening what the page did not run itself: a link's fragment ('#r1=…' permalink, '#s=…' scenario) and a
// run stored in the history. Both restore the settings and load (or ask for) the model they name; a newer
// open wins over an older, slower one.
import type { Report } from '../../compare/analyze';
import type { CachedModel, StoredRun } from '../../run/history';
import { LinkError } from '../../run/link-bytes';
import { autorunAllowed, decodeLink, type LinkPayload } from '../../run/permalink';
import { type ModelRef, parseRunSpec, type RunSpec } from '../../run/runspec';
import { scenarioById } from '../../run/scenarios';
import { modelMatches } from '../spec';
import type { ModelNeed, ScenarioView } from '../store';
import { type Ctx, errText } from './context';
import type { HistoryKeeper } from './history';
import type { ModelLoader } from './models';
import type { Runner } from './runs';

export interface Opener {
  openLink(fragment: string): Promise<void>;
  fetchNeededModel(): Promise<void>;
  openStoredRun(id: string): Promise<void>;
}

const SCENARIO_FRAGMENT = /^#?s=([a-z0-9][a-z0-9-]{0,39})(?:\/([1-9]\d?))?$/;

/** The scenario a (decoded, hence valid) '#s=' fragment names, or null. */
function scenarioOf(fragment: string): ScenarioView | null {
  const m = SCENARIO_FRAGMENT.exec(fragment.trim());
  if (!m || !scenarioById(m[1])) return null;
  return { id: m[1], variant: m[2] === undefined ? null : Number(m[2]), step: 0 };
}

/** A stored report as this build reads it, or null (a record written by something else). */
function storedReport(v: unknown): Report | null {
  if (typeof v !== 'object' || v === null) return null;
  const r = v as Record<string, unknown>;
  return Array.isArray(r.layers) &&
    typeof r.verdict === 'string' &&
    typeof r.metric === 'string' &&
    typeof r.spec === 'object'
    ? (v as Report)
    : null;
}

export function createOpener(
  ctx: Ctx,
  started: () => Promise<void> | null,
  models: ModelLoader,
  history: HistoryKeeper,
  runner: Runner,
): Opener {
  const { s, hist, opts } = ctx;
  /** Bumps with every link or stored run opened: a slower, older one must not act after a newer one. */
  let openSeq = 0;

  /** Loads the model a run names: already loaded, the embedded one, from the cache — or asks the viewer. */
  async function ensureModel(ref: ModelRef, from: ModelNeed['from'], seq: number): Promise<void> {
    await started();
    if (seq !== openSeq) return;
    const st = s();
    if (st.initStatus !== 'ready') return; // no GPU: nothing can be loaded; the page says why
    if (modelMatches(ref, st)) return;
    if (ref.kind === 'embedded') {
      if (ref.id === opts.embedded.id && st.modelStatus !== 'loading') await models.loadEmbedded();
      return;
    }
    let cached: CachedModel | undefined;
    try {
      cached = await hist.getCachedModel(ref.sha256);
    } catch {
      cached = undefined; // no IndexedDB: ask for the model
    }
    if (seq !== openSeq) return;
    if (cached) {
      await models.loadCached(
        cached,
        ref.sha256,
        ref.kind === 'url' ? { url: ref.url } : { name: ref.name ?? cached.name },
      );
      if (seq !== openSeq || modelMatches(ref, s())) return;
    }
    s().setModelNeed({ ref, from });
  }

  return {
    async openLink(fragment) {
      const f = fragment.trim();
      if (f === '' || f === '#') return;
      let payload: LinkPayload;
      try {
        payload = decodeLink(f);
      } catch (e) {
        s().setLinkError(e instanceof LinkError ? e.message : 'This link could not be read.');
        return;
      }
      const ref = payload.spec.model;
      if (ref.kind === 'embedded' && ref.id !== opts.embedded.id) {
        s().setLinkError(
          `This link names the embedded model “${ref.id}”, which this site does not have (it has ${opts.embedded.id}).`,
        );
        return;
      }
      if (s().run.status === 'running') {
        s().setLinkError('A comparison is running: cancel it, then open the link again.');
        return;
      }
      const scenario = scenarioOf(f);
      const seq = ++openSeq;
      s().openRun(
        payload.spec,
        {
          spec: payload.spec,
          origin: scenario ? 'scenario' : 'link',
          sharer: payload.sharer ?? null,
          autorunPending: autorunAllowed(payload),
        },
        scenario,
      );
      await ensureModel(ref, 'link', seq);
    },

    async fetchNeededModel() {
      const need = s().modelNeed;
      if (need?.ref.kind !== 'url') return;
      const st = s();
      if (st.initStatus !== 'ready' || st.modelStatus === 'loading' || st.run.status === 'running') return;
      await models.loadFromUrl(need.ref.url, { expectSha256: need.ref.sha256, expectFiles: need.ref.files });
    },

    async openStoredRun(id) {
      if (s().run.status === 'running') return;
      const seq = ++openSeq;
      let rec: StoredRun | undefined;
      try {
        rec = await hist.getRun(id);
      } catch (e) {
        s().setHistory({ notice: `The stored run could not be read: ${errText(e)}` });
        return;
      }
      if (seq !== openSeq) return;
      if (!rec) {
        s().setHistory({ notice: 'That run is no longer in the history.' });
        await history.refresh();
        return;
      }
      let spec: RunSpec;
      try {
        spec = parseRunSpec(rec.spec);
      } catch {
        s().setHistory({ notice: 'This build cannot read that stored run’s settings.' });
        return;
      }
      const report = storedReport(rec.report);
      if (report) {
        s().showStoredRun({ id: rec.id, createdAt: rec.createdAt }, spec, report);
        s().setHistory({ notice: null });
      } else {
        s().openRun(spec, null, null);
        s().setHistory({
          notice:
            'Only the summary of that run was kept (its report was too large to store): its settings are restored; run it to see the report.',
        });
      }
      await ensureModel(spec.model, 'history', seq);
      if (report && seq === openSeq && modelMatches(spec.model, s()))
        await runner.showSegments(report, ctx.generation());
    },
  };
}
