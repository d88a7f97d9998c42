// The import of a pair of runs on the CPU alone (docs/RUNS.md; no GPU): two synthetic Pythia-410m-shaped run files
// at T = 128 with every module's taps as tools/dump_run.py writes them (f32, ~547 MB each, aliases of one slot
// holding the same bytes), read, hashed and decoded as `cli compare-runs` does (src/cli/run-read.ts), and each
// phase alone: the bare read, the sha256 on this thread (node:crypto, as the import did before), the decode. Memory: the peak RSS above the level before the import, against the two files' size.
// Usage: node --expose-gc --import tsx bench/runs-import.ts [--dir /tmp/runs-import] [--reps 3]
//   [--phases read,sha256,decode,import] [--out FILE]

import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { readRun } from '../src/cli/run-read';
import { readRunFile } from '../src/model/run-file';
import { slotOfName } from '../src/model/run-names';
import { nodeFileStream } from '../src/model/stream-node';
import type { NeoXConfig } from '../src/numeric/types';
import { log, median, printOut, rssAboveBase, runMain, saveOut, value } from './cli';

const T = 128;
const cfg: NeoXConfig = {
  vocabSize: 50304,
  hiddenSize: 1024,
  numLayers: 24,
  numHeads: 16,
  headDim: 64,
  intermediateSize: 4096,
  rotaryNdims: 16,
  rotaryBase: 10000,
  layerNormEps: 1e-5,
  useParallelResidual: true,
  maxPositionEmbeddings: 2048,
  attentionBias: true,
  tieWordEmbeddings: false,
};

/** The names dump_run writes for a GPT-NeoX of cfg's shape, each with its width (every module hooked). */
function runNames(): [string, number][] {
  const d = cfg.hiddenSize;
  const ff = cfg.intermediateSize;
  const out: [string, number][] = [
    ['gpt_neox.embed_in:out', d],
    ['gpt_neox.emb_dropout:in', d],
    ['gpt_neox.emb_dropout:out', d],
  ];
  for (let i = 0; i < cfg.numLayers; i++) {
    const p = `gpt_neox.layers.${i}`;
    const io = (m: string, wi: number, wo: number) => out.push([`${p}${m}:in`, wi], [`${p}${m}:out`, wo]);
    io('', d, d);
    io('.input_layernorm', d, d);
    io('.post_attention_layernorm', d, d);
    io('.post_attention_dropout', d, d);
    io('.post_mlp_dropout', d, d);
    io('.attention', d, d);
    io('.attention.query_key_value', d, 3 * d);
    io('.attention.dense', d, d);
    io('.mlp', d, d);
    io('.mlp.dense_h_to_4h', d, ff);
    io('.mlp.act', ff, ff);
    io('.mlp.dense_4h_to_h', ff, d);
  }
  out.push(['gpt_neox.final_layer_norm:in', d], ['gpt_neox.final_layer_norm:out', d], ['gpt_neox:out', d]);
  out.push(['embed_out:in', d], ['embed_out:out', cfg.vocabSize]);
  for (let i = 0; i <= cfg.numLayers; i++) out.push([`hidden_states.${i}`, d]);
  out.push(['logits', cfg.vocabSize]);
  return out;
}

