// The GPU memory pool, polled while a run is in flight so the header's "in use" figure moves.
import type { Ctx } from './context';

export interface PoolWatch {
  refresh(): Promise<void>;
  /** Polls every pollMs until stop(). */
  start(): void;
  stop(): void;
}

export function createPoolWatch(ctx: Ctx): PoolWatch {
  const pollMs = ctx.opts.pollMs ?? 400;
  let poll: ReturnType<typeof setInterval> | null = null;
  const watch: PoolWatch = {
    async refresh() {
      const g = ctx.generation();
      try {
        const stats = await ctx.client().poolStats();
        if (g === ctx.generation() && ctx.s().initStatus === 'ready') ctx.s().setPool(stats);
      } catch {
        // The worker is gone or busy dying; the device-lost path reports that.
      }
    },
    start() {
      watch.stop();
      poll = setInterval(() => void watch.refresh(), pollMs);
    },
    stop() {
      if (poll !== null) clearInterval(poll);
      poll = null;
    },
  };
  return watch;
}
