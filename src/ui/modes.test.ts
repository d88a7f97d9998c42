import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { defaultRunSpec } from '../run/runspec';
import { SCENARIOS } from '../run/scenarios';
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

describe('the README on the classroom', () => {
  it('gives every scenario its short link and no count of them that can go stale', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
    for (const s of SCENARIOS) expect(readme, s.id).toContain(`\`#s=${s.id}\``);
    const links = [...readme.matchAll(/`#s=([a-z0-9-]+)`/g)].map((m) => m[1]);
    expect(new Set(links)).toEqual(new Set(SCENARIOS.map((s) => s.id)));
    expect(readme).not.toMatch(
      /\b(two|three|four|five|six|seven|eight|nine|ten|\d+) (classroom )?scenarios\b/i,
    );
  });
});
