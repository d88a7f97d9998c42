// A RunSpec in words, for the link banner, the scenario card and the history: one line per setting. Every
// value is plain text (the prompt, a URL, a name) for React to render as text, never as HTML or a link.

import { faultInfo } from '../run/faults';
import type { ModelRef, RunSpec } from '../run/runspec';
import { FUSED_KERNELS } from '../state/kernel-catalog';
import { METRIC_LABELS } from './format';
import { kernelWords } from './kernel-words';

export interface SpecLine {
  label: string;
  value: string;
  /** data-testid of the value, where tests look at it. */
  testId?: string;
}

/** ' (Llama family, qwen2)' for a Llama-family model's ref, '' for GPT-NeoX's. */
export function familyWords(ref: ModelRef): string {
  return ref.kind !== 'embedded' && ref.flavour ? ` (Llama family, ${ref.flavour})` : '';
}

export function modelWords(ref: ModelRef): string {
  switch (ref.kind) {
    case 'embedded':
      return `${ref.id} (embedded with this site)`;
    case 'url':
      return `${ref.url}${familyWords(ref)} (sha256 ${ref.sha256.slice(0, 12)}…)`;
    case 'file':
      return `${ref.name ?? 'a model'}${familyWords(ref)} from the sharer's disk (sha256 ${ref.sha256.slice(0, 12)}…)`;
  }
}

export function promptWords(spec: RunSpec): string {
  if ('text' in spec.prompt) return spec.prompt.text;
  const ids = spec.prompt.tokens;
  return `${ids.length} token id${ids.length === 1 ? '' : 's'}: ${ids.slice(0, 16).join(', ')}${ids.length > 16 ? ', …' : ''}`;
}

export function fusedWords(spec: RunSpec): string {
  if (spec.fused.length === 0) return 'none (the fused path is the reference path)';
  const family = spec.model.kind !== 'embedded' && spec.model.flavour ? 'llama' : undefined;
  if (spec.fused.length === FUSED_KERNELS.length)
    return family === 'llama'
      ? `all ${FUSED_KERNELS.length} switches (the Llama family's five kernels; the residual epilogue has none)`
      : `all ${FUSED_KERNELS.length}`;
  return FUSED_KERNELS.filter((k) => spec.fused.includes(k.id))
    .map((k) => kernelWords(k.id, family).title)
    .join(', ');
}

export function faultWords(spec: RunSpec): string {
  if (spec.faults.length === 0) return 'none';
  return spec.faults
    .map(
      (f) =>
        `${faultInfo(f.id).title} ${f.fromLayer === undefined ? `(layer drawn from seed ${spec.seed})` : `from layer ${f.fromLayer}`}`,
    )
    .join('; ');
}

export function describeSpec(spec: RunSpec): SpecLine[] {
  return [
    { label: 'Model', value: modelWords(spec.model), testId: 'spec-model' },
    { label: 'Prompt', value: promptWords(spec), testId: 'spec-prompt' },
    { label: 'Generate', value: `${spec.generate} token${spec.generate === 1 ? '' : 's'}` },
    { label: 'Precision', value: spec.precision },
    { label: 'Fused kernels', value: fusedWords(spec) },
    { label: 'Faults', value: faultWords(spec), testId: 'spec-faults' },
    ...(spec.custom
      ? [
          {
            label: 'Custom kernel',
            value: `${spec.custom.slot}: WGSL written in the page (${spec.custom.source.split('\n').length} lines), runs only after you agree`,
            testId: 'spec-custom',
          },
        ]
      : []),
    { label: 'Verdict', value: `diverged = error > ${spec.k} × noise floor, ${METRIC_LABELS[spec.metric]}` },
  ];
}

/** "first divergent layer 2" / "no layer diverges". */
export function firstLayerWords(layer: number | null): string {
  return layer === null ? 'no layer diverges' : `first divergent layer ${layer}`;
}

const WHEN = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** A stored time for people (local time zone), or the raw text when it is not a date. */
export function formatWhen(iso: string): string {
  const d = new Date(iso);
  return Number.isFinite(d.getTime()) ? WHEN.format(d) : iso;
}
