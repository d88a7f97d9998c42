// A kernel written in the page may never finish: a loop that does not end, a barrier some invocations never
// reach. WebGPU reports nothing for that (only some drivers reset the GPU after a while): the worker's call just
// never answers. Calls that run custom GPU code go through `watch`; when no sign of life (its answer or a
// progress event) comes for the watchdog's time, `onHang` runs (the controller stops the worker and its GPU
// work and shows the device-loss message; Restart makes a new worker and device) and the call rejects.
import type { WorkerError } from '../../worker/api';

/** No sign of life for this long from a call running custom GPU code counts as a hang (the page's ?watchdog=). */
export const WATCHDOG_MS = 60_000;

/** Called by the watched work whenever it shows progress: the wait starts again. */
export type Beat = () => void;

export type Watch = <T>(what: string, work: (beat: Beat) => Promise<T>) => Promise<T>;

/** The error a hang ends in (the device-loss kind: the worker and its device are gone). */
export function hangError(what: string, ms: number): WorkerError {
  const s = Math.round(ms / 100) / 10;
  return {
    kind: 'device-lost',
    message:
      `No answer from the GPU for ${s} s while ${what} ran: treated as a hang. The engine and its GPU work were ` +
      'stopped; your edited source is kept. (A slow GPU may need longer: add ?watchdog=SECONDS to the address.)',
  };
}

export function createWatch(ms: number, onHang: (e: WorkerError) => void): Watch {
  return <T>(what: string, work: (beat: Beat) => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      let fired = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const arm = () => {
        clearTimeout(timer);
        timer = setTimeout(() => {
          fired = true;
          const e = hangError(what, ms);
          onHang(e);
          reject(e);
        }, ms);
      };
      arm();
      work(() => {
        if (!fired) arm();
      }).then(
        (v) => {
          clearTimeout(timer);
          if (!fired) resolve(v);
        },
        (e: unknown) => {
          clearTimeout(timer);
          if (!fired) reject(e);
        },
      );
    });
}

/** The page's ?watchdog=SECONDS (a positive number), else null. */
export function watchdogParam(search: string): number | null {
  const v = new URLSearchParams(search).get('watchdog');
  if (v === null) return null;
  const s = Number(v);
  return Number.isFinite(s) && s > 0 ? s * 1000 : null;
}
