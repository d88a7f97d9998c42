// Small form pieces: a number field that keeps what is typed until it loses focus (the store holds the
// clamped value), and a toggle switch built on a real checkbox (Space toggles it; Enter too).
import { type ReactNode, useEffect, useId, useState } from 'react';

export interface NumberFieldProps {
  label: string;
  value: number;
  onCommit: (v: number) => void;
  min?: number;
  max?: number;
  step?: number | 'any';
  hint?: ReactNode;
  testId?: string;
  disabled?: boolean;
  width?: string;
  /** More under the field (a related option). */
  children?: ReactNode;
}

export function NumberField(p: NumberFieldProps) {
  const id = useId();
  const [draft, setDraft] = useState(String(p.value));
  useEffect(() => setDraft(String(p.value)), [p.value]);
  return (
    <div className="field">
      <label htmlFor={id}>{p.label}</label>
      <input
        id={id}
        type="number"
        inputMode="decimal"
        data-testid={p.testId}
        min={p.min}
        max={p.max}
        step={p.step ?? 1}
        value={draft}
        disabled={p.disabled}
        style={p.width ? { width: p.width } : undefined}
        aria-describedby={p.hint ? `${id}-hint` : undefined}
        onChange={(e) => {
          setDraft(e.target.value);
          if (e.target.value.trim() !== '' && Number.isFinite(Number(e.target.value)))
            p.onCommit(Number(e.target.value));
        }}
        onBlur={() => setDraft(String(p.value))}
      />
      {p.hint && (
        <span id={`${id}-hint`} className="muted small">
          {p.hint}
        </span>
      )}
      {p.children}
    </div>
  );
}

export interface ToggleProps {
  checked: boolean;
  onChange: (on: boolean) => void;
  label: ReactNode;
  description?: ReactNode;
  disabled?: boolean;
  testId?: string;
  name?: string;
}

/** A checkbox styled as a switch; Enter toggles it as well as Space. */
export function Toggle(p: ToggleProps) {
  const id = useId();
  return (
    <div className={`toggle${p.disabled ? ' disabled' : ''}`}>
      <input
        id={id}
        type="checkbox"
        role="switch"
        aria-checked={p.checked}
        checked={p.checked}
        disabled={p.disabled}
        data-testid={p.testId}
        data-name={p.name}
        aria-describedby={p.description ? `${id}-d` : undefined}
        onChange={(e) => p.onChange(e.target.checked)}
        onKeyDown={(e) => {
          if (e.key === 'Enter') {
            e.preventDefault();
            if (!p.disabled) p.onChange(!p.checked);
          }
        }}
      />
      <label htmlFor={id}>
        <span className="toggle-label">{p.label}</span>
        {p.description && (
          <span id={`${id}-d`} className="toggle-desc muted small">
            {p.description}
          </span>
        )}
      </label>
    </div>
  );
}
