// `npx tsx bench/llama.ts`: the Llama family's fused forward (engine/llama-fused.ts) on seeded models of real
// shapes (SmolLM2-135M, Qwen2.5-0.5B), T = 128 and 512: the recorded dispatches submitted again and again, each
// submit-to-done timed on the wall clock, no readback (as bench/forward.ts times GPT-NeoX's plans), and of it the CPU's
// encoding and submit calls (encodeMedianMs, submitMedianMs) and the GPU's own span from the first dispatch to the last
// (gpuMedianMs; timestamps). The PyTorch peer for the same shapes is bench/torch_llama_peer.py (HF SDPA under CUDA-graph
// replay). Each row keeps its per-rep times and its start (`at`, epoch ms, to line up with an nvidia-smi log).
// Each row is timed twice: `cold` as the first bench of 2026-11-27 did (one forward, then --reps submits, right after
// the weights were made: the GPU's clocks still low), then after --warm-ms of forwards (default 1000), median of
// --reps; --rounds N times the whole set N times over. --profile adds one more submit with each dispatch in a timed
// pass of its own: GPU ms per op (summed over the layers). Policies (--policies, comma-separated, repeats allowed):
// `before` = the adapter's policy with no split-K and no table (the tree before 2026-11-27 13:00: no workspace, the
// heuristic tiles), `heuristic` = split-K on the heuristic, `policy` = the adapter's policy as committed (the forward
// in DEFAULT_CHUNKS command buffers), `single` = that in one command buffer (as before 2026-11-27 18:00), `chunked` =
// that in --chunks command buffers (default 8), `ungrouped` = the policy with the grid's workgroup order (no
// GemmPolicy.groupM), `nofold` = the policy with the o and down projections' split-K reductions in dispatches of their
// own (before they were folded into the next add + RMSNorm), `swept` = the policy with the table of this run's --sweep.
// --sweep: every GEMM shape of the models at each T (or --sweep-T; only the ops of --sweep-ops: qkv_rot, attn_out,
// swiglu, mlp_out, logits) as plain linears, over each tile configuration and K partition (bench/gemm-sweep.ts's
// timing, in the policy's workgroup order), and the table chosen as gemm-sweep chooses it. --cold: the layers'
// projections timed as they run in the forward, each launch on weights not in the L2, each dispatch in a pass of its
// own, the o and down projections by their partial GEMM alone (their reductions are folded into the next add + RMSNorm).
// --gemm: the policy's launch at every GEMM shape of the forward (and 2048³ unless --cube 0), timed as gemm-sweep
// times it, in each workgroup order of --gemm-groups (default 1). --floor: a chain of 1, 64 and 273 trivial dispatches
// (--floor-floats), the per-dispatch floor. --pythia pythia-70m,…: GPT-NeoX's fused forward of seeded Pythia shapes
// first (engine.timeForward; --pythia-policies policy,ungrouped). --toggles: extra Dawn toggles (bench/cli.ts).
// --weights-cache DIR: the seeded models' bytes kept there for the next process.
// Flags: --models smollm2-135m,qwen2.5-0.5b (none: no Llama rows) --T 128,512 --reps 9 --warm-ms 1000 --rounds 1
// --policies policy [--profile] [--flash-bq 16,8] [--sweep [--cold] [--sweep-T 512] [--sweep-ops swiglu,logits]]
// [--sweep-s 150] [--gemm [--gemm-groups 1,8]] [--floor] --out FILE. On SwiftShader use `--models tiny` (or `tiny-30`:
// SmolLM2's 30 layers on tiny sizes, for the CPU side).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { Engine } from '../src/engine/engine';
import { LlamaFused } from '../src/engine/llama-fused';
import type { PassTiming } from '../src/gpu/timestamps';
import { linearBiasOps } from '../src/kernels/fused-linear';
import { tilesName } from '../src/kernels/gemm';
import { chooseGemm, type GemmPolicy, shapeKey } from '../src/kernels/gemm-configs';
import { nodeShaderSource } from '../src/kernels/shaders-node';
import { smallLlamaConfig } from '../src/model/llama-config';
import { randomLlamaTensors } from '../src/model/llama-random';
import { loadLlamaWeights } from '../src/model/llama-weights';
import { writeSafetensors } from '../src/model/safetensors-write';
import type { LlamaConfig } from '../src/numeric/types';
import { argv, benchEngine, log, median, printOut, runMain, saveOut, togglesGpu, value } from './cli';
import { SHAPES } from './forward';
import { chooseTable, gemmOperands, type SweepShape, timeLaunch } from './gemm-sweep';
import { dispatchFloor, sweep, sweptTable } from './llama-sweep';

