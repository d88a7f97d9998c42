// Recorded plans kept for replay: forwards (forward-cache.ts) and decode sessions (decode.ts), each keyed by what
// makes its recording what it is — path, precision, fault hooks, token count or cache capacity, the custom
// kernel's text — and built once. The engine drops every entry when the model, its weights or the device change
// (clear()), so a replay never runs a stale recording. An entry in use is never handed out twice: a second caller gets a fresh, uncached one.
// Entries hold their own GPU buffers (not the engine's pool): a few, the least recently used evicted first.

import { ALL_FUSED, type FusedKernelId } from './fused-kernels';
import type { PlanHooks } from './plan';

/** Something a cache entry holds: released when evicted or cleared. */
export interface Releasable {
  release(): void;
  /** GPU bytes it holds. */
  readonly bytes: number;
}

interface Entry<T> {
  value: T;
  busy: boolean;
  dropped: boolean;
}

export interface PlanCacheStats {
  hits: number;
  misses: number;
  entries: number;
  bytes: number;
}

/** A lease on a cached (or, when the cached one is busy, a fresh) value: give it back with done(). */
export interface Lease<T> {
  value: T;
  /** True when the value was recorded before this call (a replay). */
  hit: boolean;
  done(): void;
}

export class PlanCache<T extends Releasable> {
  private entries = new Map<string, Entry<T>>();
  hits = 0;
  misses = 0;

  /** At most `limit` entries and, beyond the newest, `maxBytes` of GPU memory. */
  constructor(
    private readonly limit: number,
    private readonly maxBytes = Number.POSITIVE_INFINITY,
  ) {}

  /** The entry for `key`, made by `make` on a miss; a busy entry is not shared (a fresh uncached value). */
  take(key: string, make: () => T): Lease<T> {
    const e = this.entries.get(key);
    if (e && !e.busy) {
      this.hits++;
      e.busy = true;
      this.entries.delete(key); // most recently used last
      this.entries.set(key, e);
      return { value: e.value, hit: true, done: () => this.giveBack(e) };
    }
    this.misses++;
    const value = make();
    if (e) return { value, hit: false, done: () => value.release() };
    const entry: Entry<T> = { value, busy: true, dropped: false };
    this.entries.set(key, entry);
    this.evict();
    return { value, hit: false, done: () => this.giveBack(entry) };
  }

  /** Drops every entry (those in use are released when given back). */
  clear(): void {
    for (const e of this.entries.values()) this.drop(e);
    this.entries.clear();
  }

  stats(): PlanCacheStats {
    let bytes = 0;
    for (const e of this.entries.values()) bytes += e.value.bytes;
    return { hits: this.hits, misses: this.misses, entries: this.entries.size, bytes };
  }

  private giveBack(e: Entry<T>): void {
    e.busy = false;
    if (e.dropped) e.value.release();
  }

  private drop(e: Entry<T>): void {
    e.dropped = true;
    if (!e.busy) e.value.release();
  }

  private evict(): void {
    let bytes = 0;
    for (const e of this.entries.values()) bytes += e.value.bytes;
    for (const [key, e] of this.entries) {
      if (this.entries.size <= this.limit && bytes <= this.maxBytes) break;
      if (e.busy) continue;
      bytes -= e.value.bytes;
      this.drop(e);
      this.entries.delete(key);
    }
  }
}

/**
 * What the hooks do, as a string: every constant they set per kernel and layer and every wiring fault per layer.
 * Two hooks objects that do the same share a recording; a hooks object changed in place gets a new one.
 */
export function hooksKey(hooks: PlanHooks | undefined, layers: number): string {
  if (!hooks) return '';
  const kernels: (FusedKernelId | 'reference')[] = ['reference', ...ALL_FUSED];
  const parts: string[] = [];
  for (const layer of [null, ...Array.from({ length: layers }, (_, i) => i)]) {
    for (const k of kernels) {
      const c = hooks.constants?.(k, layer);
      if (c && Object.keys(c).length > 0) {
        const sorted = Object.keys(c)
          .sort()
          .map((name) => `${name}=${Number(c[name])}`);
        parts.push(`${k}@${layer}:${sorted.join(',')}`);
      }
    }
    if (layer !== null && hooks.aliasResidual?.(layer)) parts.push(`alias@${layer}`);
    if (layer !== null && hooks.staleContext?.(layer)) parts.push(`stale@${layer}`);
  }
  return parts.join(';');
}

/** The fused kernels switched on, as a key. */
export function pathKey(fused: ReadonlySet<FusedKernelId>): string {
  return [...fused].sort().join('+') || 'reference';
}