/** Writes a run file of random f32 values (one array per slot, so a slot's names hold the same bytes). */
function writeRun(path: string, salt: number): void {
  const names = runNames();
  const header: Record<string, unknown> = {
    __metadata__: { tokens: JSON.stringify(Array.from({ length: T }, (_, t) => (t * 7919) % cfg.vocabSize)) },
  };
  let offset = 0;
  for (const [name, w] of names) {
    const len = T * w * 4;
    header[name] = { dtype: 'F32', shape: [T, w], data_offsets: [offset, offset + len] };
    offset += len;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const headerLen = Math.ceil(json.length / 8) * 8;
  const prefix = new Uint8Array(8 + headerLen).fill(0x20);
  new DataView(prefix.buffer).setUint32(0, headerLen, true);
  prefix.fill(0, 4, 8);
  prefix.set(json, 8);
  const fd = openSync(path, 'w');
  writeSync(fd, prefix);
  const bySlot = new Map<string, Float32Array>();
  let s = (salt * 2654435761) >>> 0;
  for (const [name, w] of names) {
    const key = slotOfName(name, cfg.numLayers)?.slot ?? name;
    let a = bySlot.get(key);
    if (!a) {
      a = new Float32Array(T * w);
      for (let i = 0; i < a.length; i++) {
        s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
        a[i] = s / 4294967296 - 0.5;
      }
      bySlot.set(key, a);
    }
    writeSync(fd, new Uint8Array(a.buffer));
  }
  closeSync(fd);
}

async function drain(path: string): Promise<number> {
  let n = 0;
  for await (const c of nodeFileStream(path)) n += c.length;
  return n;
}

async function sha(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const c of nodeFileStream(path)) h.update(c);
  return h.digest('hex');
}

/**
 * Times `f` on both files at once: wall ms, the process's CPU ms (all threads: on a shared machine the wall time
 * holds other processes' turns too), the peak RSS above the level before it.
 */
async function timed<T>(f: (path: string) => Promise<T>, files: string[]) {
  const rss = rssAboveBase(2);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await Promise.all(files.map(f));
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { ms, cpuMs: (c.user + c.system) / 1000, peak: rss.stop(), r };
}

async function main() {
  const dir = value('--dir') ?? '/tmp/runs-import';
  const reps = Number(value('--reps') ?? 3);
  const files = ['a.safetensors', 'b.safetensors'].map((f) => join(dir, f));
  files.forEach((f, i) => {
    if (!existsSync(f)) {
      log(`writing ${f}`);
      writeRun(f, i + 1);
    }
  });
  const bytes = files.reduce((s, f) => s + statSync(f).size, 0);
  const phases: Record<string, (p: string) => Promise<unknown>> = {
    read: drain,
    sha256: sha,
    decode: (p) => readRunFile(nodeFileStream(p, 4 << 20, true), statSync(p).size, cfg, { file: p }),
    // As `cli compare-runs`: decoded on this thread, hashed on a worker thread meanwhile. 'decoded': the moment
    // the analysis may start (the hashing stopped there); 'import': both decoded and hashed.
    decoded: async (p) => (await readRun(p, '--a', cfg)).stop(),
    import: async (p) => (await readRun(p, '--a', cfg)).sha256,
  };
  const only = value('--phases')?.split(',');
  for (const k of Object.keys(phases)) if (only && !only.includes(k)) delete phases[k];
  const rows: Record<string, { ms: number[]; cpuMs: number[]; peakOverFiles: number[] }> = {};
  for (let r = 0; r < reps; r++) {
    for (const [name, f] of Object.entries(phases)) {
      const { ms, cpuMs, peak } = await timed(f, files);
      rows[name] ??= { ms: [], cpuMs: [], peakOverFiles: [] };
      rows[name].ms.push(ms);
      rows[name].cpuMs.push(cpuMs);
      rows[name].peakOverFiles.push(peak / bytes);
      log(
        `rep ${r} ${name}: ${ms.toFixed(0)} ms (cpu ${cpuMs.toFixed(0)} ms), ${(bytes / ms / 1e6).toFixed(2)} GB/s, ` +
          `peak ${(peak / bytes).toFixed(2)}× files`,
      );
    }
  }
  const summary = Object.fromEntries(
    Object.entries(rows).map(([k, v]) => [
      k,
      {
        ms: v.ms,
        medianMs: median(v.ms),
        gbPerS: bytes / median(v.ms) / 1e6,
        peakOverFiles: v.peakOverFiles,
      },
    ]),
  );
  const out = {
    date: new Date().toISOString(),
    cpus: (await import('node:os')).cpus().length,
    bytes,
    summary,
  };
  saveOut(out);
  printOut(out);
}

runMain(main);
