// Large weights in Node: a seeded Pythia-shaped model made on the GPU (time to ready), written to disk as an
// fp16 model.safetensors tensor by tensor (past 4 GiB for 2.8b), loaded back through readModelDir (streamed,
// never held whole: peak RSS above the baseline is printed) and checked to compute the same logits; then the
// memory budget's refusals (a user cap, and an allocation larger than the GPU). Prints one JSON object.
// Usage: tsx bench/weights-load.ts [--models pythia-1.4b,pythia-2.8b] [--file-model pythia-2.8b] [--dir /tmp/w]

import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { readModelDir } from '../src/cli/model-dir';
import { Engine } from '../src/engine/engine';
import { isCpuAdapterSummary } from '../src/engine/install';
import { nodeGpu } from '../src/gpu/node';
import { nodeShaderSource } from '../src/kernels/shaders-node';
import { parseConfigText } from '../src/model/config';
import { randomConfigJson } from '../src/model/random-model';
import { seededPlan } from '../src/model/seeded-weights';
import { f32ToF16Bits } from '../src/numeric/bits';
import type { ModelWeights, NeoXConfig } from '../src/numeric/types';
import { log, rssAboveBase, value } from './cli';
import { SHAPES } from './forward';

const gib = (b: number) => +(b / 2 ** 30).toFixed(2);

/** Writes `w` as an fp16 safetensors file tensor by tensor (no buffer of the whole file). Returns its bytes. */
function writeF16File(path: string, cfg: NeoXConfig, w: ModelWeights): number {
  const plan = [...seededPlan(cfg, w)];
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const [t, s] of plan) {
    const len = 2 * t.data.length;
    header[s.name] = { dtype: 'F16', shape: t.shape, data_offsets: [offset, offset + len] };
    offset += len;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const n = Math.ceil(json.length / 8) * 8;
  const head = new Uint8Array(8 + n).fill(0x20);
  new DataView(head.buffer).setBigUint64(0, BigInt(n), true);
  head.set(json, 8);
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, head);
    for (const [t] of plan) {
      const out = new Uint16Array(t.data.length);
      for (let i = 0; i < out.length; i++) out[i] = f32ToF16Bits(t.data[i]);
      writeSync(fd, new Uint8Array(out.buffer));
    }
  } finally {
    closeSync(fd);
  }
  return 8 + n + offset;
}

async function main() {
  const models = (value('--models') ?? 'pythia-1.4b,pythia-2.8b,pythia-6.9b').split(',');
  const fileModel = value('--file-model') ?? 'pythia-2.8b';
  const dir = value('--dir') ?? '/tmp/weights-load';
  const engine = await Engine.create(nodeGpu(), nodeShaderSource(), { cpuWeights: 'lazy' });
  const out: Record<string, unknown> = {
    adapter: engine.adapter,
    date: new Date().toISOString(),
    seeded: [],
  };
  for (const m of models) {
    const spec = { ...SHAPES[m], dtype: 'F16' as const };
    const tokens = Array.from({ length: 128 }, (_, i) => (i * 7919) % spec.vocab);
    const t0 = performance.now();
    const info = await engine.loadSeededModel(spec, 1234, m);
    const readyMs = performance.now() - t0;
    const f = await engine.forward(tokens, { path: 'reference' });
    const row = {
      model: m,
      readyMs: Math.round(readyMs),
      gpuGiB: gib(info.gpuBytes),
      weightsOnGpu: info.weightsOnGpu,
      logitsFinite: f.dump.logits.every(Number.isFinite),
    };
    log(JSON.stringify(row));
    (out.seeded as unknown[]).push(row);
    if (m === fileModel) {
      const cfg = parseConfigText(JSON.stringify(randomConfigJson(spec)));
      mkdirSync(dir, { recursive: true });
      const tw = performance.now();
      const cpu = await engine.loadCpuWeights();
      const bytes = writeF16File(join(dir, 'model.safetensors'), cfg, cpu);
      writeFileSync(join(dir, 'config.json'), JSON.stringify(randomConfigJson(spec)));
      const writeMs = performance.now() - tw;
      engine.unloadModel();
      const rss = rssAboveBase(20);
      const tl = performance.now();
      await engine.loadModel(readModelDir(dir));
      const loadMs = performance.now() - tl;
      const above = rss.stop();
      const g = await engine.forward(tokens, { path: 'reference' });
      const same = g.dump.logits.every((x, i) => Object.is(x, f.dump.logits[i]));
      out.file = {
        model: m,
        fileGiB: gib(bytes),
        writeMs: Math.round(writeMs),
        streamLoadMs: Math.round(loadMs),
        peakRssAboveBaselineGiB: gib(above),
        logitsIdenticalToSeeded: same,
      };
      log(JSON.stringify(out.file));
    }
    engine.unloadModel();
  }
  engine.setMemoryBudget(4 * 2 ** 30);
  const cfg28 = parseConfigText(JSON.stringify(randomConfigJson({ ...SHAPES['pythia-2.8b'], dtype: 'F16' })));
  out.refusalAt4GiB = await engine.refusalFor(cfg28);
  engine.setMemoryBudget(null);
  // 200 layers of 6.9b's width: ~170 GB of fp16 weights, past any single GPU here. Not on a CPU adapter, whose
  // allocations come out of (and may swap) the host's memory.
  if (isCpuAdapterSummary(engine.adapter)) {
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    engine.dispose();
    return;
  }
  const huge = parseConfigText(
    JSON.stringify(randomConfigJson({ ...SHAPES['pythia-6.9b'], layers: 200, dtype: 'F16' })),
  );
  const th = performance.now();
  out.refusalHuge = await engine.refusalFor(huge);
  out.refusalHugeMs = Math.round(performance.now() - th);
  log(JSON.stringify({ refusalAt4GiB: out.refusalAt4GiB, refusalHuge: out.refusalHuge }));
  process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
  engine.dispose();
}

void main();
