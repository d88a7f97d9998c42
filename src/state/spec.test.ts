import { describe, expect, it } from 'vitest';
import { decodeLink, encodeLink } from '../run/permalink';
import { parseRunSpec } from '../run/runspec';
import type { LoadedModel } from '../worker/api';
import { defaultSettings, type RunSettings, settingsOf } from './settings';
import { buildSpec, changesSince, modelRef, PHASES, phaseLabel, progressFraction, specChanges } from './spec';

const model: LoadedModel = {
  name: 'neox-kjv-bytes',
  config: {
    vocabSize: 256,
    hiddenSize: 8,
    numLayers: 4,
    numHeads: 2,
    headDim: 4,
    intermediateSize: 32,
    rotaryNdims: 4,
    rotaryBase: 10000,
    layerNormEps: 1e-5,
    useParallelResidual: true,
    maxPositionEmbeddings: 64,
    attentionBias: true,
    tieWordEmbeddings: false,
  },
  params: 1,
  gpuBytes: 4,
  tokenizer: 'bytes',
  weightsOnGpu: 'fp32',
  sha256: 'a'.repeat(64),
  weightsBytes: 4,
};
const embedded = { kind: 'embedded' as const, id: 'neox-kjv-bytes', url: 'http://x/models/neox-kjv-bytes/' };

function settings(patch: Partial<RunSettings> = {}): RunSettings {
  return { ...defaultSettings(), ...patch };
}

describe('buildSpec', () => {
  it('the defaults make a valid spec of the embedded model with every fused kernel and no fault', () => {
    const r = buildSpec(settings(), embedded, model);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.spec.model).toEqual({ kind: 'embedded', id: 'neox-kjv-bytes' });
    expect(r.spec.faults).toEqual([]);
    expect(r.spec.fused).toHaveLength(6);
    expect(r.spec.prompt).toEqual({ text: 'And God said unto Moses, ' });
  });

  it('the decode check: in the spec only when asked for with tokens to generate, and back into the settings', () => {
    const on = buildSpec(settings({ checkDecode: true }), embedded, model);
    expect(on.ok && on.spec.checkDecode).toBe(true);
    if (on.ok) expect(settingsOf(on.spec).checkDecode).toBe(true);
    const off = buildSpec(settings({ checkDecode: false }), embedded, model);
    expect(off.ok && 'checkDecode' in off.spec).toBe(false);
    const none = buildSpec(settings({ checkDecode: true, generate: 0 }), embedded, model);
    expect(none.ok && 'checkDecode' in none.spec).toBe(false);
    if (on.ok && off.ok) expect(specChanges(off.spec, on.spec)).toEqual(['the decode check']);
    // Parsed: true kept, false dropped (links without it read as before), anything else refused by name.
    const base = on.ok ? on.spec : null;
    expect(parseRunSpec({ ...base, checkDecode: true }).checkDecode).toBe(true);
    expect('checkDecode' in parseRunSpec({ ...base, checkDecode: false })).toBe(false);
    expect(() => parseRunSpec({ ...base, checkDecode: 'yes' })).toThrow(
      /checkDecode: expected true or false/,
    );
  });

  it('a fault with a first layer, or seeded (no fromLayer)', () => {
    const a = buildSpec(settings({ fault: 'gptj_rotary', faultLayer: 2 }), embedded, model);
    expect(a.ok && a.spec.faults).toEqual([{ id: 'gptj_rotary', fromLayer: 2 }]);
    const b = buildSpec(settings({ fault: 'gptj_rotary', faultLayer: null, seed: 7 }), embedded, model);
    expect(b.ok && b.spec.faults).toEqual([{ id: 'gptj_rotary' }]);
    expect(b.ok && b.spec.seed).toBe(7);
  });

  it('refuses a fault whose kernel is off, naming it', () => {
    const r = buildSpec(settings({ fault: 'gptj_rotary', fused: ['gemm'] }), embedded, model);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.message).toMatch(/qkv_rotary/);
  });

  it('token ids are parsed against the vocabulary', () => {
    const ok = buildSpec(settings({ promptMode: 'ids', prompt: '3, 14 15' }), embedded, model);
    expect(ok.ok && ok.spec.prompt).toEqual({ tokens: [3, 14, 15] });
    const bad = buildSpec(settings({ promptMode: 'ids', prompt: '3, 999' }), embedded, model);
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.message).toMatch(/out of range/);
    expect(buildSpec(settings({ prompt: '' }), embedded, model).ok).toBe(false);
  });

  it('URL and file models are named by the sha256 of their weights', () => {
    expect(modelRef({ kind: 'url', url: 'https://h/m/' }, model)).toEqual({
      kind: 'url',
      url: 'https://h/m/',
      sha256: 'a'.repeat(64),
    });
    expect(modelRef({ kind: 'files', name: 'pythia' }, model)).toEqual({
      kind: 'file',
      sha256: 'a'.repeat(64),
      name: 'pythia',
    });
  });

  it("a Llama-family model's ref carries its flavour through a link; GPT-NeoX's stays as it was", () => {
    const llama: LoadedModel = { ...model, family: 'llama', flavour: 'qwen2' };
    const ref = modelRef({ kind: 'files', name: 'qwen' }, llama);
    expect(ref).toEqual({ kind: 'file', sha256: 'a'.repeat(64), name: 'qwen', flavour: 'qwen2' });
    expect(modelRef({ kind: 'url', url: 'https://h/m/' }, llama)).toMatchObject({ flavour: 'qwen2' });
    expect(modelRef({ kind: 'files', name: 'pythia' }, { ...model, family: 'gpt_neox' })).not.toHaveProperty(
      'flavour',
    );
    const built = buildSpec(settings(), { kind: 'files', name: 'qwen' }, llama);
    if (!built.ok) throw new Error(built.message);
    const back = decodeLink(encodeLink({ v: 1, spec: built.spec }));
    expect(back.spec.model).toEqual(ref);
    // A flavour the family does not have is refused, naming the field.
    const bad = { ...built.spec, model: { ...ref, flavour: 'gpt2' } };
    expect(() => parseRunSpec(JSON.parse(JSON.stringify(bad)))).toThrow('model.flavour');
  });
});

