// The isolated test's table: one row per shape and output — max error, worst err/tolerance, pass or fail,
// the seed — and the first mismatches of a failing row.
import type { IsolatedResult } from '../../worker/api';

const num = (v: number) => (Number.isFinite(v) ? v.toExponential(2) : Number.isNaN(v) ? '—' : '∞');
const ratio = (v: number) => (Number.isFinite(v) ? v.toFixed(3) : '∞');

export function IsolatedTable({ result }: { result: IsolatedResult }) {
  const failing = result.rows.filter((r) => !r.pass);
  return (
    <div className="isolated" data-testid="isolated-result" data-pass={result.pass ? 'yes' : 'no'}>
      <p className={result.pass ? 'ok-line' : 'bad-line'}>
        <strong>{result.pass ? 'Passed' : 'Failed'}</strong> — {result.rows.filter((r) => r.pass).length} of{' '}
        {result.rows.length} outputs within tolerance ({(result.ms / 1000).toFixed(1)} s).
      </p>
      <div className="table-scroll">
        <table className="isolated-table">
          <thead>
            <tr>
              <th scope="col">Shape</th>
              <th scope="col">Output</th>
              <th scope="col">Max |err|</th>
              <th scope="col" title="Worst error / tolerance over the output (≤ 1 passes)">
                Worst err/tol
              </th>
              <th scope="col">Result</th>
              <th scope="col">Seed</th>
            </tr>
          </thead>
          <tbody>
            {result.rows.map((r) => (
              <tr key={`${r.shape}/${r.output}`} data-testid="isolated-row" data-pass={r.pass ? 'yes' : 'no'}>
                <td className="mono">{r.shape}</td>
                <td className="mono">{r.output}</td>
                <td className="mono num">{num(r.maxAbs)}</td>
                <td className="mono num">{ratio(r.worstRatio)}</td>
                <td>
                  <span className={r.pass ? 'pill-ok' : 'pill-bad'}>{r.pass ? 'pass' : 'fail'}</span>
                </td>
                <td className="mono num">{r.seed}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {failing.length > 0 && (
        <details className="mismatches">
          <summary>First mismatches</summary>
          <pre className="mono small">{failing.map((r) => `${r.shape} — ${r.report}`).join('\n\n')}</pre>
        </details>
      )}
      <p className="muted small">
        Oracle: {result.oracle}. Tolerance: {result.tolerance}. Outputs start as NaN with a NaN guard after
        them, so an unwritten element or a write past the end fails.
      </p>
    </div>
  );
}
