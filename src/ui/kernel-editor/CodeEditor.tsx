// CodeMirror 6 with WGSL highlighting (@iizukak/codemirror-lang-wgsl), the compiler's messages shown inline
// at their line and column (@codemirror/lint diagnostics, set from outside), and the text reported on change.
// React owns the container; CodeMirror owns what is inside it. The editor lives in a shadow root: there its
// styles go into a constructed stylesheet (CSSOM), which the page's Content-Security-Policy allows, where in
// the document they would be an inline <style> element, which it blocks (style-src 'self').

import { type Diagnostic, lintGutter, setDiagnostics } from '@codemirror/lint';
import { EditorView } from '@codemirror/view';
import { wgsl } from '@iizukak/codemirror-lang-wgsl';
import { basicSetup } from 'codemirror';
import { useEffect, useRef } from 'react';
import type { KernelDiagnostic } from '../../worker/api';

export interface CodeEditorProps {
  value: string;
  onChange(text: string): void;
  diagnostics: readonly KernelDiagnostic[];
  /** Accessible name of the text area. */
  label: string;
}

// The page's CSS variables reach into the shadow root (custom properties inherit); its rules do not.
const theme = EditorView.theme({
  '&': {
    fontSize: '0.95rem',
    border: '1px solid var(--border)',
    borderRadius: '6px',
    maxHeight: '32rem',
    background: 'var(--card)',
    color: 'var(--text)',
  },
  '.cm-scroller': { fontFamily: 'var(--mono)', lineHeight: '1.45' },
  '.cm-content': { caretColor: 'var(--text)' },
  '.cm-gutters': {
    background: 'var(--prompt-bg)',
    color: 'var(--muted)',
    borderRight: '1px solid var(--border)',
  },
  '.cm-activeLine': { background: 'var(--c-select)' },
  '.cm-activeLineGutter': { background: 'var(--c-select)' },
  '&.cm-focused': { outline: '2px solid var(--focus)' },
  '.cm-tooltip': { background: 'var(--card)', color: 'var(--text)', border: '1px solid var(--border)' },
});

export function CodeEditor({ value, onChange, diagnostics, label }: CodeEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const change = useRef(onChange);
  change.current = onChange;
  // The view is made once per mount with the first text and label; later texts arrive through `value` below.
  const initial = useRef({ value, label });

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const shadow = el.shadowRoot ?? el.attachShadow({ mode: 'open' });
    const v = new EditorView({
      root: shadow,
      parent: shadow,
      doc: initial.current.value,
      extensions: [
        basicSetup,
        wgsl(),
        lintGutter(),
        theme,
        // Long lines wrap: an edit near a line's end must not scroll the view sideways and hide every line's start.
        EditorView.lineWrapping,
        EditorView.contentAttributes.of({
          'aria-label': initial.current.label,
          'data-testid': 'kernel-code',
        }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) change.current(u.state.doc.toString());
        }),
      ],
    });
    // The scroller is a scrollable region: reachable by the keyboard itself (it scrolls with the arrows).
    v.scrollDOM.tabIndex = 0;
    view.current = v;
    return () => {
      v.destroy();
      view.current = null;
    };
  }, []);

  // A source loaded from outside (another slot, an exercise, a link) replaces the text.
  useEffect(() => {
    const v = view.current;
    if (!v || v.state.doc.toString() === value) return;
    v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
  }, [value]);

  useEffect(() => {
    const v = view.current;
    if (!v) return;
    const len = v.state.doc.length;
    const diags: Diagnostic[] = diagnostics.map((d) => ({
      from: Math.min(d.from, len),
      to: Math.min(Math.max(d.to, d.from), len),
      severity: d.severity,
      message: `line ${d.line}:${d.column} ${d.message}`,
    }));
    v.dispatch(setDiagnostics(v.state, diags));
  }, [diagnostics]);

  return <div ref={host} className="kernel-code" />;
}
