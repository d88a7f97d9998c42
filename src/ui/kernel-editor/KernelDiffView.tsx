// A custom kernel's diff against the shipped file: changed lines with their line numbers, three lines of
// context, as plain React text (the WGSL is never injected as HTML).
import type { KernelDiff } from '../../run/custom-kernel';

export function KernelDiffView({ diff }: { diff: KernelDiff }) {
  if (diff.lines.length === 0)
    return (
      <p className="muted small" data-testid="kernel-diff" data-changes="0">
        Identical to the shipped shaders/{diff.file}.
      </p>
    );
  return (
    <div className="kernel-diff" data-testid="kernel-diff" data-changes={diff.added + diff.removed}>
      <p className="small">
        Against the shipped <span className="mono">shaders/{diff.file}</span>:{' '}
        <span className="diff-add-count">+{diff.added}</span>{' '}
        <span className="diff-del-count">−{diff.removed}</span> lines.
      </p>
      <pre className="diff-lines mono">
        {diff.lines.map((l, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: a diff's lines have no identity beyond their place
          <span key={i} className={`diff-${l.kind}`}>
            <span className="diff-no">{l.line ?? ''}</span>
            <span className="diff-sign">
              {l.kind === 'add' ? '+' : l.kind === 'del' ? '−' : l.kind === 'hunk' ? '' : ' '}
            </span>
            {l.text}
            {'\n'}
          </span>
        ))}
      </pre>
    </div>
  );
}