const L = (over: Partial<LlamaConfig>): LlamaConfig => smallLlamaConfig(over);

/** The shapes of the HF configs (HuggingFaceTB/SmolLM2-135M, Qwen/Qwen2.5-0.5B); weights seeded, not trained. */
export const LLAMA_SHAPES: Record<string, LlamaConfig> = {
  tiny: L({
    vocabSize: 997,
    hiddenSize: 96,
    numLayers: 2,
    numHeads: 6,
    numKvHeads: 2,
    headDim: 16,
    rotaryDim: 16,
  }),
  // SmolLM2-135M's layer count and dispatches on tiny sizes: the CPU side of its forward (encode, submit) on SwiftShader.
  'tiny-30': L({
    vocabSize: 97,
    hiddenSize: 64,
    numLayers: 30,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 16,
    rotaryDim: 16,
    intermediateSize: 96,
    slidingWindow: Array(30).fill(null),
  }),
  'smollm2-135m': L({
    vocabSize: 49152,
    hiddenSize: 576,
    numLayers: 30,
    numHeads: 9,
    numKvHeads: 3,
    headDim: 64,
    rotaryDim: 64,
    intermediateSize: 1536,
    ropeTheta: 100000,
    tieWordEmbeddings: true,
    maxPositionEmbeddings: 8192,
    slidingWindow: Array(30).fill(null),
  }),
  'qwen2.5-0.5b': L({
    flavour: 'qwen2',
    vocabSize: 151936,
    hiddenSize: 896,
    numLayers: 24,
    numHeads: 14,
    numKvHeads: 2,
    headDim: 64,
    rotaryDim: 64,
    intermediateSize: 4864,
    rmsNormEps: 1e-6,
    ropeTheta: 1000000,
    attentionBias: true,
    tieWordEmbeddings: true,
    maxPositionEmbeddings: 32768,
    slidingWindow: Array(24).fill(null),
  }),
};

/** The GEMM shapes of one forward of `cfg` at T rows (the fused epilogues' GEMMs as plain linears). */
export function llamaShapes(model: string, cfg: LlamaConfig, T: number): SweepShape[] {
  const { hiddenSize: d, numHeads: H, numKvHeads: KV, headDim: hd, intermediateSize: F, vocabSize: V } = cfg;
  return [
    { model, op: 'qkv_rot', M: T, N: (H + 2 * KV) * (hd + (hd % 2)), K: d },
    { model, op: 'attn_out', M: T, N: d, K: H * hd },
    { model, op: 'swiglu', M: T, N: 2 * F, K: d },
    { model, op: 'mlp_out', M: T, N: d, K: F },
    { model, op: 'logits', M: T, N: V, K: d },
  ];
}

/** Per-op GPU ms summed over the layers (labels without their `layers.N.` prefix), and the dispatch count. */
function perOp(passes: PassTiming[]): { op: string; ms: number; dispatches: number }[] {
  const m = new Map<string, { ms: number; dispatches: number }>();
  for (const p of passes) {
    const op = p.label.replace(/^layers\.\d+\./, '');
    const e = m.get(op) ?? { ms: 0, dispatches: 0 };
    e.ms += p.ns / 1e6;
    e.dispatches++;
    m.set(op, e);
  }
  return [...m].map(([op, e]) => ({ op, ...e })).sort((a, b) => b.ms - a.ms);
}

/**
 * The seeded model's safetensors bytes (BF16); with --weights-cache DIR, kept in DIR/<name>.safetensors and read from
 * there by the next process of the same call (making Qwen2.5-0.5B's on the CPU takes ~30 s).
 */
function seededBytes(name: string, cfg: LlamaConfig): Uint8Array {
  const dir = value('--weights-cache');
  const file = dir ? `${dir}/${name}.safetensors` : '';
  if (file && existsSync(file)) return new Uint8Array(readFileSync(file));
  const bytes = writeSafetensors(randomLlamaTensors(cfg, 4321, 'BF16'));
  if (file) writeFileSync(file, bytes);
  return bytes;
}

