// The answer of the "your runs" mode: the verdict per run in words, where each run came from, the per-layer curves,
// and every local check as a grid (layers × ops, coloured by its ratio to the floor) with a drill-down that names
// the run's own tensors. The cells are a roving grid: arrows move, Enter opens, Escape closes.

import { useEffect, useMemo, useRef, useState } from 'react';
import { familyColumns, familyColumnWords } from '../../compare/family-runs-words';
import { rowInWords } from '../../compare/run-rows';
import type { RunCheckResult, RunsReport } from '../../compare/runs-report';
import { LLAMA_FAMILY } from '../../ops/families';
import { runsLinkOf } from '../../run/runs-link';
import type { ModelRef } from '../../run/runspec';
import { useRunsImport } from '../../state/runs-import';
import { withoutCauseClause } from '../cause-words';
import { linkBase } from '../nav';
import { RunCurves } from './RunCurves';
import { RunWhy } from './RunWhy';
import './runs.css';

const OPS = [
  'ln1',
  'qkv',
  'attention',
  'dense',
  'residual_attn',
  'ln2',
  'fc1',
  'act',
  'fc2',
  'residual',
  'residual_mlp',
  'layer',
];
const OP_WORDS: Record<string, string> = {
  ln1: 'ln1',
  qkv: 'qkv',
  attention: 'attention core',
  dense: 'dense',
  residual_attn: 'add (attn)',
  ln2: 'ln2',
  fc1: 'fc1',
  act: 'act',
  fc2: 'fc2',
  residual: 'add',
  residual_mlp: 'add (mlp)',
  layer: 'whole layer',
};

const ratioText = (r: number) =>
  Number.isFinite(r) ? `${r < 10 ? r.toFixed(1) : r.toExponential(1)}×` : '∞';

function fileBase(report: RunsReport) {
  return (what: string, ext: string) =>
    `runs-${report.runs.map((r) => r.sha256?.slice(0, 8) ?? r.id).join('-')}-${what}.${ext}`;
}

/**
 * The MLP half's slots: the family's steps from the mlp module's input (post_attention_layernorm's output) on
 * (ops/families.ts); a Llama-family grid splits before the first column that takes one in.
 */
const MLP_SLOTS = mlpSlots();

function mlpSlots(): Set<string> {
  const from = LLAMA_FAMILY.layer.findIndex((s) => s.slot === LLAMA_FAMILY.containers.mlp?.[0]);
  if (from < 0) throw new Error("the Llama family's steps have no mlp module input");
  return new Set(LLAMA_FAMILY.layer.slice(from).map((s) => s.slot));
}
/** The most columns one block holds before it is split again (Large type at 1280 px fits eight). */
const BLOCK_COLUMNS = 8;

/**
 * A Llama-family run's columns (up to 16: q/k norms, the gate and up apart …) in blocks, each its own table, so the
 * grid fits the page's width at 1280 px (Large type too) instead of scrolling sideways: the attention half and the
 * MLP half, the attention half split again before its attention core where it has more than eight columns.
 */
function familyBlocks(ops: string[]): { name: string; ops: string[] }[] {
  const has = (op: string, test: (slot: string) => boolean) => op.split('+').some(test);
  const cut = ops.findIndex((op) => has(op, (s) => MLP_SLOTS.has(s)));
  if (cut <= 0) return [{ name: '', ops }];
  const attention = ops.slice(0, cut);
  const mlp = { name: 'MLP half', ops: ops.slice(cut) };
  const core = attention.findIndex((op) => has(op, (s) => s === 'ctx' || s.endsWith('_rot')));
  if (attention.length <= BLOCK_COLUMNS || core <= 0)
    return [{ name: 'attention half', ops: attention }, mlp];
  return [
    { name: 'attention half: the norm and the projections', ops: attention.slice(0, core) },
    { name: 'attention half: the attention core and after', ops: attention.slice(core) },
    mlp,
  ];
}

