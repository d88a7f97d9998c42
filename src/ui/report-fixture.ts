// A small, hand-made Report for unit tests of the UI helpers (2 layers, 3 tokens). Test-only.
import type { Report } from '../compare/analyze';
import type { FullMetrics } from '../compare/metrics';
import { classifyParting } from '../compare/parting';

export function metrics(relL2: number, extra: Partial<FullMetrics> = {}): FullMetrics {
  return {
    n: 12,
    maxAbs: relL2 * 4,
    meanAbs: relL2,
    relL2,
    cosineDistance: (relL2 * relL2) / 2,
    sqnrDb: relL2 === 0 ? Number.POSITIVE_INFINITY : -20 * Math.log10(relL2),
    maxUlp: Math.round(relL2 * 1e7),
    nanCount: 0,
    infCount: 0,
    baselineNonFinite: 0,
    mismatchedNonFinite: 0,
    nonFiniteMismatch: false,
    finiteCount: 12,
    ...extra,
  };
}

export function fixtureReport(): Report {
  const edges = Array.from({ length: 41 }, (_, i) => -12 + (16 * i) / 40);
  const counts = new Array<number>(40).fill(0);
  counts[12] = 3;
  counts[13] = 5;
  return {
    schema: 'divergence-report/1',
    createdAt: '2026-11-22T10:11:12.345Z',
    spec: {
      version: 1,
      model: { kind: 'embedded', id: 'tiny' },
      prompt: { text: 'abc' },
      generate: 2,
      precision: 'fp32',
      fused: ['qkv_rotary'],
      faults: [{ id: 'gptj_rotary', fromLayer: 1 }],
      seed: 1,
      k: 10,
      metric: 'relL2',
    },
    model: {
      name: 'tiny',
      config: {
        vocabSize: 256,
        hiddenSize: 4,
        numLayers: 2,
        numHeads: 1,
        headDim: 4,
        intermediateSize: 16,
        rotaryNdims: 4,
        rotaryBase: 10000,
        layerNormEps: 1e-5,
        useParallelResidual: true,
        maxPositionEmbeddings: 64,
        attentionBias: true,
        tieWordEmbeddings: false,
      },
    },
    adapter: {
      vendor: 'google',
      architecture: 'swiftshader',
      device: '',
      description: 'SwiftShader',
      features: ['timestamp-query'],
      limits: { maxStorageBufferBindingSize: 134217728 },
    },
    tokens: [97, 98, 99],
    plantedFaults: [{ id: 'gptj_rotary', fromLayer: 1 }],
    metric: 'relL2',
    k: 10,
    layers: [
      {
        layer: 0,
        floorValue: 1e-7,
        threshold: 1e-6,
        floor: metrics(1e-7),
        propagated: metrics(0),
        fusedVsOracle: metrics(1e-7),
        local: metrics(0),
        localFloor: metrics(1e-7),
        ratio: 0,
        localRatio: 0,
        diverged: false,
        born: false,
        perToken: [0, 0, 0],
      },
      {
        layer: 1,
        floorValue: 2e-7,
        threshold: 2e-6,
        floor: metrics(2e-7),
        propagated: metrics(0.3),
        fusedVsOracle: metrics(0.3),
        local: metrics(0.25, {
          nonFiniteMismatch: true,
          relL2: Number.POSITIVE_INFINITY,
          mismatchedNonFinite: 1,
        }),
        localFloor: metrics(1e-7),
        ratio: 1.5e6,
        localRatio: Number.POSITIVE_INFINITY,
        diverged: true,
        born: true,
        perToken: [0, 0.2, Number.POSITIVE_INFINITY],
      },
    ],
    firstDivergentLayer: 1,
    firstBornLayer: 1,
    verdict: 'diverged',
    logits: { propagated: metrics(0.5), floor: metrics(3e-7) },
    taps: [
      {
        name: 'layers.1.k',
        layer: 1,
        op: 'k',
        status: 'compared',
        shape: 12,
        vsReference: metrics(0.2),
        refVsOracle: metrics(1e-7),
        histogram: { edges, counts, zeros: 4, nonFinite: 0 },
      },
      {
        name: 'layers.1.qkv',
        layer: 1,
        op: 'qkv',
        status: 'fused-away',
        shape: 36,
        vsReference: null,
        refVsOracle: metrics(1e-7),
        histogram: null,
      },
    ],
    bisection: [{ kernel: 'qkv_rotary', reproduces: true, firstLayer: 1, value: 0.3, ratio: 1.5e6 }],
    determinism: { identical: true, differences: [], runs: [{ schedule: 'repeat', identical: true }] },
    generation: {
      reference: { ids: [100, 101], text: 'de' },
      fused: { ids: [100, 102], text: 'df' },
      firstDifference: 1,
      parting: fixtureParting(),
    },
    timing: {
      reference: {
        totalNs: 2000,
        ops: [{ label: 'layers.0.qkv', layer: 0, kind: 'qkv', ns: 2000 }],
        perLayer: [2000, 0],
        perKind: { qkv: 2000 },
      },
      fused: {
        totalNs: 1000,
        ops: [{ label: 'layers.0.qkv_rotary', layer: 0, kind: 'qkv_rotary', ns: 1000 }],
        perLayer: [1000, 0],
        perKind: { qkv_rotary: 1000 },
      },
      speedup: 2,
    },
    oracle: { kind: 'cpu', reason: 'asked for the CPU oracle', selfTest: null },
    metricsOn: 'cpu',
    durations: { reference: 12.5, fused: 13 },
  };
}

/** A near tie at the second generated token: ids 101 and 102 within rounding of each other on both paths. */
export function fixtureParting() {
  const row = Array.from({ length: 256 }, (_, i) => Math.sin(i));
  const ref = [...row];
  const fused = [...row];
  ref[101] = 3 + 1e-7;
  ref[102] = 3;
  fused[101] = 3;
  fused[102] = 3 + 1e-7;
  row[101] = 3;
  row[102] = 3;
  return classifyParting({
    step: 1,
    promptLength: 3,
    refChose: 101,
    fusedChose: 102,
    refRow: ref,
    fusedRow: fused,
    exactRow: row,
    precision: 'fp32',
    k: 10,
    tokenText: (id) => String.fromCharCode(id),
  });
}