/**
 * --pythia pythia-70m,…: the GPT-NeoX fused forward of seeded Pythia shapes (weights made on the GPU) at each T, timed
 * as engine.timeForward times it (submit to done, no readback), after --warm-ms of forwards, median of --reps, each
 * round (--rounds) again; the peer is bench/torch_peer.py in the same call.
 */
async function pythiaRows(
  engines: { policy: string; engine: Engine }[],
  models: string[],
  Ts: number[],
  reps: number,
  warmMs: number,
  rounds: number,
) {
  const rows: unknown[] = [];
  for (const model of models) {
    const spec = SHAPES[model];
    if (!spec) throw new Error(`unknown Pythia shape ${model}: ${Object.keys(SHAPES).join(', ')}`);
    for (const { engine } of engines) await engine.loadSeededModel({ ...spec, maxPos: 4096 }, 1234, model);
    for (let round = 0; round < rounds; round++)
      for (const T of Ts)
        for (const { policy, engine } of engines) {
          const tokens = Array.from({ length: T }, (_, i) => (i * 7919) % spec.vocab);
          const w0 = performance.now();
          while (performance.now() - w0 < warmMs) await engine.timeForward(tokens, { path: 'fused' }, 10);
          const at = Date.now();
          const { ms, dispatches } = await engine.timeForward(tokens, { path: 'fused' }, reps);
          const row = {
            model,
            T,
            path: 'fused',
            policy,
            round,
            at,
            medianMs: median(ms),
            minMs: Math.min(...ms),
            dispatches,
            ms,
          };
          log(
            `${model} T=${T} fused ${policy} r${round}: ${row.medianMs.toFixed(2)} ms (min ${row.minMs.toFixed(2)}), ${dispatches} dispatches`,
          );
          rows.push(row);
        }
    for (const { engine } of engines) engine.unloadModel();
  }
  return rows;
}

