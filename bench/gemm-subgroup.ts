// The subgroup GEMM core (shaders/common/gemm_subgroup.wgsl) against the tiled core, on the device's own
// subgroup size: the self-check (src/kernels/gemm-subgroup-check.ts), then GPU times through the fused launcher
// (linearBiasOps, no bias; gemm-sweep.ts's timeLaunch: timestamp queries, ≥ 2 ms passes, median of three).
//   1. the cube (2048³): the tiled core as this adapter's policy picks it, the same with the accumulate step
//      written as fma(a, b, s) (--fma: does the driver contract `s + a·b` already?), and every lane layout of
//      the sweep (row phases × sums per lane × subgroups per workgroup) on the subgroup core;
//   2. the Pythia shapes (gemm-sweep.ts's sweepShapes, T = 128 and 512): the policy's tiles and K partition on
//      the tiled core, and the same partition on the subgroup core with the cube's best layouts (--top N).
//
//   3. --probes: timing-only variants of the subgroup core at the cube, for the layouts timed there (their sums
//      are wrong; they say where the time goes): 'per-k' (one step per loop trip, no unrolled block),
//      'no-shuffle' (each lane uses its own registers), 'no-load' (registers from arithmetic, not memory).
//
//   npx tsx bench/gemm-subgroup.ts [--cube 2048] [--models pythia-70m,...] [--T 128,512] [--top 3] [--fma]
//     [--layouts PM.TM.TN.WM.WN,...] [--probes] [--toggles T] [--json FILE]
// --toggles: extra Dawn toggles for this process (e.g. enable-dawn-features=disable_robustness; never the
// engine's setting).
// On SwiftShader (VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json) only a sanity check: use
// --cube 256 --models none.
import { writeFileSync } from 'node:fs';
import { acquireGpu } from '../src/gpu/device';
import { PipelineCache } from '../src/gpu/pipelines';
import { linearBiasOps } from '../src/kernels/fused-linear';
import { tilesName } from '../src/kernels/gemm';
import { chooseGemm, type GemmPolicy, gemmPolicyFor } from '../src/kernels/gemm-configs';
import {
  type SubgroupTiles,
  subgroupTilesFor,
  subgroupTilesName,
  subgroupTilesProblem,
} from '../src/kernels/gemm-subgroup';
import { checkSubgroupGemm } from '../src/kernels/gemm-subgroup-check';
import { nodeShaderSource } from '../src/kernels/shaders-node';
import { togglesGpu } from './cli';
import { gemmOperands, type SweepShape, sweepShapes, timeLaunch } from './gemm-sweep';

interface Row {
  shape: string;
  M: number;
  N: number;
  K: number;
  core: string; // 'tiled' (or 'plain' on CPU adapters), with ' fma' for the probe, or a subgroup layout
  tiles: string;
  kChunk: number;
  ms: number;
  tflops: number;
}

/** Lane layouts of the sweep for subgroups of `sg` lanes (at most 256 invocations). */
function sweepLayouts(sg: number): SubgroupTiles[] {
  const out: SubgroupTiles[] = [];
  for (let PM = 1; PM <= sg; PM *= 2) {
    if (PM === 1 || PM === sg) continue; // one row or one column phase: loads of one lane per row
    for (const [TM, TN] of [
      [8, 8],
      [8, 4],
      [4, 8],
    ])
      for (const [WM, WN] of [
        [1, 1],
        [1, 2],
        [2, 1],
        [2, 2],
        [1, 4],
        [4, 1],
        [2, 4],
        [4, 2],
      ]) {
        const t = { SG: sg, PM, TM, TN, WM, WN };
        if (subgroupTilesProblem(t, 256) === null) out.push(t);
      }
  }
  return out;
}

