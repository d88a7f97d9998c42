import { describe, expect, it } from 'vitest';
import { modeOfSearch, searchWithMode } from './nav';

describe('the mode in the address', () => {
  it('reads ?mode= and keeps the other parameters when it is set or cleared', () => {
    expect(modeOfSearch('?mode=kernel&memory=2')).toBe('kernel');
    expect(modeOfSearch('?memory=2')).toBeNull();
    expect(modeOfSearch('?mode=')).toBeNull();
    expect(modeOfSearch(`?mode=${'x'.repeat(500)}`)).toHaveLength(40);
    expect(searchWithMode('?memory=2', 'runs', 'explore')).toBe('?memory=2&mode=runs');
    expect(searchWithMode('?memory=2&mode=runs', 'explore', 'explore')).toBe('?memory=2');
    expect(searchWithMode('?mode=runs', 'explore', 'explore')).toBe('');
    expect(searchWithMode('', 'kernel', 'explore')).toBe('?mode=kernel');
    expect(modeOfSearch(searchWithMode('?debug', 'classroom', 'explore'))).toBe('classroom');
    // What links are made from: the parameters without the mode ('' is no mode, as linkBase asks).
    expect(searchWithMode('?oracle=gpu&mode=classroom', '', '')).toBe('?oracle=gpu');
    expect(searchWithMode('?mode=classroom', '', '')).toBe('');
  });
});