describe('progress', () => {
  it('labels phases in words and counts local layers from 1', () => {
    expect(phaseLabel({ phase: 'sources', done: 0, total: 6 })).toMatch(/Both paths/);
    expect(phaseLabel({ phase: 'local layer 2', done: 2, total: 4 })).toBe('Local error: layer 3 of 4');
    expect(phaseLabel({ phase: 'mystery', done: 0, total: 1 })).toBe('mystery');
  });

  it('the fraction grows through the phases and stays in [0, 1)', () => {
    const fr = PHASES.map((phase, i) => progressFraction({ phase, done: i, total: 6 }));
    for (let i = 1; i < fr.length; i++) expect(fr[i]).toBeGreaterThan(fr[i - 1]);
    expect(fr[0]).toBe(0);
    expect(fr.at(-1)).toBeLessThan(1);
    const l0 = progressFraction({ phase: 'local layer 0', done: 0, total: 4 });
    const l3 = progressFraction({ phase: 'local layer 3', done: 3, total: 4 });
    expect(l0).toBe(progressFraction({ phase: 'local', done: 3, total: 6 }));
    expect(l3).toBeGreaterThan(l0);
    expect(l3).toBeLessThan(progressFraction({ phase: 'bisection', done: 4, total: 6 }));
    // Every token generated, then the decode check that starts by itself: still forward, still under 1.
    const ids = [1, 2];
    const tokens = progressFraction(
      { phase: 'generation', done: 7, total: 9 },
      { reference: { ids }, fused: { ids }, total: 2 },
    );
    const check = progressFraction({ phase: 'decode check', done: 7, total: 9 });
    expect(tokens).toBeGreaterThan(fr.at(-1)!);
    expect(check).toBeGreaterThan(tokens);
    expect(check).toBeLessThan(1);
    expect(phaseLabel({ phase: 'decode check', done: 7, total: 9 })).toMatch(/checking every decode step/);
  });
});

describe('specChanges', () => {
  const spec = (patch: Partial<RunSettings>) => {
    const r = buildSpec(settings(patch), embedded, model);
    if (!r.ok) throw new Error(r.message);
    return r.spec;
  };
  it('names nothing for the same comparison (fused kernels as a set)', () => {
    expect(specChanges(spec({}), spec({}))).toEqual([]);
  });
  it('names each setting that differs', () => {
    const a = spec({});
    expect(specChanges(a, spec({ prompt: 'In the beginning' }))).toEqual(['the prompt']);
    expect(specChanges(a, spec({ fused: ['gemm'], k: 3 }))).toEqual(['the fused kernels', 'k']);
    expect(specChanges(a, spec({ fault: 'gptj_rotary', faultLayer: 1 }))).toEqual(['the fault']);
    expect(specChanges(a, spec({ precision: 'fp16', generate: 3 }))).toEqual([
      'tokens to generate',
      'the precision',
    ]);
  });
  it('the seed counts only while it draws a fault layer', () => {
    expect(specChanges(spec({ seed: 1 }), spec({ seed: 2 }))).toEqual([]);
    const f = { fault: 'gptj_rotary' as const, faultLayer: null };
    expect(specChanges(spec({ ...f, seed: 1 }), spec({ ...f, seed: 2 }))).toEqual(['the seed']);
  });
});

describe('changesSince', () => {
  const built = (
    patch: Partial<RunSettings>,
    m = model,
    src: typeof embedded | { kind: 'files'; name: string } = embedded,
  ) => buildSpec(settings(patch), src, m);
  const shown = built({ fault: 'gelu_relu' });
  if (!shown.ok) throw new Error(shown.message);
  const here = { ref: modelRef(embedded, model), name: model.name };
  it('names what specChanges names while the model is the report’s', () => {
    expect(changesSince(shown.spec, model.name, built({ fault: 'gelu_relu', k: 3 }), here)).toEqual(['k']);
  });
  it('names another model loaded by both names, also where the settings are no valid run on it', () => {
    const other: LoadedModel = { ...model, name: 'qwen3-qknorm', sha256: 'b'.repeat(64) };
    const src = { kind: 'files' as const, name: 'qwen3-qknorm' };
    const now = { ref: modelRef(src, other), name: other.name };
    const words = 'the model to qwen3-qknorm from neox-kjv-bytes';
    expect(changesSince(shown.spec, model.name, { ok: false, message: 'no such fault' }, now)).toEqual([
      words,
    ]);
    expect(
      changesSince(shown.spec, model.name, built({ fault: 'gelu_relu', k: 3 }, other, src), now),
    ).toEqual([words, 'k']);
    expect(changesSince(shown.spec, model.name, { ok: false, message: 'no such fault' }, here)).toEqual([
      'the settings (not a valid run now)',
    ]);
  });
});
