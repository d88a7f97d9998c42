// The cause of an error beside its verdict: the named cause (or "no known cause explains it" with the closest, or a
// race said as a race) and a compact disclosure of every cause tested with its residual over the floor. Shared by
// the two-path report (Explore, Classroom) and the runs mode.
import type { CauseVerdict } from '../compare/causes/types';
import { type CauseView, testedRows, timesFloor } from './cause-words';

const BADGE: Record<CauseView['state'], string> = {
  pending: 'finding the cause…',
  named: 'cause',
  unexplained: 'no known cause',
  race: 'race',
  nonfinite: 'NaN / Inf',
  combined: 'no single op',
  absent: '',
};

export function CauseLine({
  view,
  testId = 'cause',
  lead,
}: {
  view: CauseView;
  testId?: string;
  /** Words before the cause (the born op, in the runs mode). */
  lead?: React.ReactNode;
}) {
  if (view.state === 'absent') return null;
  return (
    <p
      className={`cause-line cause-${view.state}`}
      data-testid={testId}
      data-state={view.state}
      data-cause={view.ids.join(' ')}
      aria-live={view.state === 'pending' ? 'polite' : undefined}
    >
      <span className="cause-badge">{BADGE[view.state]}</span> {lead}
      <strong className="cause-words">{view.headline}</strong>
      {view.detail && <span className="cause-detail"> — {view.detail}.</span>}
    </p>
  );
}

/** Every cause tried at the op, best first, with its residual over the floor; the named ones marked. */
export function RuledOut({ cause, testId = 'ruled-out' }: { cause: CauseVerdict; testId?: string }) {
  const rows = testedRows(cause);
  if (rows.length === 0) return null;
  const sampled = cause.sampled
    ? ` Screened on ${cause.sampled.screened} and scored on ${cause.sampled.scored} of ${cause.sampled.of} output columns.`
    : '';
  return (
    <details className="ruled-out" data-testid={testId}>
      <summary>
        What was ruled out ({rows.length} cause{rows.length === 1 ? '' : 's'} tested
        {cause.named.length ? `, ${cause.named.length} named` : ', none named'})
      </summary>
      <p className="muted small">
        Each cause is a variant of the op re-run exactly from the same recorded inputs; its residual is what
        it leaves of the error, over the op's floor (the op as recorded: {timesFloor(cause.error)}).{sampled}
      </p>
      <table className="ruled-out-table">
        <thead>
          <tr>
            <th scope="col">cause</th>
            <th scope="col">what it would mean</th>
            <th scope="col" className="num">
              residual ÷ floor
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr
              key={r.id}
              className={r.named ? 'named' : undefined}
              data-testid="tested-cause"
              data-cause={r.id}
              data-named={r.named ? 'yes' : 'no'}
            >
              <th scope="row">
                <code>{r.id}</code>
                {r.named && <span className="named-mark"> ✓ named</span>}
              </th>
              <td>{r.words}</td>
              <td className="num">{r.residual}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}