async function main(argv: string[]) {
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const toggles = value('--toggles');
  const ctx = await acquireGpu(togglesGpu(toggles));
  const { device, adapter } = ctx;
  const source = nodeShaderSource();
  const pipelines = new PipelineCache(device, source);
  const sg = ctx.subgroupSize;
  console.log(`adapter: ${adapter.vendor} ${adapter.architecture} ${adapter.device} ${adapter.description}`);
  console.log(`subgroups: ${ctx.features.subgroups}, fixed size ${sg}; toggles: ${toggles ?? 'default'}`);
  if (!sg) throw new Error('no fixed subgroup size on this device');
  const policy: GemmPolicy = gemmPolicyFor(adapter, device.limits);
  console.log(`policy: ${policy.name}`);
  const out: Record<string, unknown> = { date: new Date().toISOString(), adapter, subgroupSize: sg, toggles };
  const rows: Row[] = [];
  const log = (r: Row) => {
    rows.push(r);
    console.log(
      `${r.shape.padEnd(16)} ${r.core.padEnd(34)} ${r.tiles.padEnd(22)} kChunk ${String(r.kChunk).padStart(5)}  ${r.ms.toFixed(4)} ms  ${r.tflops.toFixed(2)} TFLOP/s`,
    );
  };

  // The self-check of the default layout for this size.
  const def = subgroupTilesFor(sg);
  if (def) {
    const check = await checkSubgroupGemm(device, pipelines, def);
    console.log(
      `self-check ${subgroupTilesName(def)}: ${check.ok ? 'pass' : 'FAIL'} (${check.ms.toFixed(0)} ms): ${check.reason}`,
    );
    out.selfCheck = check;
  }

  // The fma probe: the tiled core's accumulate step as fma(a, b, s), in a pipeline cache of its own.
  const fmaPipelines = new PipelineCache(device, source);
  const step = 'let t = s + a * b;';
  for (const f of ['common/gemm_core.wgsl', 'common/gemm_subgroup.wgsl']) {
    if (!source(f).includes(step)) throw new Error(`--fma: ${f} has no '${step}'`);
    fmaPipelines.setOverride(f, source(f).replace(step, 'let t = fma(vec4f(a), b, s);'));
  }

  const time = async (
    s: SweepShape,
    label: string,
    configs: { core: string; policy: GemmPolicy; pipes: PipelineCache }[],
  ) => {
    const { x, w, y, dummy, workspace, destroy } = gemmOperands(device, s, 'sg');
    try {
      for (const [i, c] of configs.entries()) {
        const cfg = chooseGemm(s.M, s.N, s.K, c.policy);
        const specs = linearBiasOps(label, { x, w, b: null, y, dummy }, s.M, s.N, s.K, {
          policy: c.policy,
          workspace,
        });
        const ms = await timeLaunch(device, c.pipes, specs, i === 0 ? 50 : 0);
        const tflops = (2 * s.M * s.N * s.K) / (ms * 1e-3) / 1e12;
        log({
          shape: label,
          M: s.M,
          N: s.N,
          K: s.K,
          core: c.core,
          tiles: tilesName(cfg.tiles),
          kChunk: cfg.kChunk,
          ms,
          tflops,
        });
      }
    } finally {
      destroy();
    }
  };

  // 1. The cube.
  const n = Number(value('--cube') ?? 2048);
  const cube: SweepShape = { model: 'cube', op: `${n}³`, M: n, N: n, K: n };
  const given = value('--layouts')
    ?.split(',')
    .map((l) => {
      const [PM, TM, TN, WM, WN] = l.split('.').map(Number);
      return { SG: sg, PM, TM, TN, WM, WN };
    });
  const layouts = given ?? sweepLayouts(sg);
  const withSg = (t: SubgroupTiles): GemmPolicy => ({ ...policy, subgroup: t });
  const mine = policy.cpu ? 'plain' : 'tiled'; // the core the policy runs (CPU adapters: the barrier-free one)
  const base = [{ core: mine, policy, pipes: pipelines }];
  if (argv.includes('--fma')) base.push({ core: `${mine} fma`, policy, pipes: fmaPipelines });
  await time(cube, `${n}x${n}x${n}`, [
    ...base,
    ...layouts.map((t) => ({ core: subgroupTilesName(t), policy: withSg(t), pipes: pipelines })),
  ]);
  const ranked = rows
    .filter((r) => r.core.startsWith('sg'))
    .sort((a, b) => a.ms - b.ms)
    .map((r) => layouts.find((t) => subgroupTilesName(t) === r.core)!);
  const top = ranked.slice(0, Number(value('--top') ?? 3));
  if (argv.includes('--fma') && top[0])
    await time(cube, `${n}x${n}x${n}`, [
      { core: `${subgroupTilesName(top[0])} fma`, policy: withSg(top[0]), pipes: fmaPipelines },
    ]);
  for (const t of top) {
    const check = await checkSubgroupGemm(device, pipelines, t);
    console.log(`self-check ${subgroupTilesName(t)}: ${check.ok ? 'pass' : 'FAIL'}: ${check.reason}`);
  }

  // 3. Timing-only probes of the subgroup core (wrong sums): where its time goes.
  if (argv.includes('--probes')) {
    const file = 'common/gemm_subgroup.wgsl';
    const text = source(file);
    const edit = (from: string, to: string) => (t: string) => {
      if (!t.includes(from)) throw new Error(`--probes: ${file} has no '${from}'`);
      return t.split(from).join(to);
    };
    const probes: Record<string, (t: string) => string> = {
      'per-k': edit('let L = min(PM, PN);', 'let L = 1u;'),
      'no-shuffle': (t) =>
        `${edit('subgroupShuffle(', 'sg_keep(')(t)}\nfn sg_keep(v: vec4f, i: u32) -> vec4f { return v; }\n`,
      'no-load': (t) =>
        edit(
          'return load_w(row * K + k);',
          'return f32(row + k);',
        )(edit('return x[row * K + k];', 'return f32(row ^ k);')(t)),
    };
    for (const [name, change] of Object.entries(probes)) {
      const pipes = new PipelineCache(device, source);
      pipes.setOverride(file, change(text));
      await time(
        cube,
        `${n}x${n}x${n}`,
        layouts.map((t) => ({ core: `${subgroupTilesName(t)} ${name}`, policy: withSg(t), pipes })),
      );
    }
  }

  // 2. The Pythia shapes: the policy's configuration on the tiled core, then on the subgroup core.
  const models = (value('--models') ?? 'pythia-70m,pythia-160m,pythia-410m')
    .split(',')
    .filter((m) => m !== 'none');
  const Ts = (value('--T') ?? '128,512').split(',').map(Number);
  for (const s of models.length ? sweepShapes(models, Ts, 0) : [])
    await time(s, `${s.M}x${s.N}x${s.K}`, [
      { core: mine, policy, pipes: pipelines },
      ...top.map((t) => ({ core: subgroupTilesName(t), policy: withSg(t), pipes: pipelines })),
    ]);
  out.rows = rows;
  const json = value('--json');
  if (json) writeFileSync(json, JSON.stringify(out, null, 2));
  device.destroy();
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
