// The generated text in the report: the decode findings beside the verdict (GenerationLine), both paths' text cut at
// the first difference with why they part and the generation's story (Generation), and, while the run generates,
// both paths' tokens as they stream in (Streaming).
import type { GenerationParting, Report } from '../compare/analyze';
import type { DecodeCheck } from '../compare/decode-run-file';
import type { TextSegments, TokenStream } from '../state/store';
import { formatRatio, ordinal } from './format';
import { Term } from './Glossary';
import { capital } from './ReportParts';

/**
 * The generated text's answer beside the verdict, in view with every other answer: the decode finding (the op where
 * the decode's error is born, on each path) and, while it runs, that the decode check has started by itself.
 */
export function GenerationLine({ report, checking }: { report: Report; checking: boolean }) {
  const g = report.generation;
  if (checking)
    return (
      <p className="muted pending" data-testid="decode-pending">
        <span className="pill">checking…</span> The generated text diverges: every decode step is being
        checked op by op on both paths, to name the op where the error is born.
      </p>
    );
  if (!g?.decode) return null;
  return (
    <div data-testid="generation-verdict" data-verdict={g.verdict ?? ''} data-started={g.decodeStarted ?? ''}>
      <DecodeChecks checks={g.decode} started={g.decodeStarted} />
    </div>
  );
}

function Continuation({
  label,
  text,
  ids,
  segments,
  first,
}: {
  label: string;
  text: string | null;
  ids: number[];
  segments: TextSegments | null;
  first: number | null;
}) {
  let body: React.ReactNode;
  if (text === null) {
    body = ids.map((id, i) => (
      <span
        // biome-ignore lint/suspicious/noArrayIndexKey: a token's position is its identity here
        key={`${i}-${id}`}
        className={i === first ? 'first-diff' : undefined}
        data-testid={i === first ? 'first-diff' : undefined}
      >
        {i ? ', ' : ''}
        {id}
      </span>
    ));
  } else if (segments) {
    body = (
      <>
        {segments.before}
        <mark
          className="first-diff"
          data-testid="first-diff"
          data-ws={segments.at.trim() === '' ? 'yes' : undefined}
        >
          {segments.at}
        </mark>
        {segments.after}
      </>
    );
  } else body = text;
  return (
    <div className="continuation">
      <h4 className="sub">{label}</h4>
      <div
        className="output"
        data-testid={`gen-${label.startsWith('Reference') ? 'reference' : 'fused'}`}
        data-ids={ids.join(',')}
      >
        {body}
      </div>
    </div>
  );
}

/**
 * The presenter's view of the generated text: both texts side by side, the first difference marked, and why they
 * part in one line (the room reads the story in the cause line above).
 */
export function TextsAndParting({
  report,
  segments,
}: {
  report: Report;
  segments: { reference: TextSegments; fused: TextSegments } | null;
}) {
  const g = report.generation;
  if (!g) return <p className="muted">No tokens were generated (generation length 0).</p>;
  const p = g.parting;
  return (
    <div data-testid="generation" data-first-difference={g.firstDifference ?? ''}>
      <div className="side-by-side">
        <Continuation
          label="Reference path"
          text={g.reference.text}
          ids={g.reference.ids}
          segments={segments?.reference ?? null}
          first={g.firstDifference}
        />
        <Continuation
          label="Fused path"
          text={g.fused.text}
          ids={g.fused.ids}
          segments={segments?.fused ?? null}
          first={g.firstDifference}
        />
      </div>
      {p ? (
        <p data-testid="generation-parting" data-kind={p.kind} data-step={p.step}>
          <span className={`pill ${PARTING_PILL[p.kind][0]}`}>{PARTING_PILL[p.kind][1]}</span> {p.words}
        </p>
      ) : (
        <p>Both paths generate the same {g.reference.ids.length} tokens.</p>
      )}
    </div>
  );
}

