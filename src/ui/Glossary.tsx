// The words of the trade, explained once: a help panel listing them, and <Term> — a jargon word in the
// page that shows its meaning on hover (title) and, pressed, opens the panel at its entry.
import type { ReactNode } from 'react';
import { fusedSpec } from '../ops/fused';

/** The MLP's first fused kernel (its words per family: ops/fused.ts). */
const MLP_UP = fusedSpec('linear_gelu');

export const GLOSSARY = {
  tap: {
    word: 'tap',
    text: 'A named intermediate tensor of the forward pass (layers.0.ctx, layers.2.ln2, …) that both paths write out, so they can be compared element by element.',
  },
  floor: {
    word: 'noise floor',
    text: 'How far the reference path itself is from an fp64 computation of the same op: the error honest fp32 (or fp16) rounding makes. An error near the floor is rounding, not a bug.',
  },
  threshold: {
    word: 'threshold (k)',
    text: 'k × the noise floor. A layer or op whose error is above it has diverged; the ratio ×r says how many floors the error is (×0.6: under one floor; ×1e5: far past the threshold).',
  },
  ratio: {
    word: 'worst ×…',
    text: 'The largest error ÷ noise floor over the layers. Compare it with k: under k the paths agree.',
  },
  propagated: {
    word: 'propagated error',
    text: 'The fused path run end to end vs the reference: each layer sees the error of all the layers before it.',
  },
  local: {
    word: 'local error',
    text: 'One fused layer run on the reference path’s input: only the error this layer makes. Where it first passes the threshold, the error is born.',
  },
  born: {
    word: 'born here',
    text: 'The first layer whose local error passes k × its local floor: the layer that makes the error rather than carrying it in.',
  },
  fusedAway: {
    word: 'fused away',
    text: `An intermediate the fused kernel never writes to memory (e.g. GPT-NeoX’s fc1 inside ${MLP_UP.neox.title}, a Llama model’s gate and up inside ${MLP_UP.llama.title}). It cannot be compared; its error shows in the kernel’s output.`,
  },
  queryTile: {
    word: 'query tile',
    text: 'How many query rows flash attention handles per workgroup. The determinism check reruns the fused path with another tile: results must stay bit-identical.',
  },
  fp16acc: {
    word: 'fp16acc',
    text: 'fp16 storage and fp16 accumulation: sums of products are kept in half precision too, which loses far more than fp16 storage with fp32 sums.',
  },
  bisection: {
    word: 'bisection',
    text: 'Each switched-on fused kernel run alone (the rest reference): the kernel that reproduces the divergence on its own is the culprit.',
  },
  ulp: {
    word: 'ULP',
    text: 'Units in the last place: how many representable floats apart two values are.',
  },
} as const satisfies Record<string, { word: string; text: string }>;

export type TermId = keyof typeof GLOSSARY;

/** Opens the glossary panel at an entry and brings it into view. */
export function openGlossary(id: TermId): void {
  const panel = document.querySelector<HTMLDetailsElement>('[data-testid="glossary"]');
  if (!panel) return;
  panel.open = true;
  const entry = panel.querySelector<HTMLElement>(`[data-term="${id}"]`);
  for (const el of panel.querySelectorAll('.current')) el.classList.remove('current');
  entry?.classList.add('current');
  (entry ?? panel).scrollIntoView({ block: 'center', behavior: 'instant' as ScrollBehavior });
  entry?.focus({ preventScroll: true });
}

/** A jargon word: its meaning on hover, the glossary entry on click. */
export function Term({ id, children }: { id: TermId; children?: ReactNode }) {
  const g = GLOSSARY[id];
  // A span, not a <button>: a button is an atomic inline, and a line may break between it and the
  // punctuation after it (a period wrapped alone after "the noise floor"). Keyboard: Tab, then Enter or Space.
  return (
    // biome-ignore lint/a11y/useSemanticElements: a <button> cannot wrap as text does (see above)
    <span
      role="button"
      tabIndex={0}
      className="term"
      title={g.text}
      data-testid="term"
      data-term={id}
      onClick={() => openGlossary(id)}
      onKeyDown={(e) => {
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault();
          openGlossary(id);
        }
      }}
    >
      {children ?? g.word}
    </span>
  );
}

export function GlossaryPanel() {
  return (
    <details className="card glossary" data-testid="glossary">
      <summary>
        <h2>Words used here</h2>
      </summary>
      <dl>
        {(Object.keys(GLOSSARY) as TermId[]).map((id) => (
          <div key={id} data-term={id} tabIndex={-1} className="glossary-entry">
            <dt>{GLOSSARY[id].word}</dt>
            <dd>{GLOSSARY[id].text}</dd>
          </div>
        ))}
      </dl>
    </details>
  );
}
