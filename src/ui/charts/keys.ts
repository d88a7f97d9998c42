// Keyboard among a chart's items (points, op rows, heatmap rows): one tab stop per chart (roving tabindex),
// arrow keys to the previous / next item, Home / End to the ends. Enter and Escape stay with each chart.

/** Makes one item of the chart's set the tab stop (the one marked, else the first) and the rest reachable by arrows. */
export function rovingTabStop(root: Element, selector: string, current?: Element | null): void {
  const items = Array.from(root.querySelectorAll(selector));
  const stop = current && items.includes(current) ? current : items[0];
  for (const el of items) el.setAttribute('tabindex', el === stop ? '0' : '-1');
}

/** Moves the keyboard for an arrow, Home or End key; returns whether the key was one of those. */
export function moveAmong(ev: KeyboardEvent, selector: string): boolean {
  const el = ev.currentTarget as Element | null;
  const root = el?.closest('svg');
  if (!el || !root) return false;
  const items = Array.from(root.querySelectorAll<SVGElement>(selector));
  const i = items.indexOf(el as SVGElement);
  let j: number;
  switch (ev.key) {
    case 'ArrowRight':
    case 'ArrowDown':
      j = Math.min(items.length - 1, i + 1);
      break;
    case 'ArrowLeft':
    case 'ArrowUp':
      j = Math.max(0, i - 1);
      break;
    case 'Home':
      j = 0;
      break;
    case 'End':
      j = items.length - 1;
      break;
    default:
      return false;
  }
  ev.preventDefault();
  const next = items[j];
  if (!next) return true;
  rovingTabStop(root, selector, next);
  next.focus();
  return true;
}

/** A keydown handler for a chart's items: Enter or Space picks the item, the moving keys move among `selector`. */
export function pickKeys<D>(pick: (d: D) => void, selector: string): (ev: KeyboardEvent, d: D) => void {
  return (ev, d) => {
    if (ev.key === 'Enter' || ev.key === ' ') {
      ev.preventDefault();
      pick(d);
    } else moveAmong(ev, selector);
  };
}
