import { describe, expect, it } from 'vitest';
import { defaultRunSpec } from '../run/runspec';
import { createAppStore } from '../state/store';
import { MODES, modeById, modeOpened } from './modes';

describe('workspace modes', () => {
  const base = () => createAppStore().getState();

  it('ids are unique and an unknown id falls back to the first mode', () => {
    expect(new Set(MODES.map((m) => m.id)).size).toBe(MODES.length);
    expect(MODES.map((m) => m.id)).toEqual(['explore', 'classroom', 'kernel', 'runs']);
    expect(modeById('no-such-mode')).toBe(MODES[0]);
  });

  it('what opens picks its mode: a scenario the classroom, a kernel link the editor, a permalink explore', () => {
    const prev = base();
    const spec = defaultRunSpec();
    const scenario = {
      ...prev,
      linked: { spec, origin: 'scenario' as const, sharer: null, autorunPending: false },
      scenario: { id: 'fused-add', variant: null, step: 0 },
    };
    expect(modeOpened(scenario, prev)).toMatchObject({ mode: { id: 'classroom' } });
    const link = { ...prev, linked: { spec, origin: 'link' as const, sharer: null, autorunPending: false } };
    expect(modeOpened(link, prev)).toMatchObject({
      mode: { id: 'explore' },
      target: '[data-testid="link-banner"]',
    });
    const kernelLink = { ...link, customPending: { slot: 'layernorm2' as const, source: 'fn main() {}' } };
    expect(modeOpened(kernelLink, prev)).toMatchObject({ mode: { id: 'kernel' } });
    // Nothing new opened: no switch (a setting changed, a run went on).
    expect(modeOpened({ ...scenario, mode: 'classroom' }, scenario)).toBeNull();
    expect(modeOpened(prev, prev)).toBeNull();
  });
});
