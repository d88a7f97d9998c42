// Opening a link fragment from inside the page: through location.hash, so the address bar shows the link
// and Back returns to the previous one; main.tsx's hashchange listener opens it. The same fragment again
// fires no hashchange, so it is opened directly.
import type { Controller } from '../state/controller';

export function openFragment(fragment: string, controller: Controller): void {
  if (location.hash === fragment) void controller.openLink(fragment);
  else location.hash = fragment;
}

/** Drops the fragment from the address bar without opening anything (a reload then opens no link). */
export function clearFragment(): void {
  if (location.hash) history.replaceState(history.state, '', `${location.pathname}${location.search}`);
}

/**
 * Puts a link of this page in the address bar without opening it (no hashchange fires): what "Copy link"
 * copied is also what the address bar shows, so a bookmark or a copy from there is the same link.
 */
export function showInAddressBar(link: string): void {
  try {
    const u = new URL(link, location.href);
    if (u.origin !== location.origin || u.pathname !== location.pathname) return;
    history.replaceState(history.state, '', `${u.pathname}${u.search}${u.hash}`);
  } catch {
    // Not a URL of this page: leave the address bar alone.
  }
}

/** The mode a page address asks for (`?mode=kernel`), or null; an unknown id is the page's to refuse. */
export function modeOfSearch(search: string): string | null {
  const m = new URLSearchParams(search).get('mode');
  return m ? m.slice(0, 40) : null;
}

/** The query string with `mode` set (the first mode, `fallback`, is left out: the plain address opens it). */
export function searchWithMode(search: string, mode: string, fallback: string): string {
  const q = new URLSearchParams(search);
  if (mode === fallback) q.delete('mode');
  else q.set('mode', mode);
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** Keeps the mode in the address bar (replacing the entry: switching modes is not a step Back undoes). */
export function showModeInAddressBar(mode: string, fallback: string): void {
  const search = searchWithMode(location.search, mode, fallback);
  if (search !== location.search)
    history.replaceState(history.state, '', `${location.pathname}${search}${location.hash}`);
}

/**
 * The page's address for a link to be made from (`new URL('#…', linkBase())`): this page with its parameters but
 * not the mode, which a link picks for itself (a scenario the classroom, a permalink explore).
 */
export function linkBase(): string {
  const search = searchWithMode(location.search, '', '');
  return `${location.origin}${location.pathname}${search}`;
}