async function main() {
  const engine = await benchEngine();
  const { device, pipelines } = engine.devicePipelines();
  const models = (value('--models') ?? 'smollm2-135m,qwen2.5-0.5b').split(',').filter((m) => m !== 'none');
  const Ts = (value('--T') ?? '128,512').split(',').map(Number);
  const reps = Number(value('--reps') ?? 9);
  const warmMs = Number(value('--warm-ms') ?? 1000);
  const profile = argv.includes('--profile');
  const rounds = Number(value('--rounds') ?? 1);
  const flashBQs = (value('--flash-bq') ?? '').split(',').filter(Boolean).map(Number);
  const base = engine.gemmPolicy;
  const policies: Record<string, GemmPolicy> = {
    before: { ...base, name: `${base.name}, no split-K, no table`, table: null, splitK: false },
    heuristic: { ...base, name: `${base.name}, split-K, no table`, table: null },
    policy: base,
    ungrouped: { ...base, name: `${base.name}, the grid's workgroup order`, groupM: undefined },
  };
  const names = (value('--policies') ?? 'policy').split(',');
  const rows: unknown[] = [];
  const out: Record<string, unknown> = { adapter: engine.adapter, policy: base.name, warmMs, rows };
  const cfgOf = (name: string) => {
    const cfg = LLAMA_SHAPES[name];
    if (!cfg) throw new Error(`unknown shape ${name}: ${Object.keys(LLAMA_SHAPES).join(', ')}`);
    return cfg;
  };
  if (argv.includes('--sweep')) {
    // --cold: the projections of the layers only (the LM head's weights never fit the L2: its time is the same), timed
    // cold (timeCold).
    const cold = argv.includes('--cold');
    const sweepTs = (value('--sweep-T') ?? Ts.join(',')).split(',').map(Number);
    const ops = value('--sweep-ops')?.split(',');
    const shapes = models
      .flatMap((m) => sweepTs.flatMap((T) => llamaShapes(m, cfgOf(m), T)))
      .filter((s) => (!cold || s.op !== 'logits') && (!ops || ops.includes(s.op)));
    const t0 = performance.now();
    const budget = Number(value('--sweep-s') ?? 150);
    const got = await sweep(device, pipelines, shapes, base.maxKChunk, budget, cold, base);
    const table = sweptTable(base.table, got.rows);
    policies.swept = { ...base, name: `${base.name} + this run's sweep`, table };
    const mine = chooseTable(got.rows);
    out.sweep = {
      seconds: (performance.now() - t0) / 1e3,
      skipped: got.skipped,
      chosen: mine,
      rows: got.rows,
    };
    log(
      `sweep: ${got.rows.length} timings in ${((performance.now() - t0) / 1e3).toFixed(1)} s; skipped ${got.skipped.join(' ') || 'none'}`,
    );
    log(`chosen: ${JSON.stringify(mine)}`);
    saveOut(out);
  }
  if (argv.includes('--gemm')) {
    // The policy's launch (tiles, K partition, reduction) at each GEMM shape of the forward, as gemm-sweep times it
    // (back to back in one pass); torch.matmul at the same shapes comes from bench/torch_matmul.py in the same call.
    const gemmRows: unknown[] = [];
    out.gemm = gemmRows;
    const shapes = models.flatMap((m) => Ts.flatMap((T) => llamaShapes(m, cfgOf(m), T)));
    if (value('--cube') !== '0') shapes.push({ model: 'cube', op: '2048^3', M: 2048, N: 2048, K: 2048 });
    // --gemm-groups 1,4: each launch again with its GEMM dispatch walking GEMM_GROUP_M row blocks per column block.
    const groups = (value('--gemm-groups') ?? '1').split(',').map(Number);
    for (const s of shapes) {
      const { x, w, y, dummy, workspace, destroy } = gemmOperands(device, s, 'gemm');
      try {
        const cfg = chooseGemm(s.M, s.N, s.K, base);
        for (const G of groups) {
          const specs = linearBiasOps('gemm', { x, w, b: null, y, dummy }, s.M, s.N, s.K, {
            policy: base,
            workspace,
          }).map((d, i) => (i === 0 && G > 1 ? { ...d, constants: { ...d.constants, GEMM_GROUP_M: G } } : d));
          const at = Date.now();
          const ms = await timeLaunch(device, pipelines, specs, gemmRows.length === 0 ? 200 : 20);
          const tflops = (2 * s.M * s.N * s.K) / (ms * 1e-3) / 1e12;
          const row = {
            ...s,
            tiles: tilesName(cfg.tiles),
            kChunk: cfg.kChunk,
            groupM: G,
            dispatches: specs.length,
            ms,
            tflops,
            at,
          };
          gemmRows.push(row);
          log(
            `gemm ${s.model} ${s.op} ${shapeKey(s.M, s.N, s.K)} ${row.tiles} kChunk ${cfg.kChunk} G ${G}: ${ms.toFixed(4)} ms ${tflops.toFixed(1)} TFLOP/s`,
          );
        }
      } finally {
        destroy();
      }
    }
    saveOut(out);
  }
  if (argv.includes('--floor')) {
    const floors = [];
    for (const n of [1, 64, 273])
      for (const floats of (value('--floor-floats') ?? '73728,458752').split(',').map(Number))
        floors.push(await dispatchFloor(device, n, floats, 15));
    out.floor = floors;
    for (const f of floors)
      log(
        `floor: ${f.dispatches} dispatches of ${f.floats} floats: ${f.medianMs.toFixed(3)} ms, ${f.usPerDispatch.toFixed(2)} µs each`,
      );
    saveOut(out);
  }
  const pythia = (value('--pythia') ?? '').split(',').filter(Boolean);
  if (pythia.length) {
    // --pythia-policies policy,ungrouped: a second engine whose policy keeps the grid's workgroup order.
    const engines = [];
    for (const policy of (value('--pythia-policies') ?? 'policy').split(',')) {
      if (policy === 'policy') engines.push({ policy, engine });
      else if (policy === 'ungrouped') {
        const gemm = { ...base, groupM: undefined };
        engines.push({
          policy,
          engine: await Engine.create(togglesGpu(value('--toggles')), nodeShaderSource(), { gemm }),
        });
      } else throw new Error(`--pythia-policies: unknown ${policy} (policy, ungrouped)`);
    }
    out.pythia = await pythiaRows(engines, pythia, Ts, reps, warmMs, rounds);
    for (const e of engines) if (e.engine !== engine) e.engine.dispose();
    saveOut(out);
  }
  for (const name of models) {
    const cfg = cfgOf(name);
    const t0 = performance.now();
    const w = loadLlamaWeights(cfg, seededBytes(name, cfg));
    const fused = LlamaFused.create({ device, pipelines }, cfg, w);
    log(`${name}: weights made and uploaded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    for (let round = 0; round < rounds; round++)
      for (const T of Ts) {
        const tokens = Array.from({ length: T }, (_, i) => (i * 7919 + 104729) % cfg.vocabSize);
        const variants = names.flatMap((p) => [
          { p, bq: 0 },
          ...(p === names[names.length - 1] ? flashBQs.map((bq) => ({ p, bq })) : []),
        ]);
        for (const [vi, { p, bq }] of variants.entries()) {
          // `nofold`: the adapter's policy with each split-K reduction in its own dispatch (the tree before the fold).
          // `chunked`: the adapter's policy, the forward in --chunks command buffers (default 4) submitted as encoded.
          const gemmPolicy = ['nofold', 'chunked', 'single'].includes(p) ? base : policies[p];
          const foldSplitK = p !== 'nofold';
          const submitChunks =
            p === 'chunked' ? Number(value('--chunks') ?? 8) : p === 'single' ? 1 : undefined;
          if (!gemmPolicy) throw new Error(`unknown policy ${p} (${Object.keys(policies).join(', ')})`);
          const faults = bq ? { flash: { BQ: bq } } : undefined;
          const run = async (time: { reps: number; ms: number[]; ops?: PassTiming[] | null }) =>
            fused.forward(tokens, { gemmPolicy, time, faults, foldSplitK, submitChunks });
          // cold: the first variant of a row as the bench of 2026-11-27 12:13 timed it (one forward, then the reps).
          const cold = { reps, ms: [] as number[] };
          if (vi === 0 && round === 0) await run(cold);
          const at = Date.now();
          const w0 = performance.now();
          let warmForwards = 0;
          while (performance.now() - w0 < warmMs || warmForwards === 0) {
            await run({ reps: 10, ms: [] });
            warmForwards++;
          }
          const time = {
            reps,
            ms: [] as number[],
            encodeMs: [] as number[],
            submitMs: [] as number[],
            gpuMs: [] as number[],
            ops: profile ? ([] as PassTiming[]) : undefined,
          };
          await run(time);
          const ops = time.ops ? perOp(time.ops) : undefined;
          const row = {
            model: name,
            T,
            policy: p,
            flashBQ: bq || undefined,
            medianMs: median(time.ms),
            minMs: Math.min(...time.ms),
            encodeMedianMs: median(time.encodeMs),
            submitMedianMs: median(time.submitMs),
            gpuMedianMs: time.gpuMs.length ? median(time.gpuMs) : undefined,
            gpuMinMs: time.gpuMs.length ? Math.min(...time.gpuMs) : undefined,
            round,
            at,
            ms: time.ms,
            gpuMs: time.gpuMs,
            encodeMs: time.encodeMs,
            reps,
            coldMedianMs: cold.ms.length ? median(cold.ms) : undefined,
            coldMinMs: cold.ms.length ? Math.min(...cold.ms) : undefined,
            warmForwards,
            opsMs: ops ? ops.reduce((a, o) => a + o.ms, 0) : undefined,
            ops,
          };
          const c = row.coldMedianMs ? `, cold ${row.coldMedianMs.toFixed(2)}` : '';
          log(
            `${name} T=${T} ${p}${bq ? ` BQ ${bq}` : ''} r${round}: ${row.medianMs.toFixed(2)} ms (min ${row.minMs.toFixed(2)}${c}; GPU ${row.gpuMedianMs?.toFixed(2)} min ${row.gpuMinMs?.toFixed(2)}; encode ${row.encodeMedianMs.toFixed(2)}, submit ${row.submitMedianMs.toFixed(2)})${
              ops
                ? `; ops ${row.opsMs?.toFixed(2)} ms: ${ops
                    .slice(0, 8)
                    .map((o) => `${o.op} ${o.ms.toFixed(2)}`)
                    .join(', ')}`
                : ''
            }`,
          );
          rows.push(row);
          saveOut(out);
        }
      }
    fused.destroy();
  }
  printOut(out);
  engine.dispose();
}

runMain(main);
