// The two-path analysis of a Llama-family model (family-compare.ts, reached through analyze()) on the committed HF
// fixtures in Node on SwiftShader: a clean compare agrees on every flavour, with the floor (reference vs the fp64
// oracle) at fp32 rounding and greedy ids equal to HF's; each teaching fault of the family's fused kernels diverges
// at the layer it is planted from and bisection names its kernel; what the family cannot run, and the family's faults on a
// GPT-NeoX model, are refused in one line before any work.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import schema from '../../docs/report.schema.json';
import { Engine } from '../engine/engine';
import { ALL_FUSED } from '../engine/fused-kernels';
import { nodeGpu } from '../gpu/node';
import { llamaForward } from '../kernels/cpu/llama-forward';
import { nodeShaderSource } from '../kernels/shaders-node';
import { randomModelFiles } from '../model/random-model';
import { type FaultId, faultInfo } from '../run/faults';
import { defaultRunSpec, type RunSpec } from '../run/runspec';
import { analyze } from './analyze';
import { placeLlamaFaults } from './family-compare';
import { errorHistogram, type FullMetrics, fullMetrics } from './metrics';
import type { AnalysisPartial } from './report';

const FIXTURES = 'src/model/testdata/llama';

/** The report as the CLI writes it (non-finite numbers as strings, cli/compare.ts writeJson). */
const asJson = (r: object) =>
  JSON.parse(JSON.stringify(r, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v)));
const fixtures = readdirSync(FIXTURES);

interface HfOutputs {
  tokens: number[];
  greedy: { prompt: number[]; new_ids: number[] };
}
const hfOf = (name: string) =>
  JSON.parse(readFileSync(join(FIXTURES, name, 'hf_outputs.json'), 'utf8')) as HfOutputs;

let engine: Engine;
beforeAll(async () => {
  engine = await Engine.create(nodeGpu(), nodeShaderSource());
});
afterAll(() => engine?.dispose());

async function load(name: string) {
  const dir = join(FIXTURES, name);
  return engine.loadModel({
    config: readFileSync(join(dir, 'config.json'), 'utf8'),
    weights: new Uint8Array(readFileSync(join(dir, 'model.safetensors'))),
    name,
  });
}

function spec(tokens: number[], faults: RunSpec['faults'] = [], generate = 0): RunSpec {
  return {
    ...defaultRunSpec(),
    model: { kind: 'embedded', id: 'test' },
    prompt: { tokens },
    fused: [...ALL_FUSED],
    faults,
    seed: 1,
    generate,
  };
}

