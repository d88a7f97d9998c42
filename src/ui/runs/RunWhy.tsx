// A runs finding's "why": at the run's first born op, the cause that explains the error (or that none does, with
// the closest), every cause tested, and the anatomy of the error as a heatmap with its sentence.
import type { Anatomy } from '../../compare/causes/anatomy';
import type { CauseVerdict } from '../../compare/causes/types';
import { CauseLine, RuledOut } from '../CausePanel';
import { verdictView } from '../cause-words';
import { AnatomyHeatmap } from '../charts/AnatomyHeatmap';
import '../why.css';

export function RunWhy({
  run,
  op,
  cause,
  anatomy,
  k,
  fileBase,
  heatmap = true,
}: {
  run: string;
  /** The born op's module path. */
  op: string;
  cause: CauseVerdict | null | undefined;
  anatomy: Anatomy | null | undefined;
  k: number;
  fileBase: (what: string, ext: string) => string;
  /** Show the anatomy heatmap (the finding does; the check's drill-down repeats only the words). */
  heatmap?: boolean;
}) {
  if (cause === undefined) return null;
  return (
    <div className="finding-cause" data-testid={`run-why-${run}`}>
      {cause === null ? (
        <p className="cause-line cause-nonfinite" data-testid={`cause-${run}`} data-state="nonfinite">
          <span className="cause-badge">NaN / Inf</span> no cause scored: the op writes NaN/Inf values, and a
          cause is scored on finite values only.
        </p>
      ) : (
        <>
          <CauseLine view={verdictView(cause)} testId={`cause-${run}`} />
          <RuledOut cause={cause} testId={`ruled-out-${run}`} />
        </>
      )}
      {heatmap && anatomy && (
        <AnatomyHeatmap anatomy={anatomy} op={op} k={k} fileBase={fileBase} testId={`anatomy-${run}`} />
      )}
      {!heatmap && anatomy && <p data-testid={`anatomy-sentence-${run}`}>{anatomy.sentence}</p>}
    </div>
  );
}