function CheckGrid(p: {
  report: RunsReport;
  run: string;
  open: (c: RunCheckResult) => void;
  openId: string | null;
}) {
  const checks = p.report.checks.filter((c) => c.run === p.run);
  const llama = p.report.model.family === 'llama';
  const ops = llama ? familyColumns(checks) : OPS.filter((op) => checks.some((c) => c.id.endsWith(`.${op}`)));
  const blocks = llama ? familyBlocks(ops) : [{ name: '', ops }];
  const tops = checks.filter((c) => c.layer === null);
  return (
    <div className="run-grid-wrap">
      {blocks.map((b) => (
        <GridBlock key={b.name} {...p} checks={checks} ops={b.ops} block={b.name} llama={llama} />
      ))}
      {tops.length > 0 && (
        <p className="small">
          {tops.map((c) => (
            <button
              type="button"
              key={c.id}
              className={`small-btn ${c.born ? 'cell-born' : ''}`}
              onClick={() => p.open(c)}
            >
              {c.module}: {ratioText(c.ratio)}
            </button>
          ))}
        </p>
      )}
    </div>
  );
}

function GridBlock(p: {
  report: RunsReport;
  run: string;
  open: (c: RunCheckResult) => void;
  openId: string | null;
  checks: RunCheckResult[];
  ops: string[];
  /** The block's name ('' where the grid is one table). */
  block: string;
  llama: boolean;
}) {
  const { checks, ops } = p;
  const L = p.report.model.config.numLayers;
  const at = (layer: number, op: string) => checks.find((c) => c.id === `layers.${layer}.${op}`) ?? null;
  const move = (e: React.KeyboardEvent<HTMLButtonElement>, layer: number, col: number) => {
    const d = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[e.key];
    if (!d) return;
    e.preventDefault();
    const table = e.currentTarget.closest('table');
    const next = table?.querySelector<HTMLElement>(`[data-cell="${layer + d[0]}:${col + d[1]}"]`);
    if (next || d[1] === 0 || !table?.parentElement) return next?.focus();
    // Past a block's first or last column: the same layer's row in the block beside it (its nearest cell).
    const blocks = [...table.parentElement.querySelectorAll('table')];
    const row = blocks[blocks.indexOf(table) + d[1]]?.querySelectorAll<HTMLElement>(
      `[data-cell^="${layer}:"]`,
    );
    (d[1] > 0 ? row?.[0] : row?.[row.length - 1])?.focus();
  };
  const layers = Array.from({ length: L }, (_, i) => i);
  return (
    <table
      className={`run-grid${p.llama ? ' run-grid-family' : ''}`}
      data-block={p.block}
      aria-label={`Local checks of run ${p.run}${p.block ? ` (${p.block})` : ''}: ratio of each op's error to its floor`}
    >
      {p.block && <caption>{p.block}</caption>}
      <thead>
        <tr>
          <th scope="col">layer</th>
          {ops.map((op) => (
            <th key={op} scope="col" title={op}>
              {p.llama ? familyColumnWords(op) : OP_WORDS[op]}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {layers.map((layer) => (
          <tr key={layer}>
            <th scope="row">{layer}</th>
            {ops.map((op, col) => {
              const c = at(layer, op);
              if (!c) return <td key={op} className="cell-none" aria-label="not checked" />;
              return (
                <td
                  key={op}
                  className={`cell ${c.born ? 'cell-born' : 'cell-ok'}${p.openId === c.id ? ' cell-open' : ''}`}
                >
                  <button
                    type="button"
                    data-cell={`${layer}:${col}`}
                    data-testid={`check-${p.run}-${c.id}`}
                    aria-label={`${c.module}: ${ratioText(c.ratio)} its floor${c.born ? ', born here' : ''}`}
                    onClick={() => p.open(c)}
                    onKeyDown={(e) => move(e, layer, col)}
                  >
                    {ratioText(c.ratio)}
                  </button>
                </td>
              );
            })}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function CheckDetail({ c, close, report }: { c: RunCheckResult; close: () => void; report: RunsReport }) {
  const ref = useRef<HTMLElement | null>(null);
  useEffect(() => {
    ref.current?.scrollIntoView({ block: 'nearest' });
    ref.current?.focus();
  }, []);
  return (
    <section
      className="card run-detail"
      ref={ref}
      tabIndex={-1}
      aria-label={`Check ${c.id} of run ${c.run}`}
      data-testid="run-check-detail"
      onKeyDown={(e) => e.key === 'Escape' && close()}
    >
      <div className="card-head">
        <h3>
          Run {c.run} · {c.module}
        </h3>
        <button type="button" className="small-btn" onClick={close}>
          Close
        </button>
      </div>
      <p>
        {c.what}: error {c.error.relL2.toExponential(2)} (relative L2) against a floor of{' '}
        {c.floorValue.toExponential(2)} — <strong>{ratioText(c.ratio)}</strong>{' '}
        {c.born ? '(born here)' : '(within k × the floor)'}
        {c.nonFinite > 0 ? `; ${c.nonFinite} NaN/Inf values` : ''}.
        {c.firstRow != null ? (
          <FirstRow run={c.run} row={c.firstRow} to={c.pastTo ?? c.firstRow} report={report} />
        ) : null}
      </p>
      <p className="small">
        Re-run exactly from the run's own {c.inputs.map((n) => `'${n}'`).join(' + ') || 'tokens'} and compared
        with '{c.output}'. Max abs error {c.error.maxAbs.toExponential(2)}; the floor is the explorer's{' '}
        {report.model.family === 'llama'
          ? "Llama reference path at the run's storage precision"
          : 'fp32 reference kernel'}{' '}
        measured the same way.
      </p>
      <RunWhy
        run={`${c.run}-check`}
        op={c.module}
        cause={c.cause}
        anatomy={c.anatomy}
        k={report.k}
        fileBase={() => ''}
        heatmap={false}
      />
    </section>
  );
}

/**
 * Where the check's error passes k × the floor: its first row, or the unbroken stretch from it said whole (every row
 * of the prompt, every decode step from one on) — a position, or decode steps of a generation.
 */
function FirstRow({ run, row, to, report }: { run: string; row: number; to: number; report: RunsReport }) {
  const g = report.runs.find((r) => r.id === run)?.generation;
  const words = rowInWords(row, g, to, report.tokens.length);
  return (
    <span data-testid="run-check-first-row" data-row={row} data-to={to}>
      {' '}
      {to > row ? `It passes k × the floor at ${words}.` : `It first passes k × the floor at ${words}.`}
    </span>
  );
}

/** What the sharer of a link saw for one run, in words. */
function SharerLine({ run }: { run: string }) {
  const sharer = useRunsImport((s) => s.link?.sharer);
  const f = sharer?.findings.find((x) => x.run === run);
  if (!sharer || !f) return null;
  return (
    <span className="sharer small" data-testid={`sharer-${run}`}>
      {' '}
      The sharer ({sharer.adapter}) saw:{' '}
      {f.check === null
        ? 'agrees'
        : `${f.check}${f.ratio !== null ? ` at ${ratioText(f.ratio)} its floor` : ''}`}
      .
    </span>
  );
}

function CopyLink({ report, model }: { report: RunsReport; model: ModelRef | null }) {
  const [said, setSaid] = useState<string | null>(null);
  if (!model || report.runs.some((r) => !r.sha256)) return null;
  const copy = async () => {
    try {
      const url = `${linkBase()}${runsLinkOf(report, model)}`;
      await navigator.clipboard.writeText(url);
      setSaid('Link copied: it names the files by sha256 (they are not in it).');
    } catch (e) {
      setSaid(`Could not copy the link: ${(e as Error).message}`);
    }
  };
  return (
    <p>
      <button type="button" className="small-btn" data-testid="copy-runs-link" onClick={() => void copy()}>
        Copy link
      </button>{' '}
      <span className="small" role="status">
        {said ?? ''}
      </span>
    </p>
  );
}

export function RunsResults({ report, model }: { report: RunsReport; model: ModelRef | null }) {
  const [run, setRun] = useState(() => report.findings.find((f) => f.diverged)?.run ?? report.runs[0].id);
  const [open, setOpen] = useState<RunCheckResult | null>(null);
  const head = useRef<HTMLHeadingElement | null>(null);
  useEffect(() => {
    setOpen(null);
    setRun(report.findings.find((f) => f.diverged)?.run ?? report.runs[0].id);
    head.current?.scrollIntoView({ block: 'nearest' });
    head.current?.focus();
  }, [report]);
  const base = useMemo(() => fileBase(report), [report]);
  return (
    <div className="runs-results" data-testid="runs-results">
      <section className="card" aria-labelledby="runs-verdict">
        <h2 id="runs-verdict" ref={head} tabIndex={-1}>
          <span
            className={`badge ${report.verdict === 'agree' ? 'badge-ok' : 'badge-bad'}`}
            data-testid="runs-verdict"
          >
            {report.verdict === 'agree' ? 'AGREE' : 'DIVERGED'}
          </span>{' '}
          Runs from elsewhere
        </h2>
        <ul className="findings">
          {report.findings.map((f) => (
            <li
              key={f.run}
              data-testid={`finding-${f.run}`}
              className={f.diverged ? 'finding-bad' : 'finding-ok'}
            >
              {withoutCauseClause(f.sentence, f.cause?.words)}
              <SharerLine run={f.run} />
              <RunWhy
                run={f.run}
                op={f.module ?? f.check ?? 'the op'}
                cause={f.cause}
                anatomy={f.anatomy}
                k={report.k}
                fileBase={base}
              />
            </li>
          ))}
        </ul>
        <CopyLink report={report} model={model} />
        <dl className="run-sources small">
          {report.runs.map((r) => (
            <div key={r.id}>
              <dt>Run {r.id}</dt>
              <dd>
                {r.file}
                {r.label ? ` — ${r.label}` : ''} · {r.storage} · {r.device ?? 'device not given'} ·{' '}
                {r.generation
                  ? `a generation (prompt ${r.generation.prefill} tokens, ${report.tokens.length - r.generation.prefill} decode steps recorded) · `
                  : ''}
                {r.tensors} tensors used, {r.checks} checks
                {r.missing.length > 0 ? `, ${r.missing.length} not possible (taps missing)` : ''}
                {r.ignored.length > 0 ? `, ${r.ignored.length} names skipped` : ''}
                {r.sha256 ? ` · sha256 ${r.sha256.slice(0, 12)}…` : ''}
              </dd>
            </div>
          ))}
          <div>
            <dt>Oracle</dt>
            <dd>{report.oracle.reason}</dd>
          </div>
        </dl>
      </section>
      <section className="card">
        <RunCurves report={report} fileBase={base} onSelect={() => head.current?.focus()} />
      </section>
      <section className="card" aria-labelledby="runs-checks">
        <div className="card-head">
          <h3 id="runs-checks">Local checks: each op re-run exactly from the run's own inputs</h3>
          {report.runs.length > 1 && (
            <div role="tablist" aria-label="Run">
              {report.runs.map((r) => (
                <button
                  type="button"
                  role="tab"
                  key={r.id}
                  aria-selected={run === r.id}
                  className="small-btn"
                  onClick={() => {
                    setRun(r.id);
                    setOpen(null);
                  }}
                >
                  Run {r.id}
                </button>
              ))}
            </div>
          )}
        </div>
        <CheckGrid report={report} run={run} open={setOpen} openId={open?.id ?? null} />
      </section>
      {open && (
        <CheckDetail key={`${open.run}:${open.id}`} c={open} close={() => setOpen(null)} report={report} />
      )}
    </div>
  );
}
