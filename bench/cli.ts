// What the bench scripts share: their flags (`--name value`), progress lines on stderr, the median of repeated
// timings, the JSON they write (--out) or print, and how a script ends (exit 0, or the error on stderr and exit 1).
import { writeFileSync } from 'node:fs';
import { create, globals } from 'webgpu';
import { Engine } from '../src/engine/engine';
import { NODE_DAWN_TOGGLES, nodeGpu } from '../src/gpu/node';
import { uploadBuffer } from '../src/gpu/readback';
import { nodeShaderSource } from '../src/kernels/shaders-node';

export const argv = process.argv.slice(2);

/** The value after flag `name`, or undefined when the flag is absent. */
export function value(name: string): string | undefined {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
}

export const log = (s: string) => console.error(s);

export const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

/**
 * Dawn's GPU object: the engine's (nodeGpu), or with `toggles` (space-separated, e.g.
 * enable-dawn-features=disable_robustness) a process-wide one of its own with them added (never the engine's setting).
 */
export function togglesGpu(toggles: string | undefined): GPU {
  if (!toggles) return nodeGpu();
  Object.assign(globalThis, globals);
  // Dawn keeps the last value of a repeated key: the lists of one key (enable-/disable-dawn-features) are joined.
  const byKey = new Map<string, string[]>();
  for (const t of [...NODE_DAWN_TOGGLES, ...toggles.split(' ').filter(Boolean)]) {
    const [key, list = ''] = t.split('=');
    byKey.set(key, [...(byKey.get(key) ?? []), ...list.split(',').filter(Boolean)]);
  }
  const gpu = create([...byKey].map(([key, list]) => `${key}=${list.join(',')}`));
  // Kept for the life of the process: a collected instance takes its adapters and devices with it (a segfault).
  toggled.push(gpu);
  return gpu;
}
const toggled: GPU[] = [];

/**
 * An engine on this machine's GPU (Dawn), its adapter named on stderr; with `--max-k-chunk N`, the adapter's GEMM
 * policy with no split longer than N (GemmPolicy.maxKChunk).
 */
export async function benchEngine(): Promise<Engine> {
  // --toggles: extra Dawn toggles for this process (a measurement, never the engine's setting).
  let engine = await Engine.create(togglesGpu(value('--toggles')), nodeShaderSource());
  const cap = Number(value('--max-k-chunk') ?? 0);
  if (cap) {
    const gemm = { ...engine.gemmPolicy, maxKChunk: cap };
    engine.dispose();
    engine = await Engine.create(togglesGpu(value('--toggles')), nodeShaderSource(), { gemm });
    log(`GEMM policy: ${gemm.name}, no split longer than ${cap}`);
  }
  const a = engine.adapter;
  log(`adapter: ${a.vendor} ${a.architecture} ${a.description}; toggles: ${value('--toggles') ?? 'default'}`);
  return engine;
}

/** Runs a script's main and exits with its outcome. */
export function runMain(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}

/** Writes `out` as JSON to the file --out names (after each model, so a long run keeps what it has). */
export function saveOut(out: unknown): void {
  const file = value('--out');
  if (file) writeFileSync(file, JSON.stringify(out, null, 2));
}

/** Prints `out` as JSON on stdout when no --out file was named. */
export function printOut(out: unknown): void {
  if (!value('--out')) console.log(JSON.stringify(out, null, 2));
}

/** A storage buffer of n floats in [-0.5, 0.5) (a cheap deterministic pattern; the values don't matter). */
export function filled(device: GPUDevice, n: number, salt: number, prefix = 'bench'): GPUBuffer {
  const a = new Float32Array(n);
  let s = (salt * 2654435761) >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = s / 4294967296 - 0.5;
  }
  return uploadBuffer(device, a, `${prefix}.${salt}`);
}

/**
 * The process's RSS after a collection (where node runs with --expose-gc), then sampled every `ms` until stop(),
 * which samples once more and returns the peak above that base in bytes.
 */
export function rssAboveBase(ms: number): { stop: () => number } {
  (globalThis as { gc?: () => void }).gc?.();
  const base = process.memoryUsage().rss;
  let peak = base;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, ms);
  return {
    stop: () => {
      clearInterval(timer);
      peak = Math.max(peak, process.memoryUsage().rss);
      return peak - base;
    },
  };
}
