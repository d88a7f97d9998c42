// Whether the viewer changed the settings a link restored: the banner's "Your settings differ from the link's now"
// is about what the viewer did, so it compares the settings alone — not the model (a link's model not loaded yet is
// said by its own line, and a fresh profile loads the embedded model first), and not the prompt's mode where the
// loaded model forced it (a model without a tokenizer takes token ids only). Pure.
import type { CustomKernelSpec, RunSpec } from '../run/runspec';
import { type RunSettings, settingsOf } from './settings';

/** The parts of the settings a RunSpec fixes, in one comparable form. */
function keyOf(s: RunSettings, custom: CustomKernelSpec | null, withMode: boolean): string {
  return JSON.stringify([
    s.prompt,
    withMode ? s.promptMode : null,
    s.generate,
    s.precision,
    [...s.fused].sort(),
    s.fault,
    s.fault === null ? null : s.faultLayer,
    s.extraFaults.map((f) => [f.id, f.fromLayer ?? null]),
    s.seed,
    s.k,
    s.metric,
    custom ? [custom.slot, custom.source] : null,
    s.checkDecode,
  ]);
}

/**
 * True while the settings are the link's. `customPending`: a link's custom kernel waiting for the viewer's consent
 * (still the link's, not a change); `forcedIds`: the loaded model has no tokenizer (the prompt's mode is not the
 * viewer's doing).
 */
export function settingsMatchLink(
  settings: RunSettings,
  spec: RunSpec,
  customPending: CustomKernelSpec | null,
  forcedIds: boolean,
): boolean {
  const link = settingsOf(spec);
  return (
    keyOf(settings, settings.custom ?? customPending, !forcedIds) ===
    keyOf(link, spec.custom ?? null, !forcedIds)
  );
}
