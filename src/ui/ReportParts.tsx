// The report in words: the verdict (the generated text included), the bisection, the determinism badge, the oracle.
// The generated text itself: GenerationParts.tsx.
import type { Report } from '../compare/analyze';
import { describeNonFinite, firstNonFinite } from '../compare/nonfinite';
import { formatRatio } from './format';
import { Term } from './Glossary';
import { kernelWords } from './kernel-words';

export const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** The headline's badge: agree, diverged, or generation diverged (the prompt agrees, the generated text does not). */
export const BADGE: Record<Report['verdict'], string> = {
  agree: 'agree',
  diverged: 'diverged',
  'generation-diverged': 'generation diverged',
};

export function Verdict({
  report,
  generating = null,
}: {
  report: Report;
  /** The generated text not known yet: still generating, or the run stopped (cancelled, failed) before it. */
  generating?: 'running' | 'cancelled' | null;
}) {
  const fdl = report.firstDivergentLayer;
  const layer = fdl === null ? null : report.layers[fdl];
  const worst = report.layers.reduce((m, l) => Math.max(m, l.ratio), 0);
  const floor = <Term id="floor" />;
  const k = <Term id="threshold">k = {report.k}</Term>;
  const g = report.generation;
  // While the text is still being generated, a prompt that agrees is not yet a green verdict.
  const waiting = report.verdict === 'agree' && generating !== null && report.spec.generate > 0;
  let text: React.ReactNode;
  if (report.verdict === 'agree' || report.verdict === 'generation-diverged')
    text = (
      <>
        {report.verdict === 'agree' && !waiting ? 'The paths agree' : 'The prompt agrees'}: every layer stays
        within {report.k} × the {floor} (the <Term id="ratio">worst layer</Term> is at {formatRatio(worst)}{' '}
        its floor; {k}).
        {report.verdict === 'generation-diverged' && g ? (
          <strong data-testid="verdict-generation"> The generated text does not: {g.words}.</strong>
        ) : waiting ? (
          <span className="muted">
            {generating === 'running'
              ? ' Checking the generated text…'
              : ' The generated text was not checked: the run stopped before it.'}
          </span>
        ) : g?.verdict === 'near-tie' && g.words ? (
          <span data-testid="verdict-generation"> In the generated text, {g.words}.</span>
        ) : null}
      </>
    );
  else if (layer)
    text = (
      <>
        Diverged at layer {layer.layer}: {formatRatio(layer.ratio)} the {floor} ({k}).{' '}
        {report.firstBornLayer !== null ? (
          <>
            The error is <Term id="born">born</Term> in layer {report.firstBornLayer}.
          </>
        ) : (
          'No layer creates it alone: it builds up across layers.'
        )}
      </>
    );
  else
    text = (
      <>
        The logits diverge (more than {report.k} × their {floor}) though no layer does on its own.
      </>
    );
  const nonFinite = firstNonFinite(report);
  // 'generation-diverged' wears the diverged colours (styles.css) and says which in its badge.
  const tone = waiting ? 'pending' : report.verdict === 'agree' ? 'agree' : 'diverged';
  return (
    <p
      className={`verdict ${tone}`}
      data-testid="verdict"
      data-verdict={waiting ? 'pending' : report.verdict}
      data-layer={fdl ?? ''}
    >
      <span className="verdict-badge">{waiting ? 'prompt agrees' : BADGE[report.verdict]}</span> {text}
      {nonFinite && (
        <strong className="nonfinite" data-testid="nonfinite">
          {' '}
          {describeNonFinite(nonFinite)}.
        </strong>
      )}
    </p>
  );
}

export function Bisection({ report }: { report: Report }) {
  const rows = report.bisection;
  if (!rows)
    return (
      <p className="muted" data-testid="bisection">
        Bisection not run: the {report.verdict === 'generation-diverged' ? "prompt's layers" : 'paths'} agree.
      </p>
    );
  const hits = rows.filter((r) => r.reproduces);
  return (
    <div data-testid="bisection">
      {hits.length === 0 ? (
        <p>No single fused kernel reproduces the divergence alone: it takes several of them together.</p>
      ) : (
        <ul className="plain">
          {hits.map((r) => (
            <li
              key={r.kernel}
              data-testid="bisection-hit"
              data-kernel={r.kernel}
              data-layer={r.firstLayer ?? ''}
            >
              {report.model.family === 'llama' ? (
                // The family runs its own kernel under GPT-NeoX's switch id (data-kernel): name the kernel only.
                <>
                  Divergence reproduced by <strong>{kernelWords(r.kernel, 'llama').title}</strong> alone from
                  layer {r.firstLayer} <span className="muted">({formatRatio(r.ratio)} the floor)</span>
                </>
              ) : (
                <>
                  Divergence reproduced by <code>{r.kernel}</code> from layer {r.firstLayer}{' '}
                  <span className="muted">
                    ({kernelWords(r.kernel, report.model.family).title} alone, {formatRatio(r.ratio)} the
                    floor)
                  </span>
                </>
              )}
            </li>
          ))}
        </ul>
      )}
      <p className="muted small">
        <Term id="bisection">Bisection</Term>: each switched-on fused kernel was run alone:{' '}
        {rows
          .map((r) => {
            // A Llama-family model runs its own kernels under GPT-NeoX's switch ids: name them as its panel does.
            const name = report.model.family === 'llama' ? kernelWords(r.kernel, 'llama').title : r.kernel;
            return `${name} ${r.reproduces ? 'reproduces' : 'does not'}`;
          })
          .join(', ')}
        .
      </p>
    </div>
  );
}

export function Determinism({ report }: { report: Report }) {
  const d = report.determinism;
  if (d.runs.length === 0)
    return (
      <p className="badge-line" data-testid="determinism" data-identical="unknown">
        <span className="pill">not checked</span>
      </p>
    );
  return (
    <div className="badge-line" data-testid="determinism" data-identical={d.identical ? 'yes' : 'no'}>
      <span className={`pill ${d.identical ? 'good' : 'bad'}`}>
        {d.identical ? 'identical' : 'nondeterministic'}
      </span>{' '}
      {d.identical ? (
        <span>
          The fused path gave bit-identical results over {d.runs.length + 1} runs (
          {d.runs.map((r) => r.schedule).join(', ')}
          {d.runs.some((r) => r.schedule.includes('query tile')) && (
            <>
              ; <Term id="queryTile">what is a query tile?</Term>
            </>
          )}
          ).
        </span>
      ) : (
        <span>
          Bits differ between fused runs:{' '}
          {d.differences
            .slice(0, 4)
            .map((x) => `${x.tensor} (${x.count} elements, first at index ${x.firstIndex}, “${x.schedule}”)`)
            .join('; ')}
          {d.differences.length > 4 ? `; and ${d.differences.length - 4} more` : ''}. A race or an
          uninitialised read.
        </span>
      )}
    </div>
  );
}

/** Which oracle the floor was measured against, and why (double-float on the GPU, or fp64 on the CPU). */
export function OracleNote({ report }: { report: Report }) {
  const o = report.oracle;
  if (!o) return null; // a report stored before reports named their oracle
  return (
    <p className="muted small" data-testid="oracle-note" data-oracle={o.kind}>
      Noise floor against the {o.kind === 'gpu' ? 'double-float oracle on the GPU' : 'fp64 oracle on the CPU'}
      : {o.reason}.
    </p>
  );
}
