// A custom kernel that came with a link or a stored run: its diff against the shipped file, and a choice.
// Run stays disabled until the viewer agrees (and even then nothing starts by itself) or sets it aside.
import { useId } from 'react';
import { useStore } from 'zustand';
import { kernelDiff } from '../../run/custom-kernel';
import type { Controller } from '../../state/controller';
import { shippedWgsl, slotView } from '../../state/kernel-catalog';
import type { AppStore } from '../../state/store';
import { KernelDiffView } from './KernelDiffView';
import './kernel-editor.css';

export function KernelConsent({ store, controller }: { store: AppStore; controller: Controller }) {
  const pending = useStore(store, (s) => s.customPending);
  const ids = useId();
  if (!pending) return null;
  const slot = slotView(pending.slot);
  const diff = kernelDiff(shippedWgsl(pending.slot), pending);
  return (
    <section className="card kernel-consent" aria-labelledby={`${ids}-title`} data-testid="kernel-consent">
      <h2 id={`${ids}-title`}>This run carries GPU code</h2>
      <p>
        A custom <strong>{slot.title}</strong> kernel replaces{' '}
        <span className="mono">shaders/{slot.file}</span> in the fused path. Whoever made the link wrote it;
        read what it changes. Nothing runs until you choose, and choosing does not start the run.
      </p>
      <KernelDiffView diff={diff} />
      <div className="actions">
        <button
          type="button"
          className="primary"
          data-testid="kernel-consent-accept"
          onClick={controller.kernels.acceptPending}
        >
          I have read it: use this kernel
        </button>
        <button
          type="button"
          data-testid="kernel-consent-decline"
          onClick={controller.kernels.declinePending}
        >
          Use the shipped kernel instead
        </button>
      </div>
    </section>
  );
}
