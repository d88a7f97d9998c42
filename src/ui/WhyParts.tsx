// The two-path report's "why" in the page: beside the verdict, the op the error is born at and its cause (with what
// was ruled out); in the born layer's drill-down, every op of the fused path checked against its own floor (ratio
// bars on a log axis, the born op marked) and the anatomy of the born op's error.
import type { PathWhy, Report } from '../compare/report';
import { CauseLine, RuledOut } from './CausePanel';
import { pathCauseView, timesFloor, whySentenceShown } from './cause-words';
import { AnatomyHeatmap } from './charts/AnatomyHeatmap';
import { Term } from './Glossary';
import './why.css';

/** The cause beside the verdict (nothing when no layer is born). */
export function WhyLine({
  report,
  running,
  onOpen,
}: {
  report: Report;
  running: boolean;
  /** Opens the born layer's drill-down (its ops and the anatomy). */
  onOpen?: () => void;
}) {
  if (report.firstBornLayer === null && report.why === undefined) return null;
  const view = pathCauseView(report.why, running);
  const why = report.why;
  // Nothing to say (no layer born, the taps skipped, or a report stored before reports carried a why).
  if (view.state === 'absent') return null;
  return (
    <div className="why" data-testid="why" data-born={why?.born ?? ''}>
      {why && (
        <p className="why-sentence" data-testid="why-sentence">
          {whySentenceShown(why.sentence)}
        </p>
      )}
      <CauseLine view={view} />
      {why?.cause && !why.race && <RuledOut cause={why.cause} />}
      {why && onOpen && (
        <button type="button" className="small-btn" data-testid="why-open" onClick={onOpen}>
          Open layer {why.layer}: its ops{why.anatomy ? ' and where in the tensor the error lives' : ''}
        </button>
      )}
    </div>
  );
}

/** log10 position of a ratio on [0.1, top] as a share of the bar's track. */
function barShare(r: number, top: number): number {
  if (!Number.isFinite(r)) return 1;
  const lo = -1;
  const hi = Math.log10(top);
  return Math.max(0.01, Math.min(1, (Math.log10(Math.max(r, 0.1)) - lo) / (hi - lo)));
}

/** Every op of the born layer on the fused path, re-run exactly from its own inputs: its error over its floor. */
export function BornChecks({ why, k }: { why: PathWhy; k: number }) {
  const finite = why.checks.map((c) => c.ratio).filter((r) => Number.isFinite(r));
  const top = Math.max(10 * k, ...finite.map((r) => r * 1.5));
  const kAt = `${100 * barShare(k, top)}%`;
  return (
    <div className="born-checks" data-testid="born-checks">
      <h4 className="born-title">
        Layer {why.layer}, op by op on the fused path's own inputs (the first past {k} × its{' '}
        <Term id="floor" /> is where the error is <Term id="born">born</Term>)
      </h4>
      <table className="born-table">
        <thead>
          <tr>
            <th scope="col">op</th>
            <th scope="col">error ÷ its floor (log; the line is k = {k})</th>
            <th scope="col" className="num">
              ratio
            </th>
          </tr>
        </thead>
        <tbody>
          {why.checks.map((c) => {
            const born = c.id === why.born;
            return (
              <tr
                key={c.id}
                className={born ? 'born' : c.ratio > k ? 'past' : undefined}
                data-testid="born-check"
                data-op={c.id}
                data-born={born ? 'yes' : 'no'}
                data-ratio={c.ratio}
              >
                <th scope="row">
                  <code>{c.id.replace(/^layers\.\d+\./, '')}</code>{' '}
                  <span className="muted small">{c.what}</span>
                  {born && <strong className="born-mark"> ◀ born here</strong>}
                </th>
                <td className="bar-cell" aria-hidden="true">
                  <span className="ratio-track">
                    <span
                      className={`ratio-bar ${c.ratio > k || c.nonFinite > 0 ? 'band-far' : 'band-floor'}`}
                      style={{ width: `${100 * barShare(c.ratio, top)}%` }}
                    />
                    <span className="k-mark" style={{ left: kAt }} />
                  </span>
                </td>
                <td className="num">
                  {timesFloor(c.ratio)}
                  {c.nonFinite > 0 ? `, ${c.nonFinite} NaN/Inf` : ''}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** The born layer's why in its drill-down: the per-op checks, then the anatomy of the born op. */
export function WhyDrill({
  why,
  report,
  fileBase,
  scale,
}: {
  why: PathWhy;
  report: Report;
  fileBase: (what: string, ext: string) => string;
  scale?: number;
}) {
  return (
    <div className="why-drill" data-testid="why-drill">
      <BornChecks why={why} k={report.k} />
      {why.anatomy && why.born && (
        <AnatomyHeatmap anatomy={why.anatomy} op={why.born} k={report.k} fileBase={fileBase} scale={scale} />
      )}
    </div>
  );
}