export function Generation({
  report,
  segments,
}: {
  report: Report;
  segments: { reference: TextSegments; fused: TextSegments } | null;
}) {
  const g = report.generation;
  if (!g) return <p className="muted">No tokens were generated (generation length 0).</p>;
  const prompt =
    'text' in report.spec.prompt ? report.spec.prompt.text : report.spec.prompt.tokens.join(', ');
  return (
    <div data-testid="generation" data-first-difference={g.firstDifference ?? ''}>
      <p className="muted small">
        Prompt:{' '}
        <span className="prompt-text" data-testid="generation-prompt">
          {prompt}
        </span>
      </p>
      <p data-testid="generation-summary">
        {g.firstDifference === null
          ? `Both paths generate the same ${g.reference.ids.length} tokens.`
          : `The continuations part at the ${ordinal(g.firstDifference + 1)} generated token of ${g.reference.ids.length} (highlighted).`}
      </p>
      {g.verdict === 'diverged' && g.words ? (
        <p data-testid="generation-story">
          <span className="pill bad">text diverges</span> {capital(g.words)}.
        </p>
      ) : null}
      {g.parting ? <Parting parting={g.parting} /> : null}
      {g.decode ? (
        <p className="muted small">
          Each decode step checked op by op: under the verdict, at the top of the report.
        </p>
      ) : null}
      <div className="side-by-side">
        {(
          [
            ['Reference path', g.reference, segments?.reference],
            ['Fused path', g.fused, segments?.fused],
          ] as const
        ).map(([label, side, seg]) => (
          <Continuation
            key={label}
            label={label}
            text={side.text}
            ids={side.ids}
            segments={seg ?? null}
            first={g.firstDifference}
          />
        ))}
      </div>
    </div>
  );
}

const PARTING_PILL: Record<GenerationParting['kind'], [string, string]> = {
  'near-tie': ['good', 'near tie flipped by rounding'],
  divergence: ['bad', 'divergence'],
  decode: ['bad', 'error in the decode path'],
};

/** Why the texts part: the top two candidates of each path at the row that chose the parting token. */
function Parting({ parting: p }: { parting: GenerationParting }) {
  const [tone, name] = PARTING_PILL[p.kind];
  const side = (label: string, s: GenerationParting['reference']) => (
    <li>
      {label}: {s.top.map((c) => `${c.id} (${c.logit.toPrecision(6)})`).join(' over ')}, gap{' '}
      {s.gap.toExponential(1)}; off exact by {formatRatio(s.ratio)} the floor
    </li>
  );
  return (
    <div data-testid="generation-parting" data-kind={p.kind} data-step={p.step}>
      <p>
        <span className={`pill ${tone}`}>{name}</span> {p.words}
      </p>
      <ul className="plain muted small">
        {side('Reference', p.reference)}
        {side('Fused', p.fused)}
        <li>
          Logits' <Term id="floor" /> at that row: {p.floor.toExponential(1)} (k = {p.k}).
        </li>
      </ul>
    </div>
  );
}

/** Each path's decode steps checked op by op as a run, and its cached decode against its uncached forward. */
function DecodeChecks({ checks, started }: { checks: DecodeCheck[]; started?: 'asked' | 'auto' }) {
  const name = (path: string) => (path === 'reference' ? 'Reference path' : 'Fused path');
  return (
    <div data-testid="decode-checks">
      <h4 className="sub">
        Decode steps, checked op by op
        {started === 'auto' ? (
          <span className="muted small"> (started by itself: the text diverges)</span>
        ) : null}
      </h4>
      <ul className="plain">
        {checks.map((d) => (
          <li key={d.path} data-testid="decode-check" data-path={d.path} data-verdict={d.verdict}>
            <span className={`pill ${d.verdict === 'agree' ? 'good' : 'bad'}`}>
              {d.verdict === 'agree' ? 'agrees' : 'diverges'}
            </span>{' '}
            {name(d.path)}: {d.sentence}
            {d.vsFull ? (
              <span className="muted small">
                {' '}
                Cached against uncached:{' '}
                {d.vsFull.relL2 === 0
                  ? 'bit for bit.'
                  : `${formatRatio(d.vsFull.ratio)} the logits' floor (${d.vsFull.within ? 'within' : 'beyond'} k).`}
              </span>
            ) : null}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** Both paths' tokens as they are generated, with a counter. */
export function Streaming({ stream, total }: { stream: TokenStream | null; total: number }) {
  const paths = [
    ['Reference path', 'reference'],
    ['Fused path', 'fused'],
  ] as const;
  return (
    <div data-testid="generation-stream">
      <p className="muted" data-testid="stream-count">
        Generating: reference {stream?.reference.ids.length ?? 0} / {total}, fused{' '}
        {stream?.fused.ids.length ?? 0} / {total} tokens.
      </p>
      <div className="side-by-side">
        {paths.map(([label, key]) => {
          const p = stream?.[key];
          return (
            <div className="continuation" key={key}>
              <h4 className="sub">{label}</h4>
              <div className="output" data-testid={`stream-${key}`} data-count={p?.ids.length ?? 0}>
                {p ? (p.text ?? p.ids.join(', ')) : '…'}
              </div>
            </div>
          );
        })}
      </div>
    </div>
  );
}