describe('compare on a Llama-family model', () => {
  it.each(fixtures)(
    '%s: a clean compare agrees, the floor at fp32 rounding, greedy ids equal HF',
    async (name) => {
      const hf = hfOf(name);
      await load(name);
      const n = hf.greedy.new_ids.length;
      const partials: AnalysisPartial[] = [];
      const r = await analyze(engine, spec(hf.greedy.prompt, [], n), hf.greedy.prompt, {
        onPartial: (x) => partials.push(x),
      });
      // the tokens handed out after the analysis and the determinism, step by step, reference then fused
      const kinds = partials.map((x) => x.kind);
      const tokens = partials.flatMap((x) => (x.kind === 'token' ? [x] : []));
      expect(kinds.indexOf('token'), name).toBeGreaterThan(kinds.indexOf('determinism'));
      expect(kinds.indexOf('determinism')).toBeGreaterThan(kinds.indexOf('analysis'));
      expect(tokens.map((t) => [t.path, t.ids.length])).toEqual(
        Array.from({ length: 2 * n }, (_, i) => [i % 2 === 0 ? 'reference' : 'fused', 1 + Math.floor(i / 2)]),
      );
      expect(tokens.at(-2)?.ids).toEqual(r.generation?.reference.ids);
      expect(tokens.at(-1)?.ids).toEqual(r.generation?.fused.ids);
      const line = r.layers.map((l) => `L${l.layer} ×${l.ratio.toPrecision(3)}`).join(', ');
      expect(r.verdict, `${name}: ${line}`).toBe('agree');
      expect(r.firstDivergentLayer).toBeNull();
      expect(r.model.family).toBe('llama');
      expect(r.oracle.kind).toBe('cpu');
      expect(r.oracle.reason).toMatch(/this adapter is itself a CPU .* the fp64 oracle ran on the CPU/);
      expect(r.layers).toHaveLength(r.model.config.numLayers);
      // fp32 through two small layers: the reference path within 1e-5 of exact (the family's target), never 0
      // (an oracle that returned the reference itself would).
      for (const l of r.layers) {
        expect(l.floor.relL2, `${name} layer ${l.layer}`).toBeLessThan(1e-5);
        expect(l.floor.relL2).toBeGreaterThan(0);
      }
      // every reference step compared with the exact forward's
      expect(r.taps.length).toBeGreaterThan(4 * r.layers.length);
      for (const t of r.taps) expect(t.refVsOracle?.relL2 ?? 1, t.name).toBeLessThan(1e-5);
      expect(r.determinism.identical).toBe(true);
      expect(r.generation?.reference.ids).toEqual(hf.greedy.new_ids);
      expect(r.generation?.fused.ids).toEqual(hf.greedy.new_ids);
      expect(r.generation?.verdict).toBe('agree');
    },
  );

  // [fault, a fixture where it acts (grouped-query heads for the KV mapping)]
  const faults: [FaultId, string][] = [
    ['rms_eps_outside', 'mistral-window'],
    ['swap_gate_up', 'llama-gqa-llama3'],
    ['kv_interleaved', 'qwen2-bias'],
  ];
  it.each(faults)(
    '%s on %s from layer 0 diverges at layer 0, bisection names its kernel',
    async (id, name) => {
      const hf = hfOf(name);
      await load(name);
      const r = await analyze(engine, spec(hf.tokens, [{ id, fromLayer: 0 }]), hf.tokens);
      expect(r.verdict).toBe('diverged');
      expect(r.firstDivergentLayer).toBe(0);
      expect(r.plantedFaults).toEqual([{ id, fromLayer: 0 }]);
      expect(r.layers[0].ratio).toBeGreaterThan(100 * r.k);
      // bisection: the fault's own kernel alone reproduces it from layer 0, no other kernel alone does
      const hits = r.bisection?.filter((b) => b.reproduces) ?? [];
      expect(hits.map((b) => [b.kernel, b.firstLayer])).toEqual([[faultInfo(id).kernel, 0]]);
      expect(r.bisection?.map((b) => b.kernel)).not.toContain('residual_epilogue');
      const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);
      expect(validate(asJson(r)), JSON.stringify(validate.errors?.slice(0, 3))).toBe(true);
    },
  );

  it('a generation the fault parts: the parting classified from the three rows, not a near tie', async () => {
    const hf = hfOf('mistral-window');
    await load('mistral-window');
    const p = hf.greedy.prompt;
    const r = await analyze(engine, spec(p, [{ id: 'swap_gate_up', fromLayer: 0 }], 4), p);
    const g = r.generation;
    expect(g?.reference.ids).toEqual(hf.greedy.new_ids.slice(0, 4));
    expect(g?.firstDifference).not.toBeNull();
    expect(g?.parting?.step).toBe(g?.firstDifference);
    expect(g?.parting?.row).toBe(p.length + (g?.firstDifference ?? 0) - 1);
    expect(g?.parting?.kind).not.toBe('near-tie');
    expect(g?.verdict).toBe('diverged');
    expect(g?.words).toBeTruthy();
  });

  // A precision mode is every kernel's constants on both paths: the floor grows to that storage's rounding (the
  // reference in the mode against exact), a clean fused path stays within k of it.
  it.each(['bf16', 'fp16', 'fp16acc'] as const)(
    "a clean compare in %s agrees, its floor that format's",
    async (p) => {
      const hf = hfOf('qwen2-bias');
      await load('qwen2-bias');
      const r = await analyze(engine, { ...spec(hf.tokens), precision: p }, hf.tokens);
      const line = r.layers.map(
        (l) => `L${l.layer} ×${l.ratio.toPrecision(3)} floor ${l.floor.relL2.toExponential(2)}`,
      );
      expect(r.verdict, line.join(', ')).toBe('agree');
      // fp32's floor here is about 3e-7 (the fp32 test above); a 16-bit storage's is far above it
      for (const l of r.layers) expect(l.floor.relL2, line.join(', ')).toBeGreaterThan(1e-4);
    },
  );

  it('compares the fused path op by op where its kernels write a slot out', async () => {
    const hf = hfOf('qwen3-qknorm');
    await load('qwen3-qknorm');
    const r = await analyze(engine, spec(hf.tokens), hf.tokens);
    const compared = r.taps.filter((t) => t.status === 'compared' && t.layer === 0);
    // more than the layer's output: the fused path's own slots (its norms, projections, attention) too
    expect(compared.length, compared.map((t) => t.name).join(' ')).toBeGreaterThan(1);
    for (const t of compared) expect(t.vsReference?.relL2 ?? 1, t.name).toBeLessThan(1e-5);
  });

  it('a fault from layer 1 leaves layer 0 within the floor and diverges at layer 1', async () => {
    const hf = hfOf('llama-gqa-llama3');
    await load('llama-gqa-llama3');
    const r = await analyze(engine, spec(hf.tokens, [{ id: 'swap_gate_up', fromLayer: 1 }]), hf.tokens);
    expect(r.firstDivergentLayer).toBe(1);
    expect(r.layers[0].diverged).toBe(false);
    expect(r.plantedFaults).toEqual([{ id: 'swap_gate_up', fromLayer: 1 }]);
  });

  it('kv_interleaved changes nothing with one KV head (MQA): the compare agrees', async () => {
    const hf = hfOf('llama-mqa-linear-tied');
    await load('llama-mqa-linear-tied');
    const r = await analyze(engine, spec(hf.tokens, [{ id: 'kv_interleaved' }]), hf.tokens);
    const clean = await analyze(engine, spec(hf.tokens), hf.tokens);
    expect(r.verdict).toBe('agree');
    // the faulty mapping is the right one here: the fused path's error is the clean one's, to the bit
    expect(r.layers.map((l) => l.propagated)).toEqual(clean.layers.map((l) => l.propagated));
  });

  // The GPU double-float oracle (asked for: on SwiftShader 'auto' takes the CPU one) against the CPU fp64 oracle: the
  // same verdicts, and every floor, local floor and tap's distance to exact the same to 1e-6 of itself (the two
  // oracles differ by ~1e-14 relative, the distances they measure are >= 1e-8).
  it.each([
    ['qwen3-qknorm', null],
    ['mistral-window', 'swap_gate_up'],
  ] as const)('%s (fault %s): the GPU oracle gives the report of the CPU oracle', async (name, fault) => {
    const hf = hfOf(name);
    await load(name);
    const s = spec(hf.tokens, fault ? [{ id: fault, fromLayer: 1 }] : []);
    const gpu = await analyze(engine, s, hf.tokens, { oracle: 'gpu' });
    const cpu = await analyze(engine, s, hf.tokens, { oracle: 'cpu' });
    expect(gpu.oracle.kind, gpu.oracle.reason).toBe('gpu');
    expect(gpu.oracle.selfTest?.ok).toBe(true);
    expect(cpu.oracle).toEqual({ kind: 'cpu', reason: 'asked for the CPU oracle', selfTest: null });
    expect([gpu.verdict, gpu.firstDivergentLayer, gpu.firstBornLayer]).toEqual([
      cpu.verdict,
      cpu.firstDivergentLayer,
      cpu.firstBornLayer,
    ]);
    expect(gpu.firstBornLayer).toBe(fault ? 1 : null);
    const close = (a: number, b: number, what: string) =>
      expect(Math.abs(a - b), `${name} ${what}: ${a} vs ${b}`).toBeLessThanOrEqual(1e-6 * Math.abs(b));
    gpu.layers.forEach((l, i) => {
      close(l.floor.relL2, cpu.layers[i].floor.relL2, `floor ${i}`);
      close(l.localFloor.relL2, cpu.layers[i].localFloor.relL2, `local floor ${i}`);
      close(l.fusedVsOracle.relL2, cpu.layers[i].fusedVsOracle.relL2, `fused vs exact ${i}`);
    });
    close(gpu.logits.floor.relL2, cpu.logits.floor.relL2, 'logits floor');
    expect(gpu.taps.map((t) => t.name)).toEqual(cpu.taps.map((t) => t.name));
    gpu.taps.forEach((t, i) => {
      const c = cpu.taps[i].refVsOracle;
      if (c && c.relL2 > 0) close(t.refVsOracle?.relL2 ?? Number.NaN, c.relL2, t.name);
    });
  });

  // The comparisons are reduced on the GPU (family-metrics.ts): each of them is metrics.ts on the tensors it names
  // (the paths' dumps read again, the CPU fp64 forward).
  it('its metrics are metrics.ts on the tensors they name (floor, propagated, fused vs exact, logits, taps)', async () => {
    const hf = hfOf('llama-gqa-llama3');
    await load('llama-gqa-llama3');
    const s = spec(hf.tokens, [{ id: 'swap_gate_up', fromLayer: 1 }]);
    const r = await analyze(engine, s, hf.tokens, { oracle: 'gpu' });
    expect(r.metricsOn).toBe('gpu');
    const model = engine.llamaModel!;
    const exactTaps = new Map<string, Float64Array>();
    const exact = llamaForward(model.cfg, model.weights, hf.tokens, exactTaps);
    const ref = await engine.forward(hf.tokens, { path: 'reference', taps: 'all' });
    const fused = await engine.forward(hf.tokens, {
      path: new Set(s.fused),
      llamaFaults: placeLlamaFaults(s, model.cfg.numLayers).faults,
      taps: 'all',
    });
    // Against exact the GPU's baseline is the df oracle (~1e-14 relative from fp64): a distance of ~1e-7 moves by
    // ~1e-7 of itself and an ulp count may move by one; between the two paths everything is the same.
    const same = (got: FullMetrics, want: FullMetrics, what: string, vsExact = true) => {
      const rel = vsExact ? 1e-6 : 1e-9;
      expect(Math.abs(got.maxUlp - want.maxUlp), what).toBeLessThanOrEqual(vsExact ? 1 : 0);
      expect(got.nanCount, what).toBe(want.nanCount);
      for (const key of ['relL2', 'maxAbs', 'meanAbs'] as const)
        expect(Math.abs(got[key] - want[key]), `${what} ${key}`).toBeLessThanOrEqual(
          rel * Math.abs(want[key]),
        );
    };
    r.layers.forEach((l, i) => {
      same(l.floor, fullMetrics(ref.dump.layers[i], exact.layers[i], 'fp32'), `floor ${i}`);
      same(
        l.propagated,
        fullMetrics(fused.dump.layers[i], ref.dump.layers[i], 'fp32'),
        `propagated ${i}`,
        false,
      );
      same(
        l.fusedVsOracle,
        fullMetrics(fused.dump.layers[i], exact.layers[i], 'fp32'),
        `fused vs exact ${i}`,
      );
    });
    same(r.logits.floor, fullMetrics(ref.dump.logits, exact.logits, 'fp32'), 'logits floor');
    same(
      r.logits.propagated,
      fullMetrics(fused.dump.logits, ref.dump.logits, 'fp32'),
      'logits propagated',
      false,
    );
    const swiglu = r.taps.find((t) => t.name === 'layers.1.swiglu')?.refVsOracle;
    expect(swiglu).toBeTruthy();
    same(
      swiglu as FullMetrics,
      fullMetrics(ref.taps.get('layers.1.swiglu')!, exactTaps.get('layers.1.swiglu')!, 'fp32'),
      'tap',
    );
    const out = r.taps.find((t) => t.name === 'layers.1.out');
    expect(out?.histogram).toEqual(errorHistogram(fused.dump.layers[1], ref.dump.layers[1]));
  });

  it("a generation the fault parts: the parting's exact row from the GPU oracle is the CPU oracle's", async () => {
    const hf = hfOf('mistral-window');
    await load('mistral-window');
    const p = hf.greedy.prompt;
    const s = spec(p, [{ id: 'swap_gate_up', fromLayer: 0 }], 4);
    const gpu = (await analyze(engine, s, p, { oracle: 'gpu' })).generation?.parting;
    const cpu = (await analyze(engine, s, p, { oracle: 'cpu' })).generation?.parting;
    expect(gpu).toBeTruthy();
    expect([gpu?.step, gpu?.row, gpu?.kind]).toEqual([cpu?.step, cpu?.row, cpu?.kind]);
    // max |row − exact|: the two exact rows differ by ~1e-14 relative, the rows' errors are >= 1e-7
    for (const side of ['reference', 'fused'] as const) {
      const [a, b] = [gpu?.[side].error ?? Number.NaN, cpu?.[side].error ?? Number.NaN];
      expect(Math.abs(a - b), `${side}: ${a} vs ${b}`).toBeLessThanOrEqual(1e-6 * b);
    }
  });

  it('falls back to the CPU oracle, saying why, when the double-float self-test fails', async () => {
    const hf = hfOf('qwen2-bias');
    await load('qwen2-bias');
    const r = await analyze(engine, spec(hf.tokens), hf.tokens, { oracle: 'gpu', selfTest: { dfBreak: 2 } });
    expect(r.oracle.kind).toBe('cpu');
    expect(r.oracle.selfTest?.ok).toBe(false);
    expect(r.oracle.reason).toMatch(/failed its self-test on this adapter/);
    expect(r.verdict).toBe('agree');
  });

  it('refuses in one line what the family cannot run, and GPT-NeoX refuses its faults', async () => {
    const hf = hfOf('qwen3-qknorm');
    await load('qwen3-qknorm');
    const t = hf.tokens;
    const cases: [RunSpec, RegExp][] = [
      [
        { ...spec(t), custom: { slot: 'flash_attention', source: '' } },
        /a kernel written in the page is not yet/,
      ],
      [
        spec(t, [{ id: 'gelu_relu' }]),
        /fault 'gelu_relu' \(a GPT-NeoX kernel's; this family has rms_eps_outside/,
      ],
      [
        spec(t, [
          { id: 'swap_gate_up', fromLayer: 1 },
          { id: 'rms_eps_outside', fromLayer: 0 },
        ]),
        /faults starting at different layers .* is not yet supported/,
      ],
    ];
    for (const [s, want] of cases) {
      const e = await analyze(engine, s, t).catch((x: Error) => x);
      expect(e).toBeInstanceOf(Error);
      expect((e as Error).message).toMatch(want);
      expect((e as Error).message).not.toContain('\n');
    }
    await engine.loadModel(
      randomModelFiles({ vocab: 61, d: 16, layers: 1, heads: 2, ff: 24, rotaryPct: 0.5, parallel: true }, 2),
    );
    const e = await analyze(engine, spec([1, 2, 3], [{ id: 'kv_interleaved' }]), [1, 2, 3]).catch((x) => x);
    expect((e as Error).message).toMatch(
      /^fault 'kv_interleaved' lives in a Llama-family kernel; this GPT-NeoX/,
    );
  });
});
